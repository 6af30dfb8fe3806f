import ArgumentParser
import CVCertificates
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `--terminal-certificates PATH… --terminal-key KEY`: an Inspection System's credentials for
/// Terminal Authentication (DG3 fingerprints, DG4 iris), for `read` and `serve`.
package struct TerminalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Terminal Authentication: a CV certificate (.cvcert) or a directory of them — the Inspection System's, its DV's and any CVCA link certificates (the chain is found by CAR/CHR); repeatable.", valueName: "path"))
    package var terminalCertificates: [String] = []

    @Option(name: .long, help: ArgumentHelp("The Inspection System's private key: a PKCS#8 file (DER or PEM), a pkcs11: URI (RFC 7512, e.g. pkcs11:token=kiosk;object=is?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/gbgbridge/pin), or exec:COMMAND (a signer that reads the data to sign on stdin and prints the signature: raw, hex or base64; plain r‖s for ECDSA).", valueName: "KEY"))
    package var terminalKey: String?

    package init() {}

    package func validate() throws {
        if terminalCertificates.isEmpty != (terminalKey == nil) {
            throw ValidationError("--terminal-certificates and --terminal-key go together")
        }
    }

    /// The credentials, or `nil` when none were given; a bad file or key is an error naming it.
    package func load() throws(CVCertificateError) -> TerminalCredentials? {
        guard let terminalKey, !terminalCertificates.isEmpty else { return nil }
        return try TerminalKey.credentials(certificatePaths: terminalCertificates, key: terminalKey)
    }

}

