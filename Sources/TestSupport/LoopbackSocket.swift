import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening when asked; closed when
/// released. For tests that need a port taken, or a port nothing listens on.
public final class LoopbackSocket: @unchecked Sendable {  // an fd, closed once
    public let port: Int
    private let fd: Int32

    public init(listening: Bool) throws {
        // `self.fd` is set only once bound (see `RawSocket.init`: a throwing initializer of a
        // class whose properties are all set runs its deinit, which would close it again).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, !listening || listen(fd, 4) == 0 else {
            close(fd)
            throw RawSocketError("no free loopback port")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.fd = fd
    }

    deinit { close(fd) }
}

/// A TCP port on 127.0.0.1 that nothing listens on now (for a child process to bind).
public func freeLoopbackPort() throws -> Int { try LoopbackSocket(listening: false).port }
