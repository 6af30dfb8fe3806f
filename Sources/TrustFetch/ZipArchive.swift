import CLibArchive

/// The files of a ZIP archive a trust source publishes (the BSI's master list comes as a ZIP
/// holding one `.ml`), read through Debian's libarchive within bounds set before any byte is
/// inflated (issue 49): at most `maxEntries` entries, each regular file at most `maxBytes`
/// (checked on the size its header claims and again while it inflates), all of them together at
/// most `maxTotal`, and no entry inflating past `maxRatio` times the archive's size. Names are
/// kept only as labels (nothing is written to disk).
public enum ZipArchive {
    public struct Limits: Sendable {
        public var maxEntries: Int
        public var maxBytes: Int
        public var maxTotal: Int
        public var maxRatio: Int
        public static let trustFiles = Limits(maxEntries: 16, maxBytes: 16 << 20, maxTotal: 32 << 20, maxRatio: 100)
        public init(maxEntries: Int, maxBytes: Int, maxTotal: Int, maxRatio: Int) {
            (self.maxEntries, self.maxBytes, self.maxTotal, self.maxRatio) = (maxEntries, maxBytes, maxTotal, maxRatio)
        }
    }

    public struct Entry: Sendable {
        public let name: String
        public let bytes: [UInt8]
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Whether `bytes` start as a ZIP archive does (a local file header).
    public static func isZip(_ bytes: [UInt8]) -> Bool { bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) }

    /// The regular files of the archive whose names `wanted` accepts, read whole within `limits`.
    public static func entries(_ archive: [UInt8], limits: Limits = .trustFiles, wanted: (String) -> Bool) throws(Failure) -> [Entry] {
        guard let reader = archive_read_new() else { throw Failure(description: "libarchive could not start") }
        defer { archive_read_free(reader) }
        archive_read_support_format_zip(reader)
        archive_read_support_filter_none(reader)
        let inflateCeiling = min(limits.maxTotal, max(1, archive.count) * limits.maxRatio)
        // libarchive reads the bytes in place: they must outlive every call on `reader` below.
        return try archive.withUnsafeBytes { raw in
            Result { () throws(Failure) -> [Entry] in try read(reader, raw, limits: limits, inflateCeiling: inflateCeiling, wanted: wanted) }
        }.get()
    }

    private static func read(_ reader: OpaquePointer, _ raw: UnsafeRawBufferPointer, limits: Limits, inflateCeiling: Int,
                             wanted: (String) -> Bool) throws(Failure) -> [Entry] {
            guard archive_read_open_memory(reader, raw.baseAddress, raw.count) == ARCHIVE_OK else {
                throw Failure(description: "not a ZIP archive libarchive can read: \(text(reader))")
            }
            var found: [Entry] = []
            var count = 0
            var total = 0
            var entry: OpaquePointer?
            while true {
                let status = archive_read_next_header(reader, &entry)
                if status == ARCHIVE_EOF { break }
                guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let entry else {
                    throw Failure(description: "a damaged ZIP archive: \(text(reader))")
                }
                count += 1
                guard count <= limits.maxEntries else {
                    throw Failure(description: "the ZIP archive holds more than \(limits.maxEntries) entries: not a trust file's archive")
                }
                let name = archive_entry_pathname(entry).map { String(cString: $0) } ?? ""
                guard archive_entry_filetype(entry) == 0o100000 /* AE_IFREG: a cast macro Swift does not import */, wanted(name) else {
                    archive_read_data_skip(reader)
                    continue
                }
                if archive_entry_size_is_set(entry) != 0 {
                    let claimed = Int(archive_entry_size(entry))
                    guard claimed <= limits.maxBytes else {
                        throw Failure(description: "\(printable(name)) in the ZIP archive claims \(claimed) bytes, more than the \(limits.maxBytes >> 20) MiB a trust file may be")
                    }
                }
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let got = buffer.withUnsafeMutableBytes { archive_read_data(reader, $0.baseAddress, $0.count) }
                    if got == 0 { break }
                    guard got > 0 else { throw Failure(description: "\(printable(name)) in the ZIP archive does not inflate: \(text(reader))") }
                    total += got
                    guard bytes.count + got <= limits.maxBytes else {
                        throw Failure(description: "\(printable(name)) in the ZIP archive inflates past the \(limits.maxBytes >> 20) MiB a trust file may be")
                    }
                    guard total <= inflateCeiling else {
                        throw Failure(description: "the ZIP archive inflates past \(inflateCeiling) bytes (more than \(limits.maxRatio) times its size, or \(limits.maxTotal >> 20) MiB): a decompression bomb")
                    }
                    bytes.append(contentsOf: buffer.prefix(got))
                }
                found.append(Entry(name: name, bytes: bytes))
            }
            return found
    }

    static func text(_ reader: OpaquePointer) -> String {
        archive_error_string(reader).map { printable(String(cString: $0)) } ?? "no reason given"
    }

    /// `text` as one printable ASCII line (an entry's name is the archive's say).
    public static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }).prefix(200))
    }
}
