import MRTD
import SmartCardCore

/// A deliberately plain reader written step by step from ICAO 9303-11 (§4.3 BAC, §9.8 secure
/// messaging): no adaptive reading, no retries. Tests use it to prove the emulator behaves like a
/// passport to any conformant reader.
public struct ICAOStepReader {
    public let connection: any CardConnection
    package private(set) var session: SecureMessaging?

    public init(connection: any CardConnection) {
        self.connection = connection
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public let statusWord: StatusWord?
        init(_ description: String, _ statusWord: StatusWord? = nil) {
            self.description = description
            self.statusWord = statusWord
        }
    }

    /// SELECT the eMRTD application (plain).
    public func selectApplication() async throws -> StatusWord {
        try await connection.transmit(.selectApplication(EmulatedApplicationID.value)).statusWord
    }

    /// BAC with the given MRZ information (document number, birth and expiry dates with check digits).
    public mutating func basicAccessControl(mrzInformation: String) async throws {
        let keys = BAC.Keys(keySeed: KeyDerivation.bacKeySeed(mrzInformation: mrzInformation))
        let challenge = try await connection.transmit(.getChallenge())
        guard challenge.statusWord == .success, challenge.data.count == 8 else {
            throw Failure("GET CHALLENGE failed", challenge.statusWord)
        }
        let rndIFD: [UInt8] = [0x78, 0x17, 0x23, 0x86, 0x0C, 0x06, 0xC2, 0x26]
        let kIFD: [UInt8] = [0x0B, 0x79, 0x52, 0x40, 0xCB, 0x70, 0x49, 0xB0, 0x1C, 0x19, 0xB3, 0x3E, 0x32, 0x80, 0x4F, 0x0B]
        let data = try BAC.authenticationData(keys: keys, rndIFD: rndIFD, rndIC: challenge.data, kIFD: kIFD)
        let answer = try await connection.transmit(CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: data, ne: 40))
        guard answer.statusWord == .success else { throw Failure("EXTERNAL AUTHENTICATE refused", answer.statusWord) }
        let r = try BAC.verifyChipResponse(keys: keys, response: answer.data, rndIFD: rndIFD, rndIC: challenge.data)
        session = BAC.session(kIFD: kIFD, kIC: Array(r[16..<32]), rndIC: challenge.data, rndIFD: rndIFD)
    }

    /// Sends a command under secure messaging and returns the unprotected response.
    public mutating func send(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard var sm = session else { throw Failure("no secure-messaging session") }
        let protected = try sm.protect(command)
        let raw = try await connection.transmit(raw: try protected.encoded())
        let response = try sm.unprotect(ResponseAPDU(bytes: raw))
        session = sm
        return response
    }

    /// Reads a whole EF by file id: header first, then the rest in chunks of `chunk` bytes.
    public mutating func readFile(_ fid: UInt16, chunk: Int = 0xDF) async throws -> [UInt8] {
        let select = try await send(.selectFile(fid))
        guard select.statusWord == .success else { throw Failure("SELECT \(String(fid, radix: 16)) failed", select.statusWord) }
        let head = try await send(.readBinary(offset: 0, length: 4))
        guard head.statusWord == .success || head.statusWord == .endOfFileReached else {
            throw Failure("READ BINARY failed", head.statusWord)
        }
        let total = try BERTLV.header(head.data).totalLength ?? head.data.count
        var content = head.data
        while content.count < total {
            let length = min(chunk, total - content.count)
            let part = try await send(.readBinary(offset: content.count, length: length))
            guard part.statusWord == .success || part.statusWord == .endOfFileReached, !part.data.isEmpty else {
                throw Failure("READ BINARY at \(content.count) failed", part.statusWord)
            }
            content += part.data
        }
        return content
    }
}

public enum EmulatedApplicationID {
    public static let value: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x47, 0x10, 0x01]
}
