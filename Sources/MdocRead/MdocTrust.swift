import BoundedFiles
import Foundation
import MRTDCrypto
import Mdoc

/// The IACA certificates (and their CRLs) mdoc issuer authentication trusts: certificate files,
/// directories of them, or a gbgbridge trust store, whose `iaca/` directory `trust import --iaca`
/// and `trust refresh`'s `vical` sources fill. A store's CSCAs are never IACAs, nor the reverse.
public struct MdocTrust: Sendable {
    public private(set) var anchors: [Certificate] = []
    public private(set) var revocationLists: [RevocationList] = []
    public private(set) var sources: [String] = []
    public private(set) var skipped: [(path: String, reason: String)] = []

    public init() {}

    public init(paths: [String]) throws(MdocError) {
        for path in paths { try add(path: path) }
    }

    /// The IACAs of gbgbridge trust stores: each directory's iaca/ only; files and stores without
    /// one add nothing (a CSCA is never an IACA).
    public init(storePaths: [String]) {
        for path in storePaths {
            let iaca = (path as NSString).appendingPathComponent(Self.storeDirectory)
            guard BoundedFile.kind(path) == .directory, BoundedFile.kind(iaca) == .directory else { continue }
            do { try add(path: iaca) } catch { skipped.append((iaca, error.reason)) }
        }
    }

    /// The directory of a trust store that holds IACAs.
    public static let storeDirectory = "iaca"

    public mutating func add(path: String) throws(MdocError) {
        switch BoundedFile.kind(path) {
        case .missing:
            throw MdocError(.invalidRequest, "trust path \(path) does not exist")
        case .directory:
            // A gbgbridge trust store: its iaca/ directory only (the rest are CSCAs).
            let iaca = (path as NSString).appendingPathComponent(Self.storeDirectory)
            let directory = BoundedFile.kind(iaca) == .directory ? iaca : path
            let snapshot: DirectorySnapshot
            do {
                snapshot = try DirectorySnapshot.read(directory, what: "IACA directory", fileCeiling: 1 << 20, totalCeiling: 64 << 20, symlinks: .follow,
                                                      accept: { name in [".pem", ".crt", ".cer", ".der", ".crl", ".cert"].contains { name.lowercased().hasSuffix($0) } })
            } catch {
                throw MdocError(.invalidRequest, error.description)
            }
            for entry in snapshot.entries {
                do { try add(bytes: entry.bytes, name: entry.path) } catch { skipped.append((entry.path, error.reason)) }
            }
        default:
            let bytes: [UInt8]
            do { bytes = try BoundedFile.read(path, ceiling: 1 << 20, what: "IACA certificate") } catch { throw MdocError(.invalidRequest, error.description) }
            try add(bytes: bytes, name: path)
        }
    }

    public mutating func add(bytes: [UInt8], name: String) throws(MdocError) {
        let text = String(decoding: bytes.prefix(64), as: UTF8.self)
        if text.contains("-----BEGIN X509 CRL") || name.lowercased().hasSuffix(".crl") {
            do { revocationLists.append(try RevocationList(bytes: bytes)) } catch { throw MdocError(.invalidRequest, "\(name): not a CRL: \(error.reason)") }
            sources.append(name)
            return
        }
        let found: [Certificate]
        do { found = try Certificate.all(bytes: bytes) } catch { throw MdocError(.invalidRequest, "\(name): not a certificate: \(error.reason)") }
        guard !found.isEmpty else { throw MdocError(.invalidRequest, "\(name): no certificate") }
        anchors += found
        sources.append(name)
    }

    public mutating func add(_ certificate: Certificate) { anchors.append(certificate) }

    public var isEmpty: Bool { anchors.isEmpty }
}
