import BoundedFiles
import CCurl
import CCurlShim
import Foundation
import Synchronization

/// Fetching trust material as a careful client (issues 45 and 48): libcurl with the system's
/// OpenSSL, so TLS, certificate checks and the CA store are Debian's and patched by Debian. HTTPS is
/// verified against the system's CAs or `--ca-file`; plain http only where the caller allows it
/// (anchored material verified on arrival); redirects followed by hand, at most 3, never to
/// another scheme than http/https and never from https down to http; a size ceiling checked on
/// the announced length (`CURLOPT_MAXFILESIZE_LARGE`) and while the body streams (the write
/// callback); a connect timeout, a total one (the smaller of the source's and the refresh's
/// deadline) and a low-speed limit that ends a drip; conditional requests (`ETag`,
/// `Last-Modified`: 304 is "unchanged"; a 304 to an unconditional request is a failure); a
/// User-Agent naming the product. Every transfer runs on a thread of its own, never on the
/// cooperative pool. Nothing it fetches is trusted for having been fetched: the caller verifies it
/// as `trust import` does.
public final class TrustFetcher: Sendable {
    /// What may be fetched over plain http.
    public enum Transport: Sendable {
        /// HTTPS only.
        case httpsOnly
        /// http or HTTPS (material anchored by fingerprint, or signed by what the store trusts).
        case httpAllowed
    }

    /// The validators of what was fetched, sent back as `If-None-Match` / `If-Modified-Since`.
    public struct Conditional: Sendable, Codable, Hashable {
        public var etag: String?
        public var lastModified: String?
        public init(etag: String? = nil, lastModified: String? = nil) { (self.etag, self.lastModified) = (etag, lastModified) }

        /// The longest validator kept (issue 49): a server's longer one is ignored, not stored.
        public static let maxLength = 1_024

