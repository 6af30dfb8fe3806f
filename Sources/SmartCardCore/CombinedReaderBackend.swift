/// PC/SC and libnfc readers behind one `CardReaderBackend`. A reader name (or filter) that starts
/// with `libnfc:` goes to libnfc only; other filters search every back end. Waits race the back
/// ends and take the first card; a back end that cannot run here (no pcscd, no libnfc device)
/// does not hide the others — its error is reported only when no back end has a reader.
public final class CombinedReaderBackend: CardReaderBackend {
    public let backends: [any CardReaderBackend]
    public var backendName: String { backends.map(\.backendName).joined(separator: "+") }

    public init(_ backends: [any CardReaderBackend]) {
        self.backends = backends
    }

    private func candidates(for filter: String?) -> [any CardReaderBackend] {
        guard let filter, ReaderName.isLibNFC(filter) else { return backends }
        return backends.filter { $0.backendName == ReaderName.libnfcBackendName }
    }

    /// The most useful of several back-end errors: a missing service last.
    private static func preferred(_ errors: [Error]) -> Error {
        let rank: (Error) -> Int = { error in
            guard let error = error as? SmartCardError else { return 0 }
            switch error.code {
            case .timeout, .cancelled: return 6
            case .permissionDenied, .readerUnavailable: return 5
            case .readerNotFound: return 4
            case .noReaders: return 3
            case .serviceUnavailable: return 2
            default: return 1
            }
        }
        return errors.max { rank($0) < rank($1) } ?? SmartCardError(.noReaders, "no reader back end is configured")
    }

    public func readers() async throws -> [ReaderInfo] {
        var all: [ReaderInfo] = []
        var errors: [Error] = []
        for backend in backends {
            do { all += try await backend.readers() } catch { errors.append(error) }
        }
        if all.isEmpty, errors.count == backends.count, !errors.isEmpty { throw Self.preferred(errors) }
        return all
    }

    public func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo {
        let chosen = candidates(for: readerMatching)
        if chosen.count == 1 { return try await chosen[0].waitForCard(readerMatching: readerMatching, timeout: timeout) }
        return try await race(chosen) { try await $0.waitForCard(readerMatching: readerMatching, timeout: timeout) }
    }

    public func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo] {
        _ = try await race(backends) { try await $0.waitForReaderChange(timeout: timeout) }
        return try await readers()
    }

    public func connect(reader: String) async throws -> any CardConnection {
        if ReaderName.isLibNFC(reader), let libnfc = backends.first(where: { $0.backendName == ReaderName.libnfcBackendName }) {
            return try await libnfc.connect(reader: reader)
        }
        guard let other = backends.first(where: { $0.backendName != ReaderName.libnfcBackendName }) else {
            throw SmartCardError(.readerNotFound, "no back end drives '\(reader)'")
        }
        return try await other.connect(reader: reader)
    }

    /// The first back end to succeed wins and the others are cancelled; when all fail, the most
    /// telling error is thrown.
    private func race<T: Sendable>(_ backends: [any CardReaderBackend],
                                   _ body: @escaping @Sendable (any CardReaderBackend) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Result<T, Error>.self) { group in
            for backend in backends {
                group.addTask { do { return .success(try await body(backend)) } catch { return .failure(error) } }
            }
            var errors: [Error] = []
            for try await outcome in group {
                switch outcome {
                case .success(let value):
                    group.cancelAll()
                    return value
                case .failure(let error):
                    errors.append(error)
                }
            }
            try Task.checkCancellation()
            throw Self.preferred(errors)
        }
    }
}

/// How reader names say which back end drives them.
public enum ReaderName {
    /// The prefix of libnfc readers' names (`libnfc:pn532_uart:/dev/ttyUSB0`).
    public static let libnfcPrefix = "libnfc:"
    /// `CardReaderBackend.backendName` of the libnfc back end.
    public static let libnfcBackendName = "libnfc"

    /// Whether a reader name (or a `--reader` filter) addresses libnfc.
    public static func isLibNFC(_ name: String) -> Bool { name.hasPrefix(libnfcPrefix) }
}
