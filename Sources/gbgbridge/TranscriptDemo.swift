import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridge

/// A walk through the bridge with no browser and no hardware: a scripted "journey" posts requests
/// into an in-memory transport and the host's answers are printed as they would reach the page.
struct TranscriptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transcript",
        abstract: "Print a scripted journey's messages through an in-memory transport (no browser, no hardware).",
        discussion: """
            Plays the part of a web journey: queries capabilities, takes a document capture from a \
            demonstration slot, calls a custom capability, and sends a malformed message. Every \
            message is printed as JSON, web → host and host → web.
            """
    )

    @Flag(name: .long, help: "Print the JSON messages only, one per line.")
    var quiet = false

    @MainActor
    func run() async throws {
        await Transcript.play(quiet: quiet) { print($0) }
    }
}
