import CBORCoding
import Testing

/// RFC 8949 Appendix A's examples, both ways, and what a hostile holder's CBOR must cost at most.
struct CBORTests {
    /// (diagnostic, encoding) pairs from RFC 8949 Appendix A, in preferred serialization.
    static let examples: [(CBOR, String)] = [
        (0, "00"), (1, "01"), (10, "0a"), (23, "17"), (24, "1818"), (25, "1819"), (100, "1864"), (1000, "1903e8"),
        (1_000_000, "1a000f4240"), (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"), (.unsigned(UInt64.max), "1bffffffffffffffff"),
        (.negative(UInt64.max), "3bffffffffffffffff"), (-1, "20"), (-10, "29"), (-100, "3863"), (-1000, "3903e7"),
        (.float(0.0), "f90000"), (.float(-0.0), "f98000"), (.float(1.0), "f93c00"), (.float(1.1), "fb3ff199999999999a"),
        (.float(1.5), "f93e00"), (.float(65504.0), "f97bff"), (.float(100000.0), "fa47c35000"), (.float(3.4028234663852886e+38), "fa7f7fffff"),
        (.float(1.0e+300), "fb7e37e43c8800759c"), (.float(5.960464477539063e-8), "f90001"), (.float(0.00006103515625), "f90400"),
        (.float(-4.0), "f9c400"), (.float(-4.1), "fbc010666666666666"), (.float(.infinity), "f97c00"), (.float(-.infinity), "f9fc00"),
        (false, "f4"), (true, "f5"), (.null, "f6"), (.undefined, "f7"), (.simple(16), "f0"), (.simple(255), "f8ff"),
        (.tagged(0, "2013-03-21T20:04:00Z"), "c074323031332d30332d32315432303a30343a30305a"),
        (.tagged(1, 1_363_896_240), "c11a514b67b0"), (.tagged(23, .bytes([1, 2, 3, 4])), "d74401020304"),
        (.tagged(32, "http://www.example.com"), "d82076687474703a2f2f7777772e6578616d706c652e636f6d"),
        (.bytes([]), "40"), (.bytes([1, 2, 3, 4]), "4401020304"), ("", "60"), ("a", "6161"), ("IETF", "6449455446"),
        ("\"\\", "62225c"), ("\u{00fc}", "62c3bc"), ("\u{6c34}", "63e6b0b4"), ("\u{10151}", "64f0908591"),
        (.array([]), "80"), (.array([1, 2, 3]), "83010203"), (.array([1, .array([2, 3]), .array([4, 5])]), "8301820203820405"),
        (.array((1...25).map { CBOR($0) }), "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
        (.map([:]), "a0"), (.map([1: 2, 3: 4]), "a201020304"), (.map(["a": 1, "b": .array([2, 3])]), "a26161016162820203"),
        (.array(["a", .map(["b": "c"])]), "826161a161626163"),
    ]

    @Test(arguments: 0..<examples.count)
    func appendixA(index: Int) throws {
        let (value, hex) = Self.examples[index]
        let encoding = try #require(hexBytes(hex))
        #expect(value.encoded() == encoding, "encoding \(value)")
        let decoded = try CBOR.decode(encoding)
        if case .float(let number) = value, number.isNaN {
            return
        }
        #expect(decoded == value, "decoding \(hex)")
    }

    /// Appendix A's indefinite-length forms decode to the same values as the definite ones.
    @Test(arguments: [
        ("5f42010243030405ff", CBOR.bytes([1, 2, 3, 4, 5])), ("7f657374726561646d696e67ff", CBOR.text("streaming")),
        ("9fff", CBOR.array([])), ("9f018202039f0405ffff", CBOR.array([1, .array([2, 3]), .array([4, 5])])),
        ("bf61610161629f0203ffff", CBOR.map(["a": 1, "b": .array([2, 3])])), ("f97e00", CBOR.float(.nan)),
    ])
    func indefiniteLengths(hex: String, value: CBOR) throws {
        let decoded = try CBOR.decode(try #require(hexBytes(hex)))
        if case .float(let number) = value, number.isNaN {
            guard case .float(let got) = decoded else { Issue.record("not a float"); return }
            #expect(got.isNaN)
        } else {
            #expect(decoded == value)
        }
    }

    func refusal(_ bytes: [UInt8], limits: CBORLimits = .default) -> CBORError.Code? {
        do {
            _ = try CBOR.decode(bytes, limits: limits)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func nestingIsBoundedBeforeTheStackIs() {
        // 100,000 nested arrays: refused at the depth limit, without recursing 100,000 deep.
        #expect(refusal([UInt8](repeating: 0x81, count: 100_000) + [0x00]) == .tooDeep)
        #expect(refusal([UInt8](repeating: 0x9F, count: 100_000)) == .tooDeep)
        #expect(refusal([UInt8](repeating: 0xD8, count: 1) + [UInt8](repeating: 0x18, count: 1) + [UInt8](repeating: 0xC1, count: 50_000) + [0]) != nil)
    }

    @Test func declaredLengthsThatLieAreRefusedBeforeAllocating() {
        // An array of 2^64-1 elements, a map of 2^32, a byte string of 4 GiB, in a few bytes.
        #expect(refusal([0x9B] + [UInt8](repeating: 0xFF, count: 8)) == .truncated)
        #expect(refusal([0xBA, 0xFF, 0xFF, 0xFF, 0xFF]) == .truncated)
        #expect(refusal([0x5A, 0xFF, 0xFF, 0xFF, 0xFF]) == .tooLong)
        #expect(refusal([0x44, 1, 2]) == .truncated)
    }

    @Test func indefiniteLengthBombsAreBounded() {
        // A million one-byte chunks: refused at the chunk limit.
        let chunks = [0x5F] + [UInt8]((0..<1_000_000).flatMap { _ in [UInt8(0x41), 0x00] }) + [0xFF]
        #expect(refusal(chunks, limits: CBORLimits(maximumBytes: 4 << 20, maximumDepth: 8, maximumItems: 10_000_000, maximumStringBytes: 4 << 20)) == .indefiniteLength)
        // An indefinite array never closed.
        #expect(refusal([0x9F] + [UInt8](repeating: 0x00, count: 1000)) == .truncated)
        // Items beyond the count limit.
        #expect(refusal([0x9F] + [UInt8](repeating: 0x00, count: 200_000) + [0xFF]) == .tooManyItems)
        var strict = CBORLimits.default
        strict.allowsIndefiniteLength = false
        #expect(refusal([0x9F, 0xFF], limits: strict) == .indefiniteLength)
        #expect(refusal([0x5F, 0xFF], limits: strict) == .indefiniteLength)
    }

    @Test func malformedItemsAreRefusedWithTheirCode() {
        #expect(refusal([0xA2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02]) == .duplicateKey)
        #expect(refusal([0x62, 0xC3, 0x28]) == .invalidUTF8)
        #expect(refusal([0x01, 0x02]) == .trailingBytes)
        #expect(refusal([0x1C]) == .malformed)
        #expect(refusal([0xFF]) == .malformed)
        #expect(refusal([0xF8, 0x10]) == .malformed)
        #expect(refusal([0x5F, 0x61, 0x61, 0xFF]) == .malformed)
        #expect(refusal([0xD8, 0x18, 0x01]) == .unexpectedType)
        #expect(refusal([]) == .truncated)
        var preferred = CBORLimits.default
        preferred.requiresPreferredSerialization = true
        #expect(refusal([0x18, 0x05], limits: preferred) == .nonPreferred)
        #expect(refusal([0x18, 0x05]) == nil)
        #expect(refusal([UInt8](repeating: 0, count: 10), limits: CBORLimits(maximumBytes: 5, maximumDepth: 4, maximumItems: 4, maximumStringBytes: 4)) == .tooLong)
    }

    /// Tag 24 keeps the bytes received, even a non-preferred head, so digests over them hold.
    @Test func embeddedCBORKeepsTheBytesReceived() throws {
        let wrapped: [UInt8] = [0x81] + [0xD8, 0x18, 0x58, 0x01, 0xA0]
        let decoded = try CBOR.decode(wrapped)
        let embedded = try #require(decoded.arrayValue?.first?.embeddedValue)
        #expect(embedded.taggedBytes == [0xD8, 0x18, 0x58, 0x01, 0xA0])
        #expect(embedded.content == [0xA0])
        #expect(decoded.encoded() == wrapped)
        #expect(EmbeddedCBOR(wrapping: [0xA0]).taggedBytes == [0xD8, 0x18, 0x41, 0xA0])
    }
}
