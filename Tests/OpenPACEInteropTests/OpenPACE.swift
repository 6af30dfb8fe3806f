import COpenPACEShim

/// A step OpenPACE refused, with OpenSSL's reason.
struct OpenPACEError: Error, CustomStringConvertible {
    let step: String
    let detail: String
    var description: String { "OpenPACE: \(step) failed" + (detail.isEmpty ? "" : ": \(detail)") }
}

/// One OpenPACE EAC context (libeac), terminal or card side: the PACE and Chip Authentication
/// cryptography and the secure-messaging primitives, none of it ours.
final class OpenPACE {
    private let handle: OpaquePointer

    /// Over a SET OF SecurityInfo (EF.CardAccess, or DG14's). OpenPACE runs the Integrated
    /// Mapping only in its TR-03110 v2.01 mode (`forIntegratedMapping`).
    init(securityInfos: [UInt8], forIntegratedMapping: Bool = false) throws {
        guard let handle = securityInfos.withUnsafeBufferPointer({ gbg_eac_new($0.baseAddress, $0.count, forIntegratedMapping ? 1 : 0) }) else {
            throw Self.error("reading the SecurityInfos")
        }
        self.handle = handle
    }

    deinit { gbg_eac_free(handle) }

    static func error(_ step: String) -> OpenPACEError {
        var buffer = [CChar](repeating: 0, count: 256)
        gbg_eac_last_error(&buffer, buffer.count)
        let detail = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return OpenPACEError(step: step, detail: detail)
    }

    private func bytes(_ step: String, _ produce: () -> gbg_eac_bytes) throws -> [UInt8] {
        let out = produce()
        defer { gbg_eac_bytes_free(out) }
        guard let data = out.data else { throw Self.error(step) }
        return Array(UnsafeBufferPointer(start: data, count: out.length))
    }

    private func check(_ step: String, _ result: Int32) throws {
        guard result == 1 else { throw Self.error(step) }
    }

    private func bytes(_ step: String, _ input: [UInt8], _ produce: (OpaquePointer, UnsafePointer<UInt8>?, Int) -> gbg_eac_bytes) throws -> [UInt8] {
        try input.withUnsafeBufferPointer { buffer in try bytes(step) { produce(handle, buffer.baseAddress, buffer.count) } }
    }

    private func check(_ step: String, _ input: [UInt8], _ call: (OpaquePointer, UnsafePointer<UInt8>?, Int) -> Int32) throws {
        try input.withUnsafeBufferPointer { buffer in try check(step, call(handle, buffer.baseAddress, buffer.count)) }
    }

    // MARK: PACE

    var paceCount: Int { Int(gbg_eac_pace_count(handle)) }

    /// Makes PACEInfo `index` the one used; its protocol OID (DER content bytes).
    @discardableResult
    func selectPACE(_ index: Int) throws -> [UInt8] {
        var oid = [UInt8](repeating: 0, count: 32)
        var length = oid.count
        var parameterId: Int32 = 0
        try check("choosing PACEInfo \(index)", gbg_eac_pace_select(handle, Int32(index), &oid, &length, &parameterId))
        return Array(oid.prefix(length))
    }

    enum Password { case mrz(String), can(String) }

