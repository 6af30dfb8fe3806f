import Foundation
import ImageCodecs
import MRZ

/// Photographs a synthetic page the way a kiosk camera would: on a desk, rotated and seen in
/// perspective, out of focus, under uneven light with glare, with sensor noise and JPEG artefacts.
public struct Photographer: Sendable {
    /// How hard the photograph is.
    public struct Conditions: Sendable {
        public var frameWidth = 1280
        public var frameHeight = 720
        /// The MRZ's cap height in the frame, in pixels.
        public var capHeight: ClosedRange<Float> = 16...26
        /// In-plane rotation, degrees (either way).
        public var rotation: ClosedRange<Float> = 0...5
        /// How far each corner may move, as a fraction of the page's size (perspective).
        public var perspective: ClosedRange<Float> = 0...0.06
        /// Blur radius in pixels (box blur, three passes ≈ Gaussian of σ ≈ radius).
        public var blur: ClosedRange<Float> = 0...1.2
        public var noise: ClosedRange<Float> = 0...0.02
        public var jpegQuality: ClosedRange<Int>? = 60...90
        /// Light falling off across the frame: the darkest corner's fraction of the brightest.
        public var lightFalloff: ClosedRange<Float> = 0...0.35
        public var glareBlobs: ClosedRange<Int> = 0...0
        /// Chance the page lies upside down.
        public var upsideDown: Float = 0
        public var patternUnderMRZ: Float = 0.2
        /// Whether the MRZ is kept wholly in the frame (the page moved, never redrawn, when
        /// rotation and perspective push part of it out). Off, a line may run off the frame's edge:
        /// what no reader can read, and a hostile case of its own (a character cut in half).
        public var mrzInFrame = true
        /// Chance the photo is binarised at the end (a scanner's or a fax's black and white, as the
        /// real lines of ../shared/fixtures are).
        public var binarised: Float = 0
        /// Chance of a line of other text (DejaVu, the MRZ's size) printed across the zone.
        public var overprint: Float = 0
        /// Strength of a fine interference pattern over the frame (a screen photographed: moiré).
        public var moire: ClosedRange<Float> = 0...0

        public init() {}

        /// A data page photographed 250–600 pixels wide, as real specimens are found: capitals of
        /// 5–11 pixels.
        public static var small: Conditions {
            var c = Conditions()
            c.frameWidth = 640
            c.frameHeight = 480
            c.capHeight = 5...11
            c.rotation = 0...4
            c.perspective = 0...0.04
            c.blur = 0...0.7
            c.noise = 0...0.015
            c.jpegQuality = 70...95
            c.lightFalloff = 0...0.25
            return c
        }

        /// Capitals of 8–12 pixels on a kiosk frame: the smallest a hidden check tries.
        public static var tiny: Conditions {
            var c = Conditions()
            c.capHeight = 8...12
            c.blur = 0.2...1.0
            c.noise = 0...0.03
            return c
        }

        /// Kiosk frames with text printed over the zone, moiré, and the zone at times cut by the
        /// frame: pictures made to fool a reader.
        public static var overprint: Conditions {
            var c = Conditions()
            c.capHeight = 12...24
            c.overprint = 0.7
            c.moire = 0...0.25
            c.mrzInFrame = false
            c.rotation = 0...8
            return c
        }

        /// A flat scan at 300 dpi: the page alone, square, sharp.
        public static var scan: Conditions {
            var c = Conditions()
            c.capHeight = 26...29
            c.rotation = 0...0.5
            c.perspective = 0...0
            c.blur = 0...0.4
            c.noise = 0...0.005
            c.jpegQuality = nil
            c.lightFalloff = 0...0.05
            return c
        }

        /// A kiosk camera: ±5° rotation, ±10° perspective, blur, JPEG 60–90, uneven light.
        public static var kiosk: Conditions { Conditions() }

        /// Hard: ±15°, glare, characters down to 12 px, noise, upside down.
        public static var hard: Conditions {
            var c = Conditions()
            c.capHeight = 12...22
            c.rotation = 0...15
            c.perspective = 0...0.1
            c.blur = 0.3...1.6
            c.noise = 0.01...0.04
            c.jpegQuality = 50...85
            c.lightFalloff = 0.1...0.5
            c.glareBlobs = 1...3
            c.upsideDown = 0.3
            c.patternUnderMRZ = 0.4
            return c
        }
    }

    public struct Shot: Sendable {
        public var frame: ImageCodecs.RGBImage
        public var sample: MRZSample
        /// Each MRZ cell's centre in the frame.
        public var cellCentres: [[(x: Float, y: Float)]]
        public var capHeight: Float
    }

    let renderer: PageRenderer

    public init(renderer: PageRenderer) { self.renderer = renderer }

