// `LogText` lives in a module of its own so that the smart-card and eMRTD layers escape outside
// text the same way without depending on the bridge; bridge users keep seeing it here.
@_exported import TextSanitizing
