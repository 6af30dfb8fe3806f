import MRTDCrypto
import SmartCardCore

/// EF.SOD: the CMS SignedData over the LDS security object, with the data-group hashes it signs.
public struct SecurityObject: Sendable {
    package static let ldsSecurityObjectOID = "2.23.136.1.1.1"

    /// The file as read (with its 77 wrapper, when it had one).
    public let bytes: [UInt8]
    public let signedData: CMSSignedData
    public let digestAlgorithm: DigestAlgorithm
    /// Hash of each data group, by number.
    public let dataGroupHashes: [Int: [UInt8]]
    /// LDS version from a version-1 security object (`0108` …).
    public let ldsVersion: String?

    /// Parses EF.SOD (with or without the 77 wrapper; BER indefinite lengths allowed).
    public init(bytes: [UInt8]) throws(MRTDError) {
        self.bytes = bytes
        var cms = bytes
        if bytes.first == 0x77 {
            do {
                let header = try BERTLV.header(bytes)
                let end = header.valueLength.map { min(bytes.count, header.headerLength + $0) } ?? bytes.count
                cms = Array(bytes[header.headerLength..<end])
            } catch {
                throw MRTDError(.malformedData, "EF.SOD is malformed: \(error.reason)")
            }
        }
        do {
            signedData = try CMSSignedData(bytes: cms)
        } catch {
            throw MRTDError(.malformedData, "EF.SOD is not CMS SignedData: \(error.reason)")
        }
        guard signedData.contentType == Self.ldsSecurityObjectOID else {
            throw MRTDError(.malformedData, "EF.SOD signs \(signedData.contentType), not an LDS security object")
        }
        guard let content = signedData.content else {
            throw MRTDError(.malformedData, "EF.SOD carries no LDS security object")
        }
        (digestAlgorithm, dataGroupHashes, ldsVersion) = try Self.parseSecurityObject(content)
    }

    /// LDSSecurityObject ::= SEQUENCE { version, hashAlgorithm, dataGroupHashValues, ldsVersionInfo? }
    static func parseSecurityObject(_ der: [UInt8]) throws(MRTDError) -> (DigestAlgorithm, [Int: [UInt8]], String?) {
        let root = try parseLDS(der, expecting: 0x30, "LDS security object")
        let fields = try children(of: root, "LDS security object")
        guard fields.count >= 3, fields[0].tag == 0x02, fields[1].tag == 0x30, fields[2].tag == 0x30 else {
            throw MRTDError(.malformedData, "LDS security object does not have version, algorithm and hashes")
        }
        guard let oidObject = try children(of: fields[1], "hash algorithm").first, oidObject.tag == 0x06,
              let oid = DER.oidString(oidObject.value) else {
            throw MRTDError(.malformedData, "LDS security object has no hash algorithm OID")
        }
        guard let digest = DigestAlgorithm(oid: oid) else {
            throw MRTDError(.notSupported, "EF.SOD uses unsupported hash algorithm \(oid)")
        }
        var hashes: [Int: [UInt8]] = [:]
        for entry in try children(of: fields[2], "data-group hashes") {
            let parts = try children(of: entry, "data-group hash")
            guard parts.count == 2, parts[0].tag == 0x02, parts[1].tag == 0x04, parts[0].value.count <= 2 else {
                throw MRTDError(.malformedData, "a data-group hash entry is malformed")
            }
            let number = parts[0].value.reduce(0) { $0 << 8 | Int($1) }
            guard (1...16).contains(number) else {
                throw MRTDError(.malformedData, "EF.SOD lists data group \(number)")
            }
            hashes[number] = parts[1].value
        }
        var version: String?
        if fields.count >= 4, let info = try? fields[3].children(), let first = info.first {
            version = String(decoding: first.value, as: UTF8.self)
        }
        return (digest, hashes, version)
    }
}
