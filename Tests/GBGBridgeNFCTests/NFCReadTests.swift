import Foundation
import GBGBridge
import MRTD
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing
@testable import GBGBridgeNFC

/// A reader back end whose reader can be unplugged, and whose card connection can fail.
final class SwitchableBackend: CardReaderBackend, @unchecked Sendable {
    let inner: EmulatedReaderBackend
    let plugged = Mutex(true)
    let failTransmit = Mutex(false)
    let backendName = "test"
    init(_ inner: EmulatedReaderBackend) { self.inner = inner }

    func readers() async throws -> [ReaderInfo] { plugged.withLock { $0 } ? try await inner.readers() : [] }
    func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo {
        guard plugged.withLock({ $0 }) else { throw SmartCardError(.noReaders, "no reader") }
        return try await inner.waitForCard(readerMatching: readerMatching, timeout: timeout)
    }
    func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo] {
        try await Task.sleep(for: timeout ?? .seconds(1))
        return try await readers()
    }
    func connect(reader: String) async throws -> any CardConnection {
        let connection = try await inner.connect(reader: reader)
        return failTransmit.withLock { $0 } ? FailingConnection(inner: connection) : connection
    }
}

final class FailingConnection: CardConnection {
    let inner: any CardConnection
    init(inner: any CardConnection) { self.inner = inner }
    var readerName: String { inner.readerName }
    var atr: [UInt8] { inner.atr }
    var exchangeTimeLimit: Duration? { inner.exchangeTimeLimit }
    func transmit(raw: [UInt8]) async throws -> [UInt8] {
        throw SmartCardError(.communicationFailure, "the reader's USB link failed")
    }
    func isCardPresent() async -> Bool { true }
    func disconnect() async {}
}

@MainActor
final class NFCRig {
    let host = BridgeHost(hostVersion: "9.9.9")
    let transport = InMemoryBridgeTransport()
    let emulated = EmulatedReaderBackend()
    let backend: SwitchableBackend
    let service: NFCReadService
    let chip: VirtualPassportChip

    init(passport: String = "utopia-td3-jpeg", insert: Bool = true, chip: VirtualPassportChip? = nil) throws {
        backend = SwitchableBackend(emulated)
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        service = NFCReadService(backend: backend, trustStore: trust)
        service.defaultReadTimeout = ReadOptions.testDeadline
        self.chip = try chip ?? VirtualPassportChip(passport: try TestFixtures.passport(passport))
        if insert { emulated.insert(self.chip) }
        host.attach(transport: transport)
        service.attach(to: host)
    }

    nonisolated static let annaKey = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#

