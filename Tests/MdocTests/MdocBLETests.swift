import BlueZ
import CBORCoding
import COSE
import Foundation
import Mdoc
import MdocBLE
import MdocNFC
import MRTDCrypto
import TestSupport
import TestTraits
import Testing

/// The BLE transport's parts that need no radio (ISO 18013-5 §8.3.3.1.1): the characteristics'
/// UUIDs, Ident, the 0x01/0x00 framing bounded against a peer that streams forever, the plans an
/// engagement offers and the verdict on the adapters.
@Suite("mdoc over BLE: framing, Ident, plans, Bluetooth availability")
struct MdocBLETests {
    @Test("the characteristics' UUIDs of both modes (Tables 11 and 12)")
    func characteristicUUIDs() {
        let server = MdocBLEMode.peripheralServer.characteristics
        #expect(server.state.description == "00000001-a123-48ce-896b-4c76973373e6")
        #expect(server.client2Server.description == "00000002-a123-48ce-896b-4c76973373e6")
        #expect(server.server2Client.description == "00000003-a123-48ce-896b-4c76973373e6")
        #expect(server.l2cap.description == "0000000a-a123-48ce-896b-4c76973373e6")
        let client = MdocBLEMode.centralClient.characteristics
        #expect(client.state.description == "00000005-a123-48ce-896b-4c76973373e6")
        #expect(client.client2Server.description == "00000006-a123-48ce-896b-4c76973373e6")
        #expect(client.server2Client.description == "00000007-a123-48ce-896b-4c76973373e6")
        #expect(client.ident.description == "00000008-a123-48ce-896b-4c76973373e6")
        #expect(client.l2cap.description == "0000000b-a123-48ce-896b-4c76973373e6")
        #expect(BLEUUID("00000005-A123-48CE-896B-4C76973373E6") == client.state)
        for bad in ["", "00000005-A123-48CE-896B-4C76973373E", "00000005A123-48CE-896B-4C76973373E6x", "0000000g-a123-48ce-896b-4c76973373e6"] {
            #expect(BLEUUID(bad) == nil, "\(bad)")
        }
        #expect(BLEUUID(bytes: [1, 2, 3]) == nil)
    }

