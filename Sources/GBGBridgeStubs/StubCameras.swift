import Foundation
import GBGBridge
import ImageCodecs

/// A document camera for hosts without one: answers `camera.document.capture` with a drawn,
/// passport-style data page (PNG), wired to the typed slot as the iOS stub guide shows.
@MainActor
public final class StubDocumentCamera {
    public nonisolated static let width = 1_000
    public nonisolated static let height = 700
    /// The MRZ the page shows: ICAO 9303-4's specimen (the demo's virtual passport has the same).
    public nonisolated static let mrzLines = ["P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"]

    public init() {}

    /// Declares `camera.document` supported on `host` and completes every capture with the stub page.
    public func install(on host: BridgeHost) {
        host.documentCapture.permissionState = .notApplicable
        host.documentCapture.handler = { _ in
            do {
                return .document(try StubDocumentCamera.capture())
            } catch {
                return .failed(code: BridgeErrorCode.cameraError.rawValue, message: "the stub image could not be made: \(error)", recoverable: true)
            }
        }
    }

    /// A passport-style data page: blue header, photo with a face silhouette, fields, and an MRZ.
    /// Drawn and encoded once per process (the image never changes).
    public nonisolated static func capture() throws -> DocumentCaptureResult { try cached.get() }

    private nonisolated static let cached = Result { () throws -> DocumentCaptureResult in
        let png = try ImageCodecs.encodePNG(drawPage())
        return DocumentCaptureResult(imageData: Data(png), width: width, height: height, mimeType: "image/png")
    }

    /// The page as RGB (what the capture encodes; a reader of the MRZ reads it).
    package nonisolated static func drawPage() -> ImageCodecs.RGBImage {
        var canvas = Canvas(width: width, height: height, fill: (40, 44, 52))
        canvas.roundedRect(20, 20, width - 40, height - 40, radius: 28, (246, 241, 226))
        canvas.rect(20, 48, width - 40, 70, (27, 58, 110))
        canvas.roundedRect(20, 20, width - 40, 60, radius: 28, (27, 58, 110))
        canvas.text("UTOPIA", 60, 62, scale: 4, (255, 255, 255))
        let title = "PASSPORT"
        canvas.text(title, width - 60 - Canvas.textWidth(title, scale: 4), 62, scale: 4, (255, 214, 102))
        // Photo with a silhouette.
        canvas.rect(60, 150, 230, 290, (210, 214, 220))
        canvas.ellipse(175, 250, 62, 78, (120, 128, 140))
        canvas.ellipse(175, 470, 120, 110, (120, 128, 140), clip: { _, y in y < 440 })
        // Fields.
        let fields = [("TYPE", "P"), ("CODE", "UTO"), ("PASSPORT NO", "L898902C3"), ("SURNAME", "ERIKSSON"),
                      ("GIVEN NAMES", "ANNA MARIA"), ("DATE OF BIRTH", "12 AUG 74"), ("DATE OF EXPIRY", "15 APR 12")]
        for (index, field) in fields.enumerated() {
            let y = 150 + index * 40
            canvas.text(field.0, 330, y, scale: 2, (110, 110, 120))
            canvas.text(field.1, 330, y + 16, scale: 2, (20, 20, 30))
        }
        // Guilloche-style bands.
        for i in 0..<12 {
            canvas.rect(620 + i * 28, 150 + (i % 3) * 6, 14, 260, (232, 226, 208))
        }
        // Machine-readable zone.
        canvas.rect(20, 520, width - 40, 150, (255, 255, 255))
        // ICAO 9303-4's specimen MRZ in OCR-B at its pitch: 8 px a millimetre on this 125 mm page.
        for (index, line) in mrzLines.enumerated() {
            canvas.mrz(line, 44, baseline: 584 + index * 40, capHeight: 19, pitch: 20.3, (20, 20, 28))
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: canvas.pixels)
    }
}

/// A selfie camera for hosts without one: answers `camera.selfie.capture` with a drawn face
/// silhouette (JPEG) and placeholder liveness blobs.
@MainActor
public final class StubSelfieCamera {
    public nonisolated static let width = 720
    public nonisolated static let height = 960
    /// What the placeholder blobs contain: clearly not a real liveness result.
    public nonisolated static let encryptedBlobPlaceholder = Data("GBGBRIDGE-STUB-ENCRYPTED-BLOB".utf8)
    public nonisolated static let unencryptedBlobPlaceholder = Data(#"{"stub":true,"liveness":"not-assessed"}"#.utf8)

    public init() {}

    public func install(on host: BridgeHost) {
        host.selfieCapture.permissionState = .notApplicable
        host.selfieCapture.handler = { _ in
            do {
                return .selfie(try StubSelfieCamera.capture())
            } catch {
                return .failed(code: BridgeErrorCode.cameraError.rawValue, message: "the stub image could not be made: \(error)", recoverable: true)
            }
        }
    }

    /// Drawn and encoded once per process (the image never changes).
    public nonisolated static func capture() throws -> SelfieCaptureResult { try cached.get() }

    private nonisolated static let cached = Result { () throws -> SelfieCaptureResult in
        let jpeg = try ImageCodecs.encodeJPEG(drawFace(), quality: 88)
        return SelfieCaptureResult(previewImageData: Data(jpeg), width: width, height: height, mimeType: "image/jpeg",
                                   encryptedBlob: encryptedBlobPlaceholder, unencryptedBlob: unencryptedBlobPlaceholder)
    }

    nonisolated static func drawFace() -> ImageCodecs.RGBImage {
        drawFace(width: width, height: height, label: "STUB")
    }

    /// A drawn head-and-shoulders portrait (the selfie's drawing at `width` × 4/3 `width`), for
    /// test documents' DG2: a face, clearly drawn, never a photograph of anyone.
    public nonisolated static func portraitJPEG(width: Int = 360, quality: Int = 85) throws -> [UInt8] {
        try ImageCodecs.encodeJPEG(drawFace(width: width, height: width * 4 / 3, label: nil), quality: quality)
    }

    nonisolated static func drawFace(width: Int, height: Int, label: String?) -> ImageCodecs.RGBImage {
        // Laid out on the 720 × 960 selfie, scaled to `width`.
        func s(_ value: Int) -> Int { value * width / 720 }
        var canvas = Canvas(width: width, height: height, fill: (0, 0, 0))
        canvas.verticalGradient(0, 0, width, height, top: (196, 214, 230), bottom: (120, 140, 168))
        let cx = width / 2
        canvas.ellipse(cx, s(1_040), s(330), s(300), (52, 70, 98))          // shoulders
        canvas.rect(cx - s(55), s(560), s(110), s(160), (224, 182, 150))    // neck
        canvas.ellipse(cx, s(400), s(185), s(235), (92, 64, 44))            // hair
        canvas.ellipse(cx, s(440), s(160), s(210), (236, 196, 164))         // face
        canvas.ellipse(cx - s(62), s(410), s(22), s(12), (60, 60, 70))      // eyes
        canvas.ellipse(cx + s(62), s(410), s(22), s(12), (60, 60, 70))
        canvas.rect(cx - s(10), s(430), s(20), s(60), (220, 170, 140))      // nose
        canvas.ellipse(cx, s(545), s(55), s(16), (190, 100, 100))           // mouth
        if let label { canvas.text(label, s(24), height - s(56), scale: max(1, s(5)), (255, 255, 255)) }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: canvas.pixels)
    }
}