    func request(_ id: String, _ data: String) {
        transport.post(#"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":1,"payload":{"action":"nfc.read","data":\#(data)}}"#)
    }

    func response(_ id: String) async -> BridgeMessage? {
        for _ in 0..<1_000 {
            if let found = transport.sentMessages.first(where: { $0.type == .response && $0.correlationId == id }) { return found }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    func events(_ action: String) -> [BridgeMessage] { transport.sentMessages.filter { $0.type == .event && $0.payload.action == action } }
}

@Suite("nfc.read over the bridge (in-process emulator)", .serialized)
@MainActor
struct NFCReadTests {
    @Test func successWithProgressAndTheDocumentedData() async throws {
        let rig = try NFCRig()
        await rig.service.refreshReaders()
        rig.request("r1", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("r1"))
        #expect(response.payload.status == .success)
        let data = try #require(response.payload.data)
        #expect(data["accessControl"] == "BAC")
        #expect(data["document"]?["surname"] == "ERIKSSON")
        #expect(data["document"]?["givenNames"] == "ANNA MARIA")
        #expect(data["document"]?["dateOfBirth"] == "1974-08-12")
        #expect(data["document"]?["documentNumber"] == "L898902C3")
        #expect(data["photoMimeType"] == "image/jpeg")
        #expect((data["photo"]?.stringValue?.count ?? 0) > 1_000)
        #expect(data["photoWidth"]?.intValue ?? 0 > 0)
        #expect(data["mrz"]?.stringValue?.hasPrefix("P<UTOERIKSSON") == true)
        #expect(data["dataGroupsRead"] == ["DG1", "DG2", "DG11", "DG12"])
        #expect(data["additionalPersonalDetails"]?["placeOfBirth"] == "ZENITH UTOPIA")
        #expect(data["additionalDocumentDetails"]?["dateOfIssue"] == "2002-04-15")
        #expect(data["verification"]?["passive"]?["status"] == "valid")
        #expect(data["verification"]?["chip"]?["status"] == "notSupported")
        #expect(data["verification"]?["active"]?["status"] == "notSupported")
        #expect(data["verification"]?["documentSigner"]?.stringValue?.contains("Document Signer") == true)
        #expect(data["verification"]?["csca"]?.stringValue?.contains("Test CSCA") == true)

        // Progress: every phase in order, percent monotonic, all before the response.
        let messages = rig.transport.sentMessages
        let responseIndex = try #require(messages.firstIndex { $0.correlationId == "r1" && $0.type == .response })
        let progress = messages.enumerated().filter { $0.element.payload.action == "nfc.read.progress" }
        #expect(progress.allSatisfy { $0.offset < responseIndex })
        let phases = progress.compactMap { $0.element.payload.data?["phase"]?.stringValue }
        var order: [String] = []
        for phase in phases where order.last != phase { order.append(phase) }
        #expect(order == ["waitingForCard", "cardDetected", "authenticating", "reading", "verifying"])
        let percents = progress.compactMap { $0.element.payload.data?["percent"]?.intValue }
        #expect(percents == percents.sorted() && percents.last == 100)
        #expect(progress.allSatisfy { $0.element.payload.data?["requestId"] == "r1" })
        #expect(progress.contains { $0.element.payload.data?["file"] == "DG2" && $0.element.payload.data?["bytesTotal"] != nil })

        // The log keeps the request but not the access key.
        let logged = try #require(rig.host.receivedMessages.first { $0.correlationId == "r1" })
        #expect(logged.payload.data?["accessKey"] == "[redacted]")
        #expect(!(try logged.jsonString()).contains("L898902C3"))
    }

    /// Zero trust: the backend's challenge goes to the chip, and the evidence carries what it needs.
    @Test func evidenceWithTheBackendsChallenge() async throws {
        let rig = try NFCRig(passport: "utopia-td3-pace")
        await rig.service.refreshReaders()
        let challenge = "AAECAwQFBgc="
        rig.request("e1", #"{"accessKey":\#(NFCRig.annaKey),"evidence":true,"activeAuthenticationChallenge":"\#(challenge)"}"#)
        let response = try #require(await rig.response("e1"))
        #expect(response.payload.status == .success)
        let evidence = try #require(response.payload.data?["evidence"])
        #expect(evidence["chip"]?["activeAuthentication"]?["challenge"] == .string(challenge))
        let names = evidence["chip"]?["lds"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(names == ["EF.COM", "EF.SOD", "EF.CardAccess", "DG1", "DG2", "DG11", "DG12", "DG14", "DG15"])
        let decoded = try evidence.decode(ChipEvidence.self)
        let verified = try EvidenceVerifier(trustStore: rig.service.trustStore).verify(decoded, challenge: Array(Data(base64Encoded: challenge)!))
        #expect(verified.active.status == .valid && verified.passiveOutcome.status == .valid)
        let types = evidence["chip"]?["auth"]?.arrayValue?.compactMap { $0["type"]?.stringValue }
        #expect(types == ["ACCESS_CONTROL", "PASSIVE_AUTHENTICATION", "CHIP_AUTHENTICATION", "ACTIVE_AUTHENTICATION"])
    }

    @Test func noEvidenceUnlessAskedFor() async throws {
        let rig = try NFCRig(passport: "utopia-td3-pace")
        rig.request("n1", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("n1"))
        #expect(response.payload.status == .success)
        #expect(response.payload.data?["evidence"] == nil)
    }

    @Test(arguments: [#""AAECAwQFBg==""#, #""AAECAwQFBgcI""#, #""not base64!""#, "12345678", #""""#])
    func aBadChallengeIsAnInvalidRequestNamingTheField(challenge: String) async throws {
        let rig = try NFCRig(passport: "utopia-td3-pace")
        rig.request("b1", #"{"accessKey":\#(NFCRig.annaKey),"evidence":true,"activeAuthenticationChallenge":\#(challenge)}"#)
        let response = try #require(await rig.response("b1"))
        #expect(response.payload.status == .error)
        #expect(response.payload.error?.code == "INVALID_REQUEST")
        #expect(response.payload.error?.message.contains("activeAuthenticationChallenge") == true)
        #expect(response.payload.error?.recoverable == false)
    }

    @Test func evidenceMustBeABoolean() async throws {
        let rig = try NFCRig()
        rig.request("b2", #"{"accessKey":\#(NFCRig.annaKey),"evidence":"yes"}"#)
        let response = try #require(await rig.response("b2"))
        #expect(response.payload.error?.code == "INVALID_REQUEST")
        #expect(response.payload.error?.message.contains("evidence") == true)
    }

    @Test func mrzAndFieldSelection() async throws {
        let rig = try NFCRig()
        let mrz = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"
        rig.request("m1", #"{"accessKey":{"mrz":"\#(mrz)"},"dataGroups":["DG1"],"verify":{"passive":false}}"#)
        let response = try #require(await rig.response("m1"))
        #expect(response.payload.status == .success)
        #expect(response.payload.data?["dataGroupsRead"] == ["DG1"])
        #expect(response.payload.data?["photo"] == nil)
        #expect(response.payload.data?["verification"]?["passive"]?["status"] == "notChecked")
    }

    @Test("invalid requests name the field and never echo it", arguments: [
        (#"{}"#, "accessKey"),
        (#"{"accessKey":"L898902C3"}"#, "accessKey"),
        (#"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"741312","dateOfExpiry":"120415"}}"#, "dateOfBirth"),
        (#"{"accessKey":{"documentNumber":"L898902C3","dateOfExpiry":"120415"}}"#, "accessKey.dateOfBirth"),
        (#"{"accessKey":{"can":"12ab56"}}"#, "can"),
        (#"{"accessKey":{"mrz":"P<UTO"}}"#, "MRZ"),
        (#"{"accessKey":\#(NFCRig.annaKey),"dataGroups":["DG99"]}"#, "dataGroups"),
        (#"{"accessKey":\#(NFCRig.annaKey),"timeoutSeconds":-1}"#, "timeoutSeconds"),
        (#"{"accessKey":\#(NFCRig.annaKey),"verify":{"passive":"yes"}}"#, "verify.passive"),
        (#"{"accessKey":\#(NFCRig.annaKey),"reader":42}"#, "reader"),
    ])
    func invalidRequest(data: String, field: String) async throws {
        let rig = try NFCRig()
        rig.request("bad", data)
        let response = try #require(await rig.response("bad"))
        #expect(response.payload.status == .error)
        #expect(response.payload.error?.code == "INVALID_REQUEST")
        #expect(response.payload.error?.recoverable == false)
        #expect(response.payload.error?.message.contains(field) == true, "\(response.payload.error?.message ?? "")")
        #expect(response.payload.error?.message.contains("L898902C3") == false)
        #expect(response.payload.error?.message.contains("12ab56") == false)
    }

    @Test("data that is not an object is not a bridge message (as on iOS: lastError), answered INVALID_REQUEST, no read")
    func dataThatIsNotAnObject() async throws {
        let rig = try NFCRig()
        rig.request("bad", #"[1,2]"#)
        #expect(rig.host.lastError == "Failed to decode message: wrong type at 'payload.data': expected an object")
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.transport.sentMessages.map(\.correlationId) == ["bad"])
        #expect(rig.transport.sentMessages.first?.payload.error?.code == "INVALID_REQUEST")
        #expect(rig.transport.sentMessages.first?.payload.action == "nfc.read")
        #expect(!rig.service.isBusy)
    }

    @Test func noReaderIsNFCNotAvailable() async throws {
        let rig = try NFCRig()
        rig.backend.plugged.withLock { $0 = false }
        rig.request("n", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("n"))
        #expect(response.payload.status == .unsupported)
        #expect(response.payload.error?.code == "NFC_NOT_AVAILABLE")
    }

    @Test func noCardIsCardTimeout() async throws {
        let rig = try NFCRig(insert: false)
        rig.request("t", #"{"accessKey":\#(NFCRig.annaKey),"timeoutSeconds":0.3}"#)
        let response = try #require(await rig.response("t"))
        #expect(response.payload.error?.code == "CARD_TIMEOUT")
        #expect(response.payload.error?.recoverable == true)
        #expect(rig.events("nfc.read.progress").first?.payload.data?["phase"] == "waitingForCard")
    }

    @Test func wrongKeyIsAccessDenied() async throws {
        let rig = try NFCRig()
        rig.request("a", #"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"130415"}}"#)
        let response = try #require(await rig.response("a"))
        #expect(response.payload.error?.code == "ACCESS_DENIED")
        #expect(response.payload.error?.recoverable == true)
    }

    @Test func removalIsCardRemoved() async throws {
        let rig = try NFCRig(passport: "utopia-td1-idcard")
        rig.chip.setFaults(ChipFaults(removeAfterAPDUs: 30))
        // The card is waited for as long as the request waits for a card: one second here.
        rig.request("x", #"{"accessKey":{"documentNumber":"U21034875","dateOfBirth":"880214","dateOfExpiry":"340901"},"timeoutSeconds":1}"#)
        let response = try #require(await rig.response("x"))
        #expect(response.payload.error?.code == "CARD_REMOVED")
        #expect(response.payload.error?.recoverable == true)
        #expect(response.payload.error?.message.contains("not put back in time") == true)
        let waiting = rig.events("nfc.read.progress").compactMap(\.payload.data).filter { $0["phase"] == "waitingForCard" }
        #expect(waiting.last?["reason"] == "cardRemoved", "the journey was told to put the document back")
    }

    @Test func tagLossIsSurvivedAndReported() async throws {
        var description = try TestFixtures.description("utopia-td3-jpeg")
        var quirks = ChipQuirks()
        quirks.tagLossAfterAPDUs = 7
        quirks.tagLossReturnAfterMilliseconds = 200
        description.quirks = quirks
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        let rig = try NFCRig(chip: chip)
        rig.request("t", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("t"))
        #expect(response.payload.status == .success, "\(String(describing: response.payload.error))")
        let data = try #require(response.payload.data)
        #expect(data["reconnections"] == 1)
        #expect(data["dataGroupsRead"] == ["DG1", "DG2", "DG11", "DG12"])
        #expect(data["verification"]?["passive"]?["status"] == "valid")
        let progress = rig.events("nfc.read.progress").compactMap(\.payload.data)
        let lost = try #require(progress.firstIndex { $0["reason"] == "cardRemoved" })
        #expect(progress[lost]["phase"] == "waitingForCard")
        #expect(progress[lost]["message"]?.stringValue?.contains("Put it back on the reader") == true)
        #expect(progress[lost...].contains { $0["phase"] == "reading" }, "reading goes on after the card is back")
        #expect(progress.last?["percent"] == 100)
    }

    @Test func chipMisbehaviourIsChipError() async throws {
        let rig = try NFCRig()
        rig.chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0xA4, p1: 0x04, statusWord: StatusWord(rawValue: 0x6F00))]))
        rig.request("c", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("c"))
        #expect(response.payload.error?.code == "CHIP_ERROR")
    }

    @Test func readerFailureIsCommunicationError() async throws {
        let rig = try NFCRig()
        rig.backend.failTransmit.withLock { $0 = true }
        rig.request("e", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let response = try #require(await rig.response("e"))
        #expect(response.payload.error?.code == "COMMUNICATION_ERROR")
        #expect(response.payload.error?.recoverable == true)
    }

    @Test func secondReadIsBusyAndCancellationFreesTheReader() async throws {
        let rig = try NFCRig()
        rig.chip.setFaults(ChipFaults(latencyPerAPDU: .milliseconds(30)))
        rig.request("first", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        try await Task.sleep(for: .milliseconds(100))
        rig.request("second", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        let busy = try #require(await rig.response("second"))
        #expect(busy.payload.error?.code == "BUSY" && busy.payload.error?.recoverable == true)
        #expect(rig.service.isBusy)

        // The page goes away: the read is cancelled and the reader freed.
        rig.host.cancelInFlightRequests(reason: "the page navigated away")
        let cancelled = try #require(await rig.response("first"))
        #expect(cancelled.payload.status == .cancelled)
        #expect(cancelled.payload.error?.code == "CANCELLED")
        for _ in 0..<200 where rig.service.isBusy { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!rig.service.isBusy)
        // Exactly one answer for the cancelled request, then a new read works.
        try await Task.sleep(for: .milliseconds(200))
        #expect(rig.transport.sentMessages.filter { $0.correlationId == "first" }.count == 1)
        rig.chip.setFaults(ChipFaults())
        rig.request("third", #"{"accessKey":\#(NFCRig.annaKey)}"#)
        #expect(await rig.response("third")?.payload.status == .success)
    }

    @Test func capabilityFollowsTheReaders() async throws {
        let rig = try NFCRig()
        await rig.service.refreshReaders()
        var info = try #require(rig.host.capabilityQueryData()["capabilities"]?["nfc.read"])
        #expect(info["supported"] == true && info["permissionState"] == "granted")
        #expect(info["constraints"]?["readers"] == ["GBGBridge Emulated Reader"])
        #expect(info["constraints"]?["accessControl"] == ["PACE", "BAC"])
        #expect(rig.host.capabilities["nfc.read"] == true)

        rig.backend.plugged.withLock { $0 = false }
        #expect(await rig.service.refreshReaders())
        info = try #require(rig.host.capabilityQueryData()["capabilities"]?["nfc.read"])
        #expect(info["supported"] == false)
        #expect(rig.host.capabilities["nfc.read"] == false)
        let changed = try #require(rig.events("capabilities.changed").last)
        #expect(changed.payload.data?["capabilities"]?["nfc.read"]?["supported"] == false)
        #expect(changed.payload.data?["environment"] == "linux")

        // capability.query reports the same.
        rig.transport.post(#"{"version":"1.0","correlationId":"q","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#)
        let query = try #require(await rig.response("q"))
        #expect(query.payload.data?["capabilities"]?["nfc.read"]?["supported"] == false)
        #expect(query.payload.data?["capabilities"]?["nfc.read"]?["version"] == "1.0")

        rig.backend.plugged.withLock { $0 = true }
        #expect(await rig.service.refreshReaders())
        #expect(rig.host.capabilities["nfc.read"] == true)
        #expect(!(await rig.service.refreshReaders()))  // nothing changed: no event
    }
}

@Suite("nfc.read with PACE and Active Authentication", .serialized)
@MainActor
struct NFCReadPACETests {
    @Test func canOpensAPACEOnlyCardAndActiveAuthenticationIsReported() async throws {
        let rig = try NFCRig(passport: "utopia-id-pace-only")
        rig.request("can", #"{"accessKey":{"can":"123456"}}"#)
        let response = try #require(await rig.response("can"))
        #expect(response.payload.status == .success, "\(response.payload.error?.message ?? "")")
        #expect(response.payload.data?["accessControl"] == "PACE")
        #expect(response.payload.data?["paceMapping"] == "GM")
        #expect(response.payload.data?["verification"]?["active"]?["status"] == "valid")
        let logged = try #require(rig.host.receivedMessages.first { $0.correlationId == "can" })
        #expect(!(try logged.jsonString()).contains("123456"))
    }

    @Test func wrongCANIsAccessDenied() async throws {
        let rig = try NFCRig(passport: "utopia-id-pace-only")
        rig.request("bad", #"{"accessKey":{"can":"000000"}}"#)
        let response = try #require(await rig.response("bad"))
        #expect(response.payload.error?.code == "ACCESS_DENIED")
        #expect(response.payload.error?.message.contains("000000") == false)
    }
}

@Suite("nfc.read through libnfc and an emulated PN532", .serialized)
@MainActor
struct NFCReadLibNFCTests {
    @Test func readerFieldSelectsTheLibNFCDevice() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))
        let terminal = try PN532PseudoTerminal(chip: chip)
        terminal.start()
        defer { terminal.stop() }
        // As `gbgbridge serve --libnfc-device …` builds it: PC/SC (whether or not pcscd runs) + libnfc.
        // PC/SC goes to the test's private pcscd, never the machine's (see PCSCDHarness).
        _ = await PCSCDHarness.shared.ensureRunning()
        let backend = CombinedReaderBackend([
            PCSCBackend(), LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false),
        ])
        let service = NFCReadService(backend: backend, trustStore: TestFixtures.testTrustStore)
        let host = BridgeHost(hostVersion: "9.9.9")
        let transport = InMemoryBridgeTransport()
        host.attach(transport: transport)
        service.attach(to: host)
        await service.refreshReaders()

        let reader = "libnfc:" + terminal.connectionString
        transport.post(#"{"version":"1.0","correlationId":"l1","type":"request","timestamp":1,"payload":{"action":"nfc.read","data":{"accessKey":{"can":"112233"},"reader":"\#(reader)","timeoutSeconds":10}}}"#)
        var response: BridgeMessage?
        for _ in 0..<1_000 where response == nil {
            response = transport.sentMessages.first { $0.type == .response && $0.correlationId == "l1" }
            if response == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let answer = try #require(response)
        #expect(answer.payload.status == .success, "\(answer.payload.error?.message ?? "")")
        let data = try #require(answer.payload.data)
        #expect(data["accessControl"] == "PACE")
        #expect(data["document"]?["surname"] == "ERIKSSON")
        #expect(data["verification"]?["passive"]?["status"] == "valid")
        #expect(data["verification"]?["chip"]?["status"] == "valid")
        #expect(data["verification"]?["active"]?["status"] == "valid")
        #expect(chip.statistics.paceSuccesses == 1)
    }
}
