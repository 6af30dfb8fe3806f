/// Dark blobs of an image: a local threshold (darker than the mean around by a margin, on an
/// integral image, so uneven light does not matter), then 8-connected components with their
/// boxes and centroids.
struct Component: Sendable {
    var minX: Int
    var minY: Int
    var maxX: Int
    var maxY: Int
    var count: Int
    var sumX: Int
    var sumY: Int

    var width: Int { maxX - minX + 1 }
    var height: Int { maxY - minY + 1 }
    var centreX: Float { Float(sumX) / Float(count) + 0.5 }
    var centreY: Float { Float(sumY) / Float(count) + 0.5 }
    /// The box's centre (the centroid of a `<` sits low-left of its box's).
    var boxCentreX: Float { Float(minX + maxX + 1) / 2 }
    var boxCentreY: Float { Float(minY + maxY + 1) / 2 }
}

enum Components {
    /// The dark mask: darker than the mean of the (2r+1)² window by `margin` (0…255).
    static func darkMask(_ image: GrayImage, radius: Int, margin: Int) -> [Bool] {
        let w = image.width, h = image.height
        var integral = [UInt32](repeating: 0, count: (w + 1) * (h + 1))
        image.pixels.withUnsafeBufferPointer { pixels in
            integral.withUnsafeMutableBufferPointer { sums in
                for y in 0..<h {
                    var row: UInt32 = 0
                    for x in 0..<w {
                        row += UInt32(pixels[y * w + x])
                        sums[(y + 1) * (w + 1) + x + 1] = sums[y * (w + 1) + x + 1] + row
                    }
                }
            }
        }
        var mask = [Bool](repeating: false, count: w * h)
        integral.withUnsafeBufferPointer { sums in
            image.pixels.withUnsafeBufferPointer { pixels in
                for y in 0..<h {
                    let y0 = max(0, y - radius), y1 = min(h, y + radius + 1)
                    for x in 0..<w {
                        let x0 = max(0, x - radius), x1 = min(w, x + radius + 1)
                        let sum = Int(sums[y1 * (w + 1) + x1]) - Int(sums[y0 * (w + 1) + x1]) - Int(sums[y1 * (w + 1) + x0]) + Int(sums[y0 * (w + 1) + x0])
                        let area = (x1 - x0) * (y1 - y0)
                        mask[y * w + x] = Int(pixels[y * w + x]) * area + margin * area < sum
                    }
                }
            }
        }
        return mask
    }

    /// The 8-connected components of `mask` (at most `limit` of them: a noise image stops there).
    static func label(_ mask: [Bool], width w: Int, height h: Int, limit: Int = 250_000) -> [Component] {
        var labels = [Int32](repeating: -1, count: w * h)
        var parent: [Int32] = []
        func find(_ a: Int32) -> Int32 {
            var a = a
            while parent[Int(a)] != a {
                parent[Int(a)] = parent[Int(parent[Int(a)])]
                a = parent[Int(a)]
            }
            return a
        }
        func union(_ a: Int32, _ b: Int32) {
            let ra = find(a), rb = find(b)
            if ra != rb { parent[Int(max(ra, rb))] = min(ra, rb) }
        }
        for y in 0..<h {
            for x in 0..<w where mask[y * w + x] {
                var label: Int32 = -1
                // Neighbours already labelled: W, NW, N, NE.
                for (dx, dy) in [(-1, 0), (-1, -1), (0, -1), (1, -1)] {
                    let nx = x + dx, ny = y + dy
                    guard nx >= 0, ny >= 0, nx < w else { continue }
                    let other = labels[ny * w + nx]
                    guard other >= 0 else { continue }
                    if label < 0 { label = other } else if other != label { union(label, other) }
                }
                if label < 0 {
                    guard parent.count < limit else { continue }
                    label = Int32(parent.count)
                    parent.append(label)
                }
                labels[y * w + x] = label
            }
        }
        var index = [Int32](repeating: -1, count: parent.count)
        var components: [Component] = []
        for y in 0..<h {
            for x in 0..<w {
                let label = labels[y * w + x]
                guard label >= 0 else { continue }
                let root = Int(find(label))
                if index[root] < 0 {
                    index[root] = Int32(components.count)
                    components.append(Component(minX: x, minY: y, maxX: x, maxY: y, count: 0, sumX: 0, sumY: 0))
                }
                let i = Int(index[root])
                components[i].minX = min(components[i].minX, x)
                components[i].maxX = max(components[i].maxX, x)
                components[i].minY = min(components[i].minY, y)
                components[i].maxY = max(components[i].maxY, y)
                components[i].count += 1
                components[i].sumX += x
                components[i].sumY += y
            }
        }
        return components
    }
}
