import Biometrics
import ImageCodecs
import ImageSandbox
import MRTD
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ReadReport {
    /// DG3/DG4 images a browser could decode (JPEG, JPEG 2000, PNG) reach a page only once the
    /// confined decoder decoded them, like DG2's face (issue 49): what it could not decode is
    /// withheld and named in `parseErrors`. Keyed `DG3#N` (the Nth image of the group).
    public struct BiometricVetting: Sendable {
        /// By key, why an image is not shown.
        public var refused: [String: String] = [:]
        public init(refused: [String: String] = [:]) { self.refused = refused }
    }

    /// The MIME types a browser would decode, and so the confined decoder must decode first.
    static let vettedTypes: Set<String> = ["image/jpeg", "image/jp2", "image/png"]

    /// The images of DG3 and DG4 shown to a page, with their keys.
    static func biometricImages(_ result: PassportReadResult) -> [(key: String, data: [UInt8])] {
        var images: [(String, [UInt8])] = []
        for number in [3, 4] where result.withheld[.dataGroup(number)] == nil {
            guard let bytes = result.files[.dataGroup(number)], let group = try? BiometricDataGroup(bytes: bytes) else { continue }
            for (index, image) in group.images.enumerated() where image.mimeType.map(vettedTypes.contains) == true {
                images.append(("DG\(number)#\(index)", image.data))
            }
        }
        return images
    }

    /// Decodes each such image in the child, waiting on this thread (a command-line tool's way).
    public static func vetBiometrics(_ result: PassportReadResult) -> BiometricVetting {
        var vetting = BiometricVetting()
        for (key, data) in biometricImages(result) {
            do {
                _ = try ImageSandbox.checkBlocking(data)
            } catch {
                vetting.refused[key] = "\(error.code.rawValue): \(error.reason)"
            }
        }
        return vetting
    }

    /// The same, the children waited for off the cooperative pool (queued on the decoder's pool).
    public static func vetBiometrics(_ result: PassportReadResult) async -> BiometricVetting {
        var vetting = BiometricVetting()
        for (key, data) in biometricImages(result) {
            do {
                _ = try await ImageSandbox.check(data)
            } catch {
                vetting.refused[key] = "\(error.code.rawValue): \(error.reason)"
            }
        }
        return vetting
    }
}
