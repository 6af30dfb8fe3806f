import Foundation

/// `gbgbridge trust refresh`'s sources as the configuration file names them (`trust-refresh:`):
/// what `ServeSettings` parses. The refresh itself (fetching, verifying, swapping the store in)
/// extends this type in GBGBridgeHost (TrustRefresh+Run.swift).
package enum TrustRefresh {
    /// One source: a URL and what it serves.
    package struct Source: Sendable, Equatable, Codable {
        package enum Kind: String, Sendable, Codable, CaseIterable {
            case masterList = "master-list"
            case crl
            case csca
            /// A VICAL (ISO 18013-5 Annex C): mdoc IACAs for the store's iaca/, verified through an anchor.
            case vical
        }
        package var url: String
        package var kind: Kind
        /// SHA-256 fingerprints of CSCAs its country publishes (`trust import --anchor-sha256`): for
        /// a master list, those inside it that may vouch for its signer; for a CSCA source, the
        /// self-signed CSCAs it may bring (a self-signature proves nothing by itself).
        package var anchors: [String] = []

        package init(url: String, kind: Kind, anchors: [String] = []) { (self.url, self.kind, self.anchors) = (url, kind, anchors) }

        /// A kind from a URL's file name, for `--source URL` (`.ml`, `.crl`; anything else a CSCA).
        package static func kind(guessedFrom url: String) -> Kind {
            let path = URL(string: url)?.path.lowercased() ?? url.lowercased()
            if path.hasSuffix(".ml") || path.hasSuffix(".ldif") { return .masterList }
            if path.hasSuffix(".crl") { return .crl }
            if path.hasSuffix(".vical") || path.hasSuffix(".cbor") { return .vical }
            return .csca
        }
    }

    /// `trust-refresh:` in the configuration file.
    package struct Settings: Sendable, Equatable {
        package var sources: [Source] = []
        /// Also fetch the CRL URLs named in the stored CSCAs' CRL Distribution Points.
        package var crlDistributionPoints = false
        package init(sources: [Source] = [], crlDistributionPoints: Bool = false) {
            (self.sources, self.crlDistributionPoints) = (sources, crlDistributionPoints)
        }
    }
}
