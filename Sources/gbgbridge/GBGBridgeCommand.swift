import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead

@main
struct GBGBridgeCommand: AsyncParsableCommand {
    /// Runs the tool (`read` in the lean gbgbridge-read binary when it is installed).
    static func main() async {
        CommandMain.execLeanReader()
        ReadCommand.cameraMRZ = { camera, limit, progress in try await CameraMRZ.read(camera: camera, within: limit, progress: progress) }
        await CommandMain.run(Self.self)
    }

    static let configuration = CommandConfiguration(
        commandName: "gbgbridge",
        abstract: "GBGBridge for Linux: the native host for GBG identity-verification web journeys.",
        discussion: """
            Runs the GBGBridge host that lets an unmodified web journey use the native \
            capabilities of a Linux kiosk over the GBGBridge JSON message protocol.
            """,
        version: GBGBridgeVersion.current,
        subcommands: [ServeCommand.self, DemoCommand.self, ReadersCommand.self, ReadCommand.self, VerifyCommand.self,
                      EmulateCommand.self, TranscriptCommand.self, DoctorCommand.self, TrustCommand.self, TerminalCommand.self,
                      CameraCommand.self, MRZCommand.self, MdocCommand.self],
        defaultSubcommand: nil
    )
}

