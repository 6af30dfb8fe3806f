// gbgbridge-decode: decodes one image a stranger handed us — a chip's face or signature, a photo
// given to `gbgbridge mrz` — in a process that can do nothing else (issue 43). Before it reads a
// byte it confines itself (`CSandboxShim_confine`: no new privileges, a seccomp filter of
// read/write/memory/exit, no new descriptors, bounded address space and CPU); it reads the image
// on standard input and writes one answer on standard output, then exits. The host
// (`ImageSandbox`) starts it with an empty environment and nothing but its pipes, and kills it
// past a wall-clock budget.
//
//   gbgbridge-decode browser-jpeg --max-pixels N --max-bytes N --max-tiles N [--quality Q] [--reencode]
//   gbgbridge-decode check --max-pixels N --max-bytes N --max-tiles N      (decodes, answers the size)
//   gbgbridge-decode mrz [--budget-ms N] [--scale-to-pixels N]
//   gbgbridge-decode qr --max-pixels N --max-bytes N --max-tiles N [--gray-width W --gray-height H]
//                                                                      (the QR codes' bytes)
//   (debug builds only) gbgbridge-decode fault KIND
// Every operation also takes --cpu-ms N (the decode's CPU time), --memory-mib N, --cpu-seconds N
// (the process's limits) and --parent PID (it dies with that process).
//
// The answer: "GBGD", a big-endian UInt32 length and a JSON header, a UInt32 length and the
// payload (a JPEG for browsers, QR codes' bytes, or nothing). Nothing else is ever written to standard output.
import CSandboxShim
import ImageCodecs
import MRZ
import QRScanning
#if canImport(Glibc)
import Glibc
#endif

/// The most image bytes read from standard input (the host's own ceilings are lower).
let inputCeiling = 48 << 20

let arguments = CommandLine.arguments
func flag(_ name: String) -> Bool { arguments.contains(name) }
func option(_ name: String) -> Int? { zip(arguments, arguments.dropFirst()).first { $0.0 == name }.flatMap { Int($0.1) } }
let operation = arguments.count > 1 ? arguments[1] : ""

// Dies with the host that started it (a killed host leaves no decoder behind), and not at all
// when the host is gone already.
if let parent = option("--parent"), CSandboxShim_die_with_parent(Int32(clamping: parent)) != 0 { exit(5) }

/// When the work began (the MRZ search gets what the decode left of the image's budget).
let began = ContinuousClock.now

// Limits the host chose (defaults: a chip image's).
let limits = ImageCodecs.Limits(maxPixels: option("--max-pixels") ?? ImageCodecs.Limits.chipImages.maxPixels,
                                maxBytes: option("--max-bytes") ?? ImageCodecs.Limits.chipImages.maxBytes,
                                maxTiles: option("--max-tiles") ?? 4_096,
                                scaleToPixels: option("--scale-to-pixels") ?? 0,
                                cpuBudget: option("--cpu-ms").map { .milliseconds($0) })
let addressSpace = UInt64(option("--memory-mib") ?? 1_024) << 20
let cpuSeconds = UInt64(option("--cpu-seconds") ?? 10)

/// The classifier's weights are decoded before the filter goes up (nothing needs a syscall for
/// it, but nothing should happen for the first time after it either).
let recognizer = operation == "mrz" ? MRZRecognizer() : nil

// Confined before the first byte of the image is read; a failure to confine is no decode.
let confined = CSandboxShim_confine(addressSpace, cpuSeconds)
guard confined == 0 else {
    answer(["ok": .bool(false), "code": .string("DECODER_UNAVAILABLE"),
            "reason": .string("the decoder could not confine itself (errno \(confined)): nothing decoded")])
    exit(3)
}

/// A JSON value of the answer's header.
enum Field {
    case string(String), bool(Bool), int(Int), double(Double), strings([String]), ints([Int]), object([(String, Field)]), objects([[(String, Field)]])

