import Foundation
import GBGBridge

/// The journey-side script served at `/gbg-bridge.js`: the bootstrap every page runs on iOS, plus
/// a shim that gives any browser `window.webkit.messageHandlers.gbgBridge.postMessage` and calls
/// `window.GBGBridge.receive` — over a WebSocket to the host that served it — so a journey written
/// for iOS runs unchanged.
enum BridgeScript {
    static let webSocketPath = "/gbg-bridge/ws"

    static func javaScript(token: String, configuration: BridgeConfiguration) -> String {
        let handler = jsString(configuration.messageHandlerName)
        return """
            /* GBGBridge for Linux: bridge shim. Generated per host process; do not cache. */
            \(configuration.effectiveBootstrapScript)
            (function () {
              'use strict';
              if (window.__gbgBridgeShim) { return; }
              // A native bridge is there already (WKWebView on iOS, the Linux kiosk): keep it.
              if (window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers[\(handler)]) { return; }
              window.__gbgBridgeShim = true;
              var token = \(jsString(token));
              var script = document.currentScript;
              var base = script && script.src ? new URL(script.src) : window.location;
              var url = (base.protocol === 'https:' ? 'wss://' : 'ws://') + base.host + \(jsString(webSocketPath)) +
                '?token=' + encodeURIComponent(token);
              var queue = [];
              var socket = null;
              var delay = 250;
              var state = { connected: false, closedByHost: null };
              window.GBGBridge.transport = state;

              function deliver(text) {
                var message;
                try { message = JSON.parse(text); } catch (e) { return; }
                try { window.GBGBridge.receive(message); } catch (e) { console.error('GBGBridge.receive failed', e); }
              }

              function connect() {
                socket = new WebSocket(url);
                socket.onopen = function () {
                  state.connected = true;
                  delay = 250;
                  while (queue.length && socket.readyState === 1) { socket.send(queue.shift()); }
                };
                socket.onmessage = function (event) { if (typeof event.data === 'string') { deliver(event.data); } };
                socket.onclose = function (event) {
                  state.connected = false;
                  if (event.code === 1008) { state.closedByHost = event.reason || 'refused by the host'; return; }
                  setTimeout(connect, delay);
                  delay = Math.min(delay * 2, 5000);
                };
              }

              window.webkit = window.webkit || {};
              window.webkit.messageHandlers = window.webkit.messageHandlers || {};
              window.webkit.messageHandlers[\(handler)] = {
                postMessage: function (message) {
                  var text = typeof message === 'string' ? message : JSON.stringify(message);
                  if (socket && socket.readyState === 1) { socket.send(text); } else { queue.push(text); }
                }
              };
              connect();
            })();
            """
    }

    /// A JavaScript string literal (JSON escaping is valid JavaScript).
    static func jsString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "<": out += "\\u003c"  // never close a <script> element
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}
