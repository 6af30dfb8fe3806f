import CV4L2Shim
import Foundation
import Synchronization

/// Tells the camera services when a video device appears, goes, or changes owner or mode (inotify
/// on /dev and /dev/v4l/by-id), so that `capability.query` follows a camera that is plugged in,
/// pulled out or given to the `video` group, without polling the devices. Runs on a thread of its
/// own; `stop()` ends it at once.
public final class CameraWatcher: Sendable {
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Mutex(false)

    /// Starts watching; `changed` is called (on the watcher's thread) at most about three times a
    /// second while devices change. Nil when inotify cannot watch /dev (the slots are then probed
    /// after every capture only).
    public init?(changed: @escaping @Sendable () -> Void) {
        let watch = CV4L2Shim_watch_open()
        guard watch >= 0 else { return nil }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            close(watch)
            return nil
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        stopPipe = (fds[0], fds[1])
        let stopRead = fds[0]
        let thread = Thread {
            defer {
                close(watch)
                close(stopRead)
            }
            var pending = false
            while true {
                // While a change is pending, wait a little for more (udev creates a node, then
                // its links, then sets its group) before reporting them as one.
                let result = CV4L2Shim_watch_wait(watch, stopRead, pending ? 300 : 60_000)
                if result < 0 { return }
                if result == 1 {
                    pending = true
                } else if pending {
                    pending = false
                    changed()
                }
            }
        }
        thread.name = "gbgbridge.camera-watch"
        thread.start()
    }

    public func stop() {
        let first = stopped.withLock { state -> Bool in
            defer { state = true }
            return !state
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        close(stopPipe.write)
    }

    deinit { stop() }
}
