import HTTPTypes
import Hummingbird

/// The outermost layer of every HTTP answer the bridge server gives:
///
/// - a request path that hides something is refused with 400 before any route or file lookup sees
///   it: an encoded NUL (`%00`), an encoded separator (`%2F`, `%5C`), a raw backslash, a control
///   character once decoded, a broken percent escape, or a `..` segment. (`/journey.js%00.html`
///   would otherwise be looked up as `journey.js` and typed by its `.html` ending.)
/// - every response carries `X-Content-Type-Options: nosniff`, and a body without a content type
///   is `application/octet-stream`, so no browser guesses a type: the server's own origin may
///   always open the bridge's WebSocket, so nothing it serves may turn into a page or a script by
///   sniffing.
struct RequestHygieneMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        if let problem = Self.problem(inPath: request.uri.path) {
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            response = Response(status: .badRequest, headers: headers,
                                body: .init(byteBuffer: ByteBuffer(string: "Bad request: \(problem)\n")))
        } else {
            do {
                response = try await next(request, context)
            } catch let error as any HTTPResponseError {
                response = (try? error.response(from: request, context: context)) ?? Response(status: error.status)
            } catch {
                response = Response(status: .internalServerError)
            }
        }
        Self.harden(&response.headers, status: response.status)
        return response
    }

    static func harden(_ headers: inout HTTPFields, status: HTTPResponse.Status) {
        headers[.xContentTypeOptions] = "nosniff"
        if headers[.contentType] == nil, status.code == 200 || status.code == 206 {
            headers[.contentType] = "application/octet-stream"
        }
    }

    /// What is wrong with a raw (still percent-encoded) request path, or `nil`.
    static func problem(inPath raw: String) -> String? {
        let lower = raw.lowercased()
        for encoded in ["%00", "%2f", "%5c"] where lower.contains(encoded) {
            return "encoded NUL or path separator in the path"
        }
        if raw.contains("\\") { return "backslash in the path" }
        guard let decoded = raw.removingPercentEncoding else { return "broken percent encoding in the path" }
        if decoded.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "control character in the path"
        }
        if decoded.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0 == "." }) {
            return "dot segment in the path"
        }
        return nil
    }
}
