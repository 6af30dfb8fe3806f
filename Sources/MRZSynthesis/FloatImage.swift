import Foundation
import ImageCodecs

/// An RGB image in floating point (0…1), for drawing synthetic pages and photographing them.
public struct FloatImage: Sendable {
    public var width: Int
    public var height: Int
    public var pixels: [Float]

    public init(width: Int, height: Int, fill: (Float, Float, Float) = (1, 1, 1)) {
        self.width = width
        self.height = height
        pixels = [Float](repeating: 0, count: width * height * 3)
        for index in 0..<(width * height) {
            pixels[index * 3] = fill.0
            pixels[index * 3 + 1] = fill.1
            pixels[index * 3 + 2] = fill.2
        }
    }

    @inline(__always)
    public subscript(x: Int, y: Int, channel: Int) -> Float {
        get { pixels[(y * width + x) * 3 + channel] }
        set { pixels[(y * width + x) * 3 + channel] = newValue }
    }

    /// Blends `color` over the pixel with opacity `alpha` (0…1).
    @inline(__always)
    public mutating func blend(_ x: Int, _ y: Int, _ color: (Float, Float, Float), _ alpha: Float) {
        guard x >= 0, y >= 0, x < width, y < height, alpha > 0 else { return }
        let index = (y * width + x) * 3
        pixels[index] += (color.0 - pixels[index]) * alpha
        pixels[index + 1] += (color.1 - pixels[index + 1]) * alpha
        pixels[index + 2] += (color.2 - pixels[index + 2]) * alpha
    }

    /// Bilinear sample at (x, y) in pixel coordinates (pixel centres at +0.5); outside: `outside`.
    @inline(__always)
    public func sample(_ x: Float, _ y: Float, outside: (Float, Float, Float)) -> (Float, Float, Float) {
        let fx = x - 0.5, fy = y - 0.5
        let x0 = Int(fx.rounded(.down)), y0 = Int(fy.rounded(.down))
        guard x0 >= 0, y0 >= 0, x0 + 1 < width, y0 + 1 < height else { return outside }
        let ax = fx - Float(x0), ay = fy - Float(y0)
        let i00 = (y0 * width + x0) * 3, i10 = i00 + 3, i01 = i00 + width * 3, i11 = i01 + 3
        func channel(_ c: Int) -> Float {
            let top = pixels[i00 + c] * (1 - ax) + pixels[i10 + c] * ax
            let bottom = pixels[i01 + c] * (1 - ax) + pixels[i11 + c] * ax
            return top * (1 - ay) + bottom * ay
        }
        return (channel(0), channel(1), channel(2))
    }

    public mutating func fillRect(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ color: (Float, Float, Float), alpha: Float = 1) {
        for row in max(0, y)..<min(height, y + h) {
            for column in max(0, x)..<min(width, x + w) { blend(column, row, color, alpha) }
        }
    }

    /// An ellipse, drawn only inside `clip` (x, y, width, height) when given.
    public mutating func fillEllipse(cx: Float, cy: Float, rx: Float, ry: Float, _ color: (Float, Float, Float), alpha: Float = 1,
                                     clip: (Int, Int, Int, Int)? = nil) {
        let (clipX, clipY, clipW, clipH) = clip ?? (0, 0, width, height)
        for row in max(clipY, max(0, Int(cy - ry)))..<min(clipY + clipH, min(height, Int(cy + ry) + 1)) {
            for column in max(clipX, max(0, Int(cx - rx)))..<min(clipX + clipW, min(width, Int(cx + rx) + 1)) {
                let dx = (Float(column) + 0.5 - cx) / rx, dy = (Float(row) + 0.5 - cy) / ry
                if dx * dx + dy * dy <= 1 { blend(column, row, color, alpha) }
            }
        }
    }

    /// A separable box blur of radius `radius`, `passes` times (three passes ≈ a Gaussian).
    public mutating func boxBlur(radius: Int, passes: Int = 3) {
        guard radius > 0 else { return }
        for _ in 0..<passes {
            blurLines(count: height, length: width, stride: 3, lineStride: width * 3, radius: radius)
            blurLines(count: width, length: height, stride: width * 3, lineStride: 3, radius: radius)
        }
    }

    private mutating func blurLines(count: Int, length: Int, stride: Int, lineStride: Int, radius: Int) {
        var line = [Float](repeating: 0, count: length)
        let window = Float(2 * radius + 1)
        for index in 0..<count {
            let base = index * lineStride
            for channel in 0..<3 {
                for position in 0..<length { line[position] = pixels[base + position * stride + channel] }
                var sum: Float = 0
                for k in -radius...radius { sum += line[min(length - 1, max(0, k))] }
                for position in 0..<length {
                    pixels[base + position * stride + channel] = sum / window
                    sum += line[min(length - 1, position + radius + 1)] - line[max(0, position - radius)]
                }
            }
        }
    }

    /// 8-bit RGB (clamped), as a camera hands frames over.
    public var rgb: ImageCodecs.RGBImage {
        ImageCodecs.RGBImage(width: width, height: height, pixels: pixels.map { UInt8(max(0, min(255, ($0 * 255).rounded()))) })
    }

    public init(_ image: ImageCodecs.RGBImage) {
        width = image.width
        height = image.height
        pixels = image.pixels.map { Float($0) / 255 }
    }
}
