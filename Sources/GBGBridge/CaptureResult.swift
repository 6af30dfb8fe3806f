import Foundation

/// Result data for a successful document capture. Answered as
/// `{imageBase64, imageWidth, imageHeight, mimeType}`.
public struct DocumentCaptureResult: Sendable, Hashable {
    /// The captured image (base64-encoded in the bridge response).
    public var imageData: Data
    /// Image width in pixels.
    public var width: Int
    /// Image height in pixels.
    public var height: Int
    /// The MIME type of `imageData`.
    public var mimeType: String
    /// The MRZ read from the photo, when its access key is valid (Linux addition: the response's
    /// `data.mrz`; iOS journeys ignore the key).
    public var mrz: [String: JSONValue]?

    public init(imageData: Data, width: Int, height: Int, mimeType: String = "image/png") {
        self.imageData = imageData
        self.width = width
        self.height = height
        self.mimeType = mimeType
    }

    /// The response `data` this result is sent as.
    public var responseData: [String: JSONValue] {
        var data: [String: JSONValue] = ["imageBase64": .string(imageData.base64EncodedString()), "imageWidth": .number(Double(width)),
                                         "imageHeight": .number(Double(height)), "mimeType": .string(mimeType)]
        if let mrz { data["mrz"] = .object(mrz) }
        return data
    }
}

/// Result data for a successful selfie capture: the preview image plus the biometric blobs a
/// selfie SDK produces (placeholders on a stub camera). Answered as
/// `{imageBase64, imageWidth, imageHeight, mimeType, encryptedBlobBase64, unencryptedBlobBase64}`.
public struct SelfieCaptureResult: Sendable, Hashable {
    /// The preview image (base64-encoded in the bridge response).
    public var previewImageData: Data
    /// Image width in pixels.
    public var width: Int
    /// Image height in pixels.
    public var height: Int
    /// The MIME type of the preview image.
    public var mimeType: String
    /// Encrypted biometric data (base64-encoded in the bridge response).
    public var encryptedBlob: Data
    /// Unencrypted biometric data (base64-encoded in the bridge response).
    public var unencryptedBlob: Data

    public init(previewImageData: Data, width: Int, height: Int, mimeType: String = "image/jpeg",
                encryptedBlob: Data, unencryptedBlob: Data) {
        self.previewImageData = previewImageData
        self.width = width
        self.height = height
        self.mimeType = mimeType
        self.encryptedBlob = encryptedBlob
        self.unencryptedBlob = unencryptedBlob
    }

    /// The response `data` this result is sent as.
    public var responseData: [String: JSONValue] {
        ["imageBase64": .string(previewImageData.base64EncodedString()), "imageWidth": .number(Double(width)),
         "imageHeight": .number(Double(height)), "mimeType": .string(mimeType),
         "encryptedBlobBase64": .string(encryptedBlob.base64EncodedString()),
         "unencryptedBlobBase64": .string(unencryptedBlob.base64EncodedString())]
    }
}

/// A strongly-typed result returned by capture handlers; the slot turns it into the response.
public enum CaptureResult: Sendable, Hashable {
    /// A document was captured: answered `success` with the image fields.
    case document(DocumentCaptureResult)
    /// A selfie was captured: answered `success` with the image and blob fields.
    case selfie(SelfieCaptureResult)
    /// The user cancelled: answered `cancelled`, with `data: {"reason": reason}`.
    case cancelled(reason: String)
    /// The capture failed: answered `error` with this code, message and recoverability.
    case failed(code: String, message: String, recoverable: Bool)

    /// The response status this result is sent with.
    public var status: BridgeResponseStatus {
        switch self {
        case .document, .selfie: return .success
        case .cancelled: return .cancelled
        case .failed: return .error
        }
    }

    /// The response `data`.
    public var data: [String: JSONValue]? {
        switch self {
        case .document(let result): return result.responseData
        case .selfie(let result): return result.responseData
        case .cancelled(let reason): return ["reason": .string(reason)]
        case .failed: return nil
        }
    }

    /// The response `error`, for `.failed`.
    public var error: BridgeErrorPayload? {
        guard case .failed(let code, let message, let recoverable) = self else { return nil }
        return BridgeErrorPayload(code: code, message: message, recoverable: recoverable)
    }
}
