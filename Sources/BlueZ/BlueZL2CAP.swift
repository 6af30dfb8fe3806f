import CBlueZShim
#if canImport(Glibc)
import Glibc
#endif

/// LE credit-based L2CAP channels through the kernel's Bluetooth sockets (BlueZ's D-Bus API
/// has none): `SOCK_SEQPACKET`, non-blocking, each send one SDU of at most `sendMTU` bytes, each
/// receive one SDU. The calls here block (connect at most its timeout): run them off the
/// cooperative pool, on a queue of the caller's.
public enum BlueZL2CAP {
    /// A BLE device address's type, as BlueZ's `Device1.AddressType` names it.
    public enum AddressType: String, Sendable {
        case `public`
        case random

        var kernel: Int32 { self == .public ? CBLUEZSHIM_LE_PUBLIC : CBLUEZSHIM_LE_RANDOM }
    }

    /// A connected channel's socket (the caller closes it) and the MTUs the two ends agreed.
    public struct Channel: Sendable {
        public let fd: Int32
        public let sendMTU: Int
        public let receiveMTU: Int
    }

    /// Connects from the adapter at `localAddress` (nil: any) to `peer` on `psm`, waiting at most `timeout`.
    public static func connect(localAddress: String?, peer: String, type: AddressType, psm: UInt16,
                               timeout: Duration) throws(BlueZError) -> Channel {
        var fd: Int32 = -1
        var sendMTU: UInt32 = 0, receiveMTU: UInt32 = 0
        let (status, message) = BlueZSession.withError { error, length in
            CBlueZShim_l2cap_connect(localAddress, peer, type.kernel, UInt32(psm), &fd, &sendMTU, &receiveMTU,
                                     BlueZ.microseconds(timeout), error, length)
        }
        guard status >= 0 else { throw failure(status, message) }
        return Channel(fd: fd, sendMTU: Int(sendMTU), receiveMTU: Int(receiveMTU))
    }

    /// Listens on a PSM the kernel picks (0x80–0xFF): the listening socket and the PSM.
    public static func listen(localAddress: String?) throws(BlueZError) -> (fd: Int32, psm: UInt16) {
        var fd: Int32 = -1
        var psm: UInt32 = 0
        let (status, message) = BlueZSession.withError { CBlueZShim_l2cap_listen(localAddress, &fd, &psm, $0, $1) }
        guard status >= 0 else { throw failure(status, message) }
        return (fd, UInt16(truncatingIfNeeded: psm))
    }

    /// A connection waiting on `listener`, if any.
    public static func accept(_ listener: Int32) throws(BlueZError) -> Channel? {
        var fd: Int32 = -1
        var sendMTU: UInt32 = 0, receiveMTU: UInt32 = 0
        let (status, message) = BlueZSession.withError { CBlueZShim_l2cap_accept(listener, &fd, &sendMTU, &receiveMTU, $0, $1) }
        guard status >= 0 else { throw failure(status, message) }
        return status == 1 ? Channel(fd: fd, sendMTU: Int(sendMTU), receiveMTU: Int(receiveMTU)) : nil
    }

    static func failure(_ status: Int32, _ message: String) -> BlueZError {
        switch -status {
        case ETIMEDOUT: return BlueZError(code: .timeout, reason: message, fix: "")
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return BlueZError(code: .failed, reason: "the kernel has no Bluetooth L2CAP sockets (\(message))",
                              fix: "load the bluetooth module (modprobe bluetooth), or read over GATT")
        case EACCES, EPERM:
            return BlueZError(code: .accessDenied, reason: message, fix: "run as a member of the bluetooth group, or with CAP_NET_RAW")
        default: return BlueZError(code: .failed, reason: message, fix: "")
        }
    }
}
