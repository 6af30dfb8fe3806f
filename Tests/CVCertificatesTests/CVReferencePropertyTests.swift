import CVCertificates
import PropertyBased
import TestSupport
import Testing

/// CARs and CHRs given as text (the `terminal request` command line) mixed with Unicode that looks
/// like letters and digits — combining marks, full-width digits, control characters: each is
/// refused with a typed error naming the field, or taken byte for byte as printable ISO/IEC 8859-1.
@Suite("CV certificate references from hostile text (property-based)")
struct CVReferencePropertyTests {
    static let references = ["UTIS0000002", "UTDVIS00001", "DECVCAAT00001", "ZZ12345", "UTMNEMONICX00001"]

    @Test func referencesAreRefusedOrKeptByteForByte() async {
        await propertyCheck(count: 500, input: HostileText.mutations(of: Self.references)) { text in
            do {
                let bytes = try CVCertificate.referenceBytes(validating: text, "CHR")
                #expect(text.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) || (0xA0...0xFF).contains($0.value) }, "accepted \(text.debugDescription)")
                #expect(bytes == text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }, "changed on the way: \(text.debugDescription)")
                #expect((try? CVCertificate.reference(bytes, "CHR")) == text)
            } catch let error as CVCertificateError {
                #expect(error.field == "CHR" && error.code == .malformed, "\(error)")
            } catch {
                Issue.record("not a CVCertificateError: \(error)")
            }
        }
    }

    @Test func lookalikesAreRefused() throws {
        for text in ["UTIS00000\u{301}2", "UTIS\u{FF10}000002", "UTIS\t000002", "UTIS000\u{0}0002", "UTIS0000\u{200B}02", "UTIS00000２"] {
            #expect(throws: CVCertificateError.self, "\(text.debugDescription)") { try CVCertificate.referenceBytes(validating: text, "CHR") }
        }
        #expect(try CVCertificate.referenceBytes(validating: "UTÄIS00002", "CHR") == [0x55, 0x54, 0xC4, 0x49, 0x53, 0x30, 0x30, 0x30, 0x30, 0x32])
    }
}
