import Foundation

/// What BlueZ's `main.conf` says about the kiosk's Bluetooth that matters to an mdoc transfer.
///
/// `[GATT] Channels` above 1 (BlueZ's default is 3) turns on Enhanced ATT: the holder's
/// notifications then reach the kiosk over several L2CAP channels, and bluetoothd hands them on
/// in whatever order it reads those channels. ISO 18013-5's BLE pieces carry no sequence number,
/// so a message of more than one piece arrives shuffled and does not decrypt (seen against
/// bluetoothd 5.66 with two virtual controllers: Channels = 1 reads, the default does not).
public struct BlueZMainConfiguration: Sendable, Equatable {
    /// Where bluetoothd reads it unless started with `-f`; `GBGBRIDGE_BLUEZ_MAIN_CONF` names another.
    public static let defaultPath = "/etc/bluetooth/main.conf"
    /// BlueZ's own default when the file does not set it.
    public static let defaultChannels = 3
    /// At most this much of the file is read (it is a few kilobytes).
    static let maximumBytes = 256 * 1024

    /// `[GATT] Channels`, or nil when the file does not set it.
    public let channels: Int?
    /// The file read, or nil when there was none.
    public let path: String?

    /// The ATT channels bluetoothd will use: the file's, else BlueZ's default.
    public var effectiveChannels: Int { channels ?? Self.defaultChannels }
    /// Enhanced ATT is on: notifications may arrive out of order.
    public var enhancedATT: Bool { effectiveChannels > 1 }

    public init(channels: Int?, path: String?) {
        self.channels = channels
        self.path = path
    }

    /// Parses the text of a main.conf (GLib key file: `[Group]`, `Key = value`, `#` comments).
    public init(text: String, path: String?) {
        var group = ""
        var channels: Int?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                group = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard group == "GATT", let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if key == "Channels", let number = Int(value) { channels = number }
        }
        self.init(channels: channels, path: path)
    }

    /// The kiosk's main.conf (`GBGBRIDGE_BLUEZ_MAIN_CONF`, else /etc/bluetooth/main.conf); no file
    /// (or an unreadable one) is BlueZ's defaults.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> BlueZMainConfiguration {
        let path = environment["GBGBRIDGE_BLUEZ_MAIN_CONF"] ?? defaultPath
        guard let handle = FileHandle(forReadingAtPath: path) else { return BlueZMainConfiguration(channels: nil, path: nil) }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumBytes)) ?? Data()
        return BlueZMainConfiguration(text: String(decoding: data, as: UTF8.self), path: path)
    }

    /// The fix, in words.
    public static let fix = "set `Channels = 1` under [GATT] in /etc/bluetooth/main.conf and restart bluetoothd (systemctl restart bluetooth): "
        + "with Enhanced ATT a phone's BLE notifications reach the kiosk over several channels, out of order, and mdoc pieces carry no sequence number"
}
