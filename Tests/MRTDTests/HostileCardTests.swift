import Foundation
import ChipRead
import MRTDEmulator
import SmartCard
import TestSupport
import Testing
@testable import MRTD

/// A hostile card that opens correctly (the attacker knows the MRZ it presents) and then attacks:
/// every mode of `HostileMode` through a real pcscd with the vpcd driver. Each read must end
/// within its bounds — a typed error, or a result whose verdicts say `refused` / `invalid` — and
/// never show unverified data as verified. The liveness bound (the read's deadline plus 5 s) is
/// what the issue sets for the product, not a performance figure.
struct HostileRow: CustomStringConvertible, Sendable {
    enum Expected: Sendable {
        /// The read ends with a result, and `check` holds (its message says what failed).
        case read(@Sendable (PassportReadResult) -> String?)
        /// The read fails with one of these codes.
        case fails(Set<MRTDError.Code>)
    }

    var modes: [String]
    var passport = "utopia-td3-pace"
    /// The read's deadline: short where the chip stalls (the deadline is what ends the read),
    /// generous elsewhere (a loaded CI machine must not turn a slow read into a timeout).
    var readTimeout: Duration = .seconds(30)
    /// Open with the MRZ (BAC allowed) rather than the fixture's key (a CAN for PACE passports).
    var mrzKey = false
    var quirks: @Sendable (inout ChipQuirks) -> Void = { _ in }
    let expected: Expected

    var description: String { modes.joined(separator: "+") + " on \(passport)" }

    func chip() throws -> VirtualPassportChip {
        var description = try TestFixtures.description(passport)
        var quirks = description.quirks ?? ChipQuirks()
        self.quirks(&quirks)
        description.quirks = quirks
        var emulated = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        var hostile = HostileCard()
        for mode in modes { try hostile.add(mode) }
        try emulated.makeHostile(hostile, signer: try TestFixtures.documentSigner())
        return VirtualPassportChip(passport: emulated)
    }
}

extension HostileRow {
    /// Every file the chip gives read exactly as the chip holds it (no file cut, padded or taken
    /// from another), passive authentication valid.
    static let readsExactly: @Sendable (PassportReadResult) -> String? = { result in
        result.passiveOutcome.status == .valid ? nil : "passive \(result.passiveOutcome)"
    }

    static func refused(_ name: String) -> @Sendable (PassportReadResult) -> String? {
        { result in
            guard case .refused? = result.absent[LDSFile(name: name)!] else { return "\(name) not refused: \(result.absent)" }
            guard result.files[LDSFile(name: name)!] == nil else { return "\(name) returned although refused" }
            guard result.passive?.dataGroups[name] == .refused else { return "passive dataGroups \(result.passive?.dataGroups ?? [:])" }
            return result.passiveOutcome.status == .invalid ? nil : "passive \(result.passiveOutcome) with a refused \(name)"
        }
    }

    static func uncovered(_ name: String) -> @Sendable (PassportReadResult) -> String? {
        { result in
            guard result.passive?.dataGroups[name] == .notCovered else { return "\(name): \(result.passive?.dataGroups ?? [:])" }
            guard result.passiveOutcome.status == .invalid, result.passiveOutcome.detail.contains("\(name) is present but not covered by EF.SOD")
            else { return "passive \(result.passiveOutcome)" }
            return result.withheld[LDSFile(name: name)!] == nil ? "\(name) not withheld" : nil
        }
    }

    /// EF.SOD genuine, `names` altered after it was signed: mismatched, withheld, passive invalid,
    /// none of their text in the report.
    static func altered(_ names: [String]) -> @Sendable (PassportReadResult) -> String? {
        { result in
            for name in names {
                guard result.passive?.dataGroups[name] == .mismatched else { return "\(name): \(result.passive?.dataGroups ?? [:])" }
                guard result.withheld[LDSFile(name: name)!]?.contains("hash does not match EF.SOD") == true else { return "\(name) not withheld: \(result.withheld)" }
            }
            guard result.passiveOutcome.status == .invalid else { return "passive \(result.passiveOutcome)" }
            let report = String(decoding: (try? ReadReport(result).jsonData()) ?? Data(), as: UTF8.self)
            for forged in ["MALLORY", "FORGED", "NOT THE ISSUER"] where report.contains(forged) { return "the report shows '\(forged)'" }
            return report.contains("\"document\"") ? nil : "DG1 (matching) not shown"
        }
    }