    func setPassword(_ password: Password) throws {
        let (text, type): (String, Int32) = switch password {
        case .mrz(let text): (text, 1)
        case .can(let text): (text, 2)
        }
        let bytes = Array(text.utf8)
        let ok = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { gbg_eac_set_secret(handle, $0.baseAddress, $0.count, type) }
        }
        try check("setting the password", ok)
    }

    func encryptedNonce() throws -> [UInt8] { try bytes("PACE step 1 (encrypting the nonce)") { gbg_eac_pace_encrypt_nonce(handle) } }
    func decryptNonce(_ nonce: [UInt8]) throws { try check("PACE step 2 (decrypting the nonce)", nonce, gbg_eac_pace_decrypt_nonce) }
    func mappingData() throws -> [UInt8] { try bytes("PACE mapping data") { gbg_eac_pace_mapping_data(handle) } }
    func map(peer: [UInt8]) throws { try check("PACE mapping", peer, gbg_eac_pace_map) }
    func ephemeralKey() throws -> [UInt8] { try bytes("PACE ephemeral key") { gbg_eac_pace_ephemeral_key(handle) } }
    func sharedSecret(peer: [UInt8]) throws { try check("PACE key agreement", peer, gbg_eac_pace_shared_secret) }
    func deriveKeys() throws { try check("PACE key derivation", gbg_eac_pace_derive_keys(handle)) }
    func token(peerKey: [UInt8]) throws -> [UInt8] { try bytes("PACE authentication token", peerKey, gbg_eac_pace_token) }
    func verifyToken(_ token: [UInt8]) throws { try check("verifying the peer's PACE authentication token", token, gbg_eac_pace_verify_token) }

    // MARK: Chip Authentication

    var chipAuthenticationCount: Int { Int(gbg_eac_ca_count(handle)) }

    /// Makes ChipAuthenticationInfo `index` the one used; its protocol OID and key id (-1: none).
    @discardableResult
    func selectChipAuthentication(_ index: Int) throws -> (oid: [UInt8], keyId: Int) {
        var oid = [UInt8](repeating: 0, count: 32)
        var length = oid.count
        var keyId: Int32 = -1
        try check("choosing ChipAuthenticationInfo \(index)", gbg_eac_ca_select(handle, Int32(index), &oid, &length, &keyId))
        return (Array(oid.prefix(length)), Int(keyId))
    }

    func chipKey() throws -> [UInt8] { try bytes("the chip's CA key") { gbg_eac_ca_chip_key(handle) } }

    func setChipKeyPair(privateKey: [UInt8], publicKey: [UInt8]) throws {
        let ok = privateKey.withUnsafeBufferPointer { priv in
            publicKey.withUnsafeBufferPointer { pub in gbg_eac_ca_set_key(handle, priv.baseAddress, priv.count, pub.baseAddress, pub.count) }
        }
        try check("setting the chip's CA key pair", ok)
    }

    func terminalChipAuthenticationKey() throws -> [UInt8] { try bytes("CA ephemeral key") { gbg_eac_ca_terminal_key(handle) } }
    func terminalAgree(chipKey: [UInt8]) throws { try check("CA key agreement (terminal)", chipKey, gbg_eac_ca_terminal_agree) }
    func chipAgree(terminalKey: [UInt8]) throws { try check("CA key agreement (chip)", terminalKey, gbg_eac_ca_chip_agree) }

    // MARK: Secure messaging

    enum KeySource: Int32 { case pace = 0, chipAuthentication = 1 }

    // Terminal Authentication, card side.
    func trust(cvca: [UInt8]) throws { try check("TA: the CVCA as trust anchor", cvca, gbg_eac_ta_init) }
    func importCertificate(_ certificate: [UInt8]) throws { try check("TA: importing a certificate", certificate, gbg_eac_ta_import) }
    func terminalAuthenticationNonce() throws -> [UInt8] { try bytes("TA: the nonce") { gbg_eac_ta_nonce(handle) } }
    func verifyTerminal(compressedTerminalKey: [UInt8], chipIdentifier: [UInt8], signature: [UInt8]) throws {
        let ok = compressedTerminalKey.withUnsafeBufferPointer { comp in
            chipIdentifier.withUnsafeBufferPointer { id in
                signature.withUnsafeBufferPointer { sig in
                    gbg_eac_ta_verify(handle, comp.baseAddress, comp.count, id.baseAddress, id.count, sig.baseAddress, sig.count)
                }
            }
        }
        try check("TA: verifying the terminal's signature", ok)
    }
    // Terminal Authentication, terminal side.
    func setTerminalKey(_ key: [UInt8]) throws { try check("TA: the terminal's private key", key, gbg_eac_ta_set_private_key) }
    func setTerminalAuthenticationNonce(_ nonce: [UInt8]) throws { try check("TA: r_PICC", nonce, gbg_eac_ta_set_nonce) }
    func signTerminalAuthentication(compressedTerminalKey: [UInt8], chipIdentifier: [UInt8]) throws -> [UInt8] {
        try compressedTerminalKey.withUnsafeBufferPointer { comp in
            try chipIdentifier.withUnsafeBufferPointer { id in
                try bytes("TA: signing") { gbg_eac_ta_sign(handle, comp.baseAddress, comp.count, id.baseAddress, id.count) }
            }
        }
    }
    func compressed(_ key: [UInt8], _ source: KeySource) throws -> [UInt8] {
        try key.withUnsafeBufferPointer { buffer in try bytes("Comp()") { gbg_eac_comp(handle, source.rawValue, buffer.baseAddress, buffer.count) } }
    }

    func startSecureMessaging(_ source: KeySource) throws { try check("starting secure messaging", gbg_eac_start_secure_messaging(handle, source.rawValue)) }
    var blockSize: Int { Int(gbg_eac_block_size(handle)) }
    func incrementSSC() throws { try check("counting", gbg_eac_increment_ssc(handle)) }
    func pad(_ data: [UInt8]) throws -> [UInt8] { try bytes("padding", data, gbg_eac_pad) }
    func unpad(_ data: [UInt8]) throws -> [UInt8] {
        try data.withUnsafeBufferPointer { buffer in try bytes("removing the padding") { gbg_eac_unpad(buffer.baseAddress, buffer.count) } }
    }
    func encrypt(_ padded: [UInt8]) throws -> [UInt8] { try bytes("encrypting", padded, gbg_eac_encrypt) }
    func decrypt(_ padded: [UInt8]) throws -> [UInt8] { try bytes("decrypting", padded, gbg_eac_decrypt) }
    func mac(_ padded: [UInt8]) throws -> [UInt8] { try bytes("MAC", padded, gbg_eac_mac) }
}
