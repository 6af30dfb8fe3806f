import Foundation
import ImageCodecs
import ImageSandbox

extension DoctorChecks {
    /// The confined image decoder (`gbgbridge-decode`) every chip photo and MRZ photo goes
    /// through: found, and a small JPEG decoded in it for real (a kernel without seccomp, or a
    /// decoder from another build, shows here rather than as a read without its photo).
    package static func imageDecoder() async -> DoctorCheck {
        guard let helper = ImageSandbox.helperPath else {
            return DoctorCheck(name: "image-decoder", status: .error,
                               finding: "gbgbridge-decode is not beside this binary, in ../libexec/gbgbridge or in /usr/libexec/gbgbridge: chip photos and MRZ photos cannot be decoded (DECODER_FAILED)",
                               fix: "in a checkout: swift build -c release --product gbgbridge-decode (scripts/demo.sh builds it); else install the gbgbridge package")
        }
        do {
            let probe = try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 8, height: 8, pixels: [UInt8](repeating: 0x80, count: 8 * 8 * 3)))
            let image = try await ImageSandbox.browserJPEG(probe)
            guard image.width == 8, image.height == 8 else {
                return DoctorCheck(name: "image-decoder", status: .error, finding: "\(helper) answered an 8×8 probe with \(image.width)×\(image.height)",
                                   fix: "reinstall the package: the decoder does not match this binary")
            }
            return DoctorCheck(name: "image-decoder", status: .ok, finding: "\(helper) decodes in confinement (seccomp, rlimits)", fix: "")
        } catch {
            return DoctorCheck(name: "image-decoder", status: .error, finding: "\(helper) failed an 8×8 probe: \(error)",
                               fix: "a kernel without seccomp filters, or a decoder from another build: reinstall the package, or rebuild gbgbridge-decode")
        }
    }
}
