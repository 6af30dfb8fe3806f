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
        for frame in frames {
            let result = try? await queue.run { recognizer.read(frame, budget: MRZRecognizer.frameBudget).reading }
            if let reading = result.flatMap({ $0 }) { readings.append(reading) }
        }
        guard let last = readings.last else { return nil }
        guard needsAgreement, frames.count > 1 else { return Outcome(reading: last, framesRead: frames.count, framesAgreeing: 1) }
        func key(_ r: MRZReading) -> [String] { [r.documentNumber, r.dateOfBirth, r.dateOfExpiry] }
        // The access key most frames with a valid key agree on, and how many do.
        let keyed = readings.filter(\.accessKeyValid)
        let groups = Dictionary(grouping: keyed, by: key)
        guard let (_, agreeing) = groups.max(by: { $0.value.count < $1.value.count }), agreeing.count >= 2, var chosen = agreeing.last else {
            var reading = last
            reading.accessKeyValid = false
            reading.valid = false
            return Outcome(reading: reading, framesRead: frames.count, framesAgreeing: keyed.isEmpty ? 0 : 1)
        }
        let sameLines = agreeing.filter { $0.valid && $0.lines == chosen.lines }.count
        chosen.valid = chosen.valid && sameLines >= 2
        return Outcome(reading: chosen, framesRead: frames.count, framesAgreeing: agreeing.count)
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
        ]
    }

    /// The drawn page's MRZ, read once (the drawing never changes).
    static let stubReading: Task<Outcome?, Never> = Task {
        await read([StubDocumentCamera.drawPage()], needsAgreement: false)
    }
}
