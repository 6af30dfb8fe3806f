import ImageSandbox
import Mdoc

/// The holder's QR engagement (ISO 18013-5 §8.2.2.3) from a picture of its screen — a photo, a
/// scan, a camera frame — or from the text a hand scanner typed.
public enum MdocQREngagement {
    /// The engagement a picture (PNG or JPEG bytes) shows, its QR codes found by ZBar in the
    /// confined decoder child. Refused: a picture that is not one, or does not decode
    /// (`MDOC_INVALID_REQUEST`: the input given is unusable), no QR code
    /// or none holding an mdoc engagement (`MDOC_NO_DOCUMENT`: no holder shown), two different
    /// engagements (`MDOC_ENGAGEMENT`: which phone is meant is not for the kiosk to guess).
    public static func engagement(picture: [UInt8]) async throws(MdocError) -> DeviceEngagement {
        guard picture.starts(with: [0x89, 0x50, 0x4E, 0x47]) || picture.starts(with: [0xFF, 0xD8]) else {
            throw MdocError(.invalidRequest, "the picture is not a PNG or JPEG image")
        }
        let codes: [[UInt8]]
        do {
            codes = try await ImageSandbox.qrCodes(picture)
        } catch {
            throw MdocError(.invalidRequest, "the picture could not be decoded: \(error.code.rawValue): \(error.reason)")
        }
        return try engagement(codes: codes)
    }

    /// The one mdoc engagement among a picture's QR codes (or a camera frame's).
    public static func engagement(codes: [[UInt8]]) throws(MdocError) -> DeviceEngagement {
        guard !codes.isEmpty else {
            throw MdocError(.noDocument, "no QR code found in the picture (the holder's screen whole, lit, and at least 2 pixels a module)")
        }
        var engagements: [DeviceEngagement] = []
        var broken: MdocError?
        for code in codes {
            do {
                let engagement = try DeviceEngagement(qrCode: code)
                if !engagements.contains(where: { $0.bytes == engagement.bytes }) { engagements.append(engagement) }
            } catch where error.code != .engagement || DeviceEngagement.hasQRScheme(code) {
                // An `mdoc:` code that does not parse: worth naming over a code that is something else.
                broken = broken ?? error
            } catch {
                continue
            }
        }
        guard engagements.count <= 1 else {
            throw MdocError(.engagement, "the picture shows \(engagements.count) different mdoc engagements; show one holder's code at a time")
        }
        guard let engagement = engagements.first else {
            if let broken { throw broken }
            throw MdocError(.noDocument, codes.count == 1 ? "the picture's QR code holds no mdoc engagement (mdoc:…)"
                                                          : "none of the picture's \(codes.count) QR codes holds an mdoc engagement (mdoc:…)")
        }
        return engagement
    }
}
