import Foundation
import MRTDCrypto
import BlueZ
import MdocBLE
import MdocRead

extension DoctorChecks {
    /// The IACAs mdoc.read trusts (the trust paths' iaca/): none means every mobile document
    /// reads as `untrusted`; expired or test ones are named.
    package static func mdocIssuers(paths: [String], now: Double = Date().timeIntervalSince1970) -> DoctorCheck {
        let trust = MdocTrust(storePaths: paths)
        let fix = "import the issuers' IACA certificates: gbgbridge trust import --iaca --anchor-sha256 HEX FILE (or a VICAL), or add a vical source under trust-refresh:"
        guard !trust.anchors.isEmpty else {
            return DoctorCheck(name: "mdoc-issuers", status: .warning,
                               finding: "no IACA in \(paths.isEmpty ? "the trust store" : paths.map { $0 + "/iaca" }.joined(separator: ", ")): every mobile document (mdoc.read) is untrusted",
                               fix: fix, details: ["iacas": 0])
        }
        let expired = trust.anchors.filter { !($0.notAfter.map { $0 > now } ?? true) }
        let soon = trust.anchors.filter { ($0.notAfter.map { $0 > now && $0 < now + 30 * 86_400 } ?? false) }
        let tests = trust.anchors.filter { $0.subject.contains("TEST ONLY") }
        var problems: [String] = []
        if !expired.isEmpty { problems.append("\(expired.count) expired (\(some(expired.map(\.subject))))") }
        if !soon.isEmpty { problems.append("\(soon.count) expire within 30 days (\(some(soon.map(\.subject))))") }
        if !tests.isEmpty { problems.append("\(tests.count) TEST IACA\(tests.count == 1 ? "" : "s") (\(some(tests.map(\.subject)))): mdocs signed with a published test key verify as valid") }
        let countries = Set(trust.anchors.compactMap { $0.country?.uppercased() }).sorted()
        let finding = "\(trust.anchors.count) IACA\(trust.anchors.count == 1 ? "" : "s") from \(countries.count) issuing countr\(countries.count == 1 ? "y" : "ies") (\(countries.joined(separator: ", ")))"
        return DoctorCheck(name: "mdoc-issuers", status: problems.isEmpty ? .ok : .warning,
                           finding: problems.isEmpty ? finding : finding + "; " + problems.joined(separator: "; "),
                           fix: problems.isEmpty ? "" : "replace expired IACAs (trust import --iaca); never trust a test IACA on a kiosk that reads real documents",
                           details: ["iacas": trust.anchors.count, "countries": countries])
    }
}

extension DoctorChecks {
    /// BlueZ and a powered adapter: phone wallets (Apple, Google, Samsung) engage over NFC and
    /// transfer the mdoc over BLE alone. Without them mdoc.read reads NFC holders only: a warning.
    package static func bluetooth(configuration: BlueZMainConfiguration = .current()) async -> DoctorCheck {
        let consequence = "mdoc.read reads NFC holders only; phone wallets that transfer over BLE alone cannot be read"
        let adapters: [BlueZAdapter]
        do {
            adapters = try await BlueZ.adaptersOffPool()
        } catch {
            return DoctorCheck(name: "bluetooth", status: .warning, finding: "\(error.reason): \(consequence)", fix: error.fix,
                               details: ["code": error.code.rawValue, "adapters": [String]()])
        }
        let listed = adapters.map { "\($0.name) \($0.address)\($0.powered ? "" : " (off)")" }
        switch MdocBluetoothAvailability.judge(adapters) {
        case .available(let adapter):
            let finding = "BlueZ answers; adapter \(adapter) is powered (\(listed.joined(separator: ", ")))"
            if configuration.enhancedATT {
                let source = configuration.channels == nil ? "BlueZ's default, \(configuration.path ?? BlueZMainConfiguration.defaultPath) does not set it"
                    : "set in \(configuration.path ?? BlueZMainConfiguration.defaultPath)"
                return DoctorCheck(name: "bluetooth", status: .warning,
                                   finding: finding + "; but Enhanced ATT is on ([GATT] Channels = \(configuration.effectiveChannels), \(source)): "
                                       + "a phone's mdoc may arrive out of order over BLE and not decrypt",
                                   fix: BlueZMainConfiguration.fix,
                                   details: ["code": "ENHANCED_ATT", "adapters": listed, "attChannels": configuration.effectiveChannels])
            }
            return DoctorCheck(name: "bluetooth", status: .ok, finding: finding + "; one ATT channel (no Enhanced ATT)",
                               fix: "", details: ["adapters": listed, "attChannels": configuration.effectiveChannels])
        case .unavailable(let reason):
            let parts = reason.components(separatedBy: " — ")
            return DoctorCheck(name: "bluetooth", status: .warning, finding: "\(parts[0]): \(consequence)", fix: parts.dropFirst().joined(separator: " — "),
                               details: ["code": adapters.isEmpty ? "NO_ADAPTER" : "NOT_POWERED", "adapters": listed])
        }
    }
}
