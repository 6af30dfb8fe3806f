extension ImageCodecs {
    /// `pixels` (`width` × `height`, `channels` bytes a pixel, rows without padding) turned a
    /// quarter, clockwise or not: a page photographed on its side, or a scan stored turned (what
    /// an EXIF orientation of 6 or 8 asks a viewer to undo). The turned image is `height` wide.
    package static func turnedQuarter(_ pixels: [UInt8], width: Int, height: Int, channels: Int, clockwise: Bool) -> [UInt8] {
        // trap: called only with an image's own pixels and size (RGBImage, MRZ's GrayImage), never with a size from outside.
        precondition(width >= 0 && height >= 0 && channels > 0 && pixels.count == width * height * channels)
        var turned = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { source in
            turned.withUnsafeMutableBufferPointer { target in
                for y in 0..<height {
                    for x in 0..<width {
                        // (x, y) goes to (height-1-y, x) clockwise, (y, width-1-x) not.
                        let (tx, ty) = clockwise ? (height - 1 - y, x) : (y, width - 1 - x)
                        let from = (y * width + x) * channels, to = (ty * height + tx) * channels
                        for channel in 0..<channels { target[to + channel] = source[from + channel] }
                    }
                }
            }
        }
        return turned
    }
}

extension ImageCodecs.RGBImage {
    /// The image turned a quarter, clockwise or not (`ImageCodecs.turnedQuarter`).
    public func turnedQuarter(clockwise: Bool) -> ImageCodecs.RGBImage {
        ImageCodecs.RGBImage(width: height, height: width,
                             pixels: ImageCodecs.turnedQuarter(pixels, width: width, height: height, channels: 3, clockwise: clockwise))
    }
}