    var json: String {
        switch self {
        case .string(let text): return quoted(text)
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .double(let value): return value.isFinite ? String(value) : "0"
        case .strings(let values): return "[" + values.map(quoted).joined(separator: ",") + "]"
        case .ints(let values): return "[" + values.map(String.init).joined(separator: ",") + "]"
        case .object(let pairs): return "{" + pairs.map { quoted($0.0) + ":" + $0.1.json }.joined(separator: ",") + "}"
        case .objects(let list): return "[" + list.map { Field.object($0).json }.joined(separator: ",") + "]"
        }
    }
}

func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func writeAll(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(1, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { exit(4) }
        offset += written
    }
}

func bigEndian(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }

/// Writes the answer: the header's fields, and the payload.
func answer(_ header: [String: Field], payload: [UInt8] = []) {
    let json = Array(Field.object(header.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }).json.utf8)
    writeAll(Array("GBGD".utf8) + bigEndian(json.count) + json + bigEndian(payload.count) + payload)
}

func readInput() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while bytes.count <= inputCeiling {
        let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

func failure(_ error: ImageCodecs.Failure) -> [String: Field] {
    ["ok": .bool(false), "code": .string(error.tooCostly ? "IMAGE_TOO_COSTLY" : "IMAGE_INVALID"), "reason": .string(error.reason)]
}

/// What kind of image the bytes are, by their first bytes.
func kind(_ bytes: [UInt8]) -> String? {
    if bytes.starts(with: [0xFF, 0xD8]) { return "jpeg" }
    if bytes.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) || bytes.starts(with: [0xFF, 0x4F, 0xFF, 0x51]) { return "jpeg2000" }
    if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
    return nil
}

func decode(_ bytes: [UInt8], _ kind: String) throws(ImageCodecs.Failure) -> ImageCodecs.RGBImage {
    switch kind {
    case "jpeg": return try ImageCodecs.decodeJPEG(bytes, limits: limits)
    case "jpeg2000": return try ImageCodecs.decodeJPEG2000(bytes, limits: limits)
    default: return try ImageCodecs.decodePNG(bytes, limits: limits)
    }
}

