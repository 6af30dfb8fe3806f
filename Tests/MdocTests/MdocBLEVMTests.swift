import Foundation
import TestSupport
import Testing

/// mdoc over BLE on Linux's real Bluetooth stack without a radio (issue 52): Debian's kernel in
/// qemu with `hci_vhci`, BlueZ's `btvirt` linking two virtual LE controllers, the real
/// `bluetoothd` and a system D-Bus, pcscd with vpcd — all the host's own installed programs,
/// run in a chroot of the host's root shared read-only with the guest
/// (`scripts/vivid-vm.sh --host-root`). An independent holder (mdoc_holder.py with
/// bluez_peripheral_holder.py: NFC engagement in vpcd, then a GATT application and an LE
/// advertisement registered with bluetoothd on hci0) is read by `gbgbridge mdoc read --transport
/// auto`, which looks for it on every powered adapter. Hostile holders end in typed errors inside
/// the read's deadline, and bluetoothd keeps running.
///
/// Skipped, saying why, where qemu, the kernel package or BlueZ's programs are missing — unless
/// GBGBRIDGE_REQUIRE_VM=1 (scripts/test.sh sets it), where that is a failure.
@Suite("mdoc over BLE against the real bluetoothd, two virtual controllers in a VM", .serialized)
struct MdocBLEVMTests {
    static let root = TestFixtures.packageRoot
    static let script = root.appendingPathComponent("scripts/vivid-vm.sh").path
    static let scenario = root.appendingPathComponent("Tests/MdocTests/Independent/ble_vm_scenario.sh").path
    static let required = ProcessInfo.processInfo.environment["GBGBRIDGE_REQUIRE_VM"] == "1"
    static let modules = "bluetooth hci_vhci algif_hash algif_skcipher cmac ecb"
    /// Channels = 1 (the kiosk set-up Docs/mdoc.md asks for), then BlueZ's default (Enhanced ATT).
    /// Each case boots its own VM: in one run of btvirt, a holder after another (a flood, another
    /// process's advertisement, a refused Ident) was sometimes neither seen nor seeing for 30 s —
    /// an artefact of the emulated radio we could not pin down in the time we had (Docs/mdoc.md).
    static let groups = ["one:good:negotiated", "one:good:static", "one:wrong-ident:static", "one:disconnect:static", "one:endless:static",
                         "one:central-good:negotiated", "one:central-good:static", "one:central-never-start:static",
                         "one:emulated:static", "one:emulated:negotiated", "default:good:negotiated", "one:good:qr", "one:emulated:qr", "one:good:qr-camera",
                         "one:l2cap:negotiated", "one:l2cap-huge:static", "one:l2cap-dead:static", "one:emulated-l2cap:static"].map { [$0] }
    static var cases: [String] { groups.flatMap { $0 } }