        /// `value` when it may be kept and sent back: at most `maxLength` bytes of visible ASCII and spaces.
        public static func acceptable(_ value: String?) -> String? {
            guard let value, !value.isEmpty, value.utf8.count <= maxLength,
                  value.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || (0x21...0x7E).contains($0) }) else { return nil }
            return value
        }

        public var isEmpty: Bool { etag == nil && lastModified == nil }
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
        public var connect: Duration
        /// A transfer slower than `lowSpeedBytes` a second for `lowSpeedTime` ends (a drip).
        public var lowSpeedBytes: Int
        public var lowSpeedTime: Duration
        public var total: Duration
        public var maxRedirects: Int
        public static let standard = Limits(maxBytes: 16 << 20, connect: .seconds(10), lowSpeedBytes: 64, lowSpeedTime: .seconds(30),
                                            total: .seconds(120), maxRedirects: 3)
        public init(maxBytes: Int, connect: Duration, lowSpeedBytes: Int, lowSpeedTime: Duration, total: Duration, maxRedirects: Int) {
            (self.maxBytes, self.connect, self.lowSpeedBytes, self.lowSpeedTime, self.total, self.maxRedirects) =
                (maxBytes, connect, lowSpeedBytes, lowSpeedTime, total, maxRedirects)
        }
    }

    /// A problem with the fetcher's own set-up (`--ca-file`).
    public struct SetupProblem: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    let caFile: String?
    let limits: Limits
    let userAgent: String

    /// `caFile`: a PEM bundle the servers' certificates must chain to instead of the system's CAs
    /// (read now, within the trust-file ceiling: a file that holds no certificate is refused).
    public init(caFile: String? = nil, userAgent: String, limits: Limits = .standard) throws(SetupProblem) {
        if let caFile {
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(caFile, ceiling: BoundedFile.Ceiling.trustFile, what: "CA file (--ca-file)")
            } catch {
                throw SetupProblem(description: error.description)
            }
            guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                throw SetupProblem(description: "\(caFile) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
        }
        _ = Self.initialised
        self.caFile = caFile
        self.limits = limits
        self.userAgent = Self.printable(userAgent)
    }

    /// Nothing to release (each transfer's handle is freed when it ends); kept for callers.
    public func shutdown() async {}

    /// curl_global_init, once per process, before any handle.
    private static let initialised: Bool = CCurlShim_global_init() == CURLE_OK

    /// The libcurl and TLS library this fetcher runs on, e.g. `libcurl/7.88.1 OpenSSL/3.0.15`.
    public static var libraryVersion: String {
        _ = initialised
        guard let text = curl_version() else { return "libcurl" }
        return String(cString: text).split(separator: " ").prefix(2).joined(separator: " ")
    }

    /// Fetches `url` (following at most `limits.maxRedirects` redirects under the rules above),
    /// within `limits.total` and, when given, by `deadline` (the whole refresh's).
    public func fetch(_ url: String, transport: Transport, conditional: Conditional?,
                      deadline: ContinuousClock.Instant? = nil) async throws(Failure) -> Outcome {
        var current = try Self.check(url, transport: transport, from: nil)
        var redirects = 0
        let own = ContinuousClock.now + limits.total
        let deadline = deadline.map { min($0, own) } ?? own
        let sent = conditional.flatMap { $0.isEmpty ? nil : $0 }
        while true {
            let response = try await request(current, transport: transport, conditional: sent, deadline: deadline)
            switch response.status {
            case 304:
                guard sent != nil else {
                    throw Failure(.httpStatus, "the server answered 304 (not modified) to a request that named no version: a broken or lying server",
                                  status: 304)
                }
                return .notModified(status: 304)
            case 301, 302, 303, 307, 308:
                redirects += 1
                let location = response.location ?? response.header("location")
                guard redirects <= limits.maxRedirects else {
                    throw Failure(.redirect, "more than \(limits.maxRedirects) redirects (last to \(Self.printable(location ?? "?")))", status: response.status)
                }
                guard let location, let next = URL(string: location, relativeTo: current)?.absoluteURL else {
                    throw Failure(.redirect, "a redirect (\(response.status)) without a usable Location", status: response.status)
                }
                current = try Self.check(next.absoluteString, transport: transport, from: current)
            case 200:
                let validators = Conditional(etag: Conditional.acceptable(response.header("etag")),
                                             lastModified: Conditional.acceptable(response.header("last-modified")))
                return .fetched(body: response.body, status: 200, conditional: validators, url: current.absoluteString)
            default:
                throw Failure(.httpStatus, "the server answered \(response.status)", status: response.status)
            }
        }
    }

    /// `text` as a URL this fetch may go to: http or https only; http only when `transport`
    /// allows it; never from https down to http on a redirect.
    static func check(_ text: String, transport: Transport, from previous: URL?) throws(Failure) -> URL {
        guard text.utf8.count <= 4_096, let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
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
                throw Failure(.insecureTransport, "fetched over https only, unless it is anchored by fingerprint (anchor-sha256): \(printable(text))")
            }
        }
        return url
    }

    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }).prefix(200))
    }

    /// One response, read whole within the ceiling.
    struct Response: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var location: String?

        func header(_ name: String) -> String? {
            headers.last { $0.name.lowercased() == name }?.value
        }
    }

    /// Set when the task that waits for a transfer is cancelled: the transfer's progress callback ends it.
    final class Cancellation: Sendable {
        let flag = Atomic<Bool>(false)
    }

    /// One request on a thread of its own.
    private func request(_ url: URL, transport: Transport, conditional: Conditional?, deadline: ContinuousClock.Instant) async throws(Failure) -> Response {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw Failure(.timeout, "the source did not finish within the refresh's time limit (no time left)") }
        let cancellation = Cancellation()
        let job = CurlJob(url: url.absoluteString, transport: transport, conditional: conditional, userAgent: userAgent, caFile: caFile,
                          limits: limits, remaining: remaining, deadline: deadline, cancellation: cancellation)
        let result: Result<Response, Failure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread { continuation.resume(returning: job.perform()) }
                thread.name = "trust-fetch"
                thread.stackSize = 1 << 20
                thread.start()
            }
        } onCancel: {
            cancellation.flag.store(true, ordering: .relaxed)
        }
        return try result.get()
    }
}

