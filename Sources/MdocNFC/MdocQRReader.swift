import CBORCoding
import Mdoc

/// Reads an mdoc whose holder engaged by QR code (ISO 18013-5 §8.2.2.3: the phone shows
/// `mdoc:…`, the kiosk's camera or scanner reads it): no NFC at all — the transcript's handover is
/// null (§9.1.5.1), and the session runs over the carrier the engagement offers, BLE (the only one
/// this reader uses after a QR engagement; NFC data retrieval would need a tap anyway).
public enum MdocQRReader {
    /// The session with the holder of `engagement` over `options.alternative` (BLE through the
    /// powered adapters), inside `options.timeout`. `engagementTime`: how long reading the QR code
    /// took, reported as the engagement's timing.
    public static func read(engagement: DeviceEngagement, options: MdocReadOptions, engagementTime: Duration = .zero) async throws(MdocError) -> MdocReadOutcome {
        guard !options.requests.isEmpty else { throw MdocError(.invalidRequest, "nothing to request") }
        let deadline = ContinuousClock.now + options.timeout
        let offered = Set(engagement.retrievalMethods.map(\.name)).sorted()
        let carriers = offered.isEmpty ? "no carrier" : offered.joined(separator: ", ")
        guard options.transport != .nfc else {
            throw MdocError(.unsupported, "after a QR engagement this reader retrieves over BLE; the read was limited to NFC (transport nfc)")
        }
        guard offered.contains("ble") else {
            throw MdocError(.unsupported, "the QR engagement offers data retrieval over \(carriers), not BLE (the carrier this reader uses after a QR engagement)")
        }
        guard let alternative = options.alternative else {
            throw MdocError(.unsupported, "the QR engagement offers BLE, but this kiosk cannot use it now: BLE needs a powered Bluetooth adapter (doctor's bluetooth check says why)")
        }
        guard alternative.offered(engagement, nil) else {
            throw MdocError(.unsupported, "the QR engagement's BLE offer names no mode and service UUID this reader can use")
        }
        let established = try await MdocNFCReader.establish(engagement: engagement, handover: .null, options: options)
        return try await MdocNFCReader.retrieve(over: alternative, established, engagement: engagement, select: nil, handover: "qr",
                                                deadline: deadline, options: options, engagementSeconds: MdocNFCReader.seconds(engagementTime), exchanges: 0)
    }
}
