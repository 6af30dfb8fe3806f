import Foundation
import Mdoc
import MdocEmulator
import TestSupport
import Testing

/// Every hostile holder mode: a typed error or a withheld element, never `valid` over bad data.
/// The read's deadline (4 s) bounds each; the benchmark, not the test, says how long they take.
@Suite("hostile mdoc holders through pcscd + vpcd", .serialized)
struct MdocHostileHolderTests {
    enum Expected {
        case error(MdocError.Code)
        case withheld(String, MdocVerification.WithholdReason)
        case issuer(MdocVerification.IssuerVerdict)
        case device(MdocVerification.DeviceVerdict)
        case valid
    }

    static let cases: [(MdocHostileMode, MdocHolder.DeviceAuth, Expected)] = [
        (.badDigest, .signature, .withheld("birth_date", .digestMismatch)),
        (.expiredSigner, .signature, .issuer(.expired)),
        (.untrustedIACA, .signature, .issuer(.untrusted)),
        (.wrongDeviceSignature, .signature, .device(.invalid)),
        (.wrongMAC, .mac, .device(.invalid)),
        (.hugeElement, .signature, .error(.limitExceeded)),
        (.deepCBOR, .signature, .error(.limitExceeded)),
        (.indefiniteBomb, .signature, .error(.limitExceeded)),
        (.getResponseForever, .signature, .error(.limitExceeded)),
        (.ndefLengthLies, .signature, .error(.engagement)),
        (.slowAPDU, .signature, .error(.timeout)),
        (.garbageAfterSession, .signature, .valid),
        (.reusedIV, .signature, .error(.sessionEncryption)),
        (.unrequestedElements, .signature, .withheld("sex", .notRequested)),
        (.decline, .signature, .error(.noDocument)),
    ]

    @Test("each hostile mode ends typed, within the deadline", arguments: 0..<cases.count)
    func hostile(index: Int) async throws {
        let (mode, auth, expected) = Self.cases[index]
        let holder = try MdocNFCReadTests.holder(.static, auth, hostile: [mode])
        let request = try MdocNFCReadTests.identity()
        do {
            let (_, result) = try await MdocNFCReadTests.read(holder, request: request, timeout: .seconds(4))
            switch expected {
            case .error(let code):
                Issue.record("\(mode): read without error, expected \(code); issuer \(result.issuer), device \(result.device)")
            case .withheld(let element, let reason):
                #expect(result.withheld.contains { $0.identifier == element && $0.reason == reason }, "\(mode): \(result.withheld)")
                #expect(!result.elements.contains { $0.identifier == element && reason == .digestMismatch }, "\(mode)")
                #expect(result.issuer == .valid, "\(mode): \(result.issuerReason ?? "")")
            case .issuer(let verdict):
                #expect(result.issuer == verdict, "\(mode): \(result.issuerReason ?? "")")
            case .device(let verdict):
                #expect(result.device == verdict, "\(mode): \(result.deviceReason ?? "")")
                #expect(result.issuer == .valid)
            case .valid:
                #expect(result.issuer == .valid && result.device == .valid, "\(mode)")
            }
        } catch let error as MdocError {
            guard case .error(let code) = expected else {
                Issue.record("\(mode): \(error)")
                return
            }
            #expect(error.code == code, "\(mode): \(error)")
        }
    }
}
