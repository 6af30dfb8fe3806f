import ChipRead
import Foundation
import GBGBridgeNFC
import MRTD
import MRTDCrypto
import Synchronization

/// `gbgbridge demo`'s stand-in for a journey's backend (zero-trust kiosk, Docs/server-side-
/// verification.md): it issues Active Authentication challenges and verifies the chip evidence a
/// page posts with the offline `EvidenceVerifier` — what a real backend does on its own server.
package final class DemoBackend: Sendable {
    package let trustStore: TrustStore
    /// Challenges issued and not yet used (base64), oldest first; each verifies one read.
    private let issued = Mutex<[String]>([])
    package static let maxOutstanding = 64

    package init(trustStore: TrustStore) {
        self.trustStore = trustStore
    }

    /// `POST /demo/challenge` → `{"challenge": "<8 bytes, base64>"}`.
    package func challenge(_ body: [UInt8]) -> (status: Int, body: [UInt8]) {
        let challenge = Data(secureRandomBytes(8)).base64EncodedString()
        issued.withLock { list in
            list.append(challenge)
            if list.count > Self.maxOutstanding { list.removeFirst(list.count - Self.maxOutstanding) }
        }
        return (200, Self.json(["challenge": challenge]))
    }

    /// `POST /demo/verify-evidence` with the evidence (or nfc.read's data carrying it) →
    /// `{"verification": {passive, chip, active, …}, "challengeIssuedHere": Bool, "evidenceBytes": N}`.
    package func verify(_ body: [UInt8]) -> (status: Int, body: [UInt8]) {
        let evidence: ChipEvidence
        do {
            evidence = try ChipEvidence(json: Data(body))
        } catch {
            return (400, Self.json(["error": ["code": error.code.rawValue, "message": error.reason]]))
        }
        // The challenge counts only if this backend issued it, and only once (a replay fails).
        let sent = evidence.chip.activeAuthentication?.challenge
        let ours = sent.map { challenge in
            issued.withLock { list in
                guard let index = list.firstIndex(of: challenge) else { return false }
                list.remove(at: index)
                return true
            }
        } ?? false
        do {
            var result = try EvidenceVerifier(trustStore: trustStore).verify(evidence, challenge: nil)
            if sent != nil, !ours {
                result.active = VerificationOutcome(status: .invalid,
                                                    detail: "the chip signed a challenge this backend did not issue (or one already used): a replay cannot be ruled out")
            }
            let report = ReadReport(result, face: nil)  // only the checks are answered: no image is decoded
            let verification = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report.verification))
            return (200, Self.json(["verification": verification, "challengeIssuedHere": ours, "evidenceBytes": body.count]))
        } catch let error as MRTDError {
            return (400, Self.json(["error": ["code": error.code.rawValue, "message": error.reason]]))
        } catch {
            return (500, Self.json(["error": ["code": "INTERNAL", "message": "the verification could not be encoded"]]))
        }
    }

    package static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}
