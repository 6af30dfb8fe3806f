/// JSON text (RFC 8259) read the way a page's `JSON.parse` reads it, and refused where the two
/// could disagree: a duplicate key (JavaScript keeps the last, Foundation the first), a number
/// that is not finite (`1e999`, `NaN`), a lone UTF-16 surrogate in a `\u` escape, a control
/// character inside a string, nesting deeper than `maxDepth`, anything after the value.
///
/// `salvage(_:)` reads the members of a broken top-level object as far as they go, so that a
/// request whose envelope is wrong can still be answered under its `correlationId`.
enum StrictJSON {
    /// How deep objects and arrays may nest (a bridge message needs a handful of levels).
    static let maxDepth = 128

    /// Why a text is not strict JSON: what and where (byte offset).
    struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        var reason: String
        var offset: Int
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses `text` strictly.
    static func parse(_ text: String) throws(SyntaxError) -> JSONValue {
        var copy = text
        return try copy.withUTF8 { bytes in read(bytes) }.get()
    }

    /// Parses UTF-8 bytes strictly (invalid UTF-8 is refused).
    static func parse(utf8 bytes: [UInt8]) throws(SyntaxError) -> JSONValue {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw SyntaxError(reason: "the text is not valid UTF-8", offset: 0)
        }
        return try bytes.withUnsafeBufferPointer { buffer in read(buffer) }.get()
    }

    private static func read(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, SyntaxError> {
        var reader = Reader(bytes: bytes, strict: true)
        do {
            return .success(try reader.document())
        } catch {
            return .failure(error)
        }
    }

    /// The members of a top-level object as far as they can be read, leniently (duplicates: the
    /// last wins, `NaN`/`Infinity`/overflowing numbers and lone surrogates accepted); `nil` when
    /// the text does not start as an object.
    static func salvage(_ text: String) -> [String: JSONValue]? {
        var copy = text
        return copy.withUTF8 { bytes -> [String: JSONValue]? in
            var reader = Reader(bytes: bytes, strict: false)
            return reader.salvageObject()
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        let strict: Bool
        var index = 0
        var depth = 0
        /// Where the reader is, as object keys and array indices, for error texts.
        var path: [String] = []

        init(bytes: UnsafeBufferPointer<UInt8>, strict: Bool) {
            self.bytes = bytes
            self.strict = strict
        }

        mutating func document() throws(SyntaxError) -> JSONValue {
            skipWhitespace()
            guard index < bytes.count else { throw fail("empty text") }
            let value = try self.value()
            skipWhitespace()
            guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
            return value
        }

        mutating func salvageObject() -> [String: JSONValue]? {
            skipWhitespace()
            guard peek == UInt8(ascii: "{") else { return nil }
            index += 1
            depth = 1
            var members: [String: JSONValue] = [:]
            while true {
                skipWhitespace()
                guard let key = try? string() else { return members }
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { return members }
                index += 1
                skipWhitespace()
                guard let value = try? value() else { return members }
                members[key] = value
                skipWhitespace()
                guard peek == UInt8(ascii: ",") else { return members }
                index += 1
            }
        }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        func fail(_ reason: String) -> SyntaxError {
            let place = path.isEmpty ? "" : " in '\(LogText.clip(path.joined(separator: "."), to: 120))'"
            return SyntaxError(reason: reason + place, offset: index)
        }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value() throws(SyntaxError) -> JSONValue {
            guard let byte = peek else { throw fail("the text ends where a value should be") }
            switch byte {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            case UInt8(ascii: "N"), UInt8(ascii: "I"):
                guard !strict else { throw fail("NaN and Infinity are not JSON numbers") }
                if byte == UInt8(ascii: "N") {
                    try literal("NaN")
                    return .number(.nan)
                }
                try literal("Infinity")
                return .number(.infinity)
            default:
                throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard bytes.count - index >= expected.count,
                  zip(bytes[index..<(index + expected.count)], expected).allSatisfy({ $0 == $1 }) else {
                throw fail("unexpected character")
            }
            index += expected.count
        }

        mutating func enter() throws(SyntaxError) {
            depth += 1
            guard depth <= StrictJSON.maxDepth else { throw fail("nesting deeper than \(StrictJSON.maxDepth) levels") }
        }

        mutating func object() throws(SyntaxError) -> JSONValue {
            try enter()
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\"") else { throw fail("an object key must be a string") }
                let keyStart = index
                let key = try string()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { throw fail("expected ':' after an object key") }
                index += 1
                skipWhitespace()
                path.append(key)
                let element = try value()
                path.removeLast()
                if strict, members[key] != nil {
                    index = keyStart
                    throw fail("duplicate key '\(LogText.clip(key, to: 60))'")
                }
                members[key] = element
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    depth -= 1
                    return .object(members)
                default: throw fail("expected ',' or '}' in an object")
                }
            }
        }

        mutating func array() throws(SyntaxError) -> JSONValue {
            try enter()
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if peek == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                path.append("[\(elements.count)]")
                elements.append(try value())
                path.removeLast()
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    depth -= 1
                    return .array(elements)
                default: throw fail("expected ',' or ']' in an array")
                }
            }
        }

        /// A number by RFC 8259's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() throws(SyntaxError) -> Double {
            let start = index
            func digits(_ reader: inout Reader) -> Int {
                let first = reader.index
                while let byte = reader.peek, byte >= 0x30, byte <= 0x39 { reader.index += 1 }
                return reader.index - first
            }
            if peek == UInt8(ascii: "-") {
                index += 1
                if !strict, peek == UInt8(ascii: "I") {
                    try literal("Infinity")
                    return -.infinity
                }
            }
            if peek == UInt8(ascii: "0") {
                index += 1
                if let byte = peek, byte >= 0x30, byte <= 0x39 { throw fail("a number may not start with 0") }
            } else if digits(&self) == 0 {
                throw fail("a number needs digits")
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail("a number needs digits after '.'") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("a number needs digits in its exponent") }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text) else {
                index = start
                throw fail("unreadable number")
            }
            if strict, !value.isFinite {
                index = start
                throw fail("number out of range")
            }
            return value
        }

        mutating func string() throws(SyntaxError) -> String {
            guard peek == UInt8(ascii: "\"") else { throw fail("expected a string") }
            index += 1
            var out: [UInt8] = []
            while true {
                // Copy the run up to the next quote, backslash or control character at once.
                let run = index
                while index < bytes.count, bytes[index] != 0x22, bytes[index] != 0x5C, bytes[index] >= 0x20 { index += 1 }
                if index > run { out.append(contentsOf: bytes[run..<index]) }
                guard let byte = peek else { throw fail("unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    index += 1
                    try escape(into: &out)
                case 0x00..<0x20:
                    if strict { throw fail("control character in a string (escape it)") }
                    out.append(byte)
                    index += 1
                default:
                    out.append(byte)
                    index += 1
                }
            }
        }

        mutating func escape(into out: inout [UInt8]) throws(SyntaxError) {
            guard let byte = peek else { throw fail("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(byte)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hex4()
                var scalar: Unicode.Scalar?
                if (0xD800...0xDBFF).contains(unit) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    let save = index
                    if peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                        } else {
                            index = save
                        }
                    }
                } else if !(0xDC00...0xDFFF).contains(unit) {
                    scalar = Unicode.Scalar(unit)
                }
                guard let scalar else {
                    if strict { throw fail("lone UTF-16 surrogate in a \\u escape") }
                    out.append(contentsOf: [0xEF, 0xBF, 0xBD])  // U+FFFD
                    return
                }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                throw fail("unknown escape in a string")
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("a \\u escape needs four hex digits") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("a \\u escape needs four hex digits")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