/// One libcurl transfer, run blocking on the calling thread.
struct CurlJob: Sendable {
    let url: String
    let transport: TrustFetcher.Transport
    let conditional: TrustFetcher.Conditional?
    let userAgent: String
    let caFile: String?
    let limits: TrustFetcher.Limits
    let remaining: Duration
    let deadline: ContinuousClock.Instant
    let cancellation: TrustFetcher.Cancellation

    /// What the callbacks see (through an unmanaged pointer, on this thread only).
    final class State {
        var body: [UInt8] = []
        var headers: [(name: String, value: String)] = []
        var headerBytes = 0
        var status = 0
        var exceeded = false
        var announced: Int?
        var stopped = false
        var cancelledByCaller = false
        let maxBytes: Int
        let deadline: ContinuousClock.Instant
        let cancellation: TrustFetcher.Cancellation

        init(maxBytes: Int, deadline: ContinuousClock.Instant, cancellation: TrustFetcher.Cancellation) {
            (self.maxBytes, self.deadline, self.cancellation) = (maxBytes, deadline, cancellation)
        }
    }

    /// The most header bytes a response may carry (a server that streams headers forever).
    static let maxHeaderBytes = 64 << 10

    static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration.components.seconds) * 1_000 + Int(duration.components.attoseconds / 1_000_000_000_000_000))
    }

    func perform() -> Result<TrustFetcher.Response, TrustFetcher.Failure> {
        guard let handle = curl_easy_init() else { return .failure(.init(.network, "libcurl could not make a transfer handle")) }
        defer { curl_easy_cleanup(handle) }
        let state = State(maxBytes: limits.maxBytes, deadline: deadline, cancellation: cancellation)
        let context = Unmanaged.passUnretained(state).toOpaque()
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorText.deallocate() }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for line in ["Accept: */*"] + (conditional?.etag.map { ["If-None-Match: \($0)"] } ?? [])
            + (conditional?.lastModified.map { ["If-Modified-Since: \($0)"] } ?? []) {
            list = curl_slist_append(list, line)
        }
        let protocols = transport == .httpAllowed ? "http,https" : "https"
        var codes: [CURLcode] = [
            CCurlShim_set_string(handle, CURLOPT_URL, url),
            CCurlShim_set_string(handle, CURLOPT_PROTOCOLS_STR, protocols),
            CCurlShim_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, protocols),
            CCurlShim_set_long(handle, CURLOPT_FOLLOWLOCATION, 0),  // followed by hand, each checked
            CCurlShim_set_long(handle, CURLOPT_MAXREDIRS, 0),
            CCurlShim_set_long(handle, CURLOPT_NOSIGNAL, 1),
            CCurlShim_set_long(handle, CURLOPT_HTTP_VERSION, CCurlShim_http_version_1_1()),
            CCurlShim_set_long(handle, CURLOPT_SSLVERSION, CCurlShim_ssl_version_tls_1_2()),
            CCurlShim_set_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            CCurlShim_set_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            CCurlShim_set_offset(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limits.maxBytes)),
            CCurlShim_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(min(limits.connect, remaining))),
            CCurlShim_set_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(remaining)),
            CCurlShim_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, limits.lowSpeedBytes),
            CCurlShim_set_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(limits.lowSpeedTime.components.seconds))),
            CCurlShim_set_string(handle, CURLOPT_USERAGENT, userAgent),
            CCurlShim_set_list(handle, CURLOPT_HTTPHEADER, list),
            CCurlShim_set_pointer(handle, CURLOPT_ERRORBUFFER, errorText),
            CCurlShim_set_write(handle, { data, size, count, context in
                guard let data, let context else { return 0 }
                let state = Unmanaged<CurlJob.State>.fromOpaque(context).takeUnretainedValue()
                let bytes = size * count
                guard state.body.count + bytes <= state.maxBytes else {
                    state.exceeded = true
                    return 0  // anything but `bytes`: libcurl ends the transfer (CURLE_WRITE_ERROR)
                }
                data.withMemoryRebound(to: UInt8.self, capacity: bytes) { state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: bytes)) }
                return bytes
            }, context),
            CCurlShim_set_header(handle, { data, size, count, context in
                guard let data, let context else { return 0 }
                let state = Unmanaged<CurlJob.State>.fromOpaque(context).takeUnretainedValue()
                let bytes = size * count
                state.headerBytes += bytes
                guard state.headerBytes <= CurlJob.maxHeaderBytes else { return 0 }
                let line = data.withMemoryRebound(to: UInt8.self, capacity: bytes) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: bytes), as: UTF8.self)
                }.trimmingCharacters(in: .whitespacesAndNewlines)
                if line.hasPrefix("HTTP/") {
                    state.headers = []  // a new response (an interim 100 Continue's headers are dropped)
                } else if let colon = line.firstIndex(of: ":") {
                    let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                    let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    state.headers.append((name, value))
                    if name == "content-length" { state.announced = Int(value) }
                }
                return bytes
            }, context),
            CCurlShim_set_progress(handle, { context, _, _, _, _ in
                guard let context else { return 1 }
                let state = Unmanaged<CurlJob.State>.fromOpaque(context).takeUnretainedValue()
                if state.cancellation.flag.load(ordering: .relaxed) {
                    state.cancelledByCaller = true
                    return 1
                }
                if ContinuousClock.now > state.deadline {
                    state.stopped = true
                    return 1
                }
                return 0
            }, context),
        ]
        if let caFile {
            codes.append(CCurlShim_set_string(handle, CURLOPT_CAINFO, caFile))
            codes.append(CCurlShim_set_string(handle, CURLOPT_CAPATH, nil))
        }
        if let bad = codes.first(where: { $0 != CURLE_OK }) {
            return .failure(.init(.network, "libcurl refused an option (\(String(cString: curl_easy_strerror(bad)))): is libcurl 7.85 or later installed?"))
        }
        let code = curl_easy_perform(handle)
        var status = 0
        _ = CCurlShim_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        let text = String(cString: errorText)
        guard code == CURLE_OK else {
            return .failure(failure(code, text: text, state: state, handle: handle, status: status == 0 ? nil : status))
        }
        var location: UnsafePointer<CChar>?
        _ = CCurlShim_get_string(handle, CURLINFO_REDIRECT_URL, &location)
        return .success(TrustFetcher.Response(status: status, headers: state.headers, body: status == 200 ? state.body : [],
                                              location: location.map { String(cString: $0) }))
    }

    /// libcurl's code and words said plainly, with a stable reason.
    func failure(_ code: CURLcode, text: String, state: State, handle: UnsafeMutableRawPointer, status: Int?) -> TrustFetcher.Failure {
        let place: String = {
            guard let url = URL(string: url) else { return "?" }
            return "\(url.host ?? "?")\(url.port.map { ":\($0)" } ?? "")"
        }()
        let mib = limits.maxBytes >> 20
        switch code {
        case CURLE_FILESIZE_EXCEEDED:
            let announced = state.announced.map { "\($0)" } ?? "more"
            return .init(.tooLarge, "the server announces \(announced) bytes, more than the \(mib) MiB a trust file may be: not read", status: status)
        case CURLE_WRITE_ERROR where state.exceeded:
            return .init(.tooLarge, "more than the \(mib) MiB a trust file may be: the rest was not read", status: status)
        case CURLE_WRITE_ERROR where state.headerBytes > Self.maxHeaderBytes:
            return .init(.network, "\(place) sent more than \(Self.maxHeaderBytes >> 10) KiB of headers: not read", status: status)
        case CURLE_ABORTED_BY_CALLBACK where state.cancelledByCaller:
            return .init(.timeout, "cancelled before \(place) finished", status: status)
        case CURLE_ABORTED_BY_CALLBACK, CURLE_OPERATION_TIMEDOUT:
            var connected = 0
            _ = CCurlShim_get_long(handle, CURLINFO_NUM_CONNECTS, &connected)
            if text.lowercased().contains("speed") {
                return .init(.timeout, "\(place) sent under \(limits.lowSpeedBytes) bytes a second for \(limits.lowSpeedTime.components.seconds) s: a drip, ended before its time limit",
                             status: status)
            }
            return .init(.timeout, "the source did not finish within the refresh's time limit (\(Self.printable(text)))", status: status)
        case CURLE_COULDNT_RESOLVE_HOST:
            return .init(.network, "cannot resolve \(URL(string: url)?.host ?? "?")")
        case CURLE_COULDNT_CONNECT:
            var osError = 0
            _ = CCurlShim_get_long(handle, CURLINFO_OS_ERRNO, &osError)
            let why = switch Int32(osError) {
            case ECONNREFUSED: "connection refused"
            case EHOSTUNREACH: "no route to host"
            case ENETUNREACH: "network unreachable"
            default: osError == 0 ? Self.printable(text) : String(cString: strerror(Int32(osError)))
            }
            return .init(.network, "cannot connect to \(place): \(why)")
        case CURLE_PEER_FAILED_VERIFICATION:
            return .init(.tls, "TLS: the server's certificate does not chain to a trusted CA (the system's, or --ca-file's), has expired or names another host (CERTIFICATE_VERIFY_FAILED: \(Self.printable(text)))")
        case CURLE_SSL_CACERT_BADFILE:
            return .init(.tls, "TLS: the CA certificates could not be read (\(Self.printable(text)))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CIPHER, CURLE_SSL_CERTPROBLEM, CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED:
            let lower = text.lowercased()
            let known: [(needle: String, meaning: String)] = [
                ("wrong version number", "the server does not speak TLS there (a plain http server behind an https URL?) (WRONG_VERSION_NUMBER)"),
                ("packet length too long", "the server does not speak TLS there (a plain http server behind an https URL?) (WRONG_VERSION_NUMBER)"),
                ("protocol version", "the server offers no TLS version from 1.2 up (TLSV1_ALERT_PROTOCOL_VERSION)"),
                ("no shared cipher", "the server and this client share no cipher suite (NO_SHARED_CIPHER)"),
                ("handshake failure", "the server broke off the TLS handshake (HANDSHAKE_FAILURE)"),
                ("unexpected eof", "the server closed the connection without a TLS close"),
            ]
            for (needle, meaning) in known where lower.contains(needle) { return .init(.tls, "TLS: \(meaning)") }
            return .init(.tls, "TLS: \(Self.printable(text))")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return .init(.badURL, "not fetched: \(Self.printable(text))")
        case CURLE_URL_MALFORMAT:
            return .init(.badURL, "not a usable URL: \(Self.printable(url))")
        case CURLE_GOT_NOTHING:
            return .init(.network, "\(place) closed the connection before answering")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            let lower = text.lowercased()
            if lower.contains("reset") { return .init(.network, "\(place) reset the connection") }
            return .init(.network, "\(place): \(Self.printable(text))", status: status)
        case CURLE_PARTIAL_FILE:
            return .init(.network, "\(place) closed the connection before the whole body came", status: status)
        default:
            let what = text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
            return .init(.network, "\(place): \(Self.printable(what))", status: status)
        }
    }

    static func printable(_ text: String) -> String { TrustFetcher.printable(text) }
}
