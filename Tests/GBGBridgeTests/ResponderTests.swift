import Foundation
import Synchronization
import Testing
@testable import GBGBridge

@Suite("BridgeResponder")
struct ResponderTests {
    @Test func onlyTheFirstCallHasAnyEffect() {
        let delivered = Mutex<[BridgeMessage]>([])
        let responder = BridgeResponder(request: .request(action: "a", correlationId: "r")) { message, _ in
            delivered.withLock { $0.append(message) }
        }
        #expect(!responder.hasResponded)
        #expect(responder.succeed(["n": 1]))
        #expect(!responder.fail(code: "X", message: "x", recoverable: false))
        #expect(!responder.cancel())
        #expect(responder.hasResponded)
        let messages = delivered.withLock { $0 }
        #expect(messages.count == 1)
        #expect(messages[0].payload.status == .success)
        #expect(messages[0].correlationId == "r" && messages[0].payload.action == "a")
    }

    @Test func racingThreadsProduceExactlyOneResponse() async {
        for round in 0..<20 {
            let delivered = Mutex(0)
            let responder = BridgeResponder(request: .request(action: "a", correlationId: "r\(round)")) { _, _ in
                delivered.withLock { $0 += 1 }
            }
            await withTaskGroup(of: Void.self) { group in
                for i in 0..<16 {
                    group.addTask { responder.respond(status: i.isMultiple(of: 2) ? .success : .error) }
                }
                group.addTask { Thread.detachNewThread { responder.succeed() } }
            }
            try? await Task.sleep(for: .milliseconds(1))
            #expect(delivered.withLock { $0 } == 1)
        }
    }

    @Test func cancelRunsHandlersOnceAndAnswersCancelled() {
        let delivered = Mutex<[BridgeMessage]>([])
        let cancelCount = Mutex(0)
        let responder = BridgeResponder(request: .request(action: "nfc.read", correlationId: "n")) { message, _ in
            delivered.withLock { $0.append(message) }
        }
        responder.onCancel { cancelCount.withLock { $0 += 1 } }
        #expect(responder.cancel(reason: "gone"))
        #expect(responder.isCancelled)
        responder.onCancel { cancelCount.withLock { $0 += 1 } }  // registered late: runs at once
        #expect(cancelCount.withLock { $0 } == 2)
        let message = delivered.withLock { $0 }
        #expect(message.count == 1)
        #expect(message.first?.payload.status == .cancelled)
        #expect(message.first?.payload.error == BridgeErrorPayload(code: "CANCELLED", message: "gone", recoverable: true))
    }

    @Test func handlersAfterAResponseNeverRun() {
        let ran = Mutex(false)
        let responder = BridgeResponder(request: .request(action: "a")) { _, _ in }
        responder.succeed()
        responder.onCancel { ran.withLock { $0 = true } }
        responder.cancel()
        #expect(!ran.withLock { $0 })
    }

    @MainActor
    @Test func respondingFromABackgroundThreadReachesThePage() async throws {
        let h = Harness()
        h.host.registerCustomCapability("slow.op") { _, responder in
            Thread.detachNewThread {
                responder.succeed(["from": "thread"])
                responder.succeed(["from": "again"])
            }
        }
        h.post("slow.op", id: "s")
        #expect(await eventually { !h.responses(to: "s").isEmpty })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(try h.onlyResponse(to: "s").payload.data == ["from": "thread"])
    }

    @MainActor
    @Test func respondingFromAnotherTaskReachesThePage() async throws {
        let h = Harness()
        h.host.registerCustomCapability("async.op") { _, responder in
            Task.detached {
                try? await Task.sleep(for: .milliseconds(5))
                responder.succeed(["from": "task"])
            }
        }
        h.post("async.op", id: "t")
        #expect(await eventually { !h.responses(to: "t").isEmpty })
        #expect(try h.onlyResponse(to: "t").payload.data == ["from": "task"])
    }
}
