/// The codes an MRZ's issuing state and nationality can hold (ICAO 9303-3 §5): ISO 3166-1
/// alpha-3 (as Debian's iso-codes lists it, 249 codes), Germany's `D<<`, ICAO's own codes for
/// documents of other authorities and of persons without a nationality, the specimen state `UTO`,
/// and a few withdrawn codes documents still in circulation may carry. A code outside the list is
/// a misreading no check digit covers (`ITA` read `ITX` surely, hard tier `--seed 3131`, image 801):
/// it never earns `valid`. The access key does not depend on it.
enum MRZStateCodes {
    static func known(_ code: String) -> Bool { all.contains(code) }

    static let all: Set<String> = iso3166.union(icao)

    /// ICAO 9303-3 §5: `D<<`; the British codes (GBD dependent territories, GBN national
    /// (overseas), GBO overseas citizen, GBP protected person, GBS subject); the UN (UNO, UNA,
    /// UNK); EU (EUE); other issuing authorities (XBA, XCC, XCE, XCO, XDC, XEC, XES, XIM, XMP,
    /// XOM, XPO); stateless and refugees (XXA, XXB, XXC, XXX); Kosovo (RKS); the specimen UTO;
    /// withdrawn: ANT, NTZ, ROM, SCG, TMP, YUG, ZAR.
    static let icao: Set<String> = [
        "D<<", "GBD", "GBN", "GBO", "GBP", "GBS", "UNO", "UNA", "UNK", "EUE", "XBA", "XCC", "XCE", "XCO", "XDC", "XEC",
        "XES", "XIM", "XMP", "XOM", "XPO", "XXA", "XXB", "XXC", "XXX", "RKS", "UTO", "ANT", "NTZ", "ROM", "SCG", "TMP",
        "YUG", "ZAR",
    ]

    static let iso3166: Set<String> = [
        "ABW", "AFG", "AGO", "AIA", "ALA", "ALB", "AND", "ARE", "ARG", "ARM", "ASM", "ATA", "ATF", "ATG", "AUS", "AUT",
        "AZE", "BDI", "BEL", "BEN", "BES", "BFA", "BGD", "BGR", "BHR", "BHS", "BIH", "BLM", "BLR", "BLZ", "BMU", "BOL",
        "BRA", "BRB", "BRN", "BTN", "BVT", "BWA", "CAF", "CAN", "CCK", "CHE", "CHL", "CHN", "CIV", "CMR", "COD", "COG",
        "COK", "COL", "COM", "CPV", "CRI", "CUB", "CUW", "CXR", "CYM", "CYP", "CZE", "DEU", "DJI", "DMA", "DNK", "DOM",
        "DZA", "ECU", "EGY", "ERI", "ESH", "ESP", "EST", "ETH", "FIN", "FJI", "FLK", "FRA", "FRO", "FSM", "GAB", "GBR",
        "GEO", "GGY", "GHA", "GIB", "GIN", "GLP", "GMB", "GNB", "GNQ", "GRC", "GRD", "GRL", "GTM", "GUF", "GUM", "GUY",
        "HKG", "HMD", "HND", "HRV", "HTI", "HUN", "IDN", "IMN", "IND", "IOT", "IRL", "IRN", "IRQ", "ISL", "ISR", "ITA",
        "JAM", "JEY", "JOR", "JPN", "KAZ", "KEN", "KGZ", "KHM", "KIR", "KNA", "KOR", "KWT", "LAO", "LBN", "LBR", "LBY",
        "LCA", "LIE", "LKA", "LSO", "LTU", "LUX", "LVA", "MAC", "MAF", "MAR", "MCO", "MDA", "MDG", "MDV", "MEX", "MHL",
        "MKD", "MLI", "MLT", "MMR", "MNE", "MNG", "MNP", "MOZ", "MRT", "MSR", "MTQ", "MUS", "MWI", "MYS", "MYT", "NAM",
        "NCL", "NER", "NFK", "NGA", "NIC", "NIU", "NLD", "NOR", "NPL", "NRU", "NZL", "OMN", "PAK", "PAN", "PCN", "PER",
        "PHL", "PLW", "PNG", "POL", "PRI", "PRK", "PRT", "PRY", "PSE", "PYF", "QAT", "REU", "ROU", "RUS", "RWA", "SAU",
        "SDN", "SEN", "SGP", "SGS", "SHN", "SJM", "SLB", "SLE", "SLV", "SMR", "SOM", "SPM", "SRB", "SSD", "STP", "SUR",
        "SVK", "SVN", "SWE", "SWZ", "SXM", "SYC", "SYR", "TCA", "TCD", "TGO", "THA", "TJK", "TKL", "TKM", "TLS", "TON",
        "TTO", "TUN", "TUR", "TUV", "TWN", "TZA", "UGA", "UKR", "UMI", "URY", "USA", "UZB", "VAT", "VCT", "VEN", "VGB",
        "VIR", "VNM", "VUT", "WLF", "WSM", "YEM", "ZAF", "ZMB", "ZWE",
    ]
}
