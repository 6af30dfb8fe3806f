#if canImport(Glibc)
import Glibc
#endif

/// Reads a file an operator or another program handed over — a trust list, a CV certificate, a
/// key, an evidence file, a dump — only when it is no larger than a ceiling chosen for what it is:
/// the size is taken from the open file (`fstat`) before anything is read, and the read itself
/// stops one byte past the ceiling (a file that grows meanwhile is caught too). A 3 GB file given
/// as a master list costs a `stat`, not 3 GB of memory.
public enum BoundedFile {
    public static let kibibyte = 1_024
    public static let mebibyte = 1_048_576

    /// The bytes of `path`, or a `BoundedFileError` naming the file, its size and the ceiling.
    /// `what` names the file's role in messages ("master list", "CV certificate").
    public static func read(_ path: String, ceiling: Int, what: String) throws(BoundedFileError) -> [UInt8] {
        // Non-blocking: opening a FIFO for reading would otherwise wait for a writer forever.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw BoundedFileError(path: path, what: what, problem: .cannotOpen(errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw BoundedFileError(path: path, what: what, problem: .cannotOpen(errno)) }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: throw BoundedFileError(path: path, what: what, problem: .isDirectory)
        // A character device (/dev/null for "no configuration") is read within the ceiling too.
        case S_IFREG, S_IFCHR: break
        // A FIFO or a socket could block the read forever.
        default: throw BoundedFileError(path: path, what: what, problem: .notRegular)
        }
        let size = Int(info.st_size)
        guard size <= ceiling else { throw BoundedFileError(path: path, what: what, problem: .tooLarge(size: size, ceiling: ceiling)) }
        // Room for what fstat said, growing (a device says 0) to one byte past the ceiling at most.
        var bytes = [UInt8](repeating: 0, count: min(size, ceiling) + 1)
        var count = 0
        while count <= ceiling {
            if count == bytes.count { bytes += [UInt8](repeating: 0, count: min(max(bytes.count, 65_536), ceiling + 1 - count)) }
            let got = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.read(fd, base + count, raw.count - count)
            }
            if got > 0 {
                count += got
            } else if got < 0 && errno == EINTR {
                continue
            } else if got < 0 {
                throw BoundedFileError(path: path, what: what, problem: .cannotRead(errno))
            } else {
                break
            }
        }
        guard count <= ceiling else {
            throw BoundedFileError(path: path, what: what, problem: .tooLarge(size: count, ceiling: ceiling))
        }
        return Array(bytes.prefix(count))
    }

    /// The names in a directory (without `.` and `..`), sorted, at most `limit` of them; a problem
    /// is a `BoundedFileError` in words (no such directory, not a directory, permission denied,
    /// more entries than anyone hands over on purpose).
    public static func list(_ path: String, what: String, limit: Int = 100_000) throws(BoundedFileError) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw BoundedFileError(path: path, what: what, problem: .cannotOpen(errno)) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw BoundedFileError(path: path, what: what, problem: .notDirectory) }
        guard let directory = opendir(path) else { throw BoundedFileError(path: path, what: what, problem: .cannotOpen(errno)) }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw BoundedFileError(path: path, what: what, problem: .cannotRead(errno)) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            guard names.count < limit else { throw BoundedFileError(path: path, what: what, problem: .tooManyEntries(limit: limit)) }
            names.append(name)
        }
        return names.sorted()
    }

    /// What is at a path, following links: the question behind "a file, or every file in a
    /// directory" options (`--trust`, `--terminal-certificates`).
    public enum Kind: Sendable, Hashable {
        case missing, directory, other
    }

    public static func kind(_ path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        return info.st_mode & S_IFMT == S_IFDIR ? .directory : .other
    }

    /// Why `path` cannot be written as an output (a file, or with `directory` a directory that is
    /// created if missing), in words naming the option, or nil: checked before any work is done, so
    /// that a read of a chip does not end with nowhere to put it.
    public static func outputProblem(_ path: String, option: String, directory: Bool = false) -> String? {
        guard !path.isEmpty else { return "\(option) needs a path" }
        let here = kind(path)
        if directory {
            if here == .other { return "\(option) \(path) is a file, not a directory" }
            if here == .directory { return access(path, W_OK) == 0 ? nil : "\(option) \(path): cannot write in it (\(BoundedFileError.text(errno)))" }
        } else if here == .directory {
            return "\(option) \(path) is a directory; give a file name"
        }
        func parent(of path: String) -> String {
            guard let slash = path.lastIndex(of: "/") else { return "." }
            return slash == path.startIndex ? "/" : String(path[..<slash])
        }
        var folder = parent(of: path)
        // A directory output is created with its missing parents: the nearest one that exists counts.
        while directory, kind(folder) == .missing, folder != "/", folder != "." { folder = parent(of: folder) }
        switch kind(folder) {
        case .missing: return "\(option) \(path): the directory \(folder) does not exist"
        case .other: return "\(option) \(path): \(folder) is not a directory"
        case .directory:
            guard access(folder, W_OK) == 0 else { return "\(option) \(path): cannot write in \(folder) (\(BoundedFileError.text(errno)))" }
            // access() answers yes to root for any directory, /proc's included: a file created and
            // removed at once says whether one can really be made there.
            let probe = (folder == "/" ? "" : folder) + "/.gbgbridge-write-check-\(getpid())"
            let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 || errno == EEXIST else {
                let why = errno == ENOENT ? "it takes no new files" : BoundedFileError.text(errno)
                return "\(option) \(path): cannot write in \(folder) (\(why))"
            }
            if fd >= 0 {
                close(fd)
                unlink(probe)
            }
            return nil
        }
    }

    /// Creates `path` and its missing parents with `mode`; an existing directory is fine.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755, what: String) throws(BoundedFileError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw BoundedFileError(path: path, what: what, problem: .notDirectory) }
            return
        }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty, parent != path { try makeDirectory(parent, mode: mode, what: what) }
        guard mkdir(path, mode) == 0 || errno == EEXIST else {
            throw BoundedFileError(path: path, what: what, problem: .cannotCreate(errno))
        }
    }
}

