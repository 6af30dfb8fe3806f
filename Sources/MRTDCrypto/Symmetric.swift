import COpenSSL
import Synchronization

/// Block ciphers used by eMRTD access control and secure messaging: two-key 3DES (BAC, PACE-3DES)
/// and AES-128/192/256 (PACE), CBC and ECB without padding (callers pad per ISO 9797-1 method 2).
public enum BlockCipher: Sendable, Hashable {
    /// Two-key (16-byte) or three-key (24-byte) triple DES.
    case tripleDES
    /// Single DES, computed as 3DES with K1 = K2 = K3 (OpenSSL 3 keeps plain DES in its legacy
    /// provider; this avoids loading it).
    case des
    case aes

    public var blockSize: Int { self == .aes ? 16 : 8 }

    private func cipher(keyLength: Int, cbc: Bool) throws(CryptoError) -> (OpaquePointer, [UInt8]?) {
        let name: String
        switch (self, keyLength) {
        case (.tripleDES, 16): name = cbc ? "DES-EDE-CBC" : "DES-EDE-ECB"
        case (.tripleDES, 24), (.des, 8): name = cbc ? "DES-EDE3-CBC" : "DES-EDE3-ECB"
        case (.aes, 16): name = cbc ? "AES-128-CBC" : "AES-128-ECB"
        case (.aes, 24): name = cbc ? "AES-192-CBC" : "AES-192-ECB"
        case (.aes, 32): name = cbc ? "AES-256-CBC" : "AES-256-ECB"
        default: throw CryptoError(.invalidKey, "a \(keyLength)-byte key does not fit \(self)")
        }
        guard let fetched = FetchedAlgorithms.cipher(name) else { throw CryptoError.openSSL("EVP_CIPHER_fetch(\(name))") }
        return (fetched, self == .des ? [] : nil)
    }

    /// CBC encryption or decryption without padding; `input` must be a whole number of blocks.
    public func cbc(encrypt: Bool, key: [UInt8], iv: [UInt8]? = nil, _ input: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(encrypt: encrypt, key: key, iv: iv ?? [UInt8](repeating: 0, count: blockSize), cbc: true, input)
    }

    /// ECB encryption or decryption without padding; `input` must be a whole number of blocks.
    public func ecb(encrypt: Bool, key: [UInt8], _ input: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(encrypt: encrypt, key: key, iv: nil, cbc: false, input)
    }

    private func run(encrypt: Bool, key: [UInt8], iv: [UInt8]?, cbc: Bool, _ input: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard input.count.isMultiple(of: blockSize) else {
            throw CryptoError(.invalidInput, "\(input.count) bytes is not a multiple of the \(blockSize)-byte block")
        }
        if let iv, iv.count != blockSize {
            throw CryptoError(.invalidInput, "IV of \(iv.count) bytes, expected \(blockSize)")
        }
        let (evp, singleDES) = try cipher(keyLength: key.count, cbc: cbc)
        let effectiveKey = singleDES != nil ? key + key + key : key
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_CipherInit_ex(context, evp, nil, effectiveKey, iv, encrypt ? 1 : 0) == 1 else {
            throw CryptoError.openSSL("EVP_CipherInit_ex")
        }
        EVP_CIPHER_CTX_set_padding(context, 0)
        if input.isEmpty { return [] }
        var output = [UInt8](repeating: 0, count: input.count + blockSize)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress,
                  EVP_CipherUpdate(context, base, &written, input, Int32(input.count)) == 1 else { return false }
            return EVP_CipherFinal_ex(context, base + Int(written), &finalWritten) == 1
        }
        guard ok else { throw CryptoError.openSSL("EVP_Cipher") }
        return Array(output.prefix(Int(written + finalWritten)))
    }
}

/// ISO/IEC 9797-1 padding method 2: `80` then zeros up to a multiple of `blockSize`.
public func iso9797Pad(_ data: [UInt8], blockSize: Int) -> [UInt8] {
    var padded = data + [0x80]
    while !padded.count.isMultiple(of: blockSize) { padded.append(0) }
    return padded
}

/// Removes ISO/IEC 9797-1 method 2 padding; `nil` when the padding is malformed.
public func iso9797Unpad(_ data: [UInt8]) -> [UInt8]? {
    guard let last = data.lastIndex(where: { $0 != 0 }), data[last] == 0x80 else { return nil }
    return Array(data[..<last])
}

