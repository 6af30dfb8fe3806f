import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// A chip's Chip Authentication key: an EC key, or a DH key in an RFC 5114 group.
public enum ChipAuthenticationKey: Sendable {
    case ec(PrivateKey)
    case dh(group: DiffieHellmanGroup, privateKey: [UInt8], publicKey: [UInt8])

    /// The SubjectPublicKeyInfo as OpenSSL writes it (named curve; X9.42 for DH).
    public var subjectPublicKeyInfo: [UInt8] {
        switch self {
        case .ec(let key): return key.subjectPublicKeyInfo
        case .dh(let group, _, let publicKey): return ChipAuthentication.dhSubjectPublicKeyInfo(group: group, publicValue: publicKey)
        }
    }

    /// The public half as a reader sees it.
    public var publicKey: ChipAuthentication.ChipKey? {
        switch self {
        case .ec(let key): return key.ecKey.map { .ec($0.curve, point: $0.point) }
        case .dh(let group, _, let publicKey): return .dh(group, publicValue: publicKey)
        }
    }

    /// The SubjectPublicKeyInfo with its domain parameters named as `encoding` says (falls back to
    /// OpenSSL's encoding for a group without a standardised id).
    package func subjectPublicKeyInfo(encoding: ChipAuthentication.KeyEncoding) -> [UInt8] {
        publicKey.flatMap { ChipAuthentication.subjectPublicKeyInfo($0, encoding: encoding) } ?? subjectPublicKeyInfo
    }

    /// The shared secret with the terminal's ephemeral key, or nil when that key is not valid.
    public func sharedSecret(with terminalKey: [UInt8]) -> [UInt8]? {
        switch self {
        case .ec(let key):
            guard let (curve, scalar, _) = key.ecKey, curve.isValidPoint(terminalKey) else { return nil }
            return try? curve.xCoordinate(try curve.multiply(scalar, point: terminalKey))
        case .dh(let group, let privateKey, _):
            guard group.isValidPublicKey(terminalKey) else { return nil }
            return try? group.power(terminalKey, privateKey)
        }
    }
}
