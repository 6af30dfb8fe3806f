#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import TextSanitizing

/// Files that hold personal data — a dump of the chip's files, the face, chip evidence, an APDU
/// trace — written so that nobody else ever reads them and nothing planted in their place is
/// followed:
///
/// - the data goes to a new temporary file in the target's directory, created with
///   `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600 from its first byte (and `fchmod` to 0600, so a
///   permissive umask cannot widen it);
/// - the temporary file is renamed over the target: a symlink, an existing file with other
///   permissions or another owner's file at the target is replaced, never written through;
/// - a directory given for a dump must be a real directory (`O_NOFOLLOW`), created 0700 when
///   missing.
///
/// Errors are `PrivateFile.Failure` with the path (escaped for a terminal) and the system's reason.
package enum PrivateFile {
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var description: String { "cannot write \(LogText.clip(path, to: 200)): \(reason)" }

        init(_ path: String, _ reason: String) {
            self.path = path
            self.reason = reason
        }

        init(_ path: String, errno code: Int32) {
            self.init(path, String(cString: strerror(code)))
        }
    }

    /// Writes `bytes` to `path` (see the type's description). `mode` 0644 is for what others may
    /// read (trust-store certificates), written the same careful way.
    package static func write(_ bytes: some Collection<UInt8>, to path: String, mode: mode_t = 0o600) throws(Failure) {
        let (directory, name) = try split(path)
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw Failure(path, errno: errno) }
        defer { close(directoryFD) }
        try write(bytes, name: name, in: directoryFD, displayPath: path, mode: mode)
    }

    /// Writes `bytes` as `name` inside an open directory.
    package static func write(_ bytes: some Collection<UInt8>, name: String, in directoryFD: Int32, displayPath: String,
                              mode: mode_t = 0o600) throws(Failure) {
        let stream = try Stream(name: name, in: directoryFD, displayPath: displayPath, mode: mode)
        do {
            try stream.write(Array(bytes))
            try stream.commit()
        } catch {
            stream.abandon()
            throw error
        }
    }

    /// Opens (creating it 0700 when missing) a directory for a dump; a symlink or anything that is
    /// not a directory is refused. The caller closes the descriptor.
    package static func openDirectory(_ path: String) throws(Failure) -> Int32 {
        guard !path.isEmpty else { throw Failure(path, "no directory named") }
        // Missing parents are made as `mkdir -p` would; only the last component must be ours.
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
        try? FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw Failure(path, errno: errno) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw code == ELOOP || code == ENOTDIR
                ? Failure(path, "not a directory (a symbolic link or a file is in the way)")
                : Failure(path, errno: code)
        }
        return fd
    }

    /// The directory and the file name of `path`; a name that cannot be a file is refused.
    static func split(_ path: String) throws(Failure) -> (String, String) {
        guard !path.isEmpty, !path.hasSuffix("/") else { throw Failure(path, "not a file name") }
        let url = URL(fileURLWithPath: path)
        let name = url.lastPathComponent
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else { throw Failure(path, "not a file name") }
        let directory = path.contains("/") ? url.deletingLastPathComponent().path : "."
        return (directory, name)
    }

    /// A file written in pieces (an APDU trace): a 0600 temporary file that becomes `name` on
    /// `commit()`. Writes that fail are reported, never trapped on.
    package final class Stream: @unchecked Sendable {
        private let directoryFD: Int32
        private let ownsDirectory: Bool
        private var fd: Int32
        private let temporaryName: String
        private let name: String
        private let displayPath: String

        /// A stream that becomes `path` on commit.
        package convenience init(path: String) throws(Failure) {
            let (directory, name) = try PrivateFile.split(path)
            let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directoryFD >= 0 else { throw Failure(path, errno: errno) }
            do {
                try self.init(name: name, in: directoryFD, displayPath: path, ownsDirectory: true)
            } catch {
                close(directoryFD)
                throw error
            }
        }

        init(name: String, in directoryFD: Int32, displayPath: String, ownsDirectory: Bool = false, mode: mode_t = 0o600) throws(Failure) {
            self.directoryFD = directoryFD
            self.ownsDirectory = ownsDirectory
            self.name = name
            self.displayPath = displayPath
            var attempt = 0
            while true {
                let candidate = ".\(name.prefix(100)).\(UInt32.random(in: 0...UInt32.max)).tmp"
                let opened = openat(directoryFD, candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                if opened >= 0 {
                    fchmod(opened, mode)
                    fd = opened
                    temporaryName = candidate
                    return
                }
                attempt += 1
                guard errno == EEXIST, attempt < 16 else { throw Failure(displayPath, errno: errno) }
            }
        }

        deinit {
            abandon()
            if ownsDirectory { close(directoryFD) }
        }

        /// Appends `bytes`.
        package func write(_ bytes: [UInt8]) throws(Failure) {
            guard fd >= 0 else { throw Failure(displayPath, "the file is closed") }
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { raw -> Int in
                    guard let base = raw.baseAddress else { return 0 }
                    return Glibc.write(fd, base + offset, raw.count - offset)
                }
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    throw Failure(displayPath, written < 0 ? String(cString: strerror(errno)) : "nothing was written")
                }
            }
        }

        /// Flushes the data to disk and gives the file its name.
        package func commit() throws(Failure) {
            guard fd >= 0 else { return }
            let synced = fsync(fd) == 0 || errno == EINVAL
            let closed = close(fd) == 0
            fd = -1
            guard synced, closed else {
                let code = errno
                unlinkat(directoryFD, temporaryName, 0)
                throw Failure(displayPath, errno: code)
            }
            guard renameat(directoryFD, temporaryName, directoryFD, name) == 0 else {
                let code = errno
                unlinkat(directoryFD, temporaryName, 0)
                throw Failure(displayPath, errno: code)
            }
        }

        /// Closes and removes the temporary file (nothing is written at the target).
        package func abandon() {
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
            unlinkat(directoryFD, temporaryName, 0)
        }
    }
}
