import Cameras
import Foundation
import ImageCodecs
import MRTD
import MRZ

/// `gbgbridge read --mrz-from-camera`: frames from a camera until two agree on an access key
/// whose check digits hold, within a time limit.
package enum CameraMRZ {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Frames until two in a row agree on an access key that earns `accessKeyValid` (that key
    /// first), or — at the time limit — the keys the frames offered as candidates, most often
    /// offered first (issue 50: the chip decides). At most three keys.
    package static func read(camera: String?, within limit: Duration, progress: @escaping @Sendable (String) -> Void) async throws -> [AccessKey] {
        guard let recognizer = MRZRecognizer() else { throw Failure(description: "this build has no trained MRZ reader") }
        let deadline = ContinuousClock.now + limit
        guard let path = await CameraTool.documentCamera(camera) else {
            throw Failure(description: "no camera to read the MRZ with (gbgbridge camera list)")
        }
        var frames = 0
        var lastKey: [String]?
        var offered: [[String]: (count: Int, score: Double)] = [:]
        func keys(first: [String]?) -> [AccessKey] {
            var ranked = offered.sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.value.score > $1.value.score }.map(\.key)
            if let first {
                ranked.removeAll { $0 == first }
                ranked.insert(first, at: 0)
            }
            return ranked.prefix(MRZKeyCandidate.maximum).compactMap { try? AccessKey.fields(documentNumber: $0[0], dateOfBirth: $0[1], dateOfExpiry: $0[2]) }
        }
        while ContinuousClock.now < deadline {
            let images: [ImageCodecs.RGBImage]
            do {
                images = try await CameraTool.documentFrames(path, first: frames == 0)
            } catch {
                throw Failure(description: "\(error)")
            }
            for image in images {
                frames += 1
                let result = await CameraTool.onThread { recognizer.read(image, budget: MRZRecognizer.frameBudget) }
                for candidate in result.candidates {
                    let held = offered[candidate.key]
                    offered[candidate.key] = ((held?.count ?? 0) + 1, max(held?.score ?? 0, candidate.score))
                }
                guard let reading = result.reading, reading.accessKeyValid else {
                    progress("looking for the MRZ in front of \(path)… \(frames) frames, \(offered.count) keys offered")
                    lastKey = nil
                    continue
                }
                let key = reading.key
                // Two frames in a row with the same access key: that is the document's.
                if key == lastKey { return keys(first: key) }
                lastKey = key
                progress("an MRZ read once; reading it again to be sure… \(frames) frames")
            }
        }
        let found = keys(first: nil)
        guard found.isEmpty else { return found }
        throw Failure(description: "no readable MRZ in front of \(path) within \(limit.components.seconds) s (\(frames) frames looked at)")
    }
}
