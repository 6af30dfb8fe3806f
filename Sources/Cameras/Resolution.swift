/// A frame size, `WIDTHxHEIGHT` on the command line and in the configuration file.
public struct Resolution: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    /// The sizes a camera setting may ask for: from a thumbnail to 8K.
    public static let allowedWidths = 16...7_680
    public static let allowedHeights = 16...4_320

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `1920x1080` (or `1920×1080`); nil for anything else or a size outside the allowed range.
    public init?(_ text: String) {
        let parts = text.split(whereSeparator: { $0 == "x" || $0 == "X" || $0 == "×" })
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 5 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
              let width = Int(parts[0]), let height = Int(parts[1]),
              Self.allowedWidths.contains(width), Self.allowedHeights.contains(height) else { return nil }
        self.init(width: width, height: height)
    }

    public var description: String { "\(width)x\(height)" }
}
