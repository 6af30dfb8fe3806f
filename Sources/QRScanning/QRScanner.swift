import CZBar

/// QR codes in an 8-bit grey image, found by ZBar (Debian's libzbar): the mdoc holder's QR
/// engagement (ISO 18013-5 §8.2.2.3, issue 52). Runs where hostile images are decoded — in the
/// confined decoder child — so it asks ZBar for raw bytes (`ZBAR_CFG_BINARY`: no character-set
/// conversion, which would open iconv's modules) and for QR codes alone.
public enum QRScanner {
    /// What one scan may hand back: at most `maximumSymbols` codes of at most `maximumBytes` each
    /// (a QR code holds 2,953 bytes at most; anything longer is not a QR code's).
    public struct Limits: Sendable, Hashable {
        public var maximumSymbols: Int
        public var maximumBytes: Int

        public init(maximumSymbols: Int = 8, maximumBytes: Int = 2_953) {
            self.maximumSymbols = maximumSymbols
            self.maximumBytes = maximumBytes
        }
    }

    /// The QR codes in `gray` (`width` × `height`, one byte a pixel, rows without padding), in
    /// the order ZBar found them; codes past the limits are left out. Nil when ZBar could not be
    /// set up or the image's shape does not match its pixels.
    public static func scan(gray: [UInt8], width: Int, height: Int, limits: Limits = Limits()) -> [[UInt8]]? {
        guard width > 0, height > 0, width <= 65_535, height <= 65_535, gray.count == width * height else { return nil }
        guard let scanner = zbar_image_scanner_create() else { return nil }
        defer { zbar_image_scanner_destroy(scanner) }
        // Every symbology off, then QR codes on, their bytes as they are.
        _ = zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        guard let image = zbar_image_create() else { return nil }
        defer { zbar_image_destroy(image) }
        // Y800: 8-bit grey. ZBar reads the buffer in place and does not free it (no cleanup handler).
        let y800: UInt = 0x3030_3859
        zbar_image_set_format(image, y800)
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        var found: [[UInt8]] = []
        gray.withUnsafeBytes { buffer in
            zbar_image_set_data(image, buffer.baseAddress, UInt(buffer.count), nil)
            guard zbar_scan_image(scanner, image) > 0 else { return }
            var symbol = zbar_image_first_symbol(image)
            while let current = symbol, found.count < limits.maximumSymbols {
                symbol = zbar_symbol_next(current)
                guard zbar_symbol_get_type(current) == ZBAR_QRCODE else { continue }
                let length = Int(zbar_symbol_get_data_length(current))
                guard length > 0, length <= limits.maximumBytes, let data = zbar_symbol_get_data(current) else { continue }
                found.append(data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) })
            }
            // The data pointer is this function's buffer: ZBar must not keep it past here.
            zbar_image_set_data(image, nil, 0, nil)
        }
        return found
    }
}
