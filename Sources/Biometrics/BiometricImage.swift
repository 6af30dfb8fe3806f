/// One fingerprint or iris image of DG3/DG4, as the chip stores it: where it is from, its
/// format and size, and the encoded image. A browser can show JPEG, JPEG 2000 (Safari only) and
/// PNG; WSQ (the FBI's fingerprint format) and raw pixels it cannot — `displayable` says so.
public struct BiometricImage: Sendable, Hashable, Codable {
    /// `finger` or `iris`.
    public var kind: String
    /// ISO/IEC 19794-4 finger position (1 right thumb … 10 left little finger, 0 unknown) or the
    /// iris subtype (1 right eye, 2 left eye, 0 undefined).
    public var position: Int
    /// The position in words: `right index finger`, `left eye` …
    public var positionName: String
    /// `WSQ`, `JPEG`, `JPEG 2000`, `JPEG-LS`, `PNG`, `raw` (uncompressed pixels) or `unknown`.
    public var format: String
    /// The MIME type of `data` when it has one a browser knows (`image/jpeg`, `image/jp2`, `image/png`).
    public var mimeType: String?
    /// Whether a browser can show `data` as it is.
    public var displayable: Bool
    public var width: Int
    public var height: Int
    /// Image quality, 0–100, when the record gives one (255: not reported).
    public var quality: Int?
    /// The image bytes as stored (WSQ, JPEG …, or raw 8-bit pixels row by row).
    public var data: [UInt8]

    /// A fingerprint: the position's name and whether a browser shows it follow from the rest.
    static func finger(position: Int, format: (name: String, mime: String?), width: Int, height: Int, quality: Int?,
                       data: [UInt8]) -> BiometricImage {
        BiometricImage(kind: "finger", position: position, positionName: fingerPosition(position), format: format.name, mimeType: format.mime,
                       displayable: browsersShow(format.mime), width: width, height: height, quality: quality, data: data)
    }

    /// An iris image: the eye's name and whether a browser shows it follow from the rest.
    static func iris(eye: Int, format: (name: String, mime: String?), width: Int, height: Int, quality: Int?, data: [UInt8]) -> BiometricImage {
        BiometricImage(kind: "iris", position: eye, positionName: irisPosition(eye), format: format.name, mimeType: format.mime,
                       displayable: browsersShow(format.mime), width: width, height: height, quality: quality, data: data)
    }

    /// JPEG and PNG every browser shows; JPEG 2000 only Safari; WSQ and raw pixels none.
    static func browsersShow(_ mime: String?) -> Bool { mime == "image/jpeg" || mime == "image/png" }

    static func fingerPosition(_ code: Int) -> String {
        let names = ["unknown finger", "right thumb", "right index finger", "right middle finger", "right ring finger", "right little finger",
                     "left thumb", "left index finger", "left middle finger", "left ring finger", "left little finger"]
        if code < names.count { return names[code] }
        switch code {
        case 11: return "plain right thumb"
        case 12: return "plain left thumb"
        case 13: return "plain right four fingers"
        case 14: return "plain left four fingers"
        case 15: return "plain thumbs"
        default: return "position \(code)"
        }
    }

    static func irisPosition(_ code: Int) -> String {
        switch code {
        case 1: return "right eye"
        case 2: return "left eye"
        default: return "eye (undefined)"
        }
    }

    /// ISO/IEC 19794-4 image compression algorithm.
    static func fingerFormat(_ code: UInt8) -> (name: String, mime: String?) {
        switch code {
        case 0, 1: return ("raw", nil)
        case 2: return ("WSQ", nil)
        case 3: return ("JPEG", "image/jpeg")
        case 4: return ("JPEG 2000", "image/jp2")
        case 5: return ("PNG", "image/png")
        default: return ("unknown", nil)
        }
    }

    /// ISO/IEC 19794-6 image format.
    static func irisFormat(_ code: Int) -> (name: String, mime: String?) {
        switch code {
        case 2, 4: return ("raw", nil)
        case 6, 8: return ("JPEG", "image/jpeg")
        case 10, 12: return ("JPEG-LS", nil)
        case 14, 16: return ("JPEG 2000", "image/jp2")
        default: return ("unknown", nil)
        }
    }
}