    static func unavailable() async -> String? {
        guard GBGBridgeBinary.isBuilt else { return "no gbgbridge at \(GBGBridgeBinary.path) (swift build)" }
        for program in ["/usr/bin/btvirt", "/usr/libexec/bluetooth/bluetoothd", "/usr/bin/btmgmt", "/usr/bin/dbus-daemon", "/usr/sbin/pcscd", "/usr/bin/qrencode"]
            where !FileManager.default.isExecutableFile(atPath: program) {
            return "\(program) is not installed (scripts/install-deps.sh: bluez, bluez-test-tools, dbus, pcscd, qrencode)"
        }
        guard let check = try? await runCommand("/bin/bash", [script, "check"], timeout: .seconds(60)) else { return "cannot run \(script)" }
        return check.status == 0 ? nil : (check.standardOutput + check.standardError).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("an independent BlueZ peripheral holder engaged over NFC is read over BLE; hostile ones end typed; bluetoothd lives on")
    func readOverRealBlueZ() async throws {
        if let reason = await Self.unavailable() {
            if Self.required { Issue.record("the BLE VM must run here (GBGBRIDGE_REQUIRE_VM=1) but: \(reason)") }
            print("◇ BLE VM tests skipped: \(reason)")
            return
        }
        let share = FileManager.default.temporaryDirectory.appendingPathComponent("ble-vm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: share) }
        func text(_ name: String) -> String {
            for index in Self.groups.indices {
                if let found = try? String(contentsOf: share.appendingPathComponent("g\(index)/\(name)"), encoding: .utf8) { return found }
            }
            return ""
        }
        for (index, group) in Self.groups.enumerated() {
            let directory = share.appendingPathComponent("g\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            // The guest's init runs this with busybox; the host's programs then run chrooted at /host.
            let outer = """
                H=/host
                [ -d $H/usr ] || { echo "the host's root is not shared"; exit 20; }
                mount -t proc proc $H/proc && mount -t sysfs sys $H/sys && mount -t devtmpfs dev $H/dev || exit 21
                # A checkout under /tmp (the scenario, the built gbgbridge, the holders) would vanish under the
                # tmpfs: set the host's /tmp aside and bind the package back into the new one.
                P=\(Self.root.standardizedFileURL.path)
                case $P in /tmp/*) mkdir -p /hosttmp && mount --bind $H/tmp /hosttmp || exit 24 ;; esac
                mount -t tmpfs run $H/run && mount -t tmpfs tmp $H/tmp && mount -t tmpfs lib $H/var/lib/bluetooth || exit 22
                case $P in /tmp/*) mkdir -p $H$P && mount --bind /hosttmp${P#/tmp} $H$P || exit 25 ;; esac
                mkdir -p $H/tmp/share && mount --bind /share $H/tmp/share || exit 23
                chroot $H /bin/sh \(Self.scenario) \(GBGBridgeBinary.path) /tmp/share/out \(group.joined(separator: " "))

                """
            try outer.write(to: directory.appendingPathComponent("scenario.sh"), atomically: true, encoding: .utf8)
            let vm = try await runCommand("/bin/bash", [Self.script, "run", "--share", directory.path, "--host-root", "--modules", Self.modules, "--timeout", "600"],
                                          timeout: .seconds(660))
            let log = { (name: String) in (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "" }
            try #require(vm.status == 0, "the VM for \(group): \(vm.standardError.suffix(600)); scenario: \(log("scenario.log").suffix(800)); console: \(log("console.log").suffix(600))")
        }
        func outcome(_ name: String) -> (status: Int, report: [String: Any], error: String, seconds: Double, holder: String) {
            let status = Int(text("out/\(name).status").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            let report = (try? JSONSerialization.jsonObject(with: Data(text("out/\(name).json").utf8))) as? [String: Any] ?? [:]
            let seconds = Double(text("out/\(name).seconds").trimmingCharacters(in: .whitespacesAndNewlines)) ?? .infinity
            return (status, report, text("out/\(name).err"), seconds, text("out/\(name).holder"))
        }
        /// A read that verified over BLE; its transport record, for what each case adds.
        @discardableResult
        func expectVerifiedOverBLE(_ read: (status: Int, report: [String: Any], error: String, seconds: Double, holder: String),
                                   _ label: String) -> [String: Any] {
            #expect(read.status == 0, "\(label): \(read.error) / holder: \(read.holder.suffix(800))")
            #expect(read.report["issuer"] as? String == "valid" && read.report["device"] as? String == "valid", "\(label): \(read.report)")
            let transport = read.report["transport"] as? [String: Any] ?? [:]
            #expect(transport["carrier"] as? String == "ble", "\(label): \(transport)")
            return transport
        }
        for name in Self.cases.map({ $0.replacingOccurrences(of: ":", with: "-") }) {
            #expect(text("out/bluetoothd-alive-\(name)").hasPrefix("yes"), "bluetoothd died during \(name): \(text("out/bluetoothd.log").suffix(600))")
        }

        for handover in ["negotiated", "static"] {
            let read = outcome("one-good-\(handover)")
            let transport = expectVerifiedOverBLE(read, handover)
            #expect(transport["handover"] as? String == handover)
            #expect(Set((transport["timings"] as? [String: Double] ?? [:]).keys) == ["engagement", "scan", "connect", "transfer"], "\(transport)")
            let elements = (read.report["elements"] as? [String: Any])?["org.iso.18013.5.1"] as? [String: Any]
            #expect(elements?["family_name"] as? String == "Independent")
            // The holder saw the session start and end (State 0x01, then 0x02).
            #expect(read.holder.contains("State 01") && read.holder.contains("State 02"), "\(read.holder)")
            // A holder that offers no L2CAP channel is read over GATT, and the report says so.
            let link = transport["ble"] as? [String: Any] ?? [:]
            #expect(link["mode"] as? String == "peripheral-server" && link["channel"] as? String == "gatt" && (link["mtu"] as? Int ?? 0) >= 23
                    && link["psm"] == nil && link["l2capNotUsed"] == nil, "\(transport)")
        }

        // L2CAP (the holder's L2CAP characteristic names the PSM of an LE credit-based channel):
        // the messages length-led over the channel, no State write, SessionData status 20 to end.
        let l2cap = outcome("one-l2cap-negotiated")
        let l2capLink = expectVerifiedOverBLE(l2cap, "L2CAP")["ble"] as? [String: Any] ?? [:]
        #expect(l2capLink["channel"] as? String == "l2cap" && (0x80...0xFF).contains(l2capLink["psm"] as? Int ?? 0), "\(l2capLink)")
        #expect(l2cap.holder.contains("L2CAP channel opened") && l2cap.holder.contains("L2CAP message of 9 bytes")
                && l2cap.holder.contains("L2CAP channel closed by the reader") && !l2cap.holder.contains("State 01"), "\(l2cap.holder)")
        // An answer announcing 2 GiB over the channel: refused when its length arrives.
        let huge = outcome("one-l2cap-huge-static")
        #expect(huge.status != 0 && huge.error.contains("over L2CAP"), "\(huge.error)")
        #expect((huge.report["error"] as? [String: Any])?["code"] as? String == "MDOC_LIMIT_EXCEEDED", "\(huge.report)")
        #expect(huge.seconds < 75, "\(huge.seconds) s")
        // A PSM nothing listens on: the channel is refused, the session runs over GATT, the report says why.
        let dead = outcome("one-l2cap-dead-static")
        let deadLink = expectVerifiedOverBLE(dead, "L2CAP refused")["ble"] as? [String: Any] ?? [:]
        #expect(deadLink["channel"] as? String == "gatt" && (deadLink["l2capNotUsed"] as? String ?? "").contains("PSM"), "\(deadLink)")
        #expect(dead.holder.contains("L2CAP PSM read") && dead.holder.contains("State 01"), "\(dead.holder)")
        // The project's own test wallet offering L2CAP (emulate --l2cap).
        let emulatedL2CAP = outcome("one-emulated-l2cap-static")
        #expect((expectVerifiedOverBLE(emulatedL2CAP, "emulated, L2CAP")["ble"] as? [String: Any])?["channel"] as? String == "l2cap")
        #expect(emulatedL2CAP.holder.contains("BLE: the reader opened the L2CAP channel")
                && emulatedL2CAP.holder.contains("BLE: the reader ended the session"), "\(emulatedL2CAP.holder)")

        let wrongIdent = outcome("one-wrong-ident-static")
        #expect(wrongIdent.status != 0 && wrongIdent.error.contains("Ident"), "\(wrongIdent.error) / \(wrongIdent.holder.suffix(400))")
        #expect((wrongIdent.report["error"] as? [String: Any])?["code"] as? String == "MDOC_BLE", "\(wrongIdent.report)")
        let dropped = outcome("one-disconnect-static")
        #expect(dropped.status != 0 && dropped.error.contains("BLE link"), "\(dropped.error)")
        let endless = outcome("one-endless-static")
        #expect(endless.status != 0, "\(endless.report)")
        let endlessCode = (endless.report["error"] as? [String: Any])?["code"] as? String
        #expect(["MDOC_TIMEOUT", "MDOC_BLE", "MDOC_MALFORMED"].contains(endlessCode ?? ""), "\(endless.report)")
        // Within the read's 30 s deadline (and the slack of a CLI starting under emulation).
        #expect(endless.seconds < 75, "\(endless.seconds) s")

        // mdoc central client mode: the kiosk advertises on every adapter and serves GATT; the
        // holder scans from hci0, checks the kiosk's Ident, starts, answers in writes.
        for handover in ["negotiated", "static"] {
            let read = outcome("one-central-good-\(handover)")
            let transport = expectVerifiedOverBLE(read, "central, \(handover)")
            #expect(Set((transport["timings"] as? [String: Double] ?? [:]).keys) == ["engagement", "advertise", "connect", "transfer"], "\(transport)")
            #expect(read.holder.contains("the reader's Ident holds") && read.holder.contains("State 0x02"), "\(read.holder)")
        }
        let neverStarts = outcome("one-central-never-start-static")
        #expect(neverStarts.status != 0 && neverStarts.error.contains("did not start the BLE session"), "\(neverStarts.error) / \(neverStarts.holder.suffix(400))")
        #expect((neverStarts.report["error"] as? [String: Any])?["code"] as? String == "MDOC_TIMEOUT", "\(neverStarts.report)")

        // The project's own test wallet over BLE (emulate --transport ble, on hci0), read from hci1.
        for handover in ["static", "negotiated"] {
            let read = outcome("one-emulated-\(handover)")
            expectVerifiedOverBLE(read, "emulated, \(handover)")
            #expect(read.holder.contains("BLE: the reader started the session") && read.holder.contains("BLE: the reader ended the session"), "\(read.holder)")
        }

        // QR engagement (no NFC at all): the holder's code drawn by qrencode, found by ZBar in the
        // confined decoder, the session over BLE with a null handover in the transcript.
        let qr = outcome("one-good-qr")
        let qrTransport = expectVerifiedOverBLE(qr, "QR engagement")
        #expect(qrTransport["handover"] as? String == "qr", "\(qrTransport)")
        #expect(qr.holder.contains("State 01") && qr.holder.contains("State 02"), "\(qr.holder)")
        // The project's own test wallet engaged by QR (emulate --handover qr): read, and a new code after the session.
        let emulatedQR = outcome("one-emulated-qr")
        #expect(expectVerifiedOverBLE(emulatedQR, "emulated, QR")["handover"] as? String == "qr")
        #expect(emulatedQR.holder.components(separatedBy: "QR engagement: mdoc:").count == 3, "\(emulatedQR.holder)")
        // The code in front of a camera (vivid's HDMI loop): frames to the confined decoder until one shows it.
        let camera = outcome("one-good-qr-camera")
        #expect(expectVerifiedOverBLE(camera, "QR from the camera")["handover"] as? String == "qr", "\(camera.error)")

        // BlueZ's default configuration (Enhanced ATT, 3 channels): notifications may arrive out of
        // order. Either the read holds, or its error says what to change.
        let enhanced = outcome("default-good-negotiated")
        #expect(enhanced.status == 0 || enhanced.error.contains("Enhanced ATT"), "\(enhanced.error)")
    }
}
