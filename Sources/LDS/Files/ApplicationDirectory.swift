import SmartCardCore

/// EF.DIR (ICAO 9303-10 §3.11.2, Table 31): the applications on the chip, one application
/// template (tag 61) each, holding the application identifier (tag 4F). Chips with only the LDS1
/// eMRTD application usually have no EF.DIR; LDS2 chips list travel records, visa records and
/// additional biometrics beside it. Unsigned: what it says is shown, never relied on.
public struct ApplicationDirectory: Sendable, Hashable {
    /// The application identifiers (ISO 7816-4: 5 to 16 bytes each), in the file's order.
    public let identifiers: [[UInt8]]

    /// The most templates a directory may hold before it is refused (ICAO defines four).
    package static let maxApplications = 16

    /// What ICAO 9303 calls the applications it defines, by identifier in hex.
    package static let names = [
        "A0000002471001": "eMRTD (LDS1)",
        "A0000002472001": "travel records (LDS2)",
        "A0000002472002": "visa records (LDS2)",
        "A0000002472003": "additional biometrics (LDS2)",
    ]

    /// `identifier` in upper-case hex and, for ICAO's applications, its name.
    package static func describe(_ identifier: [UInt8]) -> (hex: String, name: String?) {
        let text = hex(identifier).uppercased()
        return (text, names[text])
    }

    /// Parses EF.DIR: application templates one after the other (zero or FF padding between and
    /// after them is skipped, other objects ignored). A template without an identifier, an
    /// identifier outside 5–16 bytes, or more than `maxApplications` templates is malformed.
    package init(bytes: [UInt8]) throws(MRTDError) {
        let objects: [TLV]
        do {
            objects = try BERTLV.parseAll(bytes)
        } catch {
            throw MRTDError(.malformedData, "EF.DIR is not BER-TLV: \(error.reason)")
        }
        var identifiers: [[UInt8]] = []
        for template in objects where template.tag == 0x61 {
            let number = identifiers.count + 1
            guard identifiers.count < Self.maxApplications else {
                throw MRTDError(.malformedData, "EF.DIR names more than \(Self.maxApplications) applications")
            }
            let identifier: TLV?
            do {
                identifier = try template.child(0x4F)
            } catch {
                throw MRTDError(.malformedData, "EF.DIR's application template \(number) is not BER-TLV: \(error.reason)")
            }
            guard let identifier else {
                throw MRTDError(.malformedData, "EF.DIR's application template \(number) has no application identifier (4F)")
            }
            guard (5...16).contains(identifier.value.count) else {
                throw MRTDError(.malformedData, "EF.DIR's application identifier \(number) has \(identifier.value.count) bytes (5 to 16 allowed)")
            }
            identifiers.append(identifier.value)
        }
        self.identifiers = identifiers
    }

    /// Writes the directory as ICAO 9303-10 Table 31 lays it out (for emulated chips and tests).
    package static func encode(_ identifiers: [[UInt8]]) -> [UInt8] {
        identifiers.flatMap { BERTLV.encode(tag: 0x61, value: BERTLV.encode(tag: 0x4F, value: $0)) }
    }
}
