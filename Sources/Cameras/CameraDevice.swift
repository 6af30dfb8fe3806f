import CV4L2Shim
import Foundation
import TextSanitizing

/// A V4L2 capture device as `gbgbridge camera list` shows it: its node, the stable names udev
/// gives it (`/dev/v4l/by-id/…`, `/dev/v4l/by-path/…`), whether this process may open it, and
/// the formats and frame sizes it offers.
public struct CameraDevice: Sendable, Hashable {
    public struct Mode: Sendable, Hashable {
        public let format: PixelFormat
        /// The size; for a range, its smallest.
        public let width: Int
        public let height: Int
        public let formatName: String
        /// A stepwise or continuous range of sizes (HDMI and TV inputs, many industrial cameras):
        /// up to this size in these steps. Nil for a discrete size.
        public let range: SizeRange?

        public struct SizeRange: Sendable, Hashable {
            public let maxWidth: Int, maxHeight: Int, stepWidth: Int, stepHeight: Int
        }

        public init(format: PixelFormat, width: Int, height: Int, formatName: String, range: SizeRange? = nil) {
            (self.format, self.width, self.height, self.formatName, self.range) = (format, width, height, formatName, range)
        }

        /// Whether this host can convert frames of this format.
        public var supported: Bool { format.isSupported }

        /// The size `camera list` shows: `1280x720`, or `16x16-4096x2304` for a range.
        public var sizeText: String {
            guard let range else { return "\(width)x\(height)" }
            return "\(width)x\(height)-\(range.maxWidth)x\(range.maxHeight)"
        }

        /// This mode at the size nearest `target` it offers: the target clamped into a range and
        /// snapped down to its steps; a discrete mode as it is.
        func sized(for target: Resolution) -> Mode {
            guard let range else { return self }
            func fit(_ wanted: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
                let clamped = min(max(wanted, low), max(low, high))
                return low + (clamped - low) / max(1, step) * max(1, step)
            }
            return Mode(format: format, width: fit(target.width, width, range.maxWidth, range.stepWidth),
                        height: fit(target.height, height, range.maxHeight, range.stepHeight), formatName: formatName)
        }
    }

    public let path: String
    public let name: String
    public let accessible: Bool
    /// `errno` when the device could not be opened (EACCES, EBUSY …), else 0.
    public let openError: Int32
    public let links: [String]
    public let modes: [Mode]

    /// Every capture device under `devDirectory` (`/dev`), in node order.
    public static func list(devDirectory: String = "/dev") -> [CameraDevice] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: devDirectory)) ?? [])
            .compactMap { name in name.hasPrefix("video") ? Int(name.dropFirst(5)).map { (name, $0) } : nil }
            .sorted { $0.1 < $1.1 }
            .map(\.0)
        let links = Self.links(in: devDirectory + "/v4l")
        return names.compactMap { name in
            let path = devDirectory + "/" + name
            return describe(path, links: links[path] ?? [])
        }
    }

    /// The device at `path` (a node or a by-id link), or nil when it is not a capture device.
    public static func describe(_ path: String, links: [String]? = nil) -> CameraDevice? {
        var isCapture: Int32 = 0
        var card = [CChar](repeating: 0, count: 64)
        let error = CV4L2Shim_query(path, &isCapture, &card, Int32(card.count))
        let node = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map {
            URL(fileURLWithPath: $0, relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent()).standardizedFileURL.path
        } ?? path
        if error == 0 {
            guard isCapture != 0 else { return nil }
            // The driver's card name, as a camera's firmware gives it: shown escaped, never raw.
            let label = LogText.clip(String(decoding: card.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), to: 64)
            return CameraDevice(path: node, name: label.isEmpty ? node : label, accessible: true, openError: 0,
                                links: links ?? [], modes: modes(node))
        }
        // A node this user may not open is still a camera to report (permission denied).
        guard error == EACCES || error == EPERM || error == EBUSY, isCharacterDevice(node) else { return nil }
        return CameraDevice(path: node, name: (node as NSString).lastPathComponent, accessible: false, openError: error,
                            links: links ?? [], modes: [])
    }

    private static func isCharacterDevice(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR
    }

    static func modes(_ path: String) -> [Mode] {
        var sizes = [CV4L2Shim_size](repeating: CV4L2Shim_size(), count: 512)
        var count: Int32 = 0
        guard CV4L2Shim_sizes(path, &sizes, Int32(sizes.count), &count) == 0 else { return [] }
        return sizes.prefix(Int(count)).map { size in
            var description = size.description
            let name = LogText.clip(withUnsafeBytes(of: &description) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }, to: 32)
            let ranged = size.step_width > 0 && (size.max_width != size.width || size.max_height != size.height)
            return Mode(format: PixelFormat(fourcc: size.fourcc), width: Int(size.width), height: Int(size.height), formatName: name,
                        range: ranged ? Mode.SizeRange(maxWidth: Int(size.max_width), maxHeight: Int(size.max_height),
                                                       stepWidth: Int(size.step_width), stepHeight: Int(size.step_height)) : nil)
        }
    }

    /// `/dev/v4l/by-id` and `by-path` links by the node they point to.
    static func links(in directory: String) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for kind in ["by-id", "by-path"] {
            let folder = directory + "/" + kind
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
                let link = folder + "/" + name
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else { continue }
                let node = URL(fileURLWithPath: target, relativeTo: URL(fileURLWithPath: folder)).standardizedFileURL.path
                result[node, default: []].append(link)
            }
        }
        return result
    }

    /// The mode a capture asks for (see `choose(from:target:)`).
    public func choose(target: Resolution) -> Mode? { Self.choose(from: modes, target: target) }

    /// The mode to ask for among `modes`: the most preferred format this host converts, at the
    /// largest size that fits in `target` (else the smallest above it); a range of sizes offers
    /// the one nearest the target. Nil when none converts.
    public static func choose(from modes: [Mode], target: Resolution) -> Mode? {
        for format in PixelFormat.preference {
            let candidates = modes.filter { $0.format == format }.map { $0.sized(for: target) }
            guard !candidates.isEmpty else { continue }
            let fitting = candidates.filter { $0.width <= target.width && $0.height <= target.height }
            if let best = fitting.max(by: { $0.width * $0.height < $1.width * $1.height }) { return best }
            return candidates.min { $0.width * $0.height < $1.width * $1.height }
        }
        return nil
    }
}
