import Foundation
import GBGBridgeServer
import GBGBridgeStubs
import MRTD
import MRTDCrypto
import SmartCard

/// One finding of `gbgbridge doctor`: what was looked at, how it stands, what to do about it.
package struct DoctorCheck: Sendable {
    package enum Status: String, Sendable { case ok, warning, error }

    package var name: String
    package var status: Status
    package var finding: String
    package var fix: String
    /// Facts behind the finding (reader names, counts, dates) for `--json`.
    package var details: [String: any Sendable] = [:]

    package var json: [String: Any] {
        var object: [String: Any] = ["name": name, "status": status.rawValue, "finding": finding, "fix": fix]
        if !details.isEmpty { object["details"] = details }
        return object
    }
}

/// The checks `gbgbridge doctor` runs, each on its own: a failing one never stops the others.
package enum DoctorChecks {
    package static let polkitFix = "Allow the service user in polkit: /etc/polkit-1/rules.d/50-gbgbridge-pcscd.rules granting "
        + "org.debian.pcsc-lite.access_pcsc and org.debian.pcsc-lite.access_card to user gbgbridge (or run as a user in an allowed group)"

    /// pcscd reachable and willing to talk to this user; then its readers and cards.
    package static func pcsc() async -> [DoctorCheck] {
        let backend = PCSCBackend()
        let readers: [ReaderInfo]
        let unknown = [DoctorCheck(name: "readers", status: .warning, finding: "not known: pcscd cannot be asked", fix: "Fix pcscd first"),
                       DoctorCheck(name: "card", status: .warning, finding: "not known: pcscd cannot be asked", fix: "Fix pcscd first")]
        do {
            readers = try await backend.readers()
        } catch let error as SmartCardError {
            let reason = error.reason
            let fix: String
            if error.code == .permissionDenied {
                fix = polkitFix
            } else if error.code == .serviceUnavailable {
                fix = "Start pcscd: sudo systemctl enable --now pcscd.socket (package pcscd; libccid for USB readers)"
            } else {
                fix = "Check pcscd: sudo systemctl status pcscd; journalctl -u pcscd"
            }
            return [DoctorCheck(name: "pcscd", status: .error, finding: "pcscd cannot be used: \(reason)", fix: fix)] + unknown
        } catch {
            return [DoctorCheck(name: "pcscd", status: .error, finding: "pcscd cannot be used: \(error)",
                                fix: "Check pcscd: sudo systemctl status pcscd")] + unknown
        }
        var checks = [DoctorCheck(name: "pcscd", status: .ok, finding: "pcscd answers and lets this user in", fix: "")]
        if readers.isEmpty {
            checks.append(DoctorCheck(name: "readers", status: .warning, finding: "no smart-card reader is connected",
                                      fix: "Connect the NFC reader; check lsusb and that libccid (or the reader's IFD driver) is installed; "
                                        + "a PN53x reader seen by libnfc only: run doctor with --libnfc-device"))
            checks.append(DoctorCheck(name: "card", status: .ok, finding: "no reader, so no card", fix: ""))
            return checks
        }
        var readerDetails: [[String: any Sendable]] = []
        var cards: [String] = []
        var cardDetails: [[String: any Sendable]] = []
        var shortOnly: [String] = []
        for reader in readers {
            var entry: [String: any Sendable] = ["name": reader.name, "cardPresent": reader.cardPresent]
            // PC/SC tells a reader's limits through a handle: a direct one needs no card.
            var capabilities = await backend.readerCapabilities(reader: reader.name)
            if capabilities == nil || capabilities == ReaderCapabilities(), reader.cardPresent,
               let connection = try? await backend.connect(reader: reader.name) {
                capabilities = await connection.capabilities()
                await connection.disconnect()
            }
            if let value = capabilities?.maxCommandLength { entry["maxCommandLength"] = value }
            if let value = capabilities?.maxAPDUDataSize { entry["maxAPDUDataSize"] = value }
            entry["extendedLength"] = capabilities?.extendedLength.map { $0 ? "yes" : "no" } ?? "unknown"
            readerDetails.append(entry)
            if capabilities?.extendedLength == false { shortOnly.append(reader.name) }
            if let atr = reader.atr, reader.cardPresent {
                cards.append("\(reader.name): \(cardKind(atr)) (ATR \(hex(atr, separator: " ")))")
                cardDetails.append(["reader": reader.name, "atr": hex(atr), "kind": cardKind(atr)])
            }
        }
        checks.append(DoctorCheck(name: "readers", status: .ok,
                                  finding: "\(readers.count) reader\(readers.count == 1 ? "" : "s"): " + readers.map(\.name).joined(separator: ", ")
                                    + (shortOnly.isEmpty ? "" : "; short APDUs only (reads take more APDUs, still work): " + shortOnly.joined(separator: ", ")),
                                  fix: "", details: ["readers": readerDetails]))
        checks.append(DoctorCheck(name: "card", status: .ok,
                                  finding: cards.isEmpty ? "no card on any reader" : cards.joined(separator: "; "),
                                  fix: "", details: ["cards": cardDetails]))
        return checks
    }

    /// What an ATR says of the card (PC/SC 3.0 part 3: contactless cards get a pseudo-ATR).
    package static func cardKind(_ atr: [UInt8]) -> String {
        guard atr.count >= 4, atr[0] == 0x3B else { return "a contact card or an unknown kind" }
        if atr.count >= 5, atr[1] & 0xF0 == 0x80, atr[2] == 0x80, atr[3] == 0x01 {
            return "an ISO 14443-4 contactless chip (as an eMRTD is)"
        }
        if atr.count >= 15, atr[1] == 0x8F, atr[2] == 0x80, atr[3] == 0x01 {
            return "a contactless storage card (not an eMRTD)"
        }
        return "a contact card or an unknown kind"
    }

    /// The kernel's NFC drivers claim PN53x readers before pcscd (libccid) or libnfc can.
    package static func kernelModules(modules: String? = try? String(contentsOfFile: "/proc/modules", encoding: .utf8)) -> DoctorCheck {
        guard let modules else {
            return DoctorCheck(name: "kernel-modules", status: .ok, finding: "/proc/modules is not readable here", fix: "")
        }
        let loaded = Set(modules.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
        let claiming = ["pn533_usb", "pn533", "nfc"].filter(loaded.contains)
        guard !claiming.isEmpty else {
            return DoctorCheck(name: "kernel-modules", status: .ok, finding: "no kernel NFC driver (pn533, nfc) is loaded", fix: "")
        }
        return DoctorCheck(name: "kernel-modules", status: .warning,
                           finding: "kernel NFC drivers loaded: \(claiming.joined(separator: ", ")); they take PN53x/ACR122U readers away from pcscd and libnfc",
                           fix: "printf 'blacklist pn533_usb\\nblacklist pn533\\nblacklist nfc\\n' | sudo tee /etc/modprobe.d/gbgbridge-blacklist-pn533.conf; "
                             + "sudo modprobe -r pn533_usb pn533 nfc",
                           details: ["loaded": claiming])
    }

    /// libnfc devices, only when one is configured (libnfc is not started otherwise).
    package static func libnfc(devices: [String]) async -> DoctorCheck {
        guard !devices.isEmpty else {
            return DoctorCheck(name: "libnfc", status: .ok, finding: "no libnfc device configured (libnfc is not used)", fix: "")
        }
        do {
            let readers = try await LibNFCBackend(connectionStrings: devices, discover: false).readers()
            let found = readers.map(\.name)
            guard !found.isEmpty else {
                return DoctorCheck(name: "libnfc", status: .error, finding: "libnfc opens none of: \(devices.joined(separator: ", "))",
                                   fix: "Check the connection string, the device node's permissions and that no kernel driver (pn533) holds it")
            }
            return DoctorCheck(name: "libnfc", status: .ok, finding: "libnfc devices: \(found.joined(separator: ", "))", fix: "")
        } catch {
            return DoctorCheck(name: "libnfc", status: .error, finding: "libnfc: \(error)",
                               fix: "Check /etc/nfc/libnfc.conf, the connection string and the device's permissions")
        }
    }

    /// serve's configuration file: present, and every key known and well typed.
    package static func configuration(path: String?) -> (DoctorCheck, ServeSettings?) {
        do {
            guard let (settings, file) = try ServeSettings.load(path: path) else {
                return (DoctorCheck(name: "config", status: .ok, finding: "no \(ServeSettings.defaultPath): serve runs on its options alone", fix: ""), nil)
            }
            var set: [String] = []
            if let port = settings.port { set.append("port \(port)") }
            if let origins = settings.allowOrigin { set.append("\(origins.count) allowed origin\(origins.count == 1 ? "" : "s")") }
            if settings.diagnostics == true { set.append("diagnostics on") }
            if let listen = settings.metricsListen {
                guard ListenAddress(argument: listen) != nil else {
                    return (DoctorCheck(name: "config", status: .error, finding: "\(file): 'metrics-listen' is not HOST:PORT",
                                        fix: "Set metrics-listen to an address and port, e.g. 0.0.0.0:9450"), settings)
                }
                set.append("metrics on \(listen)")
            }
            if let inspect = settings.inspect {
                guard let address = KioskInspectAddress(argument: inspect) else {
                    return (DoctorCheck(name: "config", status: .error, finding: "\(file): 'inspect' is not PORT or HOST:PORT",
                                        fix: "Set inspect to a port, e.g. 9222, or remove it"), settings)
                }
                // The DevTools protocol has no authentication: the port is the kiosk.
                return (DoctorCheck(name: "config", status: .warning,
                                    finding: "\(file): inspect is on: Chrome DevTools can attach to the kiosk's page on \(address)"
                                        + (address.isLoopback ? "" : " (not loopback: anyone on that network controls the kiosk)"),
                                    fix: "Remove 'inspect' from \(file) once the journey is debugged (reach a loopback port through an SSH tunnel)",
                                    details: ["file": file, "inspect": address.description]), settings)
            }
            return (DoctorCheck(name: "config", status: .ok, finding: "\(file) is valid" + (set.isEmpty ? "" : ": " + set.joined(separator: ", ")),
                                fix: "", details: ["file": file]), settings)
        } catch {
            return (DoctorCheck(name: "config", status: .error, finding: error.description,
                                fix: "Correct the file: keys are serve's long options without dashes (gbgbridge serve --help)"), nil)
        }
    }

    /// The trust store: anchors by country, the earliest expiry, CRLs past their next update.
    package static func trustStore(paths: [String], now: Double = Date().timeIntervalSince1970) -> DoctorCheck {
        let (store, problems) = loadTrust(paths)
        return trustHealth(store, paths: paths, problems: problems, now: now)
    }

    /// Every path that loads, and why the others did not.
    package static func loadTrust(_ paths: [String]) -> (store: TrustStore, problems: [String]) {
        var store = TrustStore()
        var problems: [String] = []
        for path in paths {
            do {
                try store.add(path: URL(fileURLWithPath: path))
            } catch {
                problems.append("\(path): \(error.reason)")
            }
        }
        return (store, problems)
    }

    /// How a loaded trust store stands: what `doctor`, `trust status` and `/diagnostics.json` say of it.
    package static func trustHealth(_ store: TrustStore, paths: [String], problems: [String] = [],
                            now: Double = Date().timeIntervalSince1970) -> DoctorCheck {
        guard !paths.isEmpty || !store.certificates.isEmpty else {
            return DoctorCheck(name: "trust-store", status: .warning, finding: "no trust store given: every read will be 'untrusted'",
                               fix: "Put CSCA certificates, master lists and CRLs in /etc/gbgbridge/trust (or pass --trust PATH)")
        }
        var problems = problems
        for skipped in store.skipped { problems.append("\(skipped.path): \(skipped.reason)") }
        let anchors = store.certificates
        guard !anchors.isEmpty else {
            return DoctorCheck(name: "trust-store", status: .error,
                               finding: "no CSCA certificate in \(Self.some(paths, separator: ", "))" + (problems.isEmpty ? "" : " (\(Self.some(problems)))"),
                               fix: "Add CSCA certificates or a master list: gbgbridge verify --trust accepts PEM/DER certificates, .ml master lists and CRLs")
        }
        let byCountry = Dictionary(grouping: anchors) { $0.country ?? "?" }.mapValues(\.count)
        let expired = anchors.filter { ($0.notAfter ?? 0) < now }
        let valid = anchors.filter { ($0.notAfter ?? 0) >= now }
        let earliest = valid.compactMap(\.notAfter).min()
        let staleCRLs = store.revocationLists.filter { ($0.nextUpdate ?? .infinity) < now }
        var details: [String: any Sendable] = [
            "anchors": anchors.count, "countries": byCountry, "expiredAnchors": expired.count,
            "crls": store.revocationLists.count, "staleCRLs": Array(staleCRLs.map(\.issuer).prefix(Self.listedAtMost)),
        ]
        if let earliest { details["earliestExpiry"] = iso8601(earliest) }
        var status = DoctorCheck.Status.ok
        var finding = "\(anchors.count) CSCA certificate\(anchors.count == 1 ? "" : "s") from \(byCountry.count) "
            + "countr\(byCountry.count == 1 ? "y" : "ies"), \(store.revocationLists.count) CRL\(store.revocationLists.count == 1 ? "" : "s")"
        var fixes: [String] = []
        if let earliest {
            finding += "; earliest expiry \(iso8601(earliest))"
            if earliest - now < 90 * 86_400 {
                status = .warning
                fixes.append("a CSCA expires within 90 days: import the issuing state's newer CSCA or a fresh master list (gbgbridge trust import)")
            }
        }
        if !expired.isEmpty {
            status = .warning
            finding += "; \(expired.count) expired"
            fixes.append("expired CSCAs still verify documents they signed while valid, but a store of only expired ones needs a fresh master list")
        }
        if valid.isEmpty { status = .error }
        if !staleCRLs.isEmpty {
            // Past its nextUpdate a revoked document signer can no longer be told from a good one.
            status = .error
            finding += "; \(staleCRLs.count) CRL\(staleCRLs.count == 1 ? "" : "s") past nextUpdate (" + Self.some(staleCRLs.map(\.issuer)) + ")"
            fixes.append("fetch the current CRLs from the issuing states (gbgbridge trust refresh, or the ICAO PKD and trust import) and replace the stale ones")
        }
        let dueSoon = store.revocationLists.filter { ($0.nextUpdate ?? .infinity) >= now && ($0.nextUpdate ?? .infinity) < now + 7 * 86_400 }
        if !dueSoon.isEmpty {
            status = status == .error ? .error : .warning
            finding += "; \(dueSoon.count) CRL\(dueSoon.count == 1 ? "" : "s") due within 7 days ("
                + Self.some(dueSoon.map { "\($0.issuer) \(iso8601($0.nextUpdate ?? now))" }) + ")"
            fixes.append("make sure gbgbridge trust refresh runs (systemctl enable --now gbgbridge-trust-refresh.timer) and reaches the CRLs' sources")
        }
        details["crlNextUpdate"] = Array(store.revocationLists.compactMap { crl in crl.nextUpdate.map { ["issuer": crl.issuer, "nextUpdate": iso8601($0)] } }
            .prefix(Self.listedAtMost * 10))
        // The last `trust refresh` of each path that has been refreshed.
        for path in paths {
            let (state, stateProblem) = TrustRefresh.State.loadReporting(store: path)
            if let stateProblem {
                // Never silently empty (issue 49): what the last refreshes did is not known.
                status = status == .error ? .error : .warning
                finding += "; the trust refresh state of \(path) cannot be read (\(stateProblem))"
                details["refreshStateProblem"] = stateProblem
                fixes.append("the next gbgbridge trust refresh writes a new state; until then its last success is not known")
            }
            guard let run = state.lastRun else { continue }
            details["lastRefresh"] = iso8601(run)
            if let success = state.lastSuccess { details["lastRefreshSuccess"] = iso8601(success) }
            if (state.lastSuccess ?? 0) < run {
                status = status == .error ? .error : .warning
                finding += "; the last trust refresh of \(path) (\(iso8601(run))) had failing sources"
                fixes.append("gbgbridge trust refresh --json says which sources failed and why")
            } else {
                finding += "; last refreshed \(iso8601(run))"
            }
        }
        let expiredSigners = store.masterListSigners.filter { !$0.signer.isValid(at: now) }
        details["masterListSigners"] = store.masterListSigners.count
        if !expiredSigners.isEmpty {
            status = status == .error ? .error : .warning
            finding += "; master list signed by an expired signer (\(Self.some(expiredSigners.map { URL(fileURLWithPath: $0.path).lastPathComponent }, separator: ", ")))"
            fixes.append("download the current ICAO or national master list and import it (gbgbridge trust import)")
        }
        if !problems.isEmpty {
            status = status == .error ? .error : .warning
            finding += "; \(problems.count) unreadable: \(Self.some(problems))"
            details["unreadable"] = problems.count
            fixes.append("remove or replace the files that cannot be read")
        }
        let testAnchors = anchors.filter(isTestAnchor)
        details["testAnchors"] = testAnchors.count
        if !testAnchors.isEmpty {
            status = status == .error ? .error : .warning
            finding += "; TEST anchors trusted (\(Self.some(testAnchors.map(\.subject)))): a document signed with the kit's published test key would verify as valid"
            fixes.append("remove the test CSCA (/usr/share/gbgbridge/pki, or Utopia's) from the trust paths of a kiosk that reads real documents")
        }
        return DoctorCheck(name: "trust-store", status: status, finding: finding, fix: fixes.joined(separator: "; "), details: details)
    }

    /// How many names a finding lists before it only counts the rest: a trust directory of
    /// 100,000 junk files made one 7.5 MB line and a 7.5 MB /diagnostics.json (issue 42).
    package static let listedAtMost = 5

    /// The first `listedAtMost` of `items` (each clipped to 200 characters), then how many more.
    package static func some(_ items: [String], separator: String = "; ") -> String {
        let shown = items.prefix(listedAtMost).map { $0.count > 200 ? String($0.prefix(199)) + "…" : $0 }
        return shown.joined(separator: separator) + (items.count > listedAtMost ? "\(separator)and \(items.count - listedAtMost) more" : "")
    }

    /// A CSCA for tests only: the kit's (whose private key is installed in /usr/share/gbgbridge/pki),
    /// one marked as a test, or one of ICAO's fictional Utopia (UT), whose specimen documents are
    /// public.
    package static func isTestAnchor(_ certificate: Certificate) -> Bool {
        let subject = certificate.subject.uppercased()
        return subject.contains("GBGBRIDGE TEST PKI") || subject.contains("NOT FOR PRODUCTION") || certificate.country?.uppercased() == "UT"
    }

    package static func iso8601(_ seconds: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds))
    }

    /// Chromium, which `serve --kiosk` launches.
    package static func chromium(path: String = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") -> DoctorCheck {
        let names = ["chromium", "chromium-browser", "google-chrome"]
        for directory in path.split(separator: ":") {
            for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return DoctorCheck(name: "chromium", status: .ok, finding: "\(directory)/\(name) (for serve --kiosk)", fix: "")
            }
        }
        return DoctorCheck(name: "chromium", status: .warning, finding: "no Chromium on PATH: serve --kiosk cannot start the kiosk browser",
                           fix: "sudo apt install chromium (only needed for --kiosk)")
    }

    /// Whether `serve` could listen on host:port now.
    package static func port(host: String, port: Int) -> DoctorCheck {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            return DoctorCheck(name: "port", status: .warning, finding: "cannot open a socket to test \(host):\(port)", fix: "")
        }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            return DoctorCheck(name: "port", status: .error, finding: "\(host) is not an IPv4 address", fix: "Use --host 127.0.0.1")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            return DoctorCheck(name: "port", status: .error, finding: "\(host):\(port) cannot be used by serve: \(reason)",
                               fix: "Stop what listens there (ss -ltnp 'sport = :\(port)') or give serve another --port")
        }
        return DoctorCheck(name: "port", status: .ok, finding: "\(host):\(port) is free for serve", fix: "")
    }
}