    static let rows: [HostileRow] = [
        // Lying lengths: refused before more is read, the rest of the document read.
        HostileRow(modes: ["lying-length"], expected: .read(refused("DG11"))),
        HostileRow(modes: ["indefinite-length"], expected: .read(refused("DG11"))),
        HostileRow(modes: ["huge-file"], expected: .read(refused("DG11"))),
        HostileRow(modes: ["overlong-answer"], expected: .read(refused("DG11"))),
        HostileRow(modes: ["overlong-answer"], passport: "utopia-td3-jpeg", quirks: { $0.noStatusObject = true }, expected: .read(refused("DG11"))),
        // Ladders: a floor, then a chip error.
        HostileRow(modes: ["wrong-length-ladder"], expected: .fails([.unexpectedStatus])),
        HostileRow(modes: ["exact-length-chase"], expected: .fails([.unexpectedStatus])),
        HostileRow(modes: ["endless-get-response"], passport: "utopia-td3-jpeg", expected: .fails([.unexpectedStatus])),
        // Stalls: the read's deadline.
        HostileRow(modes: ["stall-after-access"], readTimeout: .seconds(6), expected: .fails([.timeout])),
        HostileRow(modes: ["stall-at-apdu=9"], passport: "utopia-td3-jpeg", readTimeout: .seconds(6), expected: .fails([.timeout])),
        // Expensive keys: refused before any arithmetic, the verdict says why.
        HostileRow(modes: ["huge-dh-key"], expected: .read { $0.chip.status == .invalid && $0.chip.detail.contains("refused") ? nil : "chip \($0.chip)" }),
        HostileRow(modes: ["many-dh-keys"], expected: .read { $0.chip.status == .invalid ? refused("DG14")($0) : "chip \($0.chip)" }),
        HostileRow(modes: ["huge-ec-field"], expected: .read { $0.chip.status == .invalid && $0.chip.detail.contains("521") ? nil : "chip \($0.chip)" }),
        HostileRow(modes: ["huge-rsa-key"], expected: .read { result in
            result.active.status == .invalid && result.parseErrors[.dataGroup(15)] != nil ? nil : "active \(result.active)"
        }),
        HostileRow(modes: ["huge-pace-domain"], mrzKey: true, expected: .read { result in
            result.accessControl == "BAC" && result.accessControlNote != nil ? readsExactly(result) : "\(result.accessControl), \(result.accessControlNote ?? "no note")"
        }),
        // Forged data: invalid, withheld.
        HostileRow(modes: ["uncovered-dg11"], expected: .read(uncovered("DG11"))),
        HostileRow(modes: ["uncovered-dg14"], expected: .read { result in
            uncovered("DG14")(result) ?? (result.chip.status == .valid ? "chip \(result.chip) on an uncovered DG14" : nil)
        }),
        HostileRow(modes: ["uncovered-dg15"], expected: .read { result in
            uncovered("DG15")(result) ?? (result.active.status == .valid ? "active \(result.active) on an uncovered DG15" : nil)
        }),
        // A genuine EF.SOD beside altered groups: the hash says so, the groups are withheld
        // (never shown as the document's: ReadReport leaves them out), passive invalid.
        HostileRow(modes: ["altered-dg11"], expected: .read(altered(["DG11"]))),
        HostileRow(modes: ["altered-dg11", "altered-dg12"], expected: .read(altered(["DG11", "DG12"]))),
        // Records that multiply: at most 16 images built, the rest counted and named once.
        HostileRow(modes: ["iris-flood"], expected: .read { result in
            guard let dg4 = result.files[.dataGroup(4)], dg4.count > 3_000_000 else { return "DG4 not read whole" }
            let report = ReadReport(result)
            guard report.irises?.count == 16 else { return "irises \(report.irises?.count ?? -1)" }
            guard report.parseErrors?["DG4"]?.contains("327675 biometric images") == true else { return "parseErrors \(report.parseErrors ?? [:])" }
            let json = (try? report.jsonData()) ?? Data()
            return json.count < 64_000 ? nil : "report of \(json.count) bytes"
        }),
        HostileRow(modes: ["finger-flood"], expected: .read { result in
            let report = ReadReport(result)
            guard report.fingerprints?.count == 16 else { return "fingerprints \(report.fingerprints?.count ?? -1)" }
            return report.parseErrors?["DG3"]?.contains("51000 biometric templates") == true ? nil : "parseErrors \(report.parseErrors ?? [:])"
        }),
        // A face made to cost a decoder: decoded in the confined child, refused there for its
        // scans; the read completes, the photo is absent, DG2 named with the stable code.
        HostileRow(modes: ["scan-bomb-face"], expected: .read { result in
            let report = ReadReport(result)
            guard report.photo == nil else { return "a photo was shown" }
            return report.parseErrors?["DG2"]?.hasPrefix("IMAGE_TOO_COSTLY") == true ? nil : "parseErrors \(report.parseErrors ?? [:])"
        }),
        // JPEG fingerprints reach a page only decoded in the confined child (issue 49): the scan
        // bomb withheld and named, the plain one shown.
        HostileRow(modes: ["scan-bomb-finger"], expected: .read { result in
            let report = ReadReport(result)
            guard let fingers = report.fingerprints, fingers.count == 2 else { return "fingerprints \(report.fingerprints?.count ?? -1)" }
            guard fingers[0].image.isEmpty, !fingers[0].displayable else { return "the scan bomb was shown" }
            guard !fingers[1].image.isEmpty, fingers[1].displayable, fingers[1].mimeType == "image/jpeg" else { return "the plain JPEG was withheld: \(report.parseErrors ?? [:])" }
            return report.parseErrors?["DG3"]?.contains("image 1 withheld (IMAGE_TOO_COSTLY") == true ? nil : "parseErrors \(report.parseErrors ?? [:])"
        }),
        // Reads past the end of a file mishandled: every file still read exactly.
        HostileRow(modes: ["bare-6282"], expected: .read(readsExactly)),
        HostileRow(modes: ["bare-6282"], passport: "utopia-td3-jpeg", expected: .read(readsExactly)),
        HostileRow(modes: ["unauthenticated-6282"], expected: .read(readsExactly)),
        HostileRow(modes: ["unauthenticated-6282"], passport: "utopia-td3-jpeg", quirks: { $0.noStatusObject = true }, expected: .read(readsExactly)),
        HostileRow(modes: ["6700-past-end"], expected: .read(readsExactly)),
        HostileRow(modes: ["6700-past-end", "bare-6282"], passport: "utopia-td1-idcard", quirks: { $0.noShortFileIdentifier = "6A82" },
                   expected: .read(readsExactly)),
        // Broken groups: parse errors, never fatal for optional data, never shown.
        HostileRow(modes: ["broken-dg11"], expected: .read { result in
            result.parseErrors[.dataGroup(11)] != nil && result.dg11 == nil && result.passiveOutcome.status == .valid ? nil : "\(result.parseErrors)"
        }),
        HostileRow(modes: ["broken-dg1"], expected: .read { $0.parseErrors[.dataGroup(1)] != nil && $0.dg1 == nil ? nil : "\($0.parseErrors)" }),
        HostileRow(modes: ["broken-dg2"], expected: .read { $0.parseErrors[.dataGroup(2)] != nil && $0.dg2 == nil ? nil : "\($0.parseErrors)" }),
        // Two attacks at once.
        HostileRow(modes: ["lying-length", "uncovered-dg14", "bare-6282"], expected: .read { result in
            refused("DG11")(result) ?? (result.passive?.dataGroups["DG14"] == .notCovered ? nil : "DG14 \(result.passive?.dataGroups ?? [:])")
        }),
    ]
}

