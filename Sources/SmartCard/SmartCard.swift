// The smart-card layer in one import: the core (APDUs, BER-TLV, the reader/card protocol) and
// both back ends. Code that only needs the core — the eMRTD reader, verification, the emulator —
// imports `SmartCardCore` and links neither pcsc-lite nor libnfc.
@_exported import SmartCardCore
@_exported import SmartCardLibNFC
@_exported import SmartCardPCSC

extension CombinedReaderBackend {
    /// PC/SC, plus libnfc with the given connection strings and its own discovery.
    public static func standard(libnfcDevices: [String] = [], libnfcDiscovery: Bool = true) -> CombinedReaderBackend {
        CombinedReaderBackend([PCSCBackend(), LibNFCBackend(connectionStrings: libnfcDevices, discover: libnfcDiscovery)])
    }
}
