import BlueZ
import Foundation
import ImageSandbox
import MRTDCrypto
import Mdoc
import MdocBLE
import MdocNFC
import SmartCardCore

/// One mdoc read end to end, as `gbgbridge mdoc read` and the bridge's `mdoc.read` do it: wait for
/// a holder at a reader, read it over NFC, verify against the IACAs trusted, and re-encode the
/// portrait in the confined decoder.
public struct MdocReadJob: Sendable {
    public var reader: String?
    public var options: MdocReadOptions
    /// How long to wait for a holder to be presented.
    public var cardTimeout: Duration
    public var trust: MdocTrust
    /// The time the read is judged at (nil: now).
    public var verificationTime: Double?

    public init(reader: String?, options: MdocReadOptions, cardTimeout: Duration, trust: MdocTrust, verificationTime: Double? = nil) {
        self.reader = reader
        self.options = options
        self.cardTimeout = cardTimeout
        self.trust = trust
        self.verificationTime = verificationTime
    }

    public struct Result: Sendable {
        public let reader: String
        public let outcome: MdocReadOutcome
        /// One report per returned document.
        public let reports: [MdocReport]
    }

    /// Waits for a card, reads and verifies. Errors are `MdocError`s (a card that never came: `.timeout`).
    public func run(on backend: any CardReaderBackend) async throws(MdocError) -> Result {
        // BLE when BlueZ has a powered adapter: asked while the job waits for the holder, not
        // after it is presented (a D-Bus round trip, bounded by `BlueZ.callTimeout`, off the
        // cooperative pool), so the tap is answered at once.
        async let bluetooth = Self.bluetooth(for: options)
        let card: ReaderInfo
        let connection: any CardConnection
        do {
            card = try await backend.waitForCard(readerMatching: reader, timeout: cardTimeout)
            connection = try await backend.connect(reader: card.name)
        } catch let error as SmartCardError {
            switch error.code {
            case .timeout, .noCard, .cancelled: throw MdocError(.timeout, "no holder was presented in time (\(error.reason))")
            default: throw MdocError(.transport, "\(error.reason) [\(error.code)]")
            }
        } catch {
            throw MdocError(.transport, "\(error)")
        }
        var options = self.options
        // Offered in a negotiated handover, used when the holder offers it (alone, with auto).
        if let alternative = await bluetooth { options.alternative = alternative }
        let outcome: MdocReadOutcome
        do {
            outcome = try await MdocNFCReader.read(connection: connection, options: options)
        } catch {
            await connection.disconnect()
            throw error
        }
        await connection.disconnect()
        return Result(reader: card.name, outcome: outcome, reports: try await verify(outcome, options: options))
    }

    /// A read after a QR engagement (the holder's `mdoc:` code, read by a camera or a scanner):
    /// the session over BLE through the powered adapters BlueZ lists, then verified as `run`
    /// does. `engagementTime`: how long reading the code took. The result's reader is "qr".
    public func run(qrEngagement engagement: DeviceEngagement, engagementTime: Duration = .zero) async throws(MdocError) -> Result {
        var options = self.options
        if let alternative = await Self.bluetooth(for: options) { options.alternative = alternative }
        let outcome = try await MdocQRReader.read(engagement: engagement, options: options, engagementTime: engagementTime)
        return Result(reader: "qr", outcome: outcome, reports: try await verify(outcome, options: options))
    }

    /// BLE through the adapters BlueZ has powered now, when the read may use it and was given no
    /// other carrier; nil otherwise (no BlueZ, no powered adapter, `transport` nfc). Asked by the
    /// bridge before a holder is asked to show a QR code the read could not use, and then given
    /// to the job as its `options.alternative` (so not asked again).
    public static func bluetooth(for options: MdocReadOptions) async -> MdocAlternativeCarrier? {
        guard options.transport != .nfc, options.alternative == nil,
              let adapters = (try? await BlueZ.adaptersOffPool())?.filter(\.powered), !adapters.isEmpty else { return nil }
        return .ble(adapters: adapters, maximumMessage: options.responseLimits.maximumBytes + 64, l2cap: options.l2cap ? .auto : .never)
    }

    /// Each returned document verified against the IACAs trusted, its portrait re-encoded.
    func verify(_ outcome: MdocReadOutcome, options: MdocReadOptions) async throws(MdocError) -> [MdocReport] {
        guard !outcome.response.documents.isEmpty else {
            let errors = outcome.response.documentErrors.map { "\($0.docType) (error \($0.code))" }
            throw MdocError(.noDocument, errors.isEmpty ? "the holder returned no document (status \(outcome.response.status)): it declined, or holds none of what was asked"
                                                        : "the holder returned no document: \(errors.joined(separator: ", "))")
        }
        let time = verificationTime ?? Date().timeIntervalSince1970
        let verifier = MdocVerifier(trustAnchors: trust.anchors, revocationLists: trust.revocationLists, time: time)
        var reports: [MdocReport] = []
        for document in outcome.response.documents {
            let request = options.requests.first { $0.docType == document.docType }
            let verification = verifier.verify(document, transcript: outcome.transcript, request: request, readerKey: outcome.readerEphemeralKey)
            let portrait = await Self.portrait(verification)
            reports.append(MdocReport(verification, outcome: outcome, portrait: portrait, at: time))
        }
        return reports
    }

    /// The portrait, decoded and encoded anew in the confined decoder; nil when none was handed over.
    public static func portrait(_ verification: MdocVerification) async -> MdocReport.Portrait? {
        guard let bytes = verification.elements.first(where: { $0.identifier == "portrait" })?.value.bytesValue else { return nil }
        do {
            let image = try await ImageSandbox.reencodedJPEG(bytes)
            return MdocReport.Portrait(jpeg: image.jpeg, width: image.width, height: image.height, problem: nil)
        } catch {
            return MdocReport.Portrait(jpeg: [], width: 0, height: 0, problem: "\(error.code.rawValue): \(error.reason)")
        }
    }

    /// `mdoc read`'s exit status for an error (Docs/mdoc.md).
    public static func exitStatus(for error: MdocError) -> Int32 {
        switch error.code {
        case .invalidRequest, .readerKey: return 2
        case .timeout: return 4
        case .noDocument, .sessionTerminated: return 5
        case .cameraUnavailable: return 7
        default: return 6
        }
    }
}
