import Dispatch
import Foundation
import GBGBridgeServer
import Logging
import Synchronization

/// The life of `gbgbridge serve` and `demo`: the bridge server (and the kiosk browser, when
/// configured) with `HostServices` on every page, until `stop` returns; then a graceful stop —
/// pages closed, reads cancelled, Chromium closed — forced after 4 s, so that the whole stop stays
/// within 5 s. In-process for tests: give a `stop` of your own.
/// The ports a running host listens on: the journey's, and the operators' (`/metrics`,
/// `/diagnostics`) when it has one.
package struct HostPorts: Sendable, Equatable {
    package var main: Int
    package var operators: Int?
    package init(main: Int, operators: Int?) { (self.main, self.operators) = (main, operators) }
}

package enum HostServer {
    /// Why the host could not start or stopped on its own; `exitCode` is what the command exits with.
    package struct Failure: Error, CustomStringConvertible {
        /// 2: the configuration cannot be served (the port, an origin); 1: it failed while running.
        package let exitCode: Int32
        package let description: String
    }

    @MainActor
    package static func run(_ configuration: BridgeServerConfiguration, services: HostServices, logger: Logger,
                            kiosk: KioskConfiguration? = nil, until stop: @escaping @Sendable () async -> Void = HostServer.termination,
                            onRunning: @escaping @Sendable (HostPorts) -> Void) async throws(Failure) {
        let server: BridgeServer
        do {
            server = try BridgeServer(configuration: configuration, logger: logger,
                                      setUpHost: { services.setUp($0) }, tearDownHost: { services.tearDown($0) })
        } catch {
            throw Failure(exitCode: 2, description: "\(error)")
        }
        let serving = Task { try await server.run(onRunning: { port in onRunning(HostPorts(main: port, operators: server.operatorPort)) }) }
        let browser = kiosk.map { KioskBrowser(configuration: $0, logger: logger,
                                               setUpHost: { services.setUp($0) }, tearDownHost: { services.tearDown($0) }) }
        do {
            try await browser?.start()
        } catch {
            await server.shutdown()
            serving.cancel()
            throw Failure(exitCode: 1, description: "the kiosk browser did not start: \(error)")
        }
        let stopper = Task { @MainActor in
            await stop()
            logger.info("stopping")
            let forced = Task {
                try await Task.sleep(for: .seconds(4))
                serving.cancel()
            }
            let browserStopped = Task { @MainActor in await browser?.stop() }
            await server.shutdown()
            await browserStopped.value
            _ = try? await serving.value
            forced.cancel()
        }
        var failure: (any Error)?
        do {
            try await serving.value
        } catch is CancellationError {
        } catch {
            failure = error
        }
        stopper.cancel()
        await browser?.stop()
        services.nfc.stopMonitoring()
        // A read cancelled by the stop finishes (and says so in the log) before the process ends.
        for _ in 0..<30 where services.nfc.isBusy {
            try? await Task.sleep(for: .milliseconds(50))
        }
        logger.info("stopped")
        if let failure { throw Failure(exitCode: 1, description: "the server stopped: \(failure)") }
    }

    /// Runs an emulator until SIGINT or SIGTERM, with SIGUSR1 taking its card out of the field and
    /// SIGUSR2 putting it back (for test rigs).
    package static func runEmulator(start: () -> Void, stop: () -> Void, remove: @escaping @Sendable () -> Void,
                                    insert: @escaping @Sendable () -> Void) async {
        let queue = DispatchQueue(label: "card-signals")
        let cardSignals = [(SIGUSR1, remove), (SIGUSR2, insert)].map { signalNumber, action in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
        start()
        await termination()
        cardSignals.forEach { $0.cancel() }
        stop()
    }

    /// Suspends until SIGINT or SIGTERM (which no longer end the process by themselves).
    package static func termination() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let sources = [SIGINT, SIGTERM].map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
            let resumed = Mutex(false)
            for source in sources {
                source.setEventHandler {
                    let first = resumed.withLock { value -> Bool in
                        defer { value = true }
                        return !value
                    }
                    if first {
                        sources.forEach { $0.cancel() }
                        continuation.resume()
                    }
                }
                source.resume()
            }
        }
    }
}

/// Bootstraps the process's logging (`--log-format`, `--verbose`) and returns the host's logger.
package func makeLogger(_ label: String, verbose: Bool, format: LogFormat = .text) -> Logger {
    LoggingSystem.bootstrap { label in
        switch format {
        case .text:
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        case .json:
            var handler = JSONLogHandler(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
    }
    return Logger(label: label)
}
