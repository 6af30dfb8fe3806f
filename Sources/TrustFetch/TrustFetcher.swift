import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// Fetching trust material as a careful client (issue 45): async-http-client; HTTPS verified
/// against the system's CAs or `--ca-file`; plain http only where the material is signed and
/// verified on arrival (CRLs, CSCA certificates, an anchored master list); redirects followed by
/// hand, at most 3, never to another scheme than http/https and never from https down to http; a
/// size ceiling checked on the announced length and while the body streams; a connect timeout, a
/// read timeout and a total one (a slow drip ends at it); conditional requests (`ETag`,
/// `Last-Modified`: 304 is "unchanged"); a User-Agent naming the product. Nothing it fetches is
/// trusted for having been fetched: the caller verifies it as `trust import` does.
public final class TrustFetcher: Sendable {
    /// What may be fetched over plain http.
    public enum Transport: Sendable {
        /// HTTPS only (an unanchored master list).
        case httpsOnly
        /// http or HTTPS (signed material verified on arrival).
        case httpAllowed
    }

    public struct Conditional: Sendable, Codable, Hashable {
        public var etag: String?
        public var lastModified: String?
        public init(etag: String? = nil, lastModified: String? = nil) { (self.etag, self.lastModified) = (etag, lastModified) }
    }

    public enum Outcome: Sendable {
        /// 304: what the server has is what we hold.
        case notModified(status: Int)
        case fetched(body: [UInt8], status: Int, conditional: Conditional, url: String)
    }