switch operation {
case "browser-jpeg":
    // A chip's image for a browser: JPEG 2000 and CMYK/YCCK JPEG decoded and encoded as JPEG; any
    // other JPEG decoded here (within the limits and the scan bound) and then passed on as it is.
    let input = readInput()
    guard let format = kind(input), format != "png" else {
        answer(["ok": .bool(false), "code": .string("IMAGE_INVALID"), "reason": .string("neither JPEG nor JPEG 2000")])
        exit(0)
    }
    do {
        let image = try decode(input, format)
        // --reencode: always encoded anew (an mdoc's portrait: nothing of the holder's bytes reaches a browser).
        let transcode = flag("--reencode") || format == "jpeg2000" || ImageCodecs.jpegComponents(input) == 4
        let jpeg = transcode ? try ImageCodecs.encodeJPEG(image, quality: option("--quality") ?? 90) : []
        answer(["ok": .bool(true), "width": .int(image.width), "height": .int(image.height), "format": .string(format),
                "passThrough": .bool(!transcode)], payload: jpeg)
    } catch {
        answer(failure(error))
    }
case "check":
    // An image a page will be given as it is (DG3/DG4 fingerprints and irises): decoded here within
    // the limits, its size answered; nothing of it is sent back.
    let input = readInput()
    guard let format = kind(input) else {
        answer(["ok": .bool(false), "code": .string("IMAGE_INVALID"), "reason": .string("neither JPEG, JPEG 2000 nor PNG")])
        exit(0)
    }
    do {
        let image = try decode(input, format)
        answer(["ok": .bool(true), "width": .int(image.width), "height": .int(image.height), "format": .string(format)])
    } catch {
        answer(failure(error))
    }
case "mrz":
    // A photo or a scan for `gbgbridge mrz`: decoded (at the scale the search needs) and its MRZ
    // read; the search gets what the decode left of the image's budget.
    let input = readInput()
    guard let format = kind(input) else {
        answer(["ok": .bool(false), "code": .string("NOT_AN_IMAGE"), "reason": .string("not a PNG or JPEG image")])
        exit(0)
    }
    guard format != "jpeg2000" else {
        answer(["ok": .bool(false), "code": .string("NOT_AN_IMAGE"), "reason": .string("not a PNG or JPEG image (JPEG 2000)")])
        exit(0)
    }
    guard let recognizer else {
        answer(["ok": .bool(false), "code": .string("DECODER_UNAVAILABLE"), "reason": .string("this build has no trained MRZ reader")])
        exit(0)
    }
    do {
        let image = try decode(input, format)
        let total = Duration.milliseconds(option("--budget-ms") ?? 2_000)
        let budget = max(.milliseconds(100), total - (ContinuousClock.now - began))
        let result = recognizer.read(photo: image, budget: budget)
        var header: [String: Field] = ["ok": .bool(true), "found": .bool(result.found), "width": .int(image.width), "height": .int(image.height)]
        if let refusal = result.refusal { header["refusal"] = .string(refusal.rawValue) }
        header["candidates"] = .objects(result.candidates.map { candidate in
            var fields: [(String, Field)] = [("documentNumber", .string(candidate.documentNumber)), ("dateOfBirth", .string(candidate.dateOfBirth)),
                                             ("dateOfExpiry", .string(candidate.dateOfExpiry)), ("score", .double(candidate.score))]
            if let composite = candidate.compositeValid { fields.append(("compositeValid", .bool(composite))) }
            return fields
        })
        if let r = result.reading {
            header["reading"] = .object([
                ("format", .string(r.format.rawValue)), ("lines", .strings(r.lines)), ("valid", .bool(r.valid)),
                ("accessKeyValid", .bool(r.accessKeyValid)), ("documentCode", .string(r.documentCode)), ("issuingState", .string(r.issuingState)),
                ("documentNumber", .string(r.documentNumber)), ("dateOfBirth", .string(r.dateOfBirth)), ("dateOfExpiry", .string(r.dateOfExpiry)),
                ("nationality", .string(r.nationality)), ("surname", .string(r.surname)), ("givenNames", .string(r.givenNames)),
                ("sex", .string(r.sex)), ("optionalData", .string(r.optionalData)),
                ("checkDigits", .object(r.checkDigits.sorted { $0.key < $1.key }.map { ($0.key, .bool($0.value)) })),
                ("confidence", .double(r.confidence)), ("corrections", .int(r.corrections)),
            ])
        }
        answer(header)
    } catch {
        answer(failure(error))
    }
case "qr":
    // A photo or a scan of a QR code (an mdoc holder's engagement): decoded, turned grey, and
    // ZBar's QR codes answered — their lengths in the header, their bytes one after another in
    // the payload, whatever they hold; the host parses them. With --gray-width/--gray-height the
    // input is a camera frame's grey levels as they are (width × height bytes).
    let input = readInput()
    let gray: [UInt8], width: Int, height: Int
    if let grayWidth = option("--gray-width"), let grayHeight = option("--gray-height") {
        guard grayWidth > 0, grayHeight > 0, grayWidth <= 65_535, grayHeight <= 65_535, grayWidth * grayHeight <= limits.maxPixels,
              input.count == grayWidth * grayHeight else {
            answer(["ok": .bool(false), "code": .string("IMAGE_INVALID"), "reason": .string("grey levels that are not the size given, or past the limits")])
            exit(0)
        }
        (gray, width, height) = (input, grayWidth, grayHeight)
    } else {
        guard let format = kind(input), format != "jpeg2000" else {
            answer(["ok": .bool(false), "code": .string("NOT_AN_IMAGE"), "reason": .string("not a PNG or JPEG image")])
            exit(0)
        }
        do {
            let levels = GrayImage(try decode(input, format))
            (gray, width, height) = (levels.pixels, levels.width, levels.height)
        } catch {
            answer(failure(error))
            exit(0)
        }
    }
    guard let codes = QRScanner.scan(gray: gray, width: width, height: height) else {
        answer(["ok": .bool(false), "code": .string("DECODER_UNAVAILABLE"), "reason": .string("the QR scanner could not be set up")])
        exit(0)
    }
    answer(["ok": .bool(true), "width": .int(width), "height": .int(height), "lengths": .ints(codes.map(\.count))], payload: codes.flatMap { $0 })
#if DEBUG
case "fault":
    // Test only (debug builds): misbehave as a compromised decoder would, to show what the
    // confinement does with it.
    _ = readInput()
    let kind = arguments.count > 2 ? arguments[2] : ""
    switch kind {
    case "crash": abort()
    case "spin": while true { _ = clock() }
    case "allocate":
        // 4 GiB, touched: past RLIMIT_AS the allocation fails, and the runtime stops.
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<64 {
            // trap: the fault switch's point is to die here, as a decoder past RLIMIT_AS would.
            guard let block = malloc(64 << 20) else { fatalError("allocation refused (RLIMIT_AS)") }
            memset(block, 1, 64 << 20)
            blocks.append(block)
        }
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("allocated \(blocks.count * 64) MiB")])
    case "open":
        let fd = open("/etc/passwd", O_RDONLY)
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("open: \(fd < 0 ? "errno \(errno)" : "opened")")])
    case "socket":
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("socket: \(fd < 0 ? "errno \(errno)" : "opened")")])
    case "exec":
        let shell = strdup("/bin/sh")
        let argv: [UnsafeMutablePointer<CChar>?] = [shell, nil]
        execv("/bin/sh", argv)
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("exec: errno \(errno)")])
    case "forbidden":
        // A system call outside the filter and not refused by it (kill another process): SIGSYS.
        _ = kill(1, 0)
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("kill returned")])
    case "garbage": writeAll([UInt8](repeating: 0x41, count: 1_000))
    // Well-framed answers a compromised decoder could forge (issue 49): the host checks what
    // they claim, not only their frame.
    case "forge-size":
        answer(["ok": .bool(true), "width": .int(100_000), "height": .int(100_000), "format": .string("jpeg2000"), "passThrough": .bool(false)],
               payload: [0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xD9])
    case "forge-bytes":
        answer(["ok": .bool(true), "width": .int(8), "height": .int(8), "format": .string("jpeg2000"), "passThrough": .bool(false)],
               payload: Array("GIF89a<script>alert(1)</script>".utf8))
    case "forge-format":
        answer(["ok": .bool(true), "width": .int(8), "height": .int(8), "format": .string("svg"), "passThrough": .bool(true)])
    case "forge-text":
        answer(["ok": .bool(true), "found": .bool(true), "width": .int(640), "height": .int(480), "reading": .object([
            ("format", .string("TD3")), ("lines", .strings(["P<UTO\u{1B}[2JERIKSSON", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"])),
            ("valid", .bool(true)), ("accessKeyValid", .bool(true)), ("documentCode", .string("P")), ("issuingState", .string("UTO")),
            ("documentNumber", .string("L898902C3")), ("dateOfBirth", .string("740812")), ("dateOfExpiry", .string("120415")),
            ("nationality", .string("UTO")), ("surname", .string("ERIKSSON\u{1B}]0;owned\u{07}")), ("givenNames", .string("ANNA")),
            ("sex", .string("F")), ("optionalData", .string("")), ("checkDigits", .object([])), ("confidence", .double(0.99)), ("corrections", .int(0)),
        ])])
    case "forge-reason":
        answer(["ok": .bool(false), "code": .string("IMAGE_INVALID"), "reason": .string("bad\u{1B}[31m red \u{202E}txt.exe\n" + String(repeating: "x", count: 5_000))])
    case "sleep":
        var time = timespec(tv_sec: 3_600, tv_nsec: 0)
        nanosleep(&time, nil)
    case "confined":
        // Reads its own /proc status — which the filter refuses: it says so.
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("confined check: \(CSandboxShim_confined())")])
    default:
        answer(["ok": .bool(false), "code": .string("FAULT"), "reason": .string("no such fault")])
    }
#endif
default:
    answer(["ok": .bool(false), "code": .string("DECODER_UNAVAILABLE"), "reason": .string("unknown operation '\(operation)'")])
}
exit(0)