    /// `foreign`: characters drawn in other fonts (`PageRenderer.render`).
    public func shoot(_ sample: MRZSample, _ conditions: Conditions, foreign: [[GlyphFont?]]? = nil,
                      generator: inout some RandomNumberGenerator) -> Shot {
        func random(_ range: ClosedRange<Float>) -> Float { range.lowerBound == range.upperBound ? range.lowerBound : Float.random(in: range, using: &generator) }
        // The whole page in the frame (as a document camera frames it), so the cap height has a
        // ceiling per format: about 2.3 mm of a page that fills at most 92 % of the frame.
        let size = PageRenderer.geometry(sample.format)
        let fit = 2.3 * min(Float(conditions.frameWidth) * 0.92 / size.width, Float(conditions.frameHeight) * 0.92 / size.height)
        let cap = random(min(conditions.capHeight.lowerBound, fit)...min(conditions.capHeight.upperBound, fit))
        // Render the page at about twice the frame's resolution, then photograph it.
        let pixelsPerMM = max(4, cap / 2.3 * 2)
        let page = renderer.render(sample, pixelsPerMM: pixelsPerMM,
                                   patternUnderMRZ: Float.random(in: 0...1, using: &generator) < conditions.patternUnderMRZ, foreign: foreign,
                                   generator: &generator)
        let frameW = Float(conditions.frameWidth), frameH = Float(conditions.frameHeight)
        let scale = cap / page.capHeight
        let pageW = Float(page.image.width) * scale, pageH = Float(page.image.height) * scale
        // Where the page's corners land: centred (with slack), rotated, each corner moved a little.
        let angle = random(conditions.rotation) * (Bool.random(using: &generator) ? 1 : -1) * .pi / 180
            + (Float.random(in: 0...1, using: &generator) < conditions.upsideDown ? .pi : 0)
        let slackX = max(0, (frameW - pageW) / 2 - 20), slackY = max(0, (frameH - pageH) / 2 - 20)
        let cx = frameW / 2 + random(-slackX...max(-slackX, slackX) + 0.001) * 0.6
        let cy = frameH / 2 + random(-slackY...max(-slackY, slackY) + 0.001) * 0.6
        let corners: [(Float, Float)] = [(-pageW / 2, -pageH / 2), (pageW / 2, -pageH / 2), (pageW / 2, pageH / 2), (-pageW / 2, pageH / 2)]
        var moved = corners.map { corner -> (Float, Float) in
            let jitter = random(conditions.perspective)
            let x = corner.0 + random(-1...1) * jitter * pageW, y = corner.1 + random(-1...1) * jitter * pageH
            return (cx + x * cos(angle) - y * sin(angle), cy + x * sin(angle) + y * cos(angle))
        }
        let source: [(Float, Float)] = [(0, 0), (Float(page.image.width), 0), (Float(page.image.width), Float(page.image.height)), (0, Float(page.image.height))]
        if conditions.mrzInFrame {
            // The zone's outline (each line's first and last cell, a pitch and a cap height around)
            // where it lands; the page moved just enough to bring it in. No random draw: every other
            // photograph of a seed stays as it was.
            let placed = Homography(from: source, to: moved)
            let pitch = page.capHeight * 1.2, tall = page.capHeight
            var outline: [(Float, Float)] = []
            for line in page.cellCentres {
                guard let first = line.first, let last = line.last else { continue }
                for (x, dx) in [(first.x, -pitch), (last.x, pitch)] { for dy in [-tall, tall] { outline.append(placed.apply(x + dx, first.y + dy)) } }
            }
            func shift(_ values: [Float], _ limit: Float) -> Float {
                let margin: Float = 4
                guard let low = values.min(), let high = values.max(), high - low < limit - 2 * margin else { return 0 }
                return low < margin ? margin - low : (high > limit - margin ? limit - margin - high : 0)
            }
            let dx = shift(outline.map(\.0), frameW), dy = shift(outline.map(\.1), frameH)
            moved = moved.map { ($0.0 + dx, $0.1 + dy) }
        }
        let toPage = Homography(from: moved, to: source)
        let toFrame = Homography(from: source, to: moved)
        // The desk: a dark or wooden gradient with noise.
        let desk = (random(0.1...0.55), random(0.1...0.45), random(0.08...0.4))
        var frame = FloatImage(width: conditions.frameWidth, height: conditions.frameHeight, fill: desk)
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let shade = 0.85 + 0.3 * Float(x) / frameW
                for c in 0..<3 { frame[x, y, c] *= shade }
            }
        }
        // The page, sampled with 2 × 2 supersampling.
        var pageImage = page.image
        let pageScale = 1 / scale
        if pageScale > 2.5 { pageImage.boxBlur(radius: Int(pageScale / 2.5), passes: 2) }
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                var sum: (Float, Float, Float) = (0, 0, 0)
                var inside = 0
                for sy in 0..<2 {
                    for sx in 0..<2 {
                        let p = toPage.apply(Float(x) + 0.25 + Float(sx) * 0.5, Float(y) + 0.25 + Float(sy) * 0.5)
                        guard p.0 >= 0, p.1 >= 0, p.0 < Float(page.image.width), p.1 < Float(page.image.height) else { continue }
                        let s = pageImage.sample(p.0, p.1, outside: (frame[x, y, 0], frame[x, y, 1], frame[x, y, 2]))
                        sum = (sum.0 + s.0, sum.1 + s.1, sum.2 + s.2)
                        inside += 1
                    }
                }
                if inside > 0 {
                    let a = Float(inside) / 4, n = Float(inside)
                    frame.blend(x, y, (sum.0 / n, sum.1 / n, sum.2 / n), a)
                }
            }
        }
        // Light: a falloff from a random corner, glare blobs, blur, noise.
        let falloff = random(conditions.lightFalloff)
        let lightX = random(0...frameW), lightY = random(0...frameH)
        let diagonal = (frameW * frameW + frameH * frameH).squareRoot()
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let d = ((Float(x) - lightX) * (Float(x) - lightX) + (Float(y) - lightY) * (Float(y) - lightY)).squareRoot() / diagonal
                let gain = 1 - falloff * d
                for c in 0..<3 { frame[x, y, c] *= gain }
            }
        }
        let blobs = Int.random(in: conditions.glareBlobs, using: &generator)
        for _ in 0..<blobs {
            // Glare lands near the page, often on the MRZ band.
            let target = page.cellCentres[Int.random(in: 0..<page.cellCentres.count, using: &generator)]
            let cell = target[Int.random(in: 0..<target.count, using: &generator)]
            let (gx, gy) = toFrame.apply(cell.x, cell.y)
            let radius = random(cap * 0.8...cap * 3)
            let strength = random(0.4...0.95)
            // A blob may lie (partly) outside the frame.
            let top = min(frame.height, max(0, Int(gy - radius))), bottom = min(frame.height, max(top, Int(gy + radius) + 1))
            let left = min(frame.width, max(0, Int(gx - radius))), right = min(frame.width, max(left, Int(gx + radius) + 1))
            let columns = left..<right
            for y in top..<bottom {
                for x in columns {
                    let d = ((Float(x) - gx) * (Float(x) - gx) + (Float(y) - gy) * (Float(y) - gy)).squareRoot() / radius
                    if d < 1 { frame.blend(x, y, (1, 1, 1), strength * (1 - d * d)) }
                }
            }
        }
        // Other text printed across the zone: a line of DejaVu at the MRZ's size, over a random line.
        // (No random draw unless asked: every photograph of the other tiers stays as it was.)
        if conditions.overprint > 0, Float.random(in: 0...1, using: &generator) < conditions.overprint {
            let line = page.cellCentres[Int.random(in: 0..<page.cellCentres.count, using: &generator)]
            let from = Int.random(in: 0..<max(1, line.count - 8), using: &generator)
            let words = ["SPECIMEN", "VOID", "COPY", "SAMPLE", "NOT VALID", "0123456789", "ABCDEFGH"]
            let text = (0..<3).map { _ in words[Int.random(in: 0..<words.count, using: &generator)] }.joined(separator: " ")
            let offset = random(-0.5...0.5) * page.capHeight
            let (x0, y0) = toFrame.apply(line[from].x, line[from].y + offset)
            let (x1, y1) = toFrame.apply(line[min(line.count - 1, from + 8)].x, line[min(line.count - 1, from + 8)].y + offset)
            let grey = random(0.1...0.5)
            renderer.drawOver(&frame, text, from: (x0, y0), towards: (x1, y1), capHeight: cap * random(0.8...1.2), colour: (grey, grey, grey))
        }
        let blur = random(conditions.blur)
        if blur >= 0.5 { frame.boxBlur(radius: Int(blur.rounded()), passes: 3) } else if blur > 0.2 { frame.boxBlur(radius: 1, passes: 1) }
        let noise = random(conditions.noise)
        if noise > 0 {
            // Approximately Gaussian (the sum of three uniforms), from a fast generator seeded by the
            // caller's (millions of draws: the generic one would dominate the whole photograph).
            var state = generator.next() | 1
            @inline(__always) func uniform() -> Float {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                return Float(state >> 40) / Float(1 << 24) * 2 - 1
            }
            for index in 0..<frame.pixels.count {
                frame.pixels[index] += (uniform() + uniform() + uniform()) / 3 * noise * 1.7
            }
        }
        let moire = random(conditions.moire)
        if moire > 0 {
            let period = random(2.2...4.5), angle = random(0...3.1416)
            let (cx, cy) = (cos(angle) / period * 6.2832, sin(angle) / period * 6.2832)
            for y in 0..<frame.height {
                for x in 0..<frame.width {
                    let gain = 1 - moire * 0.5 * (1 + sin(Float(x) * cx + Float(y) * cy))
                    for c in 0..<3 { frame[x, y, c] *= gain }
                }
            }
        }
        var rgb = frame.rgb
        if let qualities = conditions.jpegQuality {
            let quality = Int.random(in: qualities, using: &generator)
            if let jpeg = try? ImageCodecs.encodeJPEG(rgb, quality: quality), let decoded = try? ImageCodecs.decodeJPEG(jpeg) { rgb = decoded }
        }
        if conditions.binarised > 0, Float.random(in: 0...1, using: &generator) < conditions.binarised { rgb = Self.binarised(rgb) }
        let centres = page.cellCentres.map { line in line.map { toFrame.apply($0.x, $0.y) }.map { (x: $0.0, y: $0.1) } }
        return Shot(frame: rgb, sample: sample, cellCentres: centres, capHeight: cap)
    }
}

