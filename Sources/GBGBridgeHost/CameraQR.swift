import Cameras
import Foundation
import ImageCodecs
import ImageSandbox
import MRZ
import Mdoc
import MdocRead

/// `gbgbridge mdoc read --qr-from-camera`: frames from a camera until one shows a holder's QR
/// engagement (ISO 18013-5 §8.2.2.3), within a time limit. Each frame's grey levels go to the
/// confined decoder child, where ZBar looks for codes: the camera sees whatever a stranger holds
/// up to it. Errors are `MdocError`s: no code in time `MDOC_TIMEOUT`, a code that is not a
/// usable engagement its own refusal, the camera failing `MDOC_CAMERA`.
package enum CameraQR {
    /// mdoc.read's `qrCode: {"fromCamera": true}` with the document slot's camera: the device it
    /// names, or for `auto` the first that offers a document frame when the read starts; nil for
    /// the drawn stub (no camera to read a phone's screen with).
    package static func engagement(from source: CameraSource) -> (@Sendable (Duration) async throws(MdocError) -> DeviceEngagement)? {
        let camera: String?
        switch source {
        case .stub: return nil
        case .auto: camera = nil
        case .device(let path): camera = path
        }
        return { limit throws(MdocError) in try await read(camera: camera, within: limit, progress: { _ in }) }
    }

    /// The first engagement a frame shows. A frame with two different engagements is passed over
    /// (which phone is meant is not the kiosk's guess); an `mdoc:` code that does not parse is
    /// remembered and, if no good one follows in time, is the failure's reason.
    package static func read(camera: String?, within limit: Duration, progress: @escaping @Sendable (String) -> Void) async throws(MdocError) -> DeviceEngagement {
        let deadline = ContinuousClock.now + limit
        guard let path = await CameraTool.documentCamera(camera) else {
            throw MdocError(.cameraUnavailable, "no camera to read the holder's QR code with (gbgbridge camera list)")
        }
        var frames = 0
        var refusal: MdocError?
        while ContinuousClock.now < deadline {
            let images: [ImageCodecs.RGBImage]
            do {
                images = try await CameraTool.documentFrames(path, first: frames == 0)
            } catch {
                throw MdocError(.cameraUnavailable, "\(error)")
            }
            for image in images {
                frames += 1
                let gray = await CameraTool.onThread { GrayImage(image) }
                let codes: [[UInt8]]
                do {
                    codes = try await ImageSandbox.qrCodes(gray: gray.pixels, width: gray.width, height: gray.height)
                } catch {
                    throw MdocError(.cameraUnavailable, "a frame could not be searched for a QR code: \(error.code.rawValue): \(error.reason)")
                }
                guard !codes.isEmpty else {
                    progress("looking for the holder's QR code in front of \(path)… \(frames) frames")
                    continue
                }
                do {
                    return try MdocQREngagement.engagement(codes: codes)
                } catch where error.code == .noDocument {
                    progress("a QR code in front of \(path), but not an mdoc engagement… \(frames) frames")
                } catch {
                    refusal = error
                    progress("a QR code in front of \(path) that is not a usable engagement (\(error.code.rawValue))… \(frames) frames")
                }
            }
        }
        if let refusal { throw refusal }
        throw MdocError(.timeout, "no holder's QR code in front of \(path) within \(limit.components.seconds) s (\(frames) frames looked at)")
    }
}
