import SmartCard

/// Secure messaging (ICAO 9303-11 §9.8, TR-03110-3 F) framed here, in the test, with every
/// cryptographic step — padding, the send sequence counter, encryption, MAC — OpenPACE's.
/// Written from the specification, apart from the reader's and the emulator's own
/// `SecureMessaging`.
struct OpenPACESecureMessaging {
    let eac: OpenPACE

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A BER length.
    static func length(_ count: Int) -> [UInt8] {
        switch count {
        case ..<0x80: return [UInt8(count)]
        case ..<0x100: return [0x81, UInt8(count)]
        default: return [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        }
    }

    static func object(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] { [tag] + length(value.count) + value }

    /// The simple TLV objects of a protected body (one-byte tags), in order.
    static func objects(_ bytes: [UInt8]) throws -> [(tag: UInt8, value: [UInt8], encoded: [UInt8])] {
        var result: [(UInt8, [UInt8], [UInt8])] = []
        var index = 0
        while index < bytes.count {
            let start = index
            let tag = bytes[index]
            index += 1
            guard index < bytes.count else { throw Failure("a data object without a length") }
            var count = Int(bytes[index])
            index += 1
            if count == 0x81 || count == 0x82 {
                let octets = count - 0x80
                guard index + octets <= bytes.count else { throw Failure("a cut length") }
                count = bytes[index..<(index + octets)].reduce(0) { $0 << 8 | Int($1) }
                index += octets
            }
            guard index + count <= bytes.count else { throw Failure("a data object longer than the body") }
            result.append((tag, Array(bytes[index..<(index + count)]), Array(bytes[start..<(index + count)])))
            index += count
        }
        return result
    }

    // MARK: Terminal side

    /// Protects a command: DO'87' (or DO'85' for an odd INS), DO'97', DO'8E'.
    func protect(_ command: CommandAPDU) throws -> CommandAPDU {
        try eac.incrementSSC()
        let header: [UInt8] = [command.cla | 0x0C, command.ins, command.p1, command.p2]
        var objects: [UInt8] = []
        if !command.data.isEmpty {
            let cryptogram = try eac.encrypt(try eac.pad(command.data))
            objects += command.ins & 1 == 1 ? Self.object(0x85, cryptogram) : Self.object(0x87, [0x01] + cryptogram)
        }
        if let ne = command.ne {
            objects += ne > 256 ? Self.object(0x97, [UInt8((ne >> 8) & 0xFF), UInt8(ne & 0xFF)]) : Self.object(0x97, [UInt8(ne & 0xFF)])
        }
        let mac = try eac.mac(try eac.pad(try eac.pad(header) + objects))
        objects += Self.object(0x8E, Array(mac.prefix(8)))
        let extended = command.ne.map { $0 > 256 } ?? false
        return CommandAPDU(cla: header[0], ins: command.ins, p1: command.p1, p2: command.p2, data: objects,
                           ne: extended ? 65_536 : 256, forceExtended: extended)
    }

    /// Checks and opens a protected response: DO'87'/DO'85', DO'99', DO'8E'.
    func unprotect(_ response: ResponseAPDU) throws -> ResponseAPDU {
        try eac.incrementSSC()
        let objects = try Self.objects(response.data)
        guard let checksum = objects.first(where: { $0.tag == 0x8E }) else {
            throw Failure("protected response without DO'8E' (status \(response.statusWord))")
        }
        let covered = objects.filter { [0x87, 0x85, 0x99].contains($0.tag) }.flatMap(\.encoded)
        guard try Array(eac.mac(try eac.pad(covered)).prefix(8)) == checksum.value else { throw Failure("response MAC does not verify") }
        var data: [UInt8] = []
        if let encrypted = objects.first(where: { $0.tag == 0x87 || $0.tag == 0x85 }) {
            let cryptogram = encrypted.tag == 0x87 ? Array(encrypted.value.dropFirst()) : encrypted.value
            data = try eac.unpad(try eac.decrypt(cryptogram))
        }
        let statusObject = objects.first(where: { $0.tag == 0x99 })
        let status: [UInt8] = statusObject.map { $0.value } ?? [response.statusWord.sw1, response.statusWord.sw2]
        guard status.count == 2 else { throw Failure("DO'99' of \(status.count) bytes") }
        return ResponseAPDU(data: data, statusWord: StatusWord(sw1: status[0], sw2: status[1]))
    }

    // MARK: Card side

    /// Checks and opens a protected command.
    func unprotect(_ command: CommandAPDU) throws -> CommandAPDU {
        try eac.incrementSSC()
        let objects = try Self.objects(command.data)
        guard let checksum = objects.first(where: { $0.tag == 0x8E }) else { throw Failure("protected command without DO'8E'") }
        let header: [UInt8] = [command.cla, command.ins, command.p1, command.p2]
        let covered = objects.filter { [0x87, 0x85, 0x97].contains($0.tag) }.flatMap(\.encoded)
        guard try Array(eac.mac(try eac.pad(try eac.pad(header) + covered)).prefix(8)) == checksum.value else {
            throw Failure("command MAC does not verify")
        }
        var data: [UInt8] = []
        if let encrypted = objects.first(where: { $0.tag == 0x87 || $0.tag == 0x85 }) {
            let cryptogram = encrypted.tag == 0x87 ? Array(encrypted.value.dropFirst()) : encrypted.value
            data = try eac.unpad(try eac.decrypt(cryptogram))
        }
        let ne: Int? = objects.first { $0.tag == 0x97 }.map { le -> Int in
            let value = le.value.reduce(0) { $0 << 8 | Int($1) }
            return value == 0 ? (le.value.count == 1 ? 256 : 65_536) : value
        }
        return CommandAPDU(cla: command.cla & ~0x0C, ins: command.ins, p1: command.p1, p2: command.p2, data: data, ne: ne)
    }

    /// Protects a response.
    func protect(_ response: ResponseAPDU, oddINS: Bool) throws -> ResponseAPDU {
        try eac.incrementSSC()
        var objects: [UInt8] = []
        if !response.data.isEmpty {
            let cryptogram = try eac.encrypt(try eac.pad(response.data))
            objects += oddINS ? Self.object(0x85, cryptogram) : Self.object(0x87, [0x01] + cryptogram)
        }
        objects += Self.object(0x99, [response.statusWord.sw1, response.statusWord.sw2])
        objects += Self.object(0x8E, Array(try eac.mac(try eac.pad(objects)).prefix(8)))
        return ResponseAPDU(data: objects, statusWord: response.statusWord)
    }
}
