/// `HOST:PORT` (`--metrics-listen`, `metrics-listen:`): a host name or address (IPv6 in
/// brackets) and a port 1–65535.
package struct ListenAddress: Sendable, Equatable {
    package var host: String
    package var port: Int

    package init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
              (1...65_535).contains(port) else { return nil }
        var host = String(argument[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        self.host = host
        self.port = port
    }
}

extension ListenAddress: CustomStringConvertible {
    /// `HOST:PORT` as given (`[v6]:PORT` for IPv6), so it parses back to the same address.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
