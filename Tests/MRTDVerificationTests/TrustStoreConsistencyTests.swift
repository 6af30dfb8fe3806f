import BoundedFiles
import CFileSwapShim
import Foundation
import MRTDCrypto
import MRTDVerification
import Synchronization
import TestSupport
import Testing

/// `serve` never loads half a store (issue 49): a trust directory read while `trust refresh`
/// swaps in a new version (renameat2 exchange) and deletes the old one file by file is read as
/// one whole version every time — never one whose files vanished under the reader.
@Suite("A trust directory swapped and deleted while it is read")
struct TrustStoreConsistencyTests {
    /// A store: the test CSCA, one CRL, and `filler` more certificates (so that reading takes a while).
    static func writeStore(_ path: String, filler: Int) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let csca = try Data(contentsOf: TestFixtures.url("pki/csca.cert.pem"))
        try csca.write(to: URL(fileURLWithPath: path + "/csca.pem"))
        try Data(contentsOf: TestFixtures.url("crl/csca-revokes-ds.crl.pem")).write(to: URL(fileURLWithPath: path + "/csca.crl"))
        for index in 0..<filler { try csca.write(to: URL(fileURLWithPath: path + "/filler-\(index).pem")) }
    }

    @Test("every load during 60 swaps sees the whole store: its CRL and every certificate")
    func swapsDuringLoads() async throws {
        // Minutes of blocking file work under load: off the cooperative pool.
        let (swaps, loads, halves) = try await offCooperativePool { try Self.swapsDuringLoadsBody() }
        #expect(swaps == 60)
        #expect(loads > 5, "loads: \(loads)")
        #expect(halves.isEmpty, "\(halves.count) of \(loads) loads saw part of a store: \(halves.prefix(5))")
    }

    /// Swaps, loads, and what each load that saw part of a store saw.
    static func swapsDuringLoadsBody() throws -> (Int, Int, [String]) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("trust-swap-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = root + "/store", next = root + "/next"
        let filler = 150
        try writeStore(store, filler: filler)
        try writeStore(next, filler: filler)
        let done = Atomic<Bool>(false)
        let swaps = Atomic<Int>(0)
        let swapper = Thread {
            defer { done.store(true, ordering: .sequentiallyConsistent) }
            for _ in 0..<60 {
                guard CFileSwapShim_exchange(next, store) == 0 else { return }
                swaps.add(1, ordering: .relaxed)
                // The old version is deleted file by file, as a refresh removes its working copy.
                for name in (try? FileManager.default.contentsOfDirectory(atPath: next)) ?? [] { unlink(next + "/" + name) }
                try? Self.writeStore(next, filler: filler)
            }
        }
        swapper.start()
        var loads = 0
        var halves: [String] = []
        while !done.load(ordering: .sequentiallyConsistent) || loads == 0 {
            var trust = TrustStore()
            do {
                try trust.add(path: URL(fileURLWithPath: store))
            } catch {
                halves.append("load \(loads): \(error)")
                continue
            }
            loads += 1
            if trust.revocationLists.count != 1 || trust.certificates.count != filler + 1 {
                halves.append("load \(loads): \(trust.certificates.count) certificates, \(trust.revocationLists.count) CRLs, \(trust.skipped.count) skipped")
            }
        }
        return (swaps.load(ordering: .relaxed), loads, halves)
    }

    @Test("a link inside a store read with links refused is named, never followed")
    func linksRefused() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("trust-link-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.writeStore(root + "/store", filler: 0)
        try FileManager.default.createSymbolicLink(atPath: root + "/store/elsewhere", withDestinationPath: "/etc")
        #expect(throws: BoundedFileError.self) {
            _ = try DirectorySnapshot.read(root + "/store", what: "trust store", fileCeiling: 1 << 20, totalCeiling: 1 << 24, symlinks: .refuse)
        }
        let followed = try DirectorySnapshot.read(root + "/store", what: "trust store", fileCeiling: 1 << 20, totalCeiling: 1 << 26, depth: 0,
                                                  symlinks: .follow, accept: { $0.hasSuffix(".pem") || $0.hasSuffix(".crl") })
        #expect(followed.entries.count == 2)
    }
}
