extension ImageCodecs.RGBImage {
    /// The image turned a quarter, clockwise or not: a page photographed on its side, or a scan
    /// stored turned (what an EXIF orientation of 6 or 8 asks a viewer to undo).
    public func turnedQuarter(clockwise: Bool) -> ImageCodecs.RGBImage {
        var turned = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            for x in 0..<width {
                // The turned image is `height` wide: (x, y) goes to (height-1-y, x) clockwise, (y, width-1-x) not.
                let (tx, ty) = clockwise ? (height - 1 - y, x) : (y, width - 1 - x)
                let source = (y * width + x) * 3, target = (ty * height + tx) * 3
                for channel in 0..<3 { turned[target + channel] = pixels[source + channel] }
            }
        }
        return ImageCodecs.RGBImage(width: height, height: width, pixels: turned)
    }
}
