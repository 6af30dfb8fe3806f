/// JPEG 2000 codestreams (ISO/IEC 15444-1) built by hand: a valid header declaring any size, and
/// empty packets (every code-block absent), so a few hundred bytes decode to an image of that
/// size — the decompression bombs a hostile chip or evidence file could carry.
public enum SyntheticJPEG2000 {
    static func be16(_ value: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
    static func be32(_ value: Int) -> [UInt8] { be16(value >> 16) + be16(value) }

    /// A raw J2K codestream: 8-bit unsigned `components`, `levels` wavelet decompositions (5/3,
    /// reversible), one quality layer, tiles of `tileSize` (the whole image when `nil`).
    public static func codestream(width: Int, height: Int, components: Int = 3, levels: Int = 5, tileSize: Int? = nil) -> [UInt8] {
        let tile = tileSize ?? max(width, height)
        var out: [UInt8] = [0xFF, 0x4F]
        // SIZ
        out += [0xFF, 0x51] + be16(38 + 3 * components) + be16(0) + be32(width) + be32(height) + be32(0) + be32(0)
            + be32(tile) + be32(tile) + be32(0) + be32(0) + be16(components)
        for _ in 0..<components { out += [0x07, 0x01, 0x01] }
        // COD: no precincts, LRCP, 1 layer, no MCT; levels, 64×64 code-blocks, 5/3 reversible.
        out += [0xFF, 0x52] + be16(12) + [0x00, 0x00] + be16(1) + [0x00, UInt8(levels), 0x04, 0x04, 0x00, 0x01]
        // QCD: no quantization, 2 guard bits, one exponent per sub-band.
        let subbands = 3 * levels + 1
        out += [0xFF, 0x5C] + be16(3 + subbands) + [0x40] + Array(repeating: 0x48, count: subbands)
        let tilesAcross = (width + tile - 1) / tile, tilesDown = (height + tile - 1) / tile
        let packets = (levels + 1) * components
        for index in 0..<(tilesAcross * tilesDown) {
            // SOT: tile index, tile-part length (SOT through the end of its data), part 0 of 1; SOD.
            out += [0xFF, 0x90] + be16(10) + be16(index) + be32(12 + 2 + packets) + [0x00, 0x01]
            out += [0xFF, 0x93] + Array(repeating: 0x00, count: packets)  // empty packets
        }
        return out + [0xFF, 0xD9]
    }
}
