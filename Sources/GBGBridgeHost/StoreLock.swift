import Foundation

/// One writer of a trust store at a time (issue 49): `trust refresh` and `trust import` hold an
/// exclusive `flock` on the directory that holds the store (where the refresh builds its copy and
/// swaps it in); a second one waits for it up to its time limit, then gives up with "another
/// refresh is running" (exit 1). A dry run takes the lock shared: it writes nothing, but reads the
/// store whole. The lock dies with its process: a killed run never holds a store.
package final class StoreLock {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    /// Takes the lock on `store`'s parent, waiting until `until` at most.
    package static func acquire(store: String, until: ContinuousClock.Instant, shared: Bool = false) throws(TrustRefresh.Problem) -> StoreLock {
        let parent = URL(fileURLWithPath: store).standardizedFileURL.deletingLastPathComponent().path
        let fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TrustRefresh.Problem(description: "\(parent): cannot be opened to lock the store (\(String(cString: strerror(errno))))")
        }
        let operation = (shared ? LOCK_SH : LOCK_EX) | LOCK_NB
        while flock(fd, operation) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw TrustRefresh.Problem(description: "\(parent): cannot be locked (\(reason))")
            }
            guard ContinuousClock.now < until else {
                close(fd)
                throw TrustRefresh.Problem(description: "another refresh is running: another trust refresh or import holds \(store) (a lock on \(parent)); "
                                           + "it was waited for until this one's time limit", exitStatus: 1)
            }
            usleep(100_000)
        }
        return StoreLock(descriptor: fd)
    }

    package func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Removes the working copies (`.NAME.refresh-PID`) that runs killed before they finished left
    /// beside `store`: with the lock held, none of them belongs to a live run. Returns their paths.
    package static func removeLeftovers(store: String) -> [String] {
        let url = URL(fileURLWithPath: store).standardizedFileURL
        let parent = url.deletingLastPathComponent().path
        let prefix = ".\(url.lastPathComponent).refresh-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return [] }
        var removed: [String] = []
        for name in names.sorted() where name.hasPrefix(prefix) && name.dropFirst(prefix.count).allSatisfy(\.isNumber) {
            let path = parent + "/" + name
            var info = stat()
            // Only a directory of ours: never through a link.
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed.append(path) }
        }
        return removed
    }
}
