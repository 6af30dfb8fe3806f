import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// The chip's file system: SELECT and READ BINARY (B0 and B1) over the MF and the eMRTD application.
extension VirtualPassportChip {
    func file(_ fid: UInt16, in df: DF) -> [UInt8]? {
        switch df {
        case .master: return passport.masterFiles[fid]
        case .application: return passport.applicationFiles[fid] ?? (fid == 0x011C ? passport.eac?.cvcaFile : nil)
        }
    }

    /// Before access control only the MF's public files (EF.CardAccess, EF.ATR/INFO) are readable;
    /// EF.CardSecurity and the application need PACE or BAC.
    func mayAccess(_ df: DF, _ state: State, fid: UInt16? = nil) -> Bool {
        if state.authenticated { return true }
        return df == .master && fid != 0x011D
    }

    func sfiToFID(_ sfi: UInt8, in df: DF) -> UInt16? {
        switch df {
        case .master:
            switch sfi {
            case 0x1C: return EmulatedPassport.efCardAccess
            case 0x1D: return 0x011D
            case 0x01: return EmulatedPassport.efATRInfo
            case 0x1E: return EmulatedPassport.efDIR
            default: return nil
            }
        case .application:
            switch sfi {
            case 0x1E: return EmulatedPassport.efCOM
            case 0x1D: return EmulatedPassport.efSOD
            case 0x1C where passport.eac != nil: return 0x011C
            case 0x01...0x10: return EmulatedPassport.dataGroupFID(Int(sfi))
            default: return nil
            }
        }
    }

    func select(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        switch quirks.selectLe {
        case .refused? where command.ne != nil: return ResponseAPDU(statusWord: .wrongLength)
        case .required? where command.ne == nil: return ResponseAPDU(statusWord: .wrongLength)
        default: break
        }
        switch command.p1 {
        case 0x04:
            guard command.data == EmulatedPassport.eMRTDApplicationID else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.df = .application
            state.selectedFile = nil
            return ResponseAPDU(statusWord: .success)
        case 0x00 where command.data.isEmpty || command.data == [0x3F, 0x00]:
            if let answer = quirks.selectMasterFile { return ResponseAPDU(statusWord: answer) }
            state.df = .master
            state.selectedFile = nil
            return ResponseAPDU(statusWord: .success)
        case 0x00, 0x02:
            guard command.data.count == 2 else { return ResponseAPDU(statusWord: .lcInconsistentWithP1P2) }
            let fid = UInt16(command.data[0]) << 8 | UInt16(command.data[1])
            guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
            guard let content = file(fid, in: state.df) else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.selectedFile = fid
            if command.p2 & 0x0C == 0x0C { return ResponseAPDU(statusWord: .success) }
            // FCP: file size and id.
            let fcp = BERTLV.encode(tag: 0x62, value: BERTLV.encode(tag: 0x80, value: [UInt8(content.count >> 8 & 0xFF), UInt8(content.count & 0xFF)])
                + BERTLV.encode(tag: 0x82, value: [0x01]) + BERTLV.encode(tag: 0x83, value: command.data))
            return ResponseAPDU(data: fcp, statusWord: .success)
        default:
            return ResponseAPDU(statusWord: .incorrectP1P2)
        }
    }

