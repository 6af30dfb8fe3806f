import Foundation
import GBGBridge
import GBGBridgeStubs
import ImageCodecs
import MRZ

/// The MRZ of a document photo: read from every frame the capture kept, and claimed only when the
/// frames agree (from a camera: at least two frames with the same access key for
/// `accessKeyValid`, the same MRZ for `valid`) — one frame's lucky misreading cannot pass.
enum DocumentMRZ {
    struct Outcome: Sendable {
        var reading: MRZReading
        var framesRead: Int
        var framesAgreeing: Int
        /// Access keys for the chip to confirm (issue 50): the frames' candidates, the key the
        /// frames agreed on first, then by how many frames offered each and their scores.
        var candidates: [MRZKeyCandidate] = []

        /// The keys in the order the chip is to be tried with them.
        var keys: [[String]] { candidates.map(\.key) }
    }

    static let recognizer = MRZRecognizer()

    /// Where MRZ work runs: a queue of its own, one at a time, never the one that decodes chip
    /// photos (`DecodeQueue.shared`) — a hostile photo's search must not hold up a read's face.
    static let queue = DecodeQueue(width: 1)

    /// Reads `frames` (the photo last) on the MRZ queue, each within the camera frame budget.
    /// `needsAgreement`: frames of a camera.
    static func read(_ frames: [ImageCodecs.RGBImage], needsAgreement: Bool) async -> Outcome? {
        guard let recognizer else { return nil }
        var readings: [MRZReading] = []
        var offered: [[String]: (frames: Int, candidate: MRZKeyCandidate)] = [:]
        for frame in frames {
            let result = try? await queue.run { recognizer.read(frame, budget: MRZRecognizer.frameBudget) }
            if let reading = result?.reading { readings.append(reading) }
            for candidate in result?.candidates ?? [] {
                let held = offered[candidate.key]
                offered[candidate.key] = ((held?.frames ?? 0) + 1, held.map { $0.candidate.score >= candidate.score ? $0.candidate : candidate } ?? candidate)
            }
        }
        guard let last = readings.last else { return nil }
        func ranked(first agreed: [String]?) -> [MRZKeyCandidate] {
            var list = offered.values.sorted { $0.frames != $1.frames ? $0.frames > $1.frames : $0.candidate.score > $1.candidate.score }.map(\.candidate)
            if let agreed, let index = list.firstIndex(where: { $0.key == agreed }) { list.insert(list.remove(at: index), at: 0) }
            return Array(list.prefix(MRZKeyCandidate.maximum))
        }
        guard needsAgreement, frames.count > 1 else {
            return Outcome(reading: last, framesRead: frames.count, framesAgreeing: 1,
                           candidates: ranked(first: last.accessKeyValid ? last.key : nil))
        }
        // The access key most frames with a valid key agree on, and how many do.
        let keyed = readings.filter(\.accessKeyValid)
        let groups = Dictionary(grouping: keyed, by: \.key)
        guard let (_, agreeing) = groups.max(by: { $0.value.count < $1.value.count }), agreeing.count >= 2, var chosen = agreeing.last else {
            var reading = last
            reading.accessKeyValid = false
            reading.valid = false
            return Outcome(reading: reading, framesRead: frames.count, framesAgreeing: keyed.isEmpty ? 0 : 1, candidates: ranked(first: nil))
        }
        let sameLines = agreeing.filter { $0.valid && $0.lines == chosen.lines }.count
        chosen.valid = chosen.valid && sameLines >= 2
        return Outcome(reading: chosen, framesRead: frames.count, framesAgreeing: agreeing.count, candidates: ranked(first: chosen.key))
    }

    /// The response's `data.mrz`: the same fields `gbgbridge mrz --json` prints.
    static func json(_ outcome: Outcome) -> [String: JSONValue] {
        let r = outcome.reading
        return [
            "format": .string(r.format.rawValue), "lines": .array(r.lines.map(JSONValue.string)), "valid": .bool(r.valid),
            "accessKeyValid": .bool(r.accessKeyValid), "documentNumber": .string(r.documentNumber), "dateOfBirth": .string(r.dateOfBirth),
            "dateOfExpiry": .string(r.dateOfExpiry), "issuingState": .string(r.issuingState), "nationality": .string(r.nationality),
            "surname": .string(r.surname), "givenNames": .string(r.givenNames), "sex": .string(r.sex), "optionalData": .string(r.optionalData),
            "checkDigits": .object(r.checkDigits.mapValues(JSONValue.bool)), "confidence": .number(r.confidence),
            "framesRead": .number(Double(outcome.framesRead)), "framesAgreeing": .number(Double(outcome.framesAgreeing)),
            "accessKeyCandidates": .array(outcome.candidates.map { candidate in
                var object: [String: JSONValue] = ["documentNumber": .string(candidate.documentNumber), "dateOfBirth": .string(candidate.dateOfBirth),
                                                   "dateOfExpiry": .string(candidate.dateOfExpiry), "score": .number((candidate.score * 1000).rounded() / 1000)]
                if let composite = candidate.compositeValid { object["compositeValid"] = .bool(composite) }
                return .object(object)
            }),
            // Read optically: unverified until a chip confirms it (a read's DG1 is the document's MRZ).
            "source": .string("photo"),
        ]
    }

    /// The drawn page's MRZ, read once (the drawing never changes).
    static let stubReading: Task<Outcome?, Never> = Task {
        await read([StubDocumentCamera.drawPage()], needsAgreement: false)
    }
}