@Suite("Hostile cards through pcscd + vpcd", .serialized)
struct HostileCardTests {
    @Test(arguments: HostileRow.rows)
    func row(_ row: HostileRow) async throws {
        let chip = try row.chip()
        let key = row.mrzKey ? try AccessKey.mrz(try TestFixtures.description(row.passport).mrz.lines.joined(separator: "\n"))
                             : try TestFixtures.accessKey(row.passport)
        let (outcome, elapsed) = try await PCSCDHarness.withEmulatedCard(chip) { client -> (Result<PassportReadResult, MRTDError>, Duration) in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
            options.readTimeout = row.readTimeout
            let reader = PassportReader(connection: connection, accessKey: key, options: options)
            let started = ContinuousClock.now
            let result: Result<PassportReadResult, MRTDError>
            do throws(MRTDError) { result = .success(try await reader.read()) } catch { result = .failure(error) }
            let elapsed = ContinuousClock.now - started
            await reader.connection.disconnect()
            // A stalled chip holds pcscd until the card leaves; then the reader is free again.
            client.removeCard()
            return (result, elapsed)
        }
        // The product's bound (the read's deadline plus 5 s), not a performance figure.
        #expect(elapsed < row.readTimeout + .seconds(5), "\(row): \(elapsed)")
        switch (row.expected, outcome) {
        case (.fails(let codes), .failure(let error)):
            #expect(codes.contains(error.code), "\(row): \(error)")
        case (.fails(let codes), .success(let result)):
            Issue.record("\(row): read although \(codes) was expected: passive \(result.passiveOutcome)")
        case (.read, .failure(let error)):
            Issue.record("\(row): \(error)")
        case (.read(let check), .success(let result)):
            if let problem = check(result) { Issue.record("\(row): \(problem)") }
            // Never a wrong file: whatever was returned is the chip's file, exactly.
            for (file, bytes) in result.files where file.dataGroupNumber != nil || file == .com || file == .sod {
                if let served = chip.passport.applicationFiles[file.fid], chip.passport.hostile.isEmpty || file.fid != 0x010B {
                    #expect(bytes == served, "\(row): \(file) is not the chip's file")
                }
            }
        }
    }

