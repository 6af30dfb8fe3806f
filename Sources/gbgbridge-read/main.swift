import ArgumentParser
import GBGBridgeRead

/// `gbgbridge read` runs here: the full gbgbridge binary execs this one with the same arguments
/// (`read …`), so help, errors and exit statuses are the same, and a read maps only the reader's
/// code, not the server's (Docs/reading-and-verification.md, "Peak memory").
struct LeanReader: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gbgbridge", version: GBGBridgeVersion.current,
                                                    subcommands: [ReadCommand.self])
}

await CommandMain.run(LeanReader.self)
