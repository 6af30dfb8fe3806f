import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SmartCardCore
import Synchronization

/// A record of every APDU exchange of a read, one JSON object per line: what a user attaches to a
/// report about a document that does not read (`gbgbridge read --trace FILE`).
///
/// What it holds: the time, the step (`select`, `read`, `PACE`, `BAC`, `CA`, `AA`), the file and
/// offset of reads, the command and response bytes as they went over the air, the status word,
/// whether secure messaging protected the exchange, and reconnections after tag loss.
///
/// What it never holds: access keys (MRZ, CAN), session keys, nonces, or decrypted file contents.
/// Protected exchanges are written as they travelled (ciphertext under keys that are never
/// written); the data of the plain access-control exchanges (GET CHALLENGE's answer, EXTERNAL
/// AUTHENTICATE, PACE's GENERAL AUTHENTICATE, a plain INTERNAL AUTHENTICATE) is replaced by its
/// length, because with it an MRZ could be guessed offline. Nothing in a trace lets anyone open,
/// replay or copy the chip.
public final class APDUTrace: Sendable {
    private struct State {
        var file: PrivateFile.Stream?
        var failure: String?
        var sequence = 0
        let started = ContinuousClock.now
        var bytesWritten = 0
        var truncated = false
    }

    /// The most a trace file grows to unless told otherwise (`maxBytes`; a chip that answers forever
    /// must not fill the disk): past it one `truncated` line is written and nothing more but the
    /// read's last lines.
    package static let defaultMaxBytes = 32 * 1_048_576
    /// Room kept under the ceiling for the `truncated` line and the read's closing notes.
    static let closingReserve = 16_384
    private let maxBytes: Int

    private let state: Mutex<State>
    private let lines: (@Sendable (String) -> Void)?

    /// Writes to `url`: a new file of mode 0600 in its directory that takes the name on `close()`
    /// (`PrivateFile`: a symlink or a file already there is replaced, never written through).
    public init(url: URL, maxBytes: Int = 32 * 1_048_576) throws(MRTDError) {
        do {
            state = Mutex(State(file: try PrivateFile.Stream(path: url.path)))
        } catch {
            throw MRTDError(.communicationFailure, "cannot write the trace: \(error.description)")
        }
        lines = nil
        self.maxBytes = max(maxBytes, Self.closingReserve * 2)
    }

    /// Hands each line to `sink` (tests, embedders with a log of their own).
    public init(sink: @escaping @Sendable (String) -> Void, maxBytes: Int = 32 * 1_048_576) {
        state = Mutex(State())
        lines = sink
        self.maxBytes = max(maxBytes, Self.closingReserve * 2)
    }

    /// Whether the trace reached its ceiling and stopped recording exchanges.
    package var isTruncated: Bool { state.withLock { $0.truncated } }

    /// A line of its own: `{"event": name, …fields}` (the reader, the ATR, the outcome).
    public func note(_ event: String, _ fields: [String: String] = [:]) {
        var object: [String: JSONField] = ["event": .text(event)]
        for (key, value) in fields { object[key] = .text(value) }
        write(object)
    }

    /// Writes the rest and gives the file its name.
    public func close() {
        state.withLock { state in
            do {
                try state.file?.commit()
            } catch {
                if state.failure == nil { state.failure = String(describing: error) }
            }
            state.file = nil
        }
    }

    /// Why the trace file could not be written (a full disk, a directory that went away), if it
    /// could not; the read itself goes on regardless.
    public var writeFailure: String? { state.withLock { $0.failure } }

    /// One exchange. `command` is the unprotected command (what the reader meant), `wire` the
    /// bytes sent, `response` those received (nil when the exchange failed with `error`),
    /// `status` the status the reader acted on (the protected one for secure messaging).
    func record(command: CommandAPDU, wire: [UInt8], response: [UInt8]?, protected: Bool, status: StatusWord?,
                duration: Duration, context: TraceContext, error: String? = nil) {
        var object: [String: JSONField] = ["protected": .flag(protected), "durationMs": .number(Self.milliseconds(duration))]
        let (step, detail) = Self.step(of: command, context: context)
        object["step"] = .text(step)
        if let detail { object["detail"] = .text(detail) }
        if let phase = context.phase { object["phase"] = .text(phase) }
        if command.ins == 0xB0 || command.ins == 0xB1 {
            if let file = context.file { object["file"] = .text(file) }
            if let offset = Self.offset(of: command) { object["offset"] = .number(Double(offset)) }
            if let ne = command.ne { object["length"] = .number(Double(ne)) }
        }
        // Plain access-control data could let an MRZ be guessed offline: only its length is kept.
        let redactCommand = !protected && [0x82, 0x86, 0x88].contains(command.ins) && !command.data.isEmpty
        let redactResponse = !protected && [0x84, 0x82, 0x86, 0x88].contains(command.ins)
        if redactCommand {
            object["command"] = .text(Self.hex(Array(wire.prefix(4))))
            object["commandRedacted"] = .text("\(command.data.count) bytes of access-control data")
        } else {
            object["command"] = .text(Self.hex(wire))
        }
        object["commandLength"] = .number(Double(wire.count))
        if let response {
            let sw = response.count >= 2 ? Array(response.suffix(2)) : []
            if redactResponse && response.count > 2 {
                object["response"] = .text(Self.hex(sw))
                object["responseRedacted"] = .text("\(response.count - 2) bytes of access-control data")
            } else {
                object["response"] = .text(Self.hex(response))
            }
            object["responseLength"] = .number(Double(response.count))
            if !sw.isEmpty { object["sw"] = .text(Self.hex(sw)) }
            if let status { object["status"] = .text(Formatting.hex(status.rawValue, width: 4)) }
        }
        if let error { object["error"] = .text(error) }
        write(object)
    }