    @Test("after a stalled chip leaves the reader, the next card reads at once")
    func readerFreeAfterStall() async throws {
        let stalled = try HostileRow(modes: ["stall-after-access"], expected: .fails([.timeout])).chip()
        let failure = try await PCSCDHarness.withEmulatedCard(stalled) { client -> MRTDError? in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
            options.readTimeout = .seconds(5)
            let reader = PassportReader(connection: try await backend.connect(reader: info.name), accessKey: try TestFixtures.accessKey("utopia-td3-pace"),
                                        options: options)
            var failure: MRTDError?
            do throws(MRTDError) { _ = try await reader.read() } catch { failure = error }
            await reader.connection.disconnect()
            // pcscd still waits for the stalled chip: a new connection is refused at once, not queued.
            await #expect { _ = try await backend.connect(reader: info.name) } throws: { ($0 as? SmartCardError)?.code == .stalled }
            client.removeCard()
            return failure
        }
        #expect(failure?.code == .timeout)
        let good = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))
        let result = try await PCSCDHarness.withEmulatedCard(good) { _ -> PassportReadResult in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let reader = PassportReader(connection: try await backend.connect(reader: info.name), accessKey: try TestFixtures.accessKey("utopia-td3-pace"),
                                        options: ReadOptions.forTest(trustStore: TestFixtures.testTrustStore))
            let result = try await reader.read()
            await reader.connection.disconnect()
            return result
        }
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test("a cancelled read of a stalled chip returns at once")
    func cancellationOfAStalledRead() async throws {
        let stalled = try HostileRow(modes: ["stall-after-access"], expected: .fails([.timeout])).chip()
        let (error, waited) = try await PCSCDHarness.withEmulatedCard(stalled) { client -> (MRTDError?, Duration) in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            let key = try TestFixtures.accessKey("utopia-td3-pace")
            let task = Task { () -> MRTDError? in
                let reader = PassportReader(connection: connection, accessKey: key, options: ReadOptions.forTest(trustStore: TestFixtures.testTrustStore))
                do throws(MRTDError) { _ = try await reader.read() } catch { return error }
                return nil
            }
            // Until the chip has stalled (access control done, no answer since).
            for _ in 0..<500 where !stalled.hasStalled { try await Task.sleep(for: .milliseconds(20)) }
            try #require(stalled.hasStalled, "the hostile chip never stalled")
            try await Task.sleep(for: .milliseconds(200))
            let cancelled = ContinuousClock.now
            task.cancel()
            let error = await task.value
            let waited = ContinuousClock.now - cancelled
            await connection.disconnect()
            client.removeCard()
            return (error, waited)
        }
        #expect(error?.code == .cancelled)
        #expect(waited < .seconds(2), "a page that goes away must free the reader within 2 s, took \(waited)")
    }

}
