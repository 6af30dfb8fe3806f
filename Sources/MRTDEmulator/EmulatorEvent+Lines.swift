import Foundation

extension VPCDEvent {
    /// The event as `gbgbridge emulate` prints it; power, reset and APDU events only when verbose
    /// (APDUs by size, never contents).
    public func line(port: UInt16, verbose: Bool) -> String? {
        switch self {
        case .connected: return "vpcd connected on port \(port): the card is in the reader"
        case .disconnected(let reason): return "vpcd disconnected (\(reason)); reconnecting"
        case .cardRemoved: return "card removed"
        case .powerOn: return verbose ? "power on" : nil
        case .powerOff: return verbose ? "power off" : nil
        case .reset: return verbose ? "reset" : nil
        case .apdu(let command, let response): return verbose ? "APDU \(command) bytes → \(response) bytes" : nil
        }
    }
}

extension PN532Emulator.Event {
    /// The event as `gbgbridge emulate --pn532-pty` prints it; the host's mistakes always, the
    /// rest only when verbose (APDUs by size, never contents).
    public func line(verbose: Bool) -> String? {
        switch self {
        case .badFrame(let reason): return "PN532: bad frame from the host (\(reason))"
        case .unsupported(let command): return String(format: "PN532: unsupported command 0x%02X answered with a syntax error", command)
        case .selected: return verbose ? "PN532: target activated" : nil
        case .apdu(let command, let response): return verbose ? "APDU \(command) bytes → \(response) bytes" : nil
        case .command(let code): return verbose ? String(format: "PN532: command 0x%02X", code) : nil
        case .aborted: return verbose ? "PN532: command aborted by the host" : nil
        }
    }
}

extension EmulatedPassport {
    /// What the chip is, for `gbgbridge emulate`'s first lines: its files, APDU limits, field
    /// behaviours and hostile modes.
    public var summaryLines: [String] {
        let files = applicationFiles.keys.sorted().map { String(format: "%04X", $0) }.joined(separator: " ")
        var lines = ["Emulating a passport (files \(files); \(extendedLength ? "extended length" : "short APDUs only"), max read \(maxReadLength) bytes)"]
        if !quirks.summary.isEmpty { lines.append("Field behaviours: \(quirks.summary.joined(separator: ", "))") }
        if !hostile.isEmpty { lines.append("Hostile card: \(hostile.summary.joined(separator: ", "))") }
        return lines
    }
}
