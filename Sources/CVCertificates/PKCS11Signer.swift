import TextSanitizing
import BoundedFiles
import CPKCS11Shim
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LDS
import MRTDCrypto

/// A terminal key on a PKCS#11 token (an HSM, a smart card, SoftHSM), named by an RFC 7512 URI:
/// `pkcs11:token=kiosk;object=is?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=1234`
/// (`id=%01` for CKA_ID, `pin-source=file:/etc/gbgbridge/pin` instead of `pin-value`). The key
/// never leaves the token: the host sends the digest (ECDSA, RSA-PSS) or DigestInfo (RSA v1.5).
public struct PKCS11Signer: TerminalSigner {
    public let modulePath: String
    public let token: String?
    public let object: String?
    public let id: [UInt8]?
    let pin: String?

    /// Parses a `pkcs11:` URI; `module-path` is required (no system-wide p11-kit configuration is
    /// assumed). Errors name the attribute, never the PIN.
    public init(uri: String) throws(CVCertificateError) {
        guard uri.hasPrefix("pkcs11:") else { throw Self.bad("not a pkcs11: URI") }
        let body = uri.dropFirst("pkcs11:".count)
        let (path, query) = body.firstIndex(of: "?").map { (body[..<$0], body[body.index(after: $0)...]) } ?? (body, Substring())
        var attributes: [String: String] = [:]
        var rawID: [UInt8]?
        for part in path.split(separator: ";", omittingEmptySubsequences: true) {
            guard let equals = part.firstIndex(of: "=") else { throw Self.bad("path attribute '\(Self.printable(part))' has no value") }
            let name = String(part[..<equals])
            guard let value = Self.decode(part[part.index(after: equals)...]) else { throw Self.bad("bad percent-encoding in \(name)") }
            guard ["token", "object", "id", "type", "manufacturer", "model", "serial", "library-description",
                   "library-manufacturer", "library-version", "slot-description", "slot-id", "slot-manufacturer"].contains(name) else {
                throw Self.bad("unknown path attribute '\(Self.printable(name))'")
            }
            if name == "id" { rawID = value } else { attributes[name] = String(decoding: value, as: UTF8.self) }
        }
        var queryAttributes: [String: String] = [:]
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            guard let equals = part.firstIndex(of: "=") else { throw Self.bad("query attribute '\(Self.printable(part))' has no value") }
            let name = String(part[..<equals])
            guard let value = Self.decode(part[part.index(after: equals)...]) else { throw Self.bad("bad percent-encoding in \(name)") }
            guard ["module-path", "module-name", "pin-value", "pin-source"].contains(name) else {
                throw Self.bad("unknown query attribute '\(Self.printable(name))'")
            }
            queryAttributes[name] = String(decoding: value, as: UTF8.self)
        }
        if let type = attributes["type"], type != "private" { throw Self.bad("type=\(Self.printable(type)): the terminal key is a private key") }
        guard let module = queryAttributes["module-path"] else {
            throw Self.bad("module-path is required (e.g. ?module-path=/usr/lib/softhsm/libsofthsm2.so)")
        }
        modulePath = module
        token = attributes["token"]
        object = attributes["object"]
        id = rawID
        if let value = queryAttributes["pin-value"] {
            pin = value
        } else if let source = queryAttributes["pin-source"] {
            let path = source.hasPrefix("file:") ? String(source.dropFirst(5)) : source
            let data: [UInt8]
            do {
                data = try BoundedFile.read(path, ceiling: BoundedFile.Ceiling.pin, what: "PIN")
            } catch {
                throw Self.bad("pin-source: \(Self.printable(error.description))")
            }
            pin = String(decoding: data, as: UTF8.self).trimming { $0 == "\n" || $0 == "\r" }
        } else {
            pin = nil
        }
        guard object != nil || id != nil else { throw Self.bad("name the key with object= or id=") }
    }

    static func bad(_ reason: String) -> CVCertificateError { CVCertificateError(.malformed, field: "terminal key", "pkcs11: URI: \(reason)") }

    static func printable(_ text: some StringProtocol) -> String {
        String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }.prefix(60))
    }

    /// RFC 3986 percent-decoding; `nil` when an escape is broken.
    static func decode(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return bytes
    }

    public func sign(_ message: [UInt8], algorithm: CVSignatureAlgorithm) async throws(CVCertificateError) -> [UInt8] {
        let digest = algorithm.hash.hash(message)
        let (kind, data, mechanismHash, mgf): (Int32, [UInt8], UInt, UInt)
        switch algorithm.rsaPadding {
        case nil: (kind, data, mechanismHash, mgf) = (Int32(GBG_P11_ECDSA), digest, 0, 0)
        case .pkcs1v15?:
            let digestInfo = DER.sequence(DER.sequence(DER.oid(algorithm.hash.oid), DER.null), DER.octetString(digest))
            (kind, data, mechanismHash, mgf) = (Int32(GBG_P11_RSA_PKCS), digestInfo, 0, 0)
        case .pss?:
            let (hash, generator): (UInt, UInt) = switch algorithm.hash {
            case .sha1: (0x220, 1)
            case .sha224: (0x255, 5)
            case .sha256: (0x250, 2)
            case .sha384: (0x260, 3)
            case .sha512: (0x270, 4)
            }
            (kind, data, mechanismHash, mgf) = (Int32(GBG_P11_RSA_PSS), digest, hash, generator)
        }
        let salt = UInt(algorithm.hash.outputLength)
        let request = (modulePath, token, object, id ?? [], pin)
        // The module's calls block (a hardware token may take a second): never on the cooperative pool.
        let outcome: Result<[UInt8], CVCertificateError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                var output = [UInt8](repeating: 0, count: 1024)
                var length = output.count
                var error = [CChar](repeating: 0, count: 512)
                let status = Self.withOptionalCString(request.1) { token in
                    Self.withOptionalCString(request.2) { object in
                        Self.withOptionalCString(request.4) { pin in
                            gbgbridge_pkcs11_sign(request.0, token, object, request.3, request.3.count, pin, kind, mechanismHash, mgf, salt,
                                                  data, data.count, &output, &length, &error, error.count)
                        }
                    }
                }
                if status == 0 {
                    continuation.resume(returning: .success(Array(output.prefix(length))))
                } else {
                    let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    continuation.resume(returning: .failure(CVCertificateError(.badSignature, field: "terminal key", "PKCS#11: \(reason)")))
                }
            }
        }
        return try outcome.get()
    }

    static func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }
}
