// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "GBGBridge",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "GBGBridge", targets: ["GBGBridge"]),
        .library(name: "SmartCard", targets: ["SmartCard"]),
        .library(name: "SmartCardCore", targets: ["SmartCardCore"]),
        .library(name: "MRTD", targets: ["MRTD"]),
        .library(name: "MRTDVerification", targets: ["MRTDVerification"]),
        .library(name: "CVCertificates", targets: ["CVCertificates"]),
        .library(name: "MRTDEmulator", targets: ["MRTDEmulator"]),
        .library(name: "GBGBridgeNFC", targets: ["GBGBridgeNFC"]),
        .library(name: "GBGBridgeStubs", targets: ["GBGBridgeStubs"]),
        .library(name: "GBGBridgeServer", targets: ["GBGBridgeServer"]),
        .executable(name: "gbgbridge", targets: ["gbgbridge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.20.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // serve's configuration file (YAML).
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        // API documentation (DocC) for GBGBridge, MRTDVerification and MRTD: scripts/docs.sh.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // Outside text made safe for one log line (LogText); shared by the bridge and the card layers.
        .target(name: "TextSanitizing"),
        // Files read within a ceiling checked before reading (trust lists, keys, evidence, dumps).
        .target(name: "BoundedFiles"),
        // Protocol core: message model, routing, capability slots. No I/O.
        .target(name: "GBGBridge", dependencies: ["TextSanitizing"]),
        // README's "Using the core" example, compiled and tested so it cannot drift from the API.
        .target(name: "GBGBridgeExamples", dependencies: ["GBGBridge"]),
        // Helper programs (pcscd, Chromium) started with posix_spawn in a clean signal state.
        .target(name: "CChildProcessShim"),
        .target(name: "ChildProcesses", dependencies: ["CChildProcessShim"]),
        // pcsc-lite, as Debian's libpcsclite-dev installs it.
        .systemLibrary(
            name: "CPCSCLite",
            providers: [.apt(["libpcsclite-dev"])]
        ),
        // What pcsc-lite only offers as macros (SCARD_PCI_T1 …), as functions.
        .target(name: "CSmartCardShim", dependencies: ["CPCSCLite"]),
        // libnfc (PN53x readers on UART/I²C/SPI/USB), as Debian's libnfc-dev installs it.
        .systemLibrary(name: "CLibNFC", pkgConfig: "libnfc", providers: [.apt(["libnfc-dev"])]),
        .target(name: "CLibNFCShim", dependencies: ["CLibNFC"]),
        // APDUs, BER-TLV, status words and the reader/card protocol: no C library.
        .target(name: "SmartCardCore", dependencies: ["TextSanitizing"]),
        // The PC/SC back end (pcsc-lite).
        .target(name: "SmartCardPCSC", dependencies: ["SmartCardCore", "CPCSCLite", "CSmartCardShim", "TextSanitizing"]),
        // The libnfc back end (PN53x readers).
        .target(name: "SmartCardLibNFC", dependencies: ["SmartCardCore", "CLibNFCShim", "TextSanitizing"]),
        // The core and both back ends in one import.
        .target(name: "SmartCard", dependencies: ["SmartCardCore", "SmartCardPCSC", "SmartCardLibNFC"]),
        // OpenSSL 3, as Debian's libssl-dev installs it.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // Test-only: OpenPACE (libeac, BSI TR-03110 in C) as an independent PACE / CA peer.
        .target(name: "COpenPACEShim", linkerSettings: [.linkedLibrary("eac"), .linkedLibrary("crypto")]),
        // OpenSSL macros and stack helpers, as functions.
        .target(name: "COpenSSLShim", dependencies: ["COpenSSL"]),
        // The cryptography eMRTDs need (3DES/AES, MACs, hashes, keys, CMS, X.509) over OpenSSL.
        .target(name: "MRTDCrypto", dependencies: ["COpenSSL", "COpenSSLShim", "TextSanitizing"]),
        // The eMRTD's data: MRZ and access keys, LDS files, security infos, DER.
        .target(name: "LDS", dependencies: ["SmartCardCore", "MRTDCrypto", "TextSanitizing"]),
        // DG3/DG4: ISO/IEC 19794-4 finger and 19794-6 iris image records in ICAO biometric templates.
        .target(name: "Biometrics", dependencies: ["SmartCardCore"]),
        // Card-verifiable certificates (BSI TR-03110-3): parse, encode, sign, verify, chains.
        .target(name: "CVCertificates", dependencies: ["LDS", "MRTDCrypto", "SmartCardCore", "CPKCS11Shim", "BoundedFiles", "TextSanitizing"]),
        // PKCS#11 signing (dlopen of a module: an HSM, SoftHSM2) over the p11-kit header (libp11-kit-dev).
        .target(name: "CPKCS11Shim", linkerSettings: [.linkedLibrary("dl")]),
        // Verifying what a chip gave: passive authentication, trust store, master lists, CRLs,
        // evidence. Links neither a card back end nor an image codec.
        .target(name: "MRTDVerification", dependencies: ["LDS", "SmartCardCore", "MRTDCrypto", "TextSanitizing", "BoundedFiles"]),
        // Reading eMRTDs: the card session, the protocols (BAC, PACE, CA, AA), the reader.
        .target(name: "MRTD", dependencies: ["MRTDVerification", "LDS", "CVCertificates", "SmartCardCore", "MRTDCrypto", "TextSanitizing",
                                             .product(name: "CoreMetrics", package: "swift-metrics")]),
        // A virtual eMRTD chip: in-process, or as a card in pcscd through vpcd.
        .target(name: "MRTDEmulator", dependencies: ["MRTD", "MRTDCrypto", "SmartCardCore", "CVCertificates", "BoundedFiles", "CHostileImages"]),
        // One read job (wait for the card → connect → read) and its report, shared by nfc.read and
        // `gbgbridge read`; neither the bridge nor Foundation (FoundationEssentials only).
        .target(name: "ChipRead", dependencies: ["MRTD", "Biometrics", "SmartCardCore", "ImageCodecs", "ImageSandbox", "TextSanitizing"]),
        // nfc.read on a BridgeHost.
        .target(name: "GBGBridgeNFC", dependencies: [
            "ChipRead", "GBGBridge", "MRTD", "CVCertificates", "SmartCardCore", .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        // V4L2 device queries (ioctl with a macro request code) for CameraDetector.
        .target(name: "CV4L2Shim"),
        // Stub cameras and the camera detector.
        .target(name: "GBGBridgeStubs", dependencies: ["GBGBridge", "ImageCodecs", "CV4L2Shim", "MRZ"]),
        // Cameras: V4L2 capture (formats, mmap streaming, MJPEG through libjpeg-turbo), the capture
        // slots backed by a camera or the drawn placeholders, the device watcher.
        .target(name: "Cameras", dependencies: ["GBGBridge", "GBGBridgeStubs", "ImageCodecs", "CV4L2Shim", "TextSanitizing", "MRZ",
                                                .product(name: "CoreMetrics", package: "swift-metrics")]),
        // glibc's malloc_trim, which the Glibc module does not export.
        .target(name: "CGBGBridgeServerShim"),
        // BridgeServer: loopback HTTP + WebSocket for browsers.
        .target(name: "GBGBridgeServer", dependencies: [
            "GBGBridge", "ChildProcesses", "CGBGBridgeServerShim",
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // Shared by the test targets: fixtures and the pcscd harness.
        .target(name: "TestSupport", dependencies: [
            "MRTDEmulator", "MRTD", "SmartCard", "ChildProcesses",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        // Swift Testing traits the test targets share (skipping, visibly, what needs ../shared).
        .target(name: "TestTraits", dependencies: ["TestSupport"]),
        // stdio set-up for the command-line tool.
        .target(name: "CGBGBridgeCLI"),
        // JPEG 2000 decoding and JPEG encoding, as Debian's libopenjp2-7-dev and libturbojpeg0-dev install them.
        .systemLibrary(name: "COpenJPEG", pkgConfig: "libopenjp2", providers: [.apt(["libopenjp2-7-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        // Memory-to-memory JPEG 2000 → RGB → JPEG, written in C where the codecs' callbacks live.
        .systemLibrary(name: "CLibPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        // Reading the MRZ in a photo of a data page: find the zone, rectify the lines, classify the
        // fixed-pitch OCR-B cells, decode with ICAO 9303-3's rules and check digits.
        .target(name: "MRZ", dependencies: ["ImageCodecs"],
                exclude: ["Resources/glyph-model.sha256", "Resources/glyph-model.about",
                          "Resources/glyph-model-small.sha256", "Resources/glyph-model-small.about"],
                resources: [.embedInCode("Resources/glyph-model.bin"), .embedInCode("Resources/glyph-model-small.bin")]),
        // FreeType, for the synthetic MRZ pages of the tests and benchmark only (the product draws none).
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),
        // Synthetic data pages with an MRZ (OCR-B from fonts-ocr-b), distorted like camera frames:
        // the MRZ reader's training data, its tests and its benchmark corpus.
        .target(name: "MRZSynthesis", dependencies: ["CFreeType", "ImageCodecs", "MRZ"]),
        // libjpeg's own API too (libjpeg62-turbo-dev): a progressive JPEG's scans are counted as it decodes.
        .target(name: "CImageCodecs", dependencies: ["COpenJPEG", "CTurboJPEG", "CLibPNG"], linkerSettings: [.linkedLibrary("jpeg")]),
        // libseccomp (Debian's libseccomp-dev), and the confinement the image decoder puts itself
        // under (seccomp_rule_add is variadic: C).
        .systemLibrary(name: "CSeccomp", pkgConfig: "libseccomp", providers: [.apt(["libseccomp-dev"])]),
        .target(name: "CSandboxShim", dependencies: ["CSeccomp"]),
        // The confined decoder of hostile images (/usr/libexec/gbgbridge/gbgbridge-decode): chip
        // images for browsers, photos for the MRZ reader, pictures of a holder's QR code. Links
        // the codecs, the MRZ reader and ZBar, no more.
        .executableTarget(name: "gbgbridge-decode", dependencies: ["CSandboxShim", "ImageCodecs", "MRZ", "QRScanning"]),
        // ZBar (Debian's libzbar-dev): QR codes — an mdoc holder's QR engagement — read in the confined decoder.
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .target(name: "QRScanning", dependencies: ["CZBar"]),
        // JPEGs made to cost a decoder (libjpeg's compression API, a scan script of thousands of scans): the emulator's hostile faces, the tests.
        .target(name: "CHostileImages", linkerSettings: [.linkedLibrary("jpeg")]),
        // renameat2(RENAME_EXCHANGE): a trust store swapped for its refreshed copy in one step.
        .target(name: "CFileSwapShim"),
        // libcurl with the system's OpenSSL (Debian's libcurl4-openssl-dev), and its variadic
        // curl_easy_setopt/getinfo as typed functions.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurl"]),
        // Fetching trust material for `trust refresh` (libcurl: TLS and CAs are the system's; verified by the caller).
        .target(name: "TrustFetch", dependencies: ["CCurl", "CCurlShim", "CLibArchive", "BoundedFiles"]),
        // libarchive (Debian's libarchive-dev): a master list published inside a ZIP, unpacked bounded.
        .systemLibrary(name: "CLibArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        // The host's side of it: one confined child an image, its answer checked (FoundationEssentials only).
        .target(name: "ImageSandbox", dependencies: ["ChildProcesses", "ImageCodecs", "MRZ"]),
        // Strict, bounded CBOR (RFC 8949) for what holders send: ISO 18013-5 mdocs (Docs/mdoc.md).
        .target(name: "CBORCoding"),
        // COSE_Sign1, COSE_Mac0 and COSE_Key (RFC 9052/9053) on the project's OpenSSL.
        .target(name: "COSE", dependencies: ["CBORCoding", "MRTDCrypto"]),
        // ISO 18013-5 mdoc: engagement, session encryption, requests, responses, verification.
        .target(name: "Mdoc", dependencies: ["CBORCoding", "COSE", "MRTDCrypto"]),
        // An mdoc over NFC through SmartCardCore: Type 4 Tag engagement (static and TNEP handover), ENVELOPE transfer.
        .target(name: "MdocNFC", dependencies: ["Mdoc", "CBORCoding", "COSE", "MRTDCrypto", "SmartCardCore"]),
        // sd-bus (libsystemd), as Debian's libsystemd-dev installs it: BlueZ is reached over the system D-Bus.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .target(name: "CBlueZShim", dependencies: ["CSystemd"]),
        // BlueZ (bluetoothd) over D-Bus: adapters and their state; blocking calls off the cooperative pool.
        .target(name: "BlueZ", dependencies: ["CBlueZShim"]),
        // mdoc over BLE (ISO 18013-5 §8.3.3.1.1): framing, Ident, the plan and the choice of transport.
        .target(name: "MdocBLE", dependencies: ["Mdoc", "MdocNFC", "MRTDCrypto", "BlueZ"]),
        // One mdoc read end to end (reader, verification against IACAs, the portrait re-encoded), for the CLI and the bridge.
        .target(name: "MdocRead", dependencies: ["Mdoc", "MdocNFC", "MdocBLE", "BlueZ", "CBORCoding", "MRTDCrypto", "SmartCardCore", "ImageSandbox", "BoundedFiles", "GBGBridge"]),
        // The bridge's mdoc.read capability over MdocRead.
        .target(name: "GBGBridgeMdoc", dependencies: ["GBGBridge", "Mdoc", "MdocNFC", "MdocRead", "SmartCardCore", "TextSanitizing",
                                                      .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics")]),
        // An emulated phone wallet for tests and demos: a Type 4 Tag engagement and the NFC data transfer, in vpcd.
        .target(name: "MdocEmulator", dependencies: ["Mdoc", "MdocNFC", "MRTDEmulator", "GBGBridge", "CBORCoding", "COSE", "MRTDCrypto", "SmartCardCore", "BoundedFiles"]),
        // Swift API over CImageCodecs.
        .target(name: "ImageCodecs", dependencies: ["CImageCodecs"]),
        // `gbgbridge read` (the command, its terminal key loading, its outputs) apart from the
        // server, so the lean gbgbridge-read binary that runs it maps no NIO, Hummingbird or Yams.
        .target(
            name: "GBGBridgeRead",
            dependencies: [
                "ChipRead", "ChildProcesses", "MRTD", "MRTDCrypto", "SmartCard", "CVCertificates", "BoundedFiles", "CGBGBridgeCLI", "TextSanitizing",
                "ImageSandbox", "ImageCodecs", "MRZ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What `gbgbridge read` execs into (Docs/reading-and-verification.md, "Peak memory").
        .executableTarget(name: "gbgbridge-read", dependencies: ["GBGBridgeRead"]),
        // serve's configuration file (ServeSettings) and the trust-refresh sources it names: apart
        // from the host, so that what parses a stranger's file is fuzzed without the server's code.
        .target(name: "HostConfiguration", dependencies: ["BoundedFiles", "Cameras", .product(name: "Yams", package: "Yams")]),
        // The application: the services every page gets, the server's life, doctor, trust import,
        // terminal checks, diagnostics, metrics, the configuration file. The command line, the
        // soak benchmark and the test rigs wire the host through it.
        .target(
            name: "GBGBridgeHost",
            dependencies: [
                "Cameras", "MRZ", "ImageSandbox", "TrustFetch", "CFileSwapShim", "HostConfiguration", "GBGBridge", "GBGBridgeNFC", "GBGBridgeMdoc", "MdocRead", "Mdoc", "MdocBLE", "BlueZ", "MdocEmulator", "GBGBridgeRead", "GBGBridgeServer", "GBGBridgeStubs", "MRTD", "MRTDCrypto", "SmartCard", "MRTDEmulator",
                "CVCertificates", "BoundedFiles", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "gbgbridge",
            dependencies: [
                "Mdoc", "MdocNFC", "MdocRead", "MdocEmulator", "MdocBLE", "BlueZ", "CBORCoding", "COSE", "MRTDCrypto",
                "Cameras", "MRZ", "GBGBridge", "GBGBridgeHost", "GBGBridgeRead", "SmartCard", "MRTD", "MRTDEmulator", "CGBGBridgeCLI", "GBGBridgeNFC", "GBGBridgeStubs", "CVCertificates",
                "GBGBridgeServer", "BoundedFiles", .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Crashes on purpose, linked like gbgbridge, so a test can read a real crash report.
        .executableTarget(name: "gbgbridge-crash-probe", dependencies: ["CGBGBridgeCLI"]),
        // Reading benchmark (release build, prints figures; not a test).
        .executableTarget(name: "gbgbridge-bench", dependencies: ["MRTD", "MRTDEmulator", "SmartCard", "TestSupport", "ImageCodecs", "ImageSandbox", "ChildProcesses"]),
        // The MRZ reader's workshop: synthetic frames, the classifier's training (release build; not a test).
        .executableTarget(name: "gbgbridge-mrz-lab", dependencies: ["MRZ", "MRZSynthesis", "ImageCodecs", "MRTDCrypto", "GBGBridgeStubs"]),
        // The MRZ reader's benchmark, with PassportEye + Tesseract as the yardstick (release build; not a test).
        // The parsers strangers feed, as fuzz targets (issue 44; not in the .deb), and the binary
        // scripts/fuzz.sh builds with -sanitize=fuzzer,address (a replayer in ordinary builds).
        .target(name: "FuzzTargets", dependencies: ["Biometrics", "CVCertificates", "GBGBridge", "HostConfiguration", "ImageCodecs", "LDS", "MRTD",
                                                     "MRTDEmulator", "MRTDVerification", "MRZ", "SmartCardCore", "TestSupport",
                                                     "CBORCoding", "COSE", "Mdoc", "MdocNFC", "MdocEmulator", "MRTDCrypto"]),
        .executableTarget(name: "gbgbridge-fuzz", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "gbgbridge-mrz-bench", dependencies: ["MRZ", "MRZSynthesis", "ImageCodecs", "CGBGBridgeCLI"]),
        // Soak benchmark of the host (release build, prints figures; not a test).
        .executableTarget(name: "gbgbridge-soak", dependencies: [
            "GBGBridge", "GBGBridgeHost", "GBGBridgeNFC", "GBGBridgeServer", "GBGBridgeStubs", "MRTD", "MRTDEmulator", "TestSupport", "CGBGBridgeCLI",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(
            name: "GBGBridgeTests",
            dependencies: ["GBGBridge", "GBGBridgeExamples", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(name: "ChildProcessesTests", dependencies: ["ChildProcesses"]),
        // Independent/: the Python holder, reader and verifier the interoperability tests run (not Swift).
        .testTarget(name: "MdocTests", dependencies: ["BlueZ", "CBORCoding", "COSE", "Mdoc", "MdocBLE", "MdocNFC", "MdocRead", "MdocEmulator", "ImageSandbox", "ImageCodecs", "MRTDCrypto", "MRTDEmulator", "SmartCard", "TestSupport", "TestTraits"],
                    exclude: ["Independent"]),
        // Rules every file in Sources/ keeps (no force unwrap, traps only where annotated).
        .testTarget(name: "SourceRulesTests"),
        .testTarget(
            name: "MRTDCryptoTests",
            dependencies: ["MRTDCrypto", "SmartCard"]
        ),
        .testTarget(
            name: "MRTDTests",
            dependencies: ["TestTraits", "MRTD", "ChipRead", "BoundedFiles", "CVCertificates", "Biometrics", "MRTDVerification", "LDS", "GBGBridgeNFC", "MRTDCrypto", "SmartCard", "MRTDEmulator", "TestSupport", "ImageCodecs",
                           .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "GBGBridgeNFCTests",
            dependencies: ["GBGBridgeNFC", "CVCertificates", "GBGBridge", "MRTD", "MRTDEmulator", "SmartCard", "TestSupport",
                           .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "GBGBridgeStubsTests",
            dependencies: ["GBGBridgeStubs", "GBGBridge", "ImageCodecs"]
        ),
        .testTarget(
            name: "GBGBridgeServerTests",
            dependencies: [
                "GBGBridgeMdoc", "MdocRead", "MdocNFC", "MdocEmulator", "Mdoc",
                "GBGBridgeServer", "GBGBridgeHost", "GBGBridgeRead", "GBGBridgeNFC", "GBGBridgeStubs", "GBGBridge", "MRTD", "MRTDEmulator", "CVCertificates", "SmartCard", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SmartCardTests",
            dependencies: ["SmartCard", "MRTD", "MRTDEmulator", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "MRTDEmulatorTests",
            dependencies: ["TestTraits", "MRTDEmulator", "MRTD", "MRTDCrypto", "SmartCard", "TestSupport"]
        ),
        .testTarget(name: "BiometricsTests", dependencies: ["Biometrics", "TestSupport"]),
        .testTarget(name: "LDSTests", dependencies: ["LDS", "SmartCardCore"]),
        .testTarget(name: "MRTDVerificationTests", dependencies: ["TestTraits", "MRTDVerification", "LDS", "MRTDCrypto", "SmartCardCore", "TestSupport", "MRTDEmulator", "CFileSwapShim", "BoundedFiles"]),
        .testTarget(name: "ImageCodecsTests", dependencies: ["ImageCodecs"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "MRTDEmulator", "TestSupport"]),
        .testTarget(name: "ImageSandboxTests", dependencies: ["ImageSandbox", "ImageCodecs", "CHostileImages"]),
        .testTarget(name: "MRZTests", dependencies: ["MRZ", "MRZSynthesis", "ImageCodecs", "MRTDCrypto", "TestSupport", "TestTraits"]),
        .testTarget(name: "CamerasTests", dependencies: ["Cameras", "GBGBridge", "GBGBridgeStubs", "ImageCodecs", "ChildProcesses", "TestSupport"]),
        .testTarget(name: "CVCertificatesTests", dependencies: ["CVCertificates", "MRTDCrypto", "TestSupport",
                                                               .product(name: "PropertyBased", package: "swift-property-based")]),
        // OpenPACE against our emulator (as the terminal) and our reader (as the chip).
        .testTarget(
            name: "OpenPACEInteropTests",
            dependencies: ["COpenPACEShim", "CVCertificates", "MRTD", "MRTDEmulator", "MRTDCrypto", "SmartCard", "TestSupport"]
        ),
    ]
)
