import Foundation
import SmartCardCore

/// Synthesised DG3 (fingerprints, ISO/IEC 19794-4:2005) and DG4 (irises, ISO/IEC 19794-6:2005)
/// in ICAO 9303-10 biometric templates, for EAC chips. The images are small uncompressed
/// grayscale patterns (ridges, rings): a test chip's, never a person's.
extension LDSBuilder {
    /// DG3 with the right and left index fingers (positions 2 and 7).
    static func dg3() -> [UInt8] {
        // CBEFF subtypes: right (01) / left (02) index finger (08).
        let records = [(2, 0x09), (7, 0x0A)].map { position, subtype in
            (UInt8(subtype), fingerRecord(position: UInt8(position), width: 64, height: 64))
        }
        return biometricGroup(tag: 0x63, type: 0x08, formatType: [0x00, 0x07], records: records)
    }

    /// DG4 with the right and left irises.
    static func dg4() -> [UInt8] {
        let records = [1, 2].map { subtype in (UInt8(subtype), irisRecord(subtype: UInt8(subtype), width: 64, height: 48)) }
        return biometricGroup(tag: 0x76, type: 0x10, formatType: [0x00, 0x09], records: records)
    }

    /// A hostile DG4: one ISO/IEC 19794-6 record announcing `subtypes` × `imagesEach` images of
    /// no bytes each (11 bytes a header): 5 × 65,535 make 3.6 MB and 327,675 images.
    static func irisFlood(subtypes: Int, imagesEach: Int) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(subtypes * (3 + imagesEach * 11))
        for subtype in 1...subtypes {
            body += [UInt8(truncatingIfNeeded: subtype)] + bigEndian(imagesEach, 2)
            for image in 0..<imagesEach { body += bigEndian(image, 2) + [50] + [0, 0, 0, 0] + [0, 0, 0, 0] }
        }
        let total = 45 + body.count
        var header: [UInt8] = Array("IIR".utf8) + [0] + Array("010".utf8) + [0] + bigEndian(total, 4)
        // Capture device, subtypes, header length 45, image properties, diameter, raw format, 64 × 48, depth, …
        header += bigEndian(0, 2) + [UInt8(truncatingIfNeeded: subtypes)] + bigEndian(45, 2) + bigEndian(0, 2) + bigEndian(200, 2)
        header += bigEndian(2, 2) + bigEndian(64, 2) + bigEndian(48, 2)
        header += [UInt8](repeating: 0, count: 45 - header.count)
        return biometricGroup(tag: 0x76, type: 0x10, formatType: [0x00, 0x09], records: [(1, header + body)])
    }

    /// A hostile DG3: `templates` biometric templates, each a finger record with one view of no
    /// pixels (51,000 of them make 2.9 MB).
    static func fingerFlood(templates: Int) -> [UInt8] {
        let view: [UInt8] = bigEndian(14, 4) + [2, 1, 1, 80, 0] + bigEndian(0, 2) + bigEndian(0, 2) + [0]
        var header: [UInt8] = Array("FIR".utf8) + [0] + Array("010".utf8) + [0] + bigEndian(32 + view.count, 6)
        header += bigEndian(0, 2) + bigEndian(31, 2) + [1, 1] + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2)
            + [8, 0] + [0, 0]
        let record = header + view
        return biometricGroup(tag: 0x63, type: 0x08, formatType: [0x00, 0x07], records: Array(repeating: (9, record), count: templates))
    }

    /// 63/76 { 7F61 { 02 count, 7F60 { A1 { BHT }, 5F2E record } … } }.
    static func biometricGroup(tag: UInt32, type: UInt8, formatType: [UInt8], records: [(subtype: UInt8, record: [UInt8])]) -> [UInt8] {
        var templates: [TLV] = [TLV(tag: 0x02, value: [UInt8(truncatingIfNeeded: records.count)])]
        for (subtype, record) in records {
            let header = TLV(tag: 0xA1, children: [
                TLV(tag: 0x80, value: [0x01, 0x01]),            // ICAO header version
                TLV(tag: 0x81, value: [type]),                  // biometric type: 08 finger, 10 iris
                TLV(tag: 0x82, value: [subtype]),               // biometric subtype (CBEFF)
                TLV(tag: 0x87, value: [0x01, 0x01]),            // format owner: ISO/IEC JTC 1/SC 37
                TLV(tag: 0x88, value: formatType),              // format type: 19794-4 (0007), 19794-6 (0009)
            ])
            templates.append(TLV(tag: 0x7F60, children: [header, TLV(tag: 0x5F2E, value: record)]))
        }
        return TLV(tag: tag, children: [TLV(tag: 0x7F61, children: templates)]).encoded()
    }

    static func bigEndian(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// A finger image record (ISO/IEC 19794-4:2005): the 32-byte general header, one finger view
    /// (14-byte header + an uncompressed 8-bit image).
    static func fingerRecord(position: UInt8, width: Int, height: Int) -> [UInt8] {
        let image = (0..<height).flatMap { y in (0..<width).map { x in UInt8(truncatingIfNeeded: 128 + Int(100 * sin(Double(x + y * Int(position)) / 3))) } }
        // Finger data block length, position, view count, view number, quality, impression type, width, height, reserved.
        let view: [UInt8] = bigEndian(14 + image.count, 4) + [position, 1, 1, 80, 0] + bigEndian(width, 2) + bigEndian(height, 2) + [0] + image
        let total = 32 + view.count
        var header: [UInt8] = Array("FIR".utf8) + [0] + Array("010".utf8) + [0] + bigEndian(total, 6)
        // Capture device, acquisition level 31, one finger, pixels per inch, scan and image resolution 500 ppi.
        header += bigEndian(0, 2) + bigEndian(31, 2) + [1, 1] + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2)
        // 8 bits a pixel, compression 0 (uncompressed, no bit packing), reserved.
        header += [8, 0] + [0, 0]
        return header + view
    }

    /// A finger image record whose one view is a JPEG (compression algorithm 3).
    static func fingerRecord(position: UInt8, width: Int, height: Int, jpeg: [UInt8]) -> [UInt8] {
        let view: [UInt8] = bigEndian(14 + jpeg.count, 4) + [position, 1, 1, 80, 0] + bigEndian(width, 2) + bigEndian(height, 2) + [0] + jpeg
        var header: [UInt8] = Array("FIR".utf8) + [0] + Array("010".utf8) + [0] + bigEndian(32 + view.count, 6)
        header += bigEndian(0, 2) + bigEndian(31, 2) + [1, 1] + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2) + bigEndian(500, 2)
        header += [8, 3] + [0, 0]
        return header + view
    }

    /// An iris image record (ISO/IEC 19794-6:2005): the 45-byte general header, one subtype with
    /// one raw 8-bit image.
    static func irisRecord(subtype: UInt8, width: Int, height: Int) -> [UInt8] {
        let image = (0..<height).flatMap { y in
            (0..<width).map { x -> UInt8 in
                let dx = Double(x - width / 2), dy = Double(y - height / 2)
                let r = (dx * dx + dy * dy).squareRoot()
                return r < 6 ? 20 : r < 18 ? UInt8(truncatingIfNeeded: 90 + Int(40 * sin(r + Double(subtype)))) : 200
            }
        }
        // Image number, quality, rotation angle and its uncertainty (undefined), length, image.
        let imageBlock: [UInt8] = bigEndian(1, 2) + [80] + bigEndian(0xFFFF, 2) + bigEndian(0xFFFF, 2) + bigEndian(image.count, 4) + image
        let subtypeBlock: [UInt8] = [subtype] + bigEndian(1, 2) + imageBlock
        let total = 45 + subtypeBlock.count
        var header: [UInt8] = Array("IIR".utf8) + [0] + Array("010".utf8) + [0] + bigEndian(total, 4)
        // Capture device, one subtype, header length 45, image properties, iris diameter 36 px, format 2 (mono raw).
        header += bigEndian(0, 2) + [1] + bigEndian(45, 2) + bigEndian(0, 2) + bigEndian(36, 2) + bigEndian(0x0002, 2)
        // Width, height, 8 bits a pixel, no transformation, device unique id (none).
        header += bigEndian(width, 2) + bigEndian(height, 2) + [8, 0] + [UInt8](repeating: 0, count: 16)
        return header + subtypeBlock
    }
}
