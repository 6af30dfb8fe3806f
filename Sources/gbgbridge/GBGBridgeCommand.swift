import ArgumentParser

@main
struct GBGBridgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gbgbridge",
        abstract: "GBGBridge for Linux: the native host for GBG identity-verification web journeys.",
        discussion: """
            Runs the GBGBridge host that lets an unmodified web journey use the native \
            capabilities of a Linux kiosk over the GBGBridge JSON message protocol.
            """,
        version: GBGBridgeVersion.current,
        subcommands: [DemoCommand.self, ReadersCommand.self, EmulateCommand.self],
        defaultSubcommand: nil
    )
}

enum GBGBridgeVersion {
    static let current = "0.1.0"
}
