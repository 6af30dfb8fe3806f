import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// How `trust refresh` behaves as a program on a fleet (issue 49, items 4 and 8–11): one run at a
/// time, a bound on the whole run, nothing left behind by a killed run, no symbolic link followed,
/// validators and state bounded, and the BSI's ZIP-packed master list unpacked within bounds.
@Suite("trust refresh: one at a time, bounded, no links, ZIP lists", .serialized)
struct TrustRefreshOperationTests {
    typealias Setup = TrustRefreshTests.Setup

    @Test("a second refresh of the same store waits, then exits 1 with 'another refresh is running'; the first's update is kept",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func oneAtATime() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        // The first holds the store while it fetches a source that drips (5 s), then a new CRL.
        async let first = setup.refresh(["--timeout", "5", "--source", "crl=" + setup.server.https("/drip"),
                                         "--source", "crl=" + setup.server.https("/files/new.crl")])
        // It holds the lock once its working copy is there.
        for _ in 0..<600 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: setup.root.path)) ?? []
            if names.contains(where: { $0.hasPrefix(".store.refresh-") }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let second = try await setup.refresh(["--timeout", "1", "--source", "crl=" + setup.server.https("/files/old.crl")])
        #expect(second.status == 1, "\(second.standardOutput) \(second.standardError)")
        #expect(second.standardError.contains("another refresh is running"), "\(second.standardError)")
        let firstOutcome = try await first
        #expect(firstOutcome.status == 1, "the drip failed, the CRL was applied: \(firstOutcome.standardOutput)")
        let ds = try Certificate(bytes: [UInt8](Data(contentsOf: TestFixtures.url("pki/ds.cert.pem"))))
        #expect(try TrustRefreshTests.storedCRLs(setup.store).contains { $0.revokes(ds) }, "the first run's CRL is in the store")
        // An import waits for a refresh the same way (and runs once it is over).
        let imported = try await runCommand(GBGBridgeBinary.path, ["trust", "import", "--store", setup.store, "--dry-run",
                                                                   TestFixtures.url("pki/csca.cert.pem").path], timeout: .seconds(60))
        #expect(imported.status == 0, "\(imported.standardError)")
    }

    @Test("sixteen slow sources end within the overall --deadline, the ones not reached failed as timeout",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func overallDeadline() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        let sources = (0..<16).flatMap { ["--source", "crl=" + setup.server.https("/drip?\($0)")] }
        let started = ContinuousClock.now
        let outcome = try await setup.refresh(["--timeout", "600", "--deadline", "4"] + sources)
        let elapsed = ContinuousClock.now - started
        #expect(outcome.status == 1)
        let entries = try TrustRefreshTests.sources(outcome)
        #expect(entries.count == 16)
        #expect(entries.allSatisfy { $0["reason"] as? String == "timeout" }, "\(entries)")
        // 16 drips one after another would take 16 × the source timeout; the deadline bounds the whole.
        #expect(elapsed < .seconds(60), "took \(elapsed)")
    }

    @Test("the working copy of a killed run is removed by the next; a symlinked store or a link inside it is refused",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func leftoversAndLinks() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        let leftover = setup.root.appendingPathComponent(".store.refresh-99999")
        try FileManager.default.createDirectory(at: leftover, withIntermediateDirectories: true)
        try Data(count: 1 << 20).write(to: leftover.appendingPathComponent("copy.der"))
        let outcome = try await setup.refresh(["--source", "crl=" + setup.server.https("/files/new.crl")])
        #expect(outcome.status == 0, "\(outcome.standardOutput)")
        #expect(!FileManager.default.fileExists(atPath: leftover.path), "the leftover is gone")
        #expect((try TrustCommandTests.json(outcome)["leftoversRemoved"] as? [String] ?? []).contains(leftover.path))

        // A directory link inside the store pointing outside it, holding a CRL a replacement would delete.
        let outside = setup.root.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: setup.files.appendingPathComponent("mid.crl"), to: outside.appendingPathComponent("keep.crl"))
        try FileManager.default.createSymbolicLink(atPath: setup.store + "/linked", withDestinationPath: outside.path)
        let linked = try await setup.refresh(["--source", "crl=" + setup.server.https("/files/new.crl")])
        #expect(linked.status == 2, "\(linked.standardOutput) \(linked.standardError)")
        #expect(linked.standardError.contains("symbolic link"), "\(linked.standardError)")
        #expect(FileManager.default.fileExists(atPath: outside.appendingPathComponent("keep.crl").path), "nothing outside the store is touched")
        try FileManager.default.removeItem(atPath: setup.store + "/linked")

        // The store itself a link.
        let alias = setup.root.appendingPathComponent("alias").path
        try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: setup.store)
        let aliased = try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", "/dev/null", "--store", alias, "--json",
                                                                  "--ca-file", setup.server.caFile, "--source", "crl=" + setup.server.https("/files/new.crl")])
        #expect(aliased.status == 2)
        #expect(aliased.standardError.contains("symbolic link"), "\(aliased.standardError)")
        let imported = try await runCommand(GBGBridgeBinary.path, ["trust", "import", "--store", alias, TestFixtures.url("pki/csca.cert.pem").path])
        #expect(imported.status == 2)
        #expect(imported.standardError.contains("symbolic link"), "\(imported.standardError)")
    }

    @Test("validators over 1 KiB are not kept; a 304 to an unconditional request fails; an unreadable state is reported",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func validatorsAndState() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        let url = setup.server.https("/big-etag/new.crl")
        let outcome = try await setup.refresh(["--source", "crl=" + url])
        #expect(outcome.status == 0, "\(outcome.standardOutput)")
        let statePath = setup.root.appendingPathComponent(".store.refresh.json")
        let state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: statePath)) as? [String: Any])
        #expect((state["validators"] as? [String: Any])?[url] == nil, "a 2 KiB ETag is not stored: \(state)")

        let lying = try await setup.refresh(["--source", "crl=" + setup.server.https("/always-304/new.crl")])
        #expect(lying.status == 1)
        let entry = try #require(try TrustRefreshTests.sources(lying).first)
        #expect(entry["reason"] as? String == "http-status" && (entry["detail"] as? String ?? "").contains("304"), "\(entry)")

        // A state file that is not one: reported by the refresh, doctor, and replaced by the next state.
        try Data("{ not json".utf8).write(to: statePath)
        let doctor = try await runCommand(GBGBridgeBinary.path, ["doctor", "--json", "--config", "/dev/null", "--trust", setup.store, "--port", "1"])
        #expect(doctor.standardOutput.contains("refresh state"), "\(doctor.standardOutput.prefix(3000))")
        let again = try await setup.refresh(["--source", "crl=" + setup.server.https("/files/new.crl")])
        #expect((try TrustCommandTests.json(again)["stateProblem"] as? String ?? "").contains("not a refresh state"), "\(again.standardOutput)")
        #expect((try? JSONSerialization.jsonObject(with: Data(contentsOf: statePath))) != nil, "a good state written again")
    }

    @Test("a master list published as a ZIP archive (as the BSI does) is unpacked and applied; a ZIP bomb is refused",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"),
          .enabled(if: FileManager.default.fileExists(atPath: TestFixtures.sharedURL("trust/DE_ML_2026-05-28.ml").path),
                   "needs ../shared/fixtures/trust (real master lists)"))
    func zippedMasterList() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        try FileManager.default.copyItem(at: TestFixtures.sharedURL("trust/DE_ML_2026-05-28.ml"), to: setup.files.appendingPathComponent("GermanMasterList.ml"))
        let root = DigestAlgorithm.sha256.hash(try [UInt8](Data(contentsOf: TestFixtures.sharedURL("trust/DE_ROOT_CA_CSCA07.cer"))))
            .map { String(format: "%02X", $0) }.joined()
        let outcome = try await setup.refresh(["--anchor-sha256", root, "--source", "master-list=" + setup.server.https("/zip/GermanMasterList.zip")])
        #expect(outcome.status == 0, "\(outcome.standardOutput.prefix(2000))")
        #expect(try TrustRefreshTests.sources(outcome).first?["outcome"] as? String == "updated")
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.store).filter { $0.hasSuffix(".pem") }.count > 300, "the list's CSCAs, every country's")

        let before = try TrustRefreshTests.hashes(setup.store)
        let bomb = try await setup.refresh(["--anchor-sha256", root, "--source", "master-list=" + setup.server.https("/zip-bomb")])
        #expect(bomb.status == 1)
        let entry = try #require(try TrustRefreshTests.sources(bomb).first)
        #expect(entry["reason"] as? String == "archive", "\(entry)")
        #expect(try TrustRefreshTests.hashes(setup.store) == before)
    }
}
