import Foundation
import SmartCardCore

/// Synthesised DG3 (fingerprints, ISO/IEC 19794-4:2005) and DG4 (irises, ISO/IEC 19794-6:2005)
/// in ICAO 9303-10 biometric templates, for EAC chips. The images are small uncompressed
/// grayscale patterns (ridges, rings): a test chip's, never a person's.
extension LDSBuilder {
    /// DG3 with the right and left index fingers (positions 2 and 7).
    static func dg3() -> [UInt8] {
        let records = [2, 7].map { position in fingerRecord(position: UInt8(position), width: 64, height: 64) }
        return biometricGroup(tag: 0x63, type: 0x08, formatType: [0x00, 0x07], records: records)
    }

    /// DG4 with the right and left irises.
    static func dg4() -> [UInt8] {
        let records = [1, 2].map { subtype in irisRecord(subtype: UInt8(subtype), width: 64, height: 48) }
        return biometricGroup(tag: 0x76, type: 0x10, formatType: [0x00, 0x09], records: records)
    }

    /// 63/76 { 7F61 { 02 count, 7F60 { A1 { BHT }, 5F2E record } … } }.
    static func biometricGroup(tag: UInt32, type: UInt8, formatType: [UInt8], records: [[UInt8]]) -> [UInt8] {
        var templates: [TLV] = [TLV(tag: 0x02, value: [UInt8(records.count)])]
        for record in records {
            let header = TLV(tag: 0xA1, children: [
                TLV(tag: 0x80, value: [0x01, 0x01]),            // ICAO header version
                TLV(tag: 0x81, value: [type]),                  // biometric type: 08 finger, 10 iris
                TLV(tag: 0x87, value: [0x01, 0x01]),            // format owner: ISO/IEC JTC 1/SC 37
                TLV(tag: 0x88, value: formatType),              // format type: 19794-4 (0007), 19794-6 (0009)
            ])
            templates.append(TLV(tag: 0x7F60, children: [header, TLV(tag: 0x5F2E, value: record)]))
        }
        return TLV(tag: tag, children: [TLV(tag: 0x7F61, children: templates)]).encoded()
    }

    static func bigEndian(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// A finger image record: general header (32 bytes), one finger view (14-byte header + image).
    static func fingerRecord(position: UInt8, width: Int, height: Int) -> [UInt8] {
        let image = (0..<height).flatMap { y in (0..<width).map { x in UInt8(truncatingIfNeeded: 128 + Int(100 * sin(Double(x + y * Int(position)) / 3))) } }
        let view: [UInt8] = bigEndian(14 + image.count, 4) + [position, 1, 1, 80, 0] + bigEndian(width, 2) + bigEndian(height, 2) + [0] + image
        let total = 32 + view.count
        var header: [UInt8] = Array("FIR".utf8) + [0] + Array("010".utf8) + [0]
        header += bigEndian(total, 6) + [0, 0, 0, 0] + [0, 0] + bigEndian(31, 2) + [1] + [1]
        header += bigEndian(197, 2) + bigEndian(197, 2) + bigEndian(197, 2) + bigEndian(197, 2) + [8] + [0] + [0, 0]
        return header + view
    }

    /// An iris image record: general header (45 bytes), one subtype with one raw image.
    static func irisRecord(subtype: UInt8, width: Int, height: Int) -> [UInt8] {
        let image = (0..<height).flatMap { y in
            (0..<width).map { x -> UInt8 in
                let dx = Double(x - width / 2), dy = Double(y - height / 2)
                let r = (dx * dx + dy * dy).squareRoot()
                return r < 6 ? 20 : r < 18 ? UInt8(truncatingIfNeeded: 90 + Int(40 * sin(r + Double(subtype)))) : 200
            }
        }
        let imageBlock: [UInt8] = bigEndian(1, 2) + [80] + bigEndian(0xFFFF, 2) + bigEndian(0xFFFF, 2) + bigEndian(image.count, 4) + image
        let subtypeBlock: [UInt8] = [subtype] + bigEndian(1, 2) + imageBlock
        let total = 45 + subtypeBlock.count
        var header: [UInt8] = Array("IIR".utf8) + [0] + Array("010".utf8) + [0]
        header += bigEndian(total, 4) + bigEndian(0, 2) + [1] + bigEndian(45, 2) + bigEndian(0, 2) + bigEndian(36, 2)
        header += bigEndian(0x0002, 2) + bigEndian(width, 2) + bigEndian(height, 2) + [8] + [0]
        header += [UInt8](repeating: 0, count: 16) + [UInt8](repeating: 0, count: 16)
        return header + subtypeBlock
    }
}