extension Photographer {
    /// Black and white by a local mean (a window a thirtieth of the image), as scanners and the
    /// real lines' crops are.
    static func binarised(_ image: ImageCodecs.RGBImage) -> ImageCodecs.RGBImage {
        let gray = GrayImage(image)
        let w = gray.width, h = gray.height, r = max(4, min(w, h) / 30)
        var integral = [Int](repeating: 0, count: (w + 1) * (h + 1))
        for y in 0..<h {
            var row = 0
            for x in 0..<w {
                row += Int(gray.pixels[y * w + x])
                integral[(y + 1) * (w + 1) + x + 1] = integral[y * (w + 1) + x + 1] + row
            }
        }
        var pixels = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            let y0 = max(0, y - r), y1 = min(h, y + r + 1)
            for x in 0..<w {
                let x0 = max(0, x - r), x1 = min(w, x + r + 1)
                let sum = integral[y1 * (w + 1) + x1] - integral[y0 * (w + 1) + x1] - integral[y1 * (w + 1) + x0] + integral[y0 * (w + 1) + x0]
                let value: UInt8 = Int(gray.pixels[y * w + x]) * (x1 - x0) * (y1 - y0) + 12 * (x1 - x0) * (y1 - y0) < sum ? 0 : 255
                pixels[(y * w + x) * 3] = value; pixels[(y * w + x) * 3 + 1] = value; pixels[(y * w + x) * 3 + 2] = value
            }
        }
        return ImageCodecs.RGBImage(width: w, height: h, pixels: pixels)
    }
}

