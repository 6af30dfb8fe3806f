import Foundation
import GBGBridge

/// One finished mdoc.read as the operators' diagnostics show it: outcome, timing, transport and
/// counts — never an element's value, the portrait or a key (Docs/mdoc.md, "Surfaces").
public struct MdocReadRecord: Sendable, Codable, Equatable {
    /// The page's correlation id, clipped.
    public var id: String
    public var reader: String?
    /// When it finished (ISO 8601, UTC).
    public var finished: String
    public var seconds: Double
    /// `verified`, `unverified`, or the page's error code (`CARD_TIMEOUT`, `UNSUPPORTED`, …).
    public var outcome: String
    /// The mdoc error code behind a failure (`MDOC_ENGAGEMENT`, `MDOC_LIMIT_EXCEEDED`, …).
    public var mdocCode: String?
    public var docType: String?
    public var issuer: String?
    public var device: String?
    public var transport: String?
    public var handover: String?
    public var apdus: Int?
    public var elements: Int?
    public var withheld: Int?

    /// The last `capacity` records, oldest first.
    static let capacity = 20
}

extension MdocReadService {
    /// The last finished reads, oldest first (at most `MdocReadRecord.capacity`).
    public var recentReads: [MdocReadRecord] { readLog }
    /// How many reads finished since the service started.
    public var readsFinished: Int { readsFinishedCount }

    func record(_ record: MdocReadRecord) {
        readLog.append(record)
        if readLog.count > MdocReadRecord.capacity { readLog.removeFirst(readLog.count - MdocReadRecord.capacity) }
        readsFinishedCount += 1
    }

    nonisolated static func finishedNow() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }
}