    /// Why a fetch failed, with a stable reason (the refresh's `reason`, the metric's label).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Reason: String, Sendable, CaseIterable {
            case badURL = "bad-url"
            case insecureTransport = "insecure-transport"
            case redirect = "redirect"
            case network = "network"
            case tls = "tls"
            case timeout = "timeout"
            case httpStatus = "http-status"
            case tooLarge = "too-large"
        }
        public let reason: Reason
        public let detail: String
        public var status: Int?
        public var description: String { detail }

        public init(_ reason: Reason, _ detail: String, status: Int? = nil) { (self.reason, self.detail, self.status) = (reason, detail, status) }
    }

    public struct Limits: Sendable {
        public var maxBytes: Int
        public var connect: TimeAmount
        public var read: TimeAmount
        public var total: Duration
        public var maxRedirects: Int
        public static let standard = Limits(maxBytes: 16 << 20, connect: .seconds(10), read: .seconds(20), total: .seconds(120), maxRedirects: 3)
        public init(maxBytes: Int, connect: TimeAmount, read: TimeAmount, total: Duration, maxRedirects: Int) {
            (self.maxBytes, self.connect, self.read, self.total, self.maxRedirects) = (maxBytes, connect, read, total, maxRedirects)
        }
    }

    let client: HTTPClient
    let limits: Limits
    let userAgent: String

    /// `caFile`: a PEM bundle the servers' certificates must chain to instead of the system's CAs.
    public init(caFile: String? = nil, userAgent: String, limits: Limits = .standard) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        }
        tls.minimumTLSVersion = .tlsv12
        // A server that never answers close_notify (a drip we gave up on) would hold shutdown 5 s.
        tls.shutdownTimeout = .seconds(1)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                     timeout: .init(connect: limits.connect, read: limits.read))
        configuration.decompression = .disabled
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.limits = limits
        self.userAgent = userAgent
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    /// Fetches `url` (following at most `limits.maxRedirects` redirects under the rules above).
    public func fetch(_ url: String, transport: Transport, conditional: Conditional?) async throws(Failure) -> Outcome {
        var current = try Self.check(url, transport: transport, from: nil)
        var redirects = 0
        let deadline = ContinuousClock.now + limits.total
        while true {
            let (status, headers, body) = try await request(current, conditional: conditional, deadline: deadline)
            switch status {
            case 304:
                return .notModified(status: status)
            case 301, 302, 303, 307, 308:
                redirects += 1
                guard redirects <= limits.maxRedirects else {
                    throw Failure(.redirect, "more than \(limits.maxRedirects) redirects (last to \(Self.printable(headers.first(name: "location") ?? "?")))", status: status)
                }
                guard let location = headers.first(name: "location"), let next = URL(string: location, relativeTo: current)?.absoluteURL else {
                    throw Failure(.redirect, "a redirect (\(status)) without a usable Location", status: status)
                }
                current = try Self.check(next.absoluteString, transport: transport, from: current)
            case 200:
                guard let body else { throw Failure(.network, "no body", status: status) }
                let conditional = Conditional(etag: headers.first(name: "etag"), lastModified: headers.first(name: "last-modified"))
                return .fetched(body: body, status: status, conditional: conditional, url: current.absoluteString)
            default:
                throw Failure(.httpStatus, "the server answered \(status)", status: status)
            }
        }
    }

    /// `text` as a URL this fetch may go to: http or https only; http only when `transport`
    /// allows it; never from https down to http on a redirect.
    static func check(_ text: String, transport: Transport, from previous: URL?) throws(Failure) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw Failure(previous == nil ? .badURL : .redirect, "not an http(s) URL: \(printable(text))")
        }
        guard scheme == "https" || scheme == "http" else {
            throw Failure(previous == nil ? .badURL : .redirect,
                          previous == nil ? "only http and https are fetched, not \(printable(scheme)): \(printable(text))"
                                          : "a redirect to \(printable(text)): only http and https are followed")
        }
        guard let host = url.host, !host.isEmpty else {
            throw Failure(previous == nil ? .badURL : .redirect, "no host in \(printable(text))")
        }
        if scheme == "http" {
            if previous?.scheme?.lowercased() == "https" {
                throw Failure(.redirect, "a redirect from https down to http (\(printable(text))): refused")
            }
            guard transport == .httpAllowed else {
                throw Failure(.insecureTransport, "a master list is fetched over https only, unless it is anchored (anchor-sha256): \(printable(text))")
            }
        }
        return url
    }

    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }).prefix(200))
    }

    /// One request: the head, then (for 200) the body within the ceiling and the deadline.
    private func request(_ url: URL, conditional: Conditional?, deadline: ContinuousClock.Instant) async throws(Failure)
        -> (status: Int, headers: HTTPHeaders, body: [UInt8]?) {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .GET
        request.headers.add(name: "User-Agent", value: userAgent)
        request.headers.add(name: "Accept", value: "*/*")
        if let etag = conditional?.etag { request.headers.add(name: "If-None-Match", value: etag) }
        if let modified = conditional?.lastModified { request.headers.add(name: "If-Modified-Since", value: modified) }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw Failure(.timeout, "the refresh's time for this source ran out") }
        let maxBytes = limits.maxBytes
        let prepared = request
        do {
            return try await withThrowingTaskGroup(of: (Int, HTTPHeaders, [UInt8]?).self) { group in
                group.addTask { [client] in
                    let response = try await client.execute(prepared, timeout: .nanoseconds(Int64(remaining.components.seconds) * 1_000_000_000
                                                                                            + remaining.components.attoseconds / 1_000_000_000))
                    let status = Int(response.status.code)
                    guard status == 200 else { return (status, response.headers, nil) }
                    if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > maxBytes {
                        throw Failure(.tooLarge, "the server announces \(length) bytes, more than the \(maxBytes >> 20) MiB a trust file may be: not read",
                                      status: status)
                    }
                    var body: [UInt8] = []
                    for try await chunk in response.body {
                        guard body.count + chunk.readableBytes <= maxBytes else {
                            throw Failure(.tooLarge, "more than the \(maxBytes >> 20) MiB a trust file may be: the rest was not read", status: status)
                        }
                        body += chunk.readableBytesView
                    }
                    return (status, response.headers, body)
                }
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    throw Failure(.timeout, "the source did not finish within the refresh's time limit")
                }
                guard let first = try await group.next() else { throw Failure(.network, "no answer") }
                group.cancelAll()
                return first
            }
        } catch let error as Failure {
            throw error
        } catch let error as NIOSSLError {
            throw Failure(.tls, Self.tlsProblem("\(error)"))
        } catch let error as HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .deadlineExceeded: throw Failure(.timeout, "timed out (\(error))")
            default: throw Failure(.network, Self.networkProblem("\(error)", url: url))
            }
        } catch {
            let text = "\(error)"
            if text.contains("certificate") || text.contains("SSL") || text.contains("handshake") { throw Failure(.tls, Self.tlsProblem(text)) }
            throw Failure(.network, Self.networkProblem(text, url: url))
        }
    }

    /// The socket's failure said plainly (with where), not as NIO's nested error text.
    static func networkProblem(_ text: String, url: URL) -> String {
        let place = "\(url.host ?? "?")\(url.port.map { ":\($0)" } ?? "")"
        let known: [(needle: String, meaning: String)] = [
            ("Connection refused", "cannot connect to \(place): connection refused"),
            ("No route to host", "cannot connect to \(place): no route to host"),
            ("Network is unreachable", "cannot connect to \(place): network unreachable"),
            ("Connection reset by peer", "\(place) reset the connection"),
            ("remoteConnectionClosed", "\(place) closed the connection before answering"),
            ("Name or service not known", "cannot resolve \(url.host ?? "?")"),
            ("Temporary failure in name resolution", "cannot resolve \(url.host ?? "?") (no DNS?)"),
        ]
        for (needle, meaning) in known where text.contains(needle) { return meaning }
        return "\(place): " + printable(text)
    }

    /// BoringSSL's words for the failures an operator meets, said plainly (with the code kept).
    static func tlsProblem(_ text: String) -> String {
        let known: [(code: String, meaning: String)] = [
            ("CERTIFICATE_VERIFY_FAILED", "the server's certificate does not chain to a trusted CA (the system's, or --ca-file's), has expired or names another host"),
            ("WRONG_VERSION_NUMBER", "the server does not speak TLS there (a plain http server behind an https URL?)"),
            ("TLSV1_ALERT_PROTOCOL_VERSION", "the server offers no TLS version from 1.2 up"),
            ("NO_SHARED_CIPHER", "the server and this client share no cipher suite"),
            ("HANDSHAKE_FAILURE", "the server broke off the TLS handshake"),
        ]
        for (code, meaning) in known where text.contains(code) { return "TLS: \(meaning) (\(code))" }
        if text.contains("uncleanShutdown") { return "TLS: the server closed the connection without a TLS close" }
        return "TLS: " + printable(text)
    }
}