/// A plane projective transform from four point correspondences.
public struct Homography: Sendable {
    var h: [Float]

    public init(from source: [(Float, Float)], to target: [(Float, Float)]) {
        // Solve the 8 × 8 system for h00…h21 (h22 = 1) by Gaussian elimination in Double.
        var a = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for i in 0..<4 {
            let (x, y) = (Double(source[i].0), Double(source[i].1)), (u, v) = (Double(target[i].0), Double(target[i].1))
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y, u]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y, v]
        }
        for column in 0..<8 {
            let pivot = (column..<8).max { abs(a[$0][column]) < abs(a[$1][column]) } ?? column
            a.swapAt(column, pivot)
            let p = a[column][column]
            guard abs(p) > 1e-12 else { continue }
            for k in column..<9 { a[column][k] /= p }
            for row in 0..<8 where row != column {
                let f = a[row][column]
                if f != 0 { for k in column..<9 { a[row][k] -= f * a[column][k] } }
            }
        }
        h = (0..<8).map { Float(a[$0][8]) } + [1]
    }

    public func apply(_ x: Float, _ y: Float) -> (Float, Float) {
        let w = h[6] * x + h[7] * y + h[8]
        return ((h[0] * x + h[1] * y + h[2]) / w, (h[3] * x + h[4] * y + h[5]) / w)
    }
}

extension Photographer {
    /// The benchmark's image `index` of the tier at `tierPlace` in its `--tiers` (the lab's
    /// `analyze` and `evidence` and the false-accept regression tests make the same photograph):
    /// formats in turn, each image's generator seeded from `seed`, the index and the tier's place.
    public func benchmarkShot(index: Int, seed: UInt64, tierPlace: Int, conditions: Conditions) -> Shot {
        var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 104_729 &+ UInt64(tierPlace) << 40)
        let sample = MRZSample(format: MRZFormat.allCases[index % MRZFormat.allCases.count], generator: &generator)
        return shoot(sample, conditions, generator: &generator)
    }
}