    // MARK: Steps

    /// What the reader is doing besides what the command says: the protocol whose MSE / GENERAL
    /// AUTHENTICATE this is, its stage, and the file being read.
    package struct TraceContext {
        /// The step of the read (`access control`, `data groups` …) the exchange belongs to.
        package var phase: String?
        package var step: String?
        package var detail: String?
        package var file: String?

        package init(step: String? = nil, detail: String? = nil, file: String? = nil) {
            self.step = step
            self.detail = detail
            self.file = file
        }
    }

    static func step(of command: CommandAPDU, context: TraceContext) -> (String, String?) {
        switch command.ins {
        case 0xA4:
            return ("select", command.data.isEmpty ? nil : hex(command.data))
        case 0xB0, 0xB1:
            return ("read", nil)
        case 0x84:
            return ("BAC", "GET CHALLENGE")
        case 0x82:
            return ("BAC", "EXTERNAL AUTHENTICATE")
        case 0x22:
            let what = command.p2 == 0xA6 ? "MSE:Set KAT" : "MSE:Set AT"
            return (context.step ?? "MSE", what)
        case 0x86:
            return (context.step ?? "GENERAL AUTHENTICATE", context.detail ?? "GENERAL AUTHENTICATE")
        case 0x88:
            return ("AA", "INTERNAL AUTHENTICATE")
        default:
            return ("other", "INS " + Formatting.hex(command.ins, width: 2))
        }
    }

    /// The offset a READ BINARY reads from (P1-P2, P2 with a short EF identifier, DO54 for B1).
    static func offset(of command: CommandAPDU) -> Int? {
        if command.ins == 0xB1 {
            guard let object = try? BERTLV.parseSingle(command.data), object.tag == 0x54 else { return nil }
            return object.value.reduce(0) { $0 << 8 | Int($1) }
        }
        if command.p1 & 0x80 != 0 { return Int(command.p2) }
        return Int(command.p1) << 8 | Int(command.p2)
    }

    // MARK: Writing

    enum JSONField {
        case text(String)
        case number(Double)
        case flag(Bool)

        var json: String {
            switch self {
            case .text(let value): return APDUTrace.quoted(value)
            case .number(let value):
                return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : Formatting.fixed(value, places: 3)
            case .flag(let value): return value ? "true" : "false"
            }
        }
    }

    private func write(_ fields: [String: JSONField]) {
        let isExchange = fields["event"] == nil
        let written = state.withLock { state -> [String] in
            // Exchanges stop at the ceiling less the reserve; the read's own notes (start, end,
            // card removed and back) go on into the reserve, and nothing past the ceiling.
            let room = maxBytes - state.bytesWritten - (isExchange ? Self.closingReserve : 0)
            var out: [String] = []
            if isExchange, room <= 0 {
                guard !state.truncated else { return [] }
                state.truncated = true
                out.append(line(["event": .text("truncated"), "maxBytes": .number(Double(maxBytes)),
                                 "reason": .text("the trace reached its ceiling; further exchanges are not recorded")], &state))
            } else {
                let text = line(fields, &state)
                guard text.utf8.count + 1 <= room || (!isExchange && state.bytesWritten + text.utf8.count + 1 <= maxBytes) else { return [] }
                out.append(text)
            }
            for text in out {
                state.bytesWritten += text.utf8.count + 1
                if let file = state.file, state.failure == nil {
                    do {
                        try file.write(Array((text + "\n").utf8))
                    } catch {
                        state.failure = String(describing: error)
                    }
                }
            }
            return out
        }
        written.forEach { lines?($0) }
    }

    private func line(_ fields: [String: JSONField], _ state: inout State) -> String {
        state.sequence += 1
        var object = fields
        object["seq"] = .number(Double(state.sequence))
        object["time"] = .text(Self.timestamp(Date()))
        object["elapsedMs"] = .number(Self.milliseconds(ContinuousClock.now - state.started))
        let body = object.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)):\($0.value.json)" }.joined(separator: ",")
        return "{" + body + "}"
    }

    /// A JSON string literal (JSONEncoder's escaping: quotes, backslashes, control characters).
    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }

    static func hex(_ bytes: [UInt8]) -> String { Formatting.hex(bytes) }

    static func milliseconds(_ duration: Duration) -> Double {
        ((Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15) * 1000).rounded() / 1000
    }

    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
