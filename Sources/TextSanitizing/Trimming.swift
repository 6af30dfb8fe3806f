/// Trimming without Foundation: the modules a chip read runs through import FoundationEssentials
/// only, which has no `CharacterSet`.
extension StringProtocol {
    /// Without the leading and trailing scalars `predicate` accepts.
    public func trimming(while predicate: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !predicate($0) }),
              let last = scalars.lastIndex(where: { !predicate($0) }) else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Without leading and trailing white space: Unicode's White_Space property — spaces of every
    /// width, tabs, line and paragraph ends (what Foundation calls `.whitespacesAndNewlines`).
    public func trimmingWhitespace() -> String { trimming { $0.properties.isWhitespace } }
}