    @Test("Ident is HKDF-SHA-256(EDeviceKeyBytes, no salt, \"BLEIdent\", 16), as Python's cryptography derives it for Annex D's engagement",
          .needsSharedFixtures)
    func identOfAnnexD() throws {
        let data = try Data(contentsOf: TestFixtures.sharedURL("mdoc-annex-d/vectors.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        let engagement = try DeviceEngagement(bytes: try #require(json["DEVICE_ENGAGEMENT"].flatMap(hexBytes)))
        // cryptography 38's HKDF(SHA256(), 16, salt=None, info=b"BLEIdent").derive(E_DEVICE_KEY_BYTES).
        let expected = try #require(hexBytes("8da0b7a85919f05673054ea996bbd124"))
        #expect(try MdocBLEIdent.derive(engagement: engagement) == expected)
        #expect(engagement.deviceKeyBytes.taggedBytes == json["E_DEVICE_KEY_BYTES"].flatMap(hexBytes))
        try MdocBLEIdent.check(expected, deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes)
        var wrong = expected
        wrong[15] ^= 1
        #expect(throws: MdocError.self) { try MdocBLEIdent.check(wrong, deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes) }
        #expect(throws: MdocError.self) { try MdocBLEIdent.check(Array(expected.prefix(15)), deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes) }
        // Annex D's holder offers mdoc central client mode with its UUID.
        let plans = MdocBLEPlan.plans(engagement: engagement, outOfBand: nil)
        #expect(plans == [MdocBLEPlan(mode: .centralClient, serviceUUID: try #require(BLEUUID("45efef74-2b2c-4837-a9a3-b0e1d05a6917")), address: nil)])
    }

    @Test("Ident agrees with Python's cryptography on fresh keys",
          .enabled(if: IndependentPython.available, "needs /usr/bin/python3 with cbor2, cryptography and pyscard"))
    func identAgreesWithPython() async throws {
        for seed in 0..<4 {
            let coseKey = COSEKey(curve: .p256, publicKey: try EllipticCurve.nistP256.generateKeyPair().publicKey)
            let engagement = try #require(DeviceEngagement.make(deviceKey: coseKey, retrievalMethods: []))
            let tagged = engagement.deviceKeyBytes.taggedBytes
            let hex = tagged.map { String(format: "%02x", $0) }.joined()
            let outcome = try await runCommand(IndependentPython.path, ["-c", """
                from cryptography.hazmat.primitives.kdf.hkdf import HKDF
                from cryptography.hazmat.primitives import hashes
                print(HKDF(hashes.SHA256(), 16, None, b"BLEIdent").derive(bytes.fromhex("\(hex)")).hex())
                """])
            let ours = try MdocBLEIdent.derive(engagement: engagement).map { String(format: "%02x", $0) }.joined()
            #expect(outcome.status == 0, "\(outcome.standardError)")
            #expect(outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == ours, "key \(seed)")
        }
    }

    @Test("pieces fit the ATT MTU and an attribute value's 512 bytes, lead with 0x01 until the last's 0x00, and put back together",
          arguments: [23, 24, 185, 247, 512, 515, 516, 517, 65_535, 0])
    func framingRoundTrip(mtu: Int) throws {
        var generator = SeededGenerator(seed: UInt64(mtu) &+ 7)
        for length in [1, 18, 19, 20, 513, 514, 515, 4_000] {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let pieces = MdocBLEFraming.fragments(message, mtu: mtu)
            let clamped = min(max(mtu, 23), 517)
            #expect(pieces.allSatisfy { $0.count <= min(clamped - 3, 512) && $0.count >= 2 })
            if length == 4_000 { #expect(pieces.first?.count == min(clamped - 3, 512)) }
            // Written pieces stop at 510 (what BlueZ as GATT server passes on), notified ones at 512.
            let written = MdocBLEFraming.fragments(message, mtu: mtu, write: true)
            #expect(written.allSatisfy { $0.count <= min(clamped - 3, 510) && $0.count >= 2 })
            #expect(written.flatMap { $0.dropFirst() } == message)
            #expect(pieces.dropLast().allSatisfy { $0.first == 0x01 })
            #expect(pieces.last?.first == 0x00)
            var assembler = MdocBLEAssembler(maximumBytes: 1 << 16)
            var out: [UInt8]?
            for (index, piece) in pieces.enumerated() {
                out = try assembler.take(piece)
                #expect((out == nil) == (index < pieces.count - 1))
            }
            #expect(out == message)
            #expect(assembler.pending == 0)
        }
    }

    @Test("a peer that streams forever, sends a bad lead byte, an empty piece or an empty message is refused, typed")
    func assemblerBounds() throws {
        var assembler = MdocBLEAssembler(maximumBytes: 1_000)
        var refused: MdocError?
        for _ in 0..<10_000 {
            do { _ = try assembler.take([0x01] + [UInt8](repeating: 0xAA, count: 100)) } catch { refused = error; break }
        }
        #expect(refused?.code == .limitExceeded)
        #expect(assembler.pending <= 1_000)

        var tiny = MdocBLEAssembler(maximumBytes: 1 << 20, maximumPieces: 50)
        var piecesRefused: MdocError?
        for _ in 0..<10_000 {
            do { _ = try tiny.take([0x01, 0x00]) } catch { piecesRefused = error; break }
        }
        #expect(piecesRefused?.code == .limitExceeded)

        var fresh = MdocBLEAssembler(maximumBytes: 100)
        #expect(throws: MdocError.self) { try fresh.take([]) }
        #expect(throws: MdocError.self) { try fresh.take([0x02, 1, 2]) }
        #expect(throws: MdocError.self) { try fresh.take([0x00]) }
        #expect(try fresh.take([0x00, 9]) == [9])
    }

    @Test("an answer put together out of order (Enhanced ATT) gets the hint, whatever its scrambled bytes make of SessionData; an authentic DeviceResponse's limit does not")
    func garbledAnswersAreRecognised() throws {
        // {"data": a byte string whose scrambled length header says 3263527695 bytes} — as in the BlueZ VM.
        let scrambledLength: [UInt8] = [0xA1, 0x64] + Array("data".utf8) + [0x5A, 0xC2, 0x86, 0xB4, 0x0F, 0x01, 0x02]
        let limits = CBORLimits(maximumBytes: 4 << 20, maximumDepth: 16, maximumItems: 50_000, maximumStringBytes: 2 << 20)
        var tooLong: MdocError?
        do { _ = try SessionMessage.parseData(scrambledLength, limits: limits) } catch { tooLong = error }
        #expect(tooLong?.code == .limitExceeded, "\(String(describing: tooLong))")
        #expect(tooLong.map { MdocNFCReader.looksGarbled($0, at: .envelope) } == true)
        var unparsable: MdocError?
        do { _ = try SessionMessage.parseData([0xA1, 0x64, 0x64, 0x61], limits: limits) } catch { unparsable = error }
        #expect(unparsable.map { MdocNFCReader.looksGarbled($0, at: .envelope) } == true, "\(String(describing: unparsable))")
        #expect(MdocNFCReader.looksGarbled(MdocError(.sessionEncryption, "the tag does not verify"), at: .envelope))
        #expect(!MdocNFCReader.looksGarbled(MdocError(.noDocument, "declined"), at: .envelope))
        // The same codes from the decrypted DeviceResponse, whatever its reason's words: the holder's own.
        #expect(!MdocNFCReader.looksGarbled(MdocError(.limitExceeded, "DeviceResponse: more than 50000 items"), at: .response))
        #expect(!MdocNFCReader.looksGarbled(MdocError(.malformed, "SessionData-like words in a DeviceResponse"), at: .response))
        #expect(!MdocNFCReader.looksGarbled(MdocError(.limitExceeded, "SessionData: a string of 3263527695 bytes"), at: .response))
    }

    @Test("plans from the engagement and from a handover's BLE carrier record; peripheral server mode first")
    func plansFromEngagementAndCarrier() throws {
        let coseKey = COSEKey(curve: .p256, publicKey: try EllipticCurve.nistP256.generateKeyPair().publicKey)
        let peripheral = [UInt8](repeating: 0x11, count: 16), central = [UInt8](repeating: 0x22, count: 16)
        let address: [UInt8] = [1, 2, 3, 4, 5, 6]
        let both = try #require(DeviceEngagement.make(deviceKey: coseKey, retrievalMethods: [
            .ble(peripheralServer: true, centralClient: true, peripheralUUID: peripheral, centralUUID: central, address: address),
        ]))
        let plans = MdocBLEPlan.plans(engagement: both, outOfBand: nil)
        #expect(plans.map(\.mode) == [.peripheralServer, .centralClient])
        #expect(plans[0].serviceUUID.bytes == peripheral && plans[0].address == address)
        #expect(plans[1].serviceUUID.bytes == central && plans[1].address == nil)

        // A UUID that is not 16 bytes is no plan; nothing offered is no plan.
        let bad = try #require(DeviceEngagement.make(deviceKey: coseKey, retrievalMethods: [
            .ble(peripheralServer: true, centralClient: false, peripheralUUID: [1, 2, 3], centralUUID: nil, address: nil),
            .nfc(maximumCommandLength: 255, maximumResponseLength: 256),
        ]))
        #expect(MdocBLEPlan.plans(engagement: bad, outOfBand: nil).isEmpty)

        // Negotiated handover: the UUID and LE role in the carrier record alone.
        for (role, modes) in [(UInt8(0), [MdocBLEMode.peripheralServer]), (1, [.centralClient]), (2, [.peripheralServer, .centralClient]),
                              (3, [.peripheralServer, .centralClient]), (9, [])] {
            let oob = BLEOutOfBand(role: role, serviceUUID: peripheral, address: address + [0])
            let fromCarrier = MdocBLEPlan.plans(engagement: nil, outOfBand: oob)
            #expect(fromCarrier.map(\.mode) == modes, "LE role \(role)")
            if let first = fromCarrier.first, first.mode == .peripheralServer { #expect(first.address == address) }
        }
    }

    @Test("Bluetooth availability: the first powered adapter, else why there is none, with the fix")
    func availability() {
        let off = BlueZAdapter(path: "/org/bluez/hci0", powered: false, address: "00:AA:01:00:00:00", alias: "kiosk")
        let on = BlueZAdapter(path: "/org/bluez/hci1", powered: true, address: "00:AA:01:00:00:01", alias: "kiosk")
        #expect(MdocBluetoothAvailability.judge([off, on]) == .available(adapter: "hci1"))
        #expect(MdocBluetoothAvailability.judge([off]).reason.contains("hci0 is not powered — bluetoothctl power on"))
        #expect(MdocBluetoothAvailability.judge([]).reason.contains("no Bluetooth adapter"))
        #expect(!MdocBluetoothAvailability.judge([]).isAvailable)
    }

    @Test("BlueZ's main.conf: [GATT] Channels read as GLib's key files are, BlueZ's default when unset; Enhanced ATT above 1")
    func mainConfiguration() {
        let cases: [(String, Int?, Int)] = [
            ("", nil, 3),
            ("[GATT]\n#Channels = 1\n", nil, 3),
            ("[General]\nName = kiosk\n[GATT]\n# a comment\nChannels = 1\n", 1, 1),
            ("[GATT]\nChannels=5\n", 5, 5),
            ("[ GATT ]\n  Channels   =   2  \n", 2, 2),
            ("[General]\nChannels = 1\n[GATT]\nKeySize = 16\n", nil, 3),  // another group's key is not GATT's
            ("[GATT]\nChannels = many\n", nil, 3),
            ("[GATT]\r\nChannels = 1\r\n", 1, 1),
        ]
        for (text, channels, effective) in cases {
            let configuration = BlueZMainConfiguration(text: text, path: "/etc/bluetooth/main.conf")
            #expect(configuration.channels == channels, "\(text.debugDescription)")
            #expect(configuration.effectiveChannels == effective)
            #expect(configuration.enhancedATT == (effective > 1))
        }
        let missing = BlueZMainConfiguration.current(environment: ["GBGBRIDGE_BLUEZ_MAIN_CONF": "/nonexistent/main.conf"])
        #expect(missing.path == nil && missing.enhancedATT)
    }
}