/// The ISO/IEC 9797-1 MAC algorithm 3 with DES ("retail MAC") over already padded `data`, with a
/// 16-byte key K1‖K2, as BAC and 3DES secure messaging use it. Returns 8 bytes.
public func retailMAC(key: [UInt8], _ data: [UInt8]) throws(CryptoError) -> [UInt8] {
    guard key.count == 16 else { throw CryptoError(.invalidKey, "retail MAC needs a 16-byte key, got \(key.count)") }
    guard !data.isEmpty, data.count.isMultiple(of: 8) else {
        throw CryptoError(.invalidInput, "retail MAC input must be a non-empty multiple of 8 bytes")
    }
    let k1 = Array(key[0..<8])
    // Single-DES CBC over all blocks but the last, then 3DES (K1,K2,K1) on the last one chained in.
    var chain = [UInt8](repeating: 0, count: 8)
    if data.count > 8 {
        let head = try BlockCipher.des.cbc(encrypt: true, key: k1, Array(data[..<(data.count - 8)]))
        chain = Array(head.suffix(8))
    }
    let last = zip(data.suffix(8), chain).map { $0 ^ $1 }
    return try BlockCipher.tripleDES.ecb(encrypt: true, key: key, last)
}

/// AES-CMAC (NIST SP 800-38B) as AES secure messaging and PACE use it. Returns 16 bytes; callers
/// truncate to 8.
public func aesCMAC(key: [UInt8], _ data: [UInt8]) throws(CryptoError) -> [UInt8] {
    guard [16, 24, 32].contains(key.count) else {
        throw CryptoError(.invalidKey, "AES-CMAC needs a 16, 24 or 32-byte key, got \(key.count)")
    }
    let zero = [UInt8](repeating: 0, count: 16)
    let l = try BlockCipher.aes.ecb(encrypt: true, key: key, zero)
    func double(_ block: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        var carry: UInt8 = 0
        for i in stride(from: 15, through: 0, by: -1) {
            out[i] = block[i] << 1 | carry
            carry = block[i] >> 7
        }
        if block[0] & 0x80 != 0 { out[15] ^= 0x87 }
        return out
    }
    let k1 = double(l)
    let k2 = double(k1)
    let blocks = max(1, (data.count + 15) / 16)
    let complete = !data.isEmpty && data.count.isMultiple(of: 16)
    var last: [UInt8]
    if complete {
        last = zip(data.suffix(16), k1).map { $0 ^ $1 }
    } else {
        var tail = Array(data[((blocks - 1) * 16)...])
        tail.append(0x80)
        while tail.count < 16 { tail.append(0) }
        last = zip(tail, k2).map { $0 ^ $1 }
    }
    let message = Array(data.prefix((blocks - 1) * 16)) + last
    let encrypted = try BlockCipher.aes.cbc(encrypt: true, key: key, message)
    return Array(encrypted.suffix(16))
}

/// Ciphers and digests fetched from OpenSSL's providers once. OpenSSL 3 otherwise repeats the
/// provider lookup on every `EVP_CipherInit_ex` with a legacy `EVP_des_ede_cbc()` style getter,
/// which cost more than the cryptography itself for short secure-messaging APDUs.
enum FetchedAlgorithms {
    final class Table: @unchecked Sendable {
        // Fetched objects are reference counted and safe to share between threads once fetched.
        private let entries = Mutex<[String: OpaquePointer]>([:])
        private let fetch: (String) -> OpaquePointer?

        init(fetch: @escaping (String) -> OpaquePointer?) { self.fetch = fetch }

        func get(_ name: String) -> OpaquePointer? {
            entries.withLock { entries in
                if let entry = entries[name] { return entry }
                let fetched = fetch(name)
                if let fetched { entries[name] = fetched }
                return fetched
            }
        }
    }

    static let ciphers = Table { EVP_CIPHER_fetch(nil, $0, nil) }
    static let digests = Table { EVP_MD_fetch(nil, $0, nil) }

    static func cipher(_ name: String) -> OpaquePointer? { ciphers.get(name) }
    static func digest(_ name: String) -> OpaquePointer? { digests.get(name) }
}
