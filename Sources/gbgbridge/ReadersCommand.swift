import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import SmartCard

/// `gbgbridge readers`: what the reader back ends see.
struct ReadersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "List smart-card readers with their card state and ATR.",
        discussion: """
            Asks pcscd for its readers (PC/SC) and libnfc for its devices (PN532/PN533 \
            and others pcscd does not drive; /etc/nfc/libnfc.conf, LIBNFC_DEVICE, or \
            --libnfc-device). libnfc devices are named libnfc:<connstring>; listing one \
            polls its field once. Exit status: 0 readers listed (possibly none), 1 neither \
            pcscd nor libnfc usable.
            """
    )

    @Option(name: .long, help: ArgumentHelp("A libnfc device to include, e.g. pn532_uart:/dev/ttyUSB0; repeatable.", valueName: "CONNSTRING"))
    var libnfcDevice: [String] = []

    @Flag(name: .long, help: "PC/SC readers only (no libnfc discovery).")
    var pcscOnly = false

    @Flag(name: .long, help: "Print JSON: {\"readers\":[{backend,name,cardPresent,atr,exclusive,mute}]}.")
    var json = false

    func run() async throws {
        let readers: [ReaderInfo]
        do {
            let backend: any CardReaderBackend = pcscOnly
                ? PCSCBackend() : CombinedReaderBackend.standard(libnfcDevices: libnfcDevice)
            readers = try await backend.readers()
        } catch let error as SmartCardError {
            if json {
                printJSON(["error": ["code": error.code.rawValue, "message": error.reason]])
            } else {
                printError("gbgbridge: \(error.reason)")
            }
            throw ExitCode(1)
        }
        if json {
            printJSON(["readers": readers.map { reader -> [String: Any] in
                var entry: [String: Any] = ["backend": reader.backend, "name": reader.name, "cardPresent": reader.cardPresent,
                                            "exclusive": reader.exclusive, "mute": reader.mute]
                entry["atr"] = reader.atr.map { hex($0) } ?? NSNull()
                return entry
            }])
            return
        }
        if readers.isEmpty {
            print("No smart-card reader is connected (neither pcscd nor libnfc reports one).")
            return
        }
        for reader in readers {
            var state = reader.cardPresent ? "card present" : "no card"
            if reader.mute { state += ", card mute" }
            if reader.exclusive { state += ", in exclusive use" }
            print("[\(reader.backend)] \(reader.name): \(state)")
            if let atr = reader.atr { print("    ATR \(hex(atr, separator: " "))") }
        }
    }
}
