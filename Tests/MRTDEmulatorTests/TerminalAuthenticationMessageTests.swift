import MRTDEmulator
import Testing

/// What the emulated chip checks a terminal's signature over: ID_PICC ‖ r_PICC ‖ Comp(PK_PCD)
/// at the field's length (TR-03111), and the form OpenPACE terminals sign, without leading zero
/// bytes (Docs/extended-access-control.md, "Comp() and leading zero bytes").
@Suite("Emulated chip: the messages a Terminal Authentication signature may cover")
struct TerminalAuthenticationMessageTests {
    let challenge: [UInt8] = [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8]

    @Test("no leading zero byte: the one message the specifications give")
    func noLeadingZero() {
        let messages = VirtualPassportChip.terminalAuthenticationMessages(identifier: [0x12, 0x00, 0x34], challenge: challenge, compressedKey: [0x56, 0x78])
        #expect(messages == [[0x12, 0x00, 0x34] + challenge + [0x56, 0x78]])
    }

    @Test("a leading zero in ID_PICC, in Comp(PK_PCD), in both: the specifications' form first, then each with its zeros dropped")
    func leadingZeros() {
        let id: [UInt8] = [0x00, 0x00, 0x34], comp: [UInt8] = [0x00, 0x78]
        #expect(VirtualPassportChip.terminalAuthenticationMessages(identifier: id, challenge: challenge, compressedKey: [0x56])
            == [id + challenge + [0x56], [0x34] + challenge + [0x56]])
        #expect(VirtualPassportChip.terminalAuthenticationMessages(identifier: [0x34], challenge: challenge, compressedKey: comp)
            == [[0x34] + challenge + comp, [0x34] + challenge + [0x78]])
        let both = VirtualPassportChip.terminalAuthenticationMessages(identifier: id, challenge: challenge, compressedKey: comp)
        #expect(both == [id + challenge + comp, id + challenge + [0x78], [0x34] + challenge + comp, [0x34] + challenge + [0x78]])
    }

    @Test("an all-zero value is not made empty; the challenge's own zeros are never touched")
    func degenerate() {
        let zeroChallenge: [UInt8] = [0x00, 0x00, 0x01]
        #expect(VirtualPassportChip.terminalAuthenticationMessages(identifier: [0x00, 0x00], challenge: zeroChallenge, compressedKey: [0x09])
            == [[0x00, 0x00] + zeroChallenge + [0x09]])
    }
}