/// Why a bounded file could not be read, in words: which file, and what to do.
public struct BoundedFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Problem: Sendable, Hashable {
        case cannotOpen(Int32)
        case cannotRead(Int32)
        case cannotCreate(Int32)
        case isDirectory
        case notDirectory
        case notRegular
        case tooManyEntries(limit: Int)
        case tooLarge(size: Int, ceiling: Int)
        /// A symbolic link where none is followed (a store a program writes to and deletes from).
        case symlink
        /// A directory that was swapped, removed or changed while it was read as one whole.
        case changedWhileRead
    }

    public let path: String
    public let what: String
    public let problem: Problem

    public init(path: String, what: String, problem: Problem) {
        self.path = path
        self.what = what
        self.problem = problem
    }

    public var description: String {
        switch problem {
        case .cannotOpen(let code):
            return code == ENOENT ? "\(path): no such file" : "\(path): cannot be opened (\(Self.text(code)))"
        case .cannotRead(let code): return "\(path): cannot be read (\(Self.text(code)))"
        case .cannotCreate(let code): return "\(path): cannot create the \(what) (\(Self.text(code)))"
        case .isDirectory: return "\(path) is a directory, not a \(what) file"
        case .notDirectory: return "\(path) is not a directory (the \(what) must be one)"
        case .tooManyEntries(let limit): return "\(path) holds more than \(limit) entries: not a \(what)"
        case .notRegular: return "\(path) is a pipe or a socket, not a \(what) file"
        case .symlink: return "\(path) is a symbolic link: refused (the \(what) and everything in it are opened without following links)"
        case .changedWhileRead: return "\(path) kept changing while it was read: read it again"
        case .tooLarge(let size, let ceiling):
            return "\(path) is \(Self.size(size)), more than the \(Self.size(ceiling)) a \(what) may be: not read"
        }
    }

    static func text(_ code: Int32) -> String {
        guard let message = strerror(code) else { return "error \(code)" }
        return String(cString: message).lowercased()
    }

    /// `1234` bytes, `64 KiB`, `3.0 GiB`: exact below a KiB, and exact when a round unit.
    static func size(_ bytes: Int) -> String {
        let units: [(Int, String)] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        for (unit, name) in units where bytes >= unit {
            if bytes % unit == 0 { return "\(bytes / unit) \(name) (\(bytes) bytes)" }
            let tenths = (bytes * 10 + unit / 2) / unit
            return "\(tenths / 10).\(tenths % 10) \(name) (\(bytes) bytes)"
        }
        return "\(bytes) bytes"
    }
}

extension BoundedFile {
    /// The ceilings of the files the product reads, by what they are (Docs/hostile-input.md,
    /// "Files"): generous for what real files are, small against what a mistake or an attack hands over.
    public enum Ceiling {
        /// A CSCA certificate or bundle, an ICAO master list (Germany's, ~600 CSCAs, is 0.9 MiB), a CRL.
        public static let trustFile = 16 * mebibyte
        /// A card-verifiable certificate or certificate request (under 2 KiB in practice).
        public static let cvCertificate = 64 * kibibyte
        /// A private key (PKCS#8, PEM or DER) or a public key.
        public static let key = 64 * kibibyte
        /// A file holding a PIN.
        public static let pin = 4 * kibibyte
        /// `serve`'s YAML configuration.
        public static let configuration = mebibyte
        /// Chip evidence (every file base64-encoded: the largest DG2–DG4 fit several times).
        public static let evidence = 24 * mebibyte
        /// A passport description (JSON) for the emulator.
        public static let passportDescription = mebibyte
        /// An image a passport description names (face, signature).
        public static let image = 4 * mebibyte
    }
}
