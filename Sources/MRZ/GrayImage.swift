import ImageCodecs

/// A luminance image (0…255) the reader works on.
public struct GrayImage: Sendable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Luma of an RGB image (BT.601 weights, integer arithmetic).
    public init(_ image: ImageCodecs.RGBImage) {
        width = image.width
        height = image.height
        var pixels = [UInt8](repeating: 0, count: image.width * image.height)
        image.pixels.withUnsafeBufferPointer { rgb in
            pixels.withUnsafeMutableBufferPointer { out in
                for index in 0..<out.count {
                    let r = Int(rgb[index * 3]), g = Int(rgb[index * 3 + 1]), b = Int(rgb[index * 3 + 2])
                    out[index] = UInt8((r * 77 + g * 150 + b * 29 + 128) >> 8)
                }
            }
        }
        self.pixels = pixels
    }

    /// The image shrunk by an integer `factor` (each output pixel the mean of a factor × factor block).
    public func downscaled(by factor: Int) -> GrayImage {
        guard factor > 1 else { return self }
        let w = width / factor, h = height / factor
        var out = [UInt8](repeating: 0, count: w * h)
        let area = factor * factor
        pixels.withUnsafeBufferPointer { source in
            for y in 0..<h {
                for x in 0..<w {
                    var sum = 0
                    for dy in 0..<factor {
                        let row = (y * factor + dy) * width + x * factor
                        for dx in 0..<factor { sum += Int(source[row + dx]) }
                    }
                    out[y * w + x] = UInt8(sum / area)
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Bilinear sample at (x, y), pixel centres at integer + 0.5; outside the image: the nearest edge.
    @inline(__always)
    func sample(_ x: Float, _ y: Float) -> Float {
        let fx = min(max(x - 0.5, 0), Float(width - 1)), fy = min(max(y - 0.5, 0), Float(height - 1))
        let x0 = Int(fx), y0 = Int(fy)
        let x1 = min(x0 + 1, width - 1), y1 = min(y0 + 1, height - 1)
        let ax = fx - Float(x0), ay = fy - Float(y0)
        let top = Float(pixels[y0 * width + x0]) * (1 - ax) + Float(pixels[y0 * width + x1]) * ax
        let bottom = Float(pixels[y1 * width + x0]) * (1 - ax) + Float(pixels[y1 * width + x1]) * ax
        return top * (1 - ay) + bottom * ay
    }
}
