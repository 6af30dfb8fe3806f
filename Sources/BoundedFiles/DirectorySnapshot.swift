#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every file of a directory read as one consistent whole (issue 49): through one directory
/// descriptor opened before listing (every entry opened relative to it), each file within its
/// ceiling and all of them within a total one; a file that vanishes while it is read, or a
/// directory that was swapped or removed under the reader (`trust refresh` exchanges the store
/// for its refreshed copy, then deletes the old one), ends the pass with `changedWhileRead`, and
/// `read` starts again — a reader never sees half of one version and half of another.
public struct DirectorySnapshot: Sendable {
    public struct Entry: Sendable {
        /// The directory's path given, `/`, the entry's path relative to it.
        public let path: String
        public let bytes: [UInt8]
    }

    /// What is done with a symbolic link met in the directory (the directory itself included).
    public enum Symlinks: Sendable {
        /// Followed, as `open` would (trust paths an operator configured).
        case follow
        /// Refused: the read fails naming it (a store a program writes to and deletes from).
        case refuse
    }

    public var entries: [Entry] = []
    /// Entries not read, with why (not wanted by `accept`, not a regular file).
    public var skipped: [(path: String, reason: String)] = []

    /// How many passes a directory that keeps changing gets before the read gives up.
    public static let attempts = 8