    func readBinary(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        var offset: Int
        if command.ins == 0xB1 {
            guard let object = try? BERTLV.parseSingle(command.data), object.tag == 0x54, (1...3).contains(object.value.count) else {
                return ResponseAPDU(statusWord: .wrongData)
            }
            offset = object.value.reduce(0) { $0 << 8 | Int($1) }
            if command.p1 != 0 || command.p2 != 0 {
                // P1-P2 may carry a file id (00 = current EF).
                let fid = UInt16(command.p1) << 8 | UInt16(command.p2)
                guard mayAccess(state.df, state) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
                guard file(fid, in: state.df) != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
                state.selectedFile = fid
            }
        } else if command.p1 & 0x80 != 0 {
            if let answer = quirks.noShortFileIdentifier { return ResponseAPDU(statusWord: answer) }
            guard command.p1 & 0x60 == 0, let fid = sfiToFID(command.p1 & 0x1F, in: state.df) else {
                return ResponseAPDU(statusWord: .incorrectP1P2)
            }
            guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
            guard file(fid, in: state.df) != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.selectedFile = fid
            offset = Int(command.p2)
        } else {
            offset = Int(command.p1) << 8 | Int(command.p2)
        }
        guard let fid = state.selectedFile else { return ResponseAPDU(statusWord: .commandNotAllowedNoEF) }
        guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        if state.df == .application, quirks.protectedFiles.contains(fid) { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        // DG3/DG4 of an EAC chip: selectable, readable only after Terminal Authentication granted them.
        if state.df == .application, !eacAllows(fid: fid, state) { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let stored = file(fid, in: state.df) else { return ResponseAPDU(statusWord: .fileNotFound) }
        let content = (state.df == .application ? hostileFile(fid) : nil) ?? ServedFile(stored)
        if quirks.cardAccessUnreadable, state.df == .master, fid == EmulatedPassport.efCardAccess {
            return ResponseAPDU(statusWord: .securityStatusNotSatisfied)
        }
        let requested = command.ne ?? 256
        if quirks.refuseLe00, requested == 256, !command.isExtended { return ResponseAPDU(statusWord: .wrongLength) }
        if let faultCap = state.faults.readLengthCap, requested > faultCap {
            // An injected fault: this chip refuses anything above the cap.
            if quirks.exactLengthHint, faultCap < 256 { return ResponseAPDU(statusWord: StatusWord(sw1: 0x6C, sw2: UInt8(faultCap))) }
            return ResponseAPDU(statusWord: .wrongLength)
        }
        let cap = passport.maxReadLength
        if requested > cap {
            if quirks.exactLengthHint, cap < 256 { return ResponseAPDU(statusWord: StatusWord(sw1: 0x6C, sw2: UInt8(cap))) }
            if quirks.wrongLengthAboveLimit { return ResponseAPDU(statusWord: .wrongLength) }
        }
        // Ne is a maximum (ISO 7816-4 §5.1): a chip whose buffer is smaller answers what it holds.
        let ne = min(requested, cap)
        guard offset <= content.count else { return ResponseAPDU(statusWord: .wrongP1P2) }
        if let lie = hostileReadAnswer(offset: offset, requested: requested, count: content.count, explicitLe: command.ne != nil, &state) {
            return lie
        }
        state.statistics.readBinaryCommands += 1
        // Le = 00 (or 0000, or none) asks for everything available up to the maximum (ISO 7816-4
        // §5.1): fewer bytes at the end of the file are a normal answer, 9000. Only an explicit Ne
        // that runs past the end gets the warning 6282; fewer bytes because of the chip's own
        // limit, not the end of the file, are 9000.
        let upToMaximum = command.ne == nil || (requested == 256 && !command.isExtended) || (requested == 65_536 && command.isExtended)
        if command.ins == 0xB1 {
            // The answer is a discretionary-data object 53 whose whole encoding fits Ne.
            var length = min(ne, content.count - offset)
            while length > 0, BERTLV.encode(tag: 0x53, value: [UInt8](repeating: 0, count: length)).count > ne { length -= 1 }
            let chunk = content.bytes(offset..<(offset + length))
            state.statistics.bytesRead += chunk.count
            let short = BERTLV.encode(tag: 0x53, value: chunk).count < requested
            return ResponseAPDU(data: BERTLV.encode(tag: 0x53, value: chunk),
                                statusWord: short && offset + length == content.count && !upToMaximum ? .endOfFileReached : .success)
        }
        let end = min(content.count, offset + ne)
        let chunk = hostileOverlong(content.bytes(offset..<end), fid: fid, requested: requested)
        state.statistics.bytesRead += chunk.count
        if quirks.endOfFileWarning, end == content.count { return ResponseAPDU(data: chunk, statusWord: .endOfFileReached) }
        return ResponseAPDU(data: chunk, statusWord: chunk.count < requested && end == content.count && !upToMaximum
                                ? .endOfFileReached : .success)
    }
}
