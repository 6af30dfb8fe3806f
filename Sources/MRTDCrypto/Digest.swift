import COpenSSL

/// The hash functions ICAO 9303 uses (key derivation, data-group hashes, signatures).
public enum DigestAlgorithm: String, Sendable, Hashable, CaseIterable, Codable {
    case sha1 = "SHA-1"
    case sha224 = "SHA-224"
    case sha256 = "SHA-256"
    case sha384 = "SHA-384"
    case sha512 = "SHA-512"

    public var outputLength: Int {
        switch self {
        case .sha1: return 20
        case .sha224: return 28
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// The algorithm's OID in dotted form.
    public var oid: String {
        switch self {
        case .sha1: return "1.3.14.3.2.26"
        case .sha224: return "2.16.840.1.101.3.4.2.4"
        case .sha256: return "2.16.840.1.101.3.4.2.1"
        case .sha384: return "2.16.840.1.101.3.4.2.2"
        case .sha512: return "2.16.840.1.101.3.4.2.3"
        }
    }

    public init?(oid: String) {
        guard let match = Self.allCases.first(where: { $0.oid == oid }) else { return nil }
        self = match
    }

    var evp: OpaquePointer {
        let name: String
        switch self {
        case .sha1: name = "SHA1"
        case .sha224: name = "SHA2-224"
        case .sha256: name = "SHA2-256"
        case .sha384: name = "SHA2-384"
        case .sha512: name = "SHA2-512"
        }
        // trap: the default provider always has the SHA family; without it OpenSSL is broken, not the input.
        guard let fetched = FetchedAlgorithms.digest(name) else { fatalError("OpenSSL's default provider lacks \(name)") }
        return fetched
    }

    public func hash(_ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // EVP_Digest only fails on allocation failure.
        let ok = EVP_Digest(data, data.count, &output, &length, evp, nil)
        // trap: EVP_Digest fails only when OpenSSL cannot allocate; there is no answer to give without the hash.
        precondition(ok == 1, "EVP_Digest failed")
        return Array(output.prefix(Int(length)))
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public func secureRandomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    guard count > 0 else { return bytes }
    let ok = RAND_bytes(&bytes, Int32(count))
    // trap: without randomness no nonce or key is safe: stopping is the only correct answer.
    precondition(ok == 1, "RAND_bytes failed")
    return bytes
}
