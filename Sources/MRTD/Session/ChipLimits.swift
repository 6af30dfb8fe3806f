/// What the reader has learnt about how this chip (and the reader in between) wants to be
/// spoken to. Learnt once — from the reader's own attributes, then from the chip's first
/// answers — and kept for the whole read, across new sessions and tag loss.
package struct ChipLimits: Sendable {
    /// Read sizes to step down through when a chip refuses a length without saying which it
    /// takes (6700), largest first: the one ladder every READ BINARY uses. Below 256 its rungs
    /// are the caps field chips have: 0xDF (the largest short read under AES secure messaging,
    /// which many chips also take in plain), 0xA0 (a common safe size), 0x80 and halves. (0xE7,
    /// the 3DES limit, is where a 3DES session starts, not a rung.) A 6Cxx names the length.
    package static let readLengthLadder = [32_768, 16_384, 8_192, 4_096, 2_048, 1_024, 512, 256, 0xDF, 0xA0, 0x80, 0x40, 0x20, 0x10, 0x08]
    /// The smallest READ BINARY asked for anywhere but at a file's end: a chip that refuses this
    /// too refuses to be read (every ladder has a floor; nothing halves forever).
    package static let readLengthFloor = 0x08
    /// How many lengths one READ BINARY may be refused (6700, 6Cxx) before the chip is given up:
    /// the ladder's rungs, and a 6Cxx that names yet another length each time, end here.
    package static let maxLengthRefusals = 16
    /// The largest extended READ BINARY asked for (its protected answer stays under 64 KiB).
    package static let extendedReadLength = 32_768

    /// Whether the transport can carry extended APDUs at all (PN53x under libnfc cannot; a PC/SC
    /// reader may say so itself).
    package var transportCarriesExtendedLength: Bool
    /// Whether the chip takes extended-length APDUs (`nil`: not probed yet).
    package var extendedLength: Bool?
    /// The largest READ BINARY length the chip answered (or named with 6Cxx) when asked for more:
    /// a cap of its own below what secure messaging allows (`nil`: none seen).
    package var readCap: Int?
    /// Whether the chip reads files by short EF identifier (`nil`: not learnt yet).
    package var shortFileIdentifiers: Bool?
    /// Whether the chip wants an Le on SELECT (`nil`: not learnt yet; none is sent first).
    package var selectWithLe: Bool?
    /// Whether MSE:Set AT for PACE carries the parameter id (`nil`: not learnt yet; sent first).
    package var mseWithParameterId: Bool?
    /// The chip mishandled a READ BINARY that ran past the end of a file (a bare 6282 with no
    /// data, 6282 without a MAC, 6700): from then on each file's header is read first and then
    /// exactly what the header says, never more.
    package var exactLengthReads = false

    package init(transportCarriesExtendedLength: Bool) {
        self.transportCarriesExtendedLength = transportCarriesExtendedLength
        if !transportCarriesExtendedLength { extendedLength = false }
    }

    /// The READ BINARY length to ask for: as much as an extended APDU or, without extended length,
    /// a short protected answer (`shortLimit`: 0xE7 under 3DES, 0xDF under AES, 256 in plain) can
    /// carry, never more than the chip's cap.
    package func readLength(shortLimit: Int) -> Int {
        let most = extendedLength == true ? Self.extendedReadLength : shortLimit
        return min(most, readCap ?? most)
    }

    /// The next smaller length after `length` was refused (6700) or named exactly (6Cxx); the
    /// chip's cap is remembered for the rest of the read unless `atEndOfFile` (a 6Cxx that only
    /// says how many bytes are left). `nil` when no length is left: below `readLengthFloor` only a
    /// 6Cxx at the end of a file is followed.
    package mutating func stepDown(from length: Int, exact: Int?, atEndOfFile: Bool = false) -> Int? {
        let next: Int
        if let exact, exact > 0, exact < length, exact >= Self.readLengthFloor || atEndOfFile {
            next = exact
        } else if let smaller = Self.readLengthLadder.first(where: { $0 < length }) {
            next = smaller
        } else {
            return nil
        }
        if !atEndOfFile { readCap = min(readCap ?? next, next) }
        return next
    }

    /// The chip refused an extended APDU it seemed to take: short APDUs from now on.
    package mutating func dropExtendedLength() {
        extendedLength = false
    }
}
