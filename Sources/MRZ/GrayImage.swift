import ImageCodecs

/// A luminance image (0…255) the reader works on.
public struct GrayImage: Sendable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]
    /// The photo's own pixels within the image (all of it, unless `padded` put a border round
    /// them): a character outside these was not photographed, whatever the border shows.
    package var content: (x: Int, y: Int, width: Int, height: Int)

    public init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
        content = (0, 0, width, height)
    }

    /// Luma of an RGB image (BT.601 weights, integer arithmetic).
    public init(_ image: ImageCodecs.RGBImage) {
        self.init(image) { (r: UInt8, g: UInt8, b: UInt8) -> UInt8 in
            let weighted: Int = Int(r) * 77 + Int(g) * 150 + Int(b) * 29
            return UInt8((weighted + 128) >> 8)
        }
    }

    @inline(__always)
    private init(_ image: ImageCodecs.RGBImage, _ level: (UInt8, UInt8, UInt8) -> UInt8) {
        var pixels = [UInt8](repeating: 0, count: image.width * image.height)
        image.pixels.withUnsafeBufferPointer { rgb in
            pixels.withUnsafeMutableBufferPointer { out in
                for index in 0..<out.count { out[index] = level(rgb[index * 3], rgb[index * 3 + 1], rgb[index * 3 + 2]) }
            }
        }
        self.init(width: image.width, height: image.height, pixels: pixels)
    }

    /// Each pixel as light as its lightest channel: a photo or a scan of a document as the MRZ's
    /// ink sees it. The zone is printed in black (ICAO 9303 asks for ink that absorbs in the near
    /// infrared: carbon black), dark in every channel; a red SPECIMEN stamp over it, a guilloche's
    /// blue and pink, a UV capture's blue glow are light in at least one channel and go pale. Luma
    /// keeps a red stamp as dark as mid-grey, and the stamp's letters became blobs of the zone's
    /// own lines (Docs/mrz.md, "Colour inks").
    public init(lightestChannelOf image: ImageCodecs.RGBImage) {
        self.init(image) { r, g, b in max(r, g, b) }
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

    /// The image turned a quarter clockwise: what was its left edge is its top. `content` turns
    /// with it.
    package func turnedQuarter() -> GrayImage {
        guard width > 0, height > 0 else { return self }
        var image = GrayImage(width: height, height: width,
                              pixels: ImageCodecs.turnedQuarter(pixels, width: width, height: height, channels: 1, clockwise: true))
        image.content = (height - content.y - content.height, content.x, content.height, content.width)
        return image
    }

    /// Bilinear sample at (x, y), pixel centres at integer + 0.5; outside the image: the nearest edge.
    @inline(__always)
    package func sample(_ x: Float, _ y: Float) -> Float {
        let fx = min(max(x - 0.5, 0), Float(width - 1)), fy = min(max(y - 0.5, 0), Float(height - 1))
        let x0 = Int(fx), y0 = Int(fy)
        let x1 = min(x0 + 1, width - 1), y1 = min(y0 + 1, height - 1)
        let ax = fx - Float(x0), ay = fy - Float(y0)
        let top = Float(pixels[y0 * width + x0]) * (1 - ax) + Float(pixels[y0 * width + x1]) * ax
        let bottom = Float(pixels[y1 * width + x0]) * (1 - ax) + Float(pixels[y1 * width + x1]) * ax
        return top * (1 - ay) + bottom * ay
    }

    /// The image inside a border of `margin` pixels each side, of the median of its own edge
    /// pixels (paper round a photo cropped tight, the background round a wider one). Sampling
    /// beyond an image's edge repeats the edge: in a crop a pixel or two round the MRZ that is a
    /// row of the glyphs' own blur, and a `0` sampled with it read `O`. `content` stays the photo.
    package func padded(by margin: Int) -> GrayImage {
        guard margin > 0, width > 0, height > 0 else { return self }
        var edge: [UInt8] = []
        edge.reserveCapacity(2 * (width + height))
        for x in 0..<width { edge += [pixels[x], pixels[(height - 1) * width + x]] }
        for y in 0..<height { edge += [pixels[y * width], pixels[y * width + width - 1]] }
        edge.sort()
        let w = width + 2 * margin
        var out = [UInt8](repeating: edge[edge.count / 2], count: w * (height + 2 * margin))
        for y in 0..<height {
            let target = (y + margin) * w + margin
            out.replaceSubrange(target..<(target + width), with: pixels[(y * width)..<((y + 1) * width)])
        }
        var image = GrayImage(width: w, height: height + 2 * margin, pixels: out)
        image.content = (margin, margin, width, height)
        return image
    }
}
