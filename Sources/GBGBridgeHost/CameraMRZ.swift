import Cameras
import Foundation
import MRZ

/// `gbgbridge read --mrz-from-camera`: frames from a camera until two agree on an access key
/// whose check digits hold, within a time limit.
package enum CameraMRZ {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func read(camera: String?, within limit: Duration, progress: @escaping @Sendable (String) -> Void) async throws -> String {
        guard let recognizer = MRZRecognizer() else { throw Failure(description: "this build has no trained MRZ reader") }
        let deadline = ContinuousClock.now + limit
        let path: String
        if let camera {
            path = camera
        } else {
            guard let usable = await CameraTool.list().first(where: { $0.accessible && $0.choose(target: CaptureRequest.document.target) != nil }) else {
                throw Failure(description: "no camera to read the MRZ with (gbgbridge camera list)")
            }
            path = usable.path
        }
        var frames = 0
        var lastKey: [String]?
        while ContinuousClock.now < deadline {
            var request = CaptureRequest.document
            request.warmupFrames = frames == 0 ? 4 : 0
            request.keep = 2
            let captured: CapturedFrame
            do {
                captured = try await V4L2Capture.capture(path, request)
            } catch {
                throw Failure(description: error.description)
            }
            for image in captured.earlierFrames + [captured.image] {
                frames += 1
                let reading = await CameraTool.onThread { recognizer.read(image, budget: MRZRecognizer.frameBudget).reading }
                guard let reading, reading.accessKeyValid else {
                    progress("looking for the MRZ in front of \(path)… \(frames) frames")
                    lastKey = nil
                    continue
                }
                let key = [reading.documentNumber, reading.dateOfBirth, reading.dateOfExpiry]
                // Two frames in a row with the same access key: that is the document's.
                if key == lastKey { return reading.text }
                lastKey = key
                progress("an MRZ read once; reading it again to be sure… \(frames) frames")
            }
        }
        throw Failure(description: "no readable MRZ in front of \(path) within \(limit.components.seconds) s (\(frames) frames looked at)")
    }
}