    /// Reads `path` whole (sub-directories too, up to `depth` levels), the files `accept` wants
    /// (by name), each within `fileCeiling` bytes and all within `totalCeiling`.
    public static func read(_ path: String, what: String, fileCeiling: Int, totalCeiling: Int, maxEntries: Int = 100_000,
                            depth: Int = 8, symlinks: Symlinks, accept: (String) -> Bool = { _ in true }) throws(BoundedFileError) -> DirectorySnapshot {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try pass(path, what: what, fileCeiling: fileCeiling, totalCeiling: totalCeiling, maxEntries: maxEntries, depth: depth,
                                symlinks: symlinks, accept: accept)
            } catch let error where error.problem == .changedWhileRead && attempt < attempts {
                // The next pass sees the new version whole.
                usleep(UInt32(20_000 * attempt))
            }
        }
    }

    static func pass(_ path: String, what: String, fileCeiling: Int, totalCeiling: Int, maxEntries: Int, depth: Int, symlinks: Symlinks,
                     accept: (String) -> Bool) throws(BoundedFileError) -> DirectorySnapshot {
        var info = stat()
        if symlinks == .refuse {
            guard lstat(path, &info) == 0 else { throw BoundedFileError(path: path, what: what, problem: .cannotOpen(errno)) }
            if info.st_mode & S_IFMT == S_IFLNK { throw BoundedFileError(path: path, what: what, problem: .symlink) }
        }
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (symlinks == .refuse ? O_NOFOLLOW : 0)
        let fd = open(path, flags)
        guard fd >= 0 else {
            throw BoundedFileError(path: path, what: what, problem: errno == ENOTDIR ? .notDirectory : errno == ELOOP ? .symlink : .cannotOpen(errno))
        }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else { throw BoundedFileError(path: path, what: what, problem: .cannotRead(errno)) }
        var snapshot = DirectorySnapshot()
        var total = 0
        var count = 0
        try walk(fd, prefix: path, what: what, fileCeiling: fileCeiling, totalCeiling: totalCeiling, maxEntries: maxEntries, depth: depth,
                 symlinks: symlinks, accept: accept, total: &total, count: &count, into: &snapshot)
        // The directory read is still the one the path names, and still there.
        var now = stat(), after = stat()
        guard fstat(fd, &after) == 0, after.st_nlink > 0 else { throw BoundedFileError(path: path, what: what, problem: .changedWhileRead) }
        let found = symlinks == .refuse ? lstat(path, &now) : stat(path, &now)
        guard found == 0, now.st_ino == opened.st_ino, now.st_dev == opened.st_dev else {
            throw BoundedFileError(path: path, what: what, problem: .changedWhileRead)
        }
        return snapshot
    }

    static func walk(_ directory: Int32, prefix: String, what: String, fileCeiling: Int, totalCeiling: Int, maxEntries: Int, depth: Int,
                     symlinks: Symlinks, accept: (String) -> Bool, total: inout Int, count: inout Int,
                     into snapshot: inout DirectorySnapshot) throws(BoundedFileError) {
        let listing = dup(directory)
        guard listing >= 0, let stream = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            throw BoundedFileError(path: prefix, what: what, problem: .cannotRead(errno))
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw BoundedFileError(path: prefix, what: what, problem: .cannotRead(errno)) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            count += 1
            guard count <= maxEntries else { throw BoundedFileError(path: prefix, what: what, problem: .tooManyEntries(limit: maxEntries)) }
            names.append(name)
        }
        for name in names.sorted() where !name.hasPrefix(".") {
            let full = prefix + "/" + name
            var info = stat()
            guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno == ENOENT { throw BoundedFileError(path: full, what: what, problem: .changedWhileRead) }
                throw BoundedFileError(path: full, what: what, problem: .cannotOpen(errno))
            }
            if info.st_mode & S_IFMT == S_IFLNK {
                guard symlinks == .follow else { throw BoundedFileError(path: full, what: what, problem: .symlink) }
                guard fstatat(directory, name, &info, 0) == 0 else {
                    snapshot.skipped.append((full, "a symbolic link to nothing"))
                    continue
                }
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                guard depth > 0 else {
                    snapshot.skipped.append((full, "nested too deep"))
                    continue
                }
                let child = openat(directory, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (symlinks == .refuse ? O_NOFOLLOW : 0))
                guard child >= 0 else {
                    if errno == ENOENT { throw BoundedFileError(path: full, what: what, problem: .changedWhileRead) }
                    throw BoundedFileError(path: full, what: what, problem: errno == ELOOP ? .symlink : .cannotOpen(errno))
                }
                defer { close(child) }
                try walk(child, prefix: full, what: what, fileCeiling: fileCeiling, totalCeiling: totalCeiling, maxEntries: maxEntries,
                         depth: depth - 1, symlinks: symlinks, accept: accept, total: &total, count: &count, into: &snapshot)
            case S_IFREG:
                guard accept(name) else {
                    snapshot.skipped.append((full, "not a file of this kind"))
                    continue
                }
                let bytes = try readFile(directory, name, full: full, what: what, ceiling: fileCeiling, symlinks: symlinks)
                total += bytes.count
                guard total <= totalCeiling else {
                    throw BoundedFileError(path: prefix, what: what, problem: .tooLarge(size: total, ceiling: totalCeiling))
                }
                snapshot.entries.append(Entry(path: full, bytes: bytes))
            default:
                snapshot.skipped.append((full, "not a regular file"))
            }
        }
    }

    static func readFile(_ directory: Int32, _ name: String, full: String, what: String, ceiling: Int,
                         symlinks: Symlinks) throws(BoundedFileError) -> [UInt8] {
        let fd = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (symlinks == .refuse ? O_NOFOLLOW : 0))
        guard fd >= 0 else {
            if errno == ENOENT { throw BoundedFileError(path: full, what: what, problem: .changedWhileRead) }
            throw BoundedFileError(path: full, what: what, problem: errno == ELOOP ? .symlink : .cannotOpen(errno))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw BoundedFileError(path: full, what: what, problem: .cannotRead(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw BoundedFileError(path: full, what: what, problem: .notRegular) }
        let size = Int(info.st_size)
        guard size <= ceiling else { throw BoundedFileError(path: full, what: what, problem: .tooLarge(size: size, ceiling: ceiling)) }
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress.map { $0 + filled }, raw.count - filled) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw BoundedFileError(path: full, what: what, problem: .cannotRead(errno)) }
            if got == 0 { break }
            filled += got
        }
        // A file that grew past its size while it was read is being written: read it again.
        guard filled <= size else { throw BoundedFileError(path: full, what: what, problem: .changedWhileRead) }
        return Array(bytes.prefix(filled))
    }
}
