import Mdoc
import MRTDCrypto

/// The Ident characteristic's value (ISO 18013-5 §8.3.3.1.1.3): HKDF-SHA-256 of EDeviceKeyBytes
/// with no salt and the info "BLEIdent", 16 bytes. Both sides derive it from the engagement; a
/// GATT server whose Ident differs is not the one the engagement named.
public enum MdocBLEIdent {
    public static let length = 16

    /// The Ident for the engagement's EDeviceKeyBytes (the tag-24 item's bytes as received).
    public static func derive(deviceKeyBytes: [UInt8]) throws(MdocError) -> [UInt8] {
        do {
            return try KeyedHash.hkdf(.sha256, inputKey: deviceKeyBytes, salt: [], info: Array("BLEIdent".utf8), length: length)
        } catch {
            throw MdocError(.malformed, "the BLE Ident cannot be derived: \(error)")
        }
    }

    /// Checks a server's Ident against the engagement's; constant time.
    public static func check(_ value: [UInt8], deviceKeyBytes: [UInt8]) throws(MdocError) {
        let expected = try derive(deviceKeyBytes: deviceKeyBytes)
        guard value.count == length, KeyedHash.constantTimeEqual(value, expected) else {
            throw MdocError(.bleTransport, "the BLE peer's Ident (\(value.count) bytes) is not the one its engagement derives: another device answered")
        }
    }
}

extension MdocBLEIdent {
    /// The Ident for a holder's engagement (its EDeviceKeyBytes with the tag-24 wrapper, as in
    /// the SessionTranscript).
    public static func derive(engagement: DeviceEngagement) throws(MdocError) -> [UInt8] {
        try derive(deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes)
    }
}
