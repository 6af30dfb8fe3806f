import Foundation

/// A captured document image, as `camera.document.capture` returns it.
public struct DocumentCaptureResult: Codable, Sendable, Hashable {
    public var imageBase64: String
    public var imageWidth: Int
    public var imageHeight: Int
    public var mimeType: String

    public init(imageBase64: String, imageWidth: Int, imageHeight: Int, mimeType: String) {
        self.imageBase64 = imageBase64
        self.imageWidth = imageWidth
        self.imageHeight = imageHeight
        self.mimeType = mimeType
    }

    public init(imageData: Data, width: Int, height: Int, mimeType: String) {
        self.init(imageBase64: imageData.base64EncodedString(), imageWidth: width, imageHeight: height,
                  mimeType: mimeType)
    }
}

/// A captured selfie, as `camera.selfie.capture` returns it: the image plus the liveness blobs a
/// selfie SDK produces (placeholders on a stub camera).
public struct SelfieCaptureResult: Codable, Sendable, Hashable {
    public var imageBase64: String
    public var imageWidth: Int
    public var imageHeight: Int
    public var mimeType: String
    public var encryptedBlobBase64: String?
    public var unencryptedBlobBase64: String?

    public init(imageBase64: String, imageWidth: Int, imageHeight: Int, mimeType: String,
                encryptedBlobBase64: String? = nil, unencryptedBlobBase64: String? = nil) {
        self.imageBase64 = imageBase64
        self.imageWidth = imageWidth
        self.imageHeight = imageHeight
        self.mimeType = mimeType
        self.encryptedBlobBase64 = encryptedBlobBase64
        self.unencryptedBlobBase64 = unencryptedBlobBase64
    }

    public init(imageData: Data, width: Int, height: Int, mimeType: String,
                encryptedBlob: Data? = nil, unencryptedBlob: Data? = nil) {
        self.init(imageBase64: imageData.base64EncodedString(), imageWidth: width, imageHeight: height,
                  mimeType: mimeType, encryptedBlobBase64: encryptedBlob?.base64EncodedString(),
                  unencryptedBlobBase64: unencryptedBlob?.base64EncodedString())
    }
}

/// How a capture ended; `CaptureCapability.complete(_:)` turns it into the response.
public enum CaptureResult: Sendable, Hashable {
    case document(DocumentCaptureResult)
    case selfie(SelfieCaptureResult)
    /// The user backed out: answered with status `cancelled`.
    case cancelled
    /// The capture failed: answered with status `error` and this error.
    case failed(code: String, message: String, recoverable: Bool)

    /// The response status this result is sent with.
    public var status: BridgeResponseStatus {
        switch self {
        case .document, .selfie: return .success
        case .cancelled: return .cancelled
        case .failed: return .error
        }
    }

    /// The response `data`: the image fields for a capture, nothing otherwise.
    public var data: JSONValue? {
        switch self {
        case .document(let result): return try? JSONValue(encoding: result)
        case .selfie(let result): return try? JSONValue(encoding: result)
        case .cancelled, .failed: return nil
        }
    }

    /// The response `error` for `.failed`.
    public var error: BridgeErrorPayload? {
        guard case .failed(let code, let message, let recoverable) = self else { return nil }
        return BridgeErrorPayload(code: code, message: message, recoverable: recoverable)
    }
}
