/// The operators' page at `/diagnostics`: live (server-sent events from `/diagnostics/events`,
/// falling back to polling `/diagnostics.json`), built with DOM calls and `textContent` only —
/// page origins, actions and error texts come from pages and are never parsed as HTML.
enum DiagnosticsPage {
    /// The page, its own requests carrying `token` (`OperatorAccess`: a subresource needs one).
    static func html(token: String) -> String {
        htmlTemplate.replacingOccurrences(of: "PAGE_TOKEN", with: token)
    }

    static let htmlTemplate = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>GBGBridge diagnostics</title>
        <meta name="gbgbridge-page" content="PAGE_TOKEN">
        <link rel="stylesheet" href="/diagnostics/app.css?page=PAGE_TOKEN">
        <script src="/diagnostics/app.js?page=PAGE_TOKEN" defer></script>
        </head>
        <body data-state="loading">
        <header>
          <h1>GBGBridge diagnostics</h1>
          <p id="host">connecting…</p>
          <p id="live" class="badge">loading</p>
        </header>
        <main>
          <section class="card" id="readers-card"><h2>Readers</h2><div id="readers"></div></section>
          <section class="card" id="trust-card"><h2>Trust store</h2><div id="trust"></div></section>
          <section class="card wide" id="cameras-card"><h2>Cameras</h2><div id="cameras"></div></section>
          <section class="card wide" id="chart-card"><h2>Read durations</h2><div id="chart"></div></section>
          <section class="card wide" id="reads-card"><h2>Last reads</h2><div id="reads"></div></section>
          <section class="card wide" id="mdoc-card" style="display:none"><h2>Last mobile document reads (mdoc.read)</h2><div id="mdoc-reads"></div></section>
          <section class="card wide" id="pages-card"><h2>Pages</h2><div id="pages"></div></section>
        </main>
        </body>
        </html>
        """

    static let style = """
        :root { --bg: #f4f5f7; --card: #fff; --text: #1d2330; --muted: #667085; --ok: #12805c; --warn: #b54708; --err: #c01c28; --line: #e4e7ec; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--text); }
        header { display: flex; align-items: baseline; gap: 16px; padding: 16px 24px; background: #1d2330; color: #fff; }
        header h1 { font-size: 20px; margin: 0; }
        header p { margin: 0; color: #c8cdd6; }
        main { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; padding: 16px 24px; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; overflow-x: auto; }
        .card.wide { grid-column: 1 / -1; }
        h2 { font-size: 15px; margin: 0 0 8px; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { color: var(--muted); font-weight: 600; font-size: 12px; }
        .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e4e7ec; color: var(--text); }
        .ok { background: #d1fadf; color: var(--ok); }
        .warning { background: #fef0c7; color: var(--warn); }
        .error { background: #fee4e2; color: var(--err); }
        .muted { color: var(--muted); }
        .phases { font-size: 12px; color: var(--muted); }
        .mono { font-family: ui-monospace, monospace; font-size: 12px; }
        details summary { cursor: pointer; color: var(--muted); }
        svg text { font-size: 11px; fill: var(--muted); }
        """

    static let script = """
        "use strict";
        (function () {
          const $ = (id) => document.getElementById(id);
          // The token this page was handed: its own requests carry it (the server refuses other pages').
          const page = encodeURIComponent((document.querySelector('meta[name="gbgbridge-page"]') || {}).content || "");
          function el(tag, attrs, ...children) {
            const node = document.createElement(tag);
            for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
            for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
            return node;
          }
          function badge(text, kind) { return el("span", { class: "badge " + (kind || "") }, text); }
          function table(headers, rows) {
            const t = el("table", {}, el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))));
            const body = el("tbody");
            for (const r of rows) body.append(el("tr", {}, ...r.map((c) => el("td", {}, c))));
            t.append(body);
            return t;
          }
          function replace(id, ...nodes) { $(id).replaceChildren(...nodes); }
          const secs = (s) => (s == null ? "–" : s < 1 ? Math.round(s * 1000) + " ms" : s < 10 ? s.toFixed(2) + " s" : s.toFixed(1) + " s");
          const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "–");

          function renderHost(d) {
            const h = d.host || {};
            $("host").textContent = "version " + h.version + " · up " + Math.round(h.uptimeSeconds || 0) + " s · " +
              (d.readsFinished || 0) + " reads · " + (d.mdocReadsFinished != null ? d.mdocReadsFinished + " mdoc reads · " : "") +
              (d.pages || []).length + " page(s) connected";
          }
          function renderReaders(d) {
            const readers = d.readers || [];
            if (!readers.length) return replace("readers", el("p", { class: "muted" }, "No reader connected."));
            replace("readers", table(["Reader", "Back end", "State", "ATR"], readers.map((r) => [
              r.name, r.backend, badge(r.state, r.state === "reading" ? "warning" : r.cardPresent ? "ok" : ""), el("span", { class: "mono" }, r.atr || "")
            ])));
          }
          function renderCameras(d) {
            const cameras = d.cameras || [];
            if (!cameras.length) return replace("cameras", el("p", { class: "muted" }, "No capture slot."));
            const kinds = { ready: "ok", stub: "", denied: "error", unplugged: "warning", unsupported: "error" };
            replace("cameras", table(["Slot", "Configured", "Camera", "State", "Mode", "Last capture"], cameras.map((c) => {
              const p = c.probe || {}, l = c.lastCapture;
              return [c.slot, c.configured, (p.device || "–") + (p.name ? " (" + p.name + ")" : ""),
                el("span", {}, badge(c.capturing ? "capturing" : p.state, c.capturing ? "warning" : kinds[p.state] || ""), p.message ? " " + p.message : ""),
                [p.format, p.resolution].filter(Boolean).join(" ") || "–",
                l ? el("span", {}, badge(l.outcome, l.outcome === "success" || l.outcome === "stub" ? "ok" : "error"), " " + time(l.time) + " · " +
                  l.durationMs + " ms" + (l.resolution ? " · " + l.format + " " + l.resolution : "") + (l.message ? " · " + l.message : "")) : "none yet"];
            })));
          }
          function renderTrust(d) {
            const t = d.trust || {};
            const details = t.details || {};
            const nodes = [el("p", {}, badge(t.status || "unknown", t.status), " ", t.finding || "")];
            if (t.fix) nodes.push(el("p", { class: "muted" }, "Fix: " + t.fix));
            if (details.countries) nodes.push(el("p", { class: "muted" }, "Countries: " +
              Object.entries(details.countries).sort().map(([c, n]) => c + " " + n).join(", ")));
            replace("trust", ...nodes);
          }
          function outcomeKind(o) { return o === "success" ? "ok" : o === "inProgress" ? "warning" : "error"; }
          function renderReads(d) {
            const reads = (d.reads || []).slice().reverse();
            if (d.readInProgress) reads.unshift(d.readInProgress);
            if (!reads.length) return replace("reads", el("p", { class: "muted" }, "No read yet."));
            replace("reads", table(["#", "Started", "Reader", "Outcome", "Access", "Duration", "APDUs", "Tag losses", "Phases"],
              reads.map((r) => [r.id, time(r.started), r.reader || "–", badge(r.outcome, outcomeKind(r.outcome)), r.accessControl || "–",
                secs(r.seconds), r.apdus == null ? "–" : r.apdus, r.tagLosses,
                el("span", { class: "phases" }, (r.phases || []).map((p) => p.name + " " + secs(p.seconds)).join(" · "))])));
          }
          function renderMdocReads(d) {
            if (!d.mdocReads) return;
            $("mdoc-card").style.display = "";
            const reads = d.mdocReads.slice().reverse();
            if (!reads.length) return replace("mdoc-reads", el("p", { class: "muted" }, d.mdocReadInProgress ? "A read is in progress." : "No mdoc read yet."));
            const kind = (o) => o === "verified" ? "ok" : o === "unverified" ? "warning" : "error";
            replace("mdoc-reads", table(["#", "Finished", "Reader", "Outcome", "Document", "Issuer", "Device", "Transport", "Duration", "APDUs", "Elements"],
              reads.map((r) => [r.id, time(r.finished), r.reader || "–", el("span", {}, badge(r.outcome, kind(r.outcome)), r.mdocCode ? " " + r.mdocCode : ""),
                r.docType || "–", r.issuer || "–", r.device || "–", [r.transport, r.handover].filter(Boolean).join(" ") || "–", secs(r.seconds),
                r.apdus == null ? "–" : r.apdus, r.elements == null ? "–" : r.elements + (r.withheld ? " (" + r.withheld + " withheld)" : "")])));
          }
          function renderChart(d) {
            const reads = (d.reads || []).slice(-50);
            const ns = "http://www.w3.org/2000/svg";
            const W = 900, H = 160, pad = 28;
            const svg = document.createElementNS(ns, "svg");
            svg.setAttribute("viewBox", "0 0 " + W + " " + (H + pad));
            svg.setAttribute("width", "100%");
            svg.setAttribute("role", "img");
            svg.setAttribute("aria-label", "durations of the last " + reads.length + " reads");
            const max = Math.max(0.001, ...reads.map((r) => r.seconds || 0));
            const bw = Math.max(4, Math.min(40, (W - pad) / Math.max(reads.length, 1) - 4));
            const colors = { ok: "#12805c", warning: "#b54708", error: "#c01c28" };
            reads.forEach((r, i) => {
              const h = Math.max(1, (r.seconds || 0) / max * H);
              const rect = document.createElementNS(ns, "rect");
              rect.setAttribute("x", pad + i * (bw + 4));
              rect.setAttribute("y", H - h);
              rect.setAttribute("width", bw);
              rect.setAttribute("height", h);
              rect.setAttribute("fill", colors[outcomeKind(r.outcome)]);
              const title = document.createElementNS(ns, "title");
              title.textContent = "#" + r.id + " " + r.outcome + " " + secs(r.seconds);
              rect.append(title);
              svg.append(rect);
            });
            for (const [y, label] of [[H, "0 s"], [0, secs(max)]]) {
              const t = document.createElementNS(ns, "text");
              t.setAttribute("x", 0);
              t.setAttribute("y", Math.max(10, y));
              t.textContent = label;
              svg.append(t);
            }
            if (!reads.length) return replace("chart", el("p", { class: "muted" }, "No read yet."));
            replace("chart", svg);
          }
          function renderPages(d) {
            const pages = d.pages || [];
            if (!pages.length) return replace("pages", el("p", { class: "muted" }, "No page connected."));
            replace("pages", table(["Page", "Origin", "Via", "Connected", "Last error", "Open requests", "Pending", "Console", "Recent messages"],
              pages.map((p) => {
                const messages = el("details", {}, el("summary", {}, (p.recentMessages || []).length + " messages (payloads elided)"),
                  table(["Time", "Dir", "Type", "Action", "Id", "Status"], (p.recentMessages || []).slice().reverse().map((m) =>
                    [time(m.time), m.direction, m.count ? m.type + " ×" + m.count : m.type, m.action, el("span", { class: "mono" }, m.correlationId),
                     m.errorCode ? m.status + " " + m.errorCode : (m.status || "")])));
                // Console errors and uncaught exceptions, newest first, as text (a page's message is
                // never markup here).
                const entries = p.console || [];
                const where = (c) => (c.url ? c.url.slice(c.url.lastIndexOf("/") + 1) + (c.line ? ":" + c.line : "") : "");
                const console_ = entries.length
                  ? el("details", { open: "" }, el("summary", {}, (p.consoleErrors || 0) + " errors, " + (p.exceptions || 0) + " exceptions"),
                      table(["Time", "Kind", "Message", "Where"], entries.slice().reverse().map((c) =>
                        [time(c.time), badge(c.kind, c.kind === "exception" ? "error" : "warning"), el("span", { class: "mono" }, c.text), where(c)])))
                  : el("span", { class: "muted" }, p.via === "kiosk" ? "none" : "not seen (browser page)");
                return [p.page, p.origin, p.via, time(p.connected), p.lastError ? badge(p.lastError, "error") : el("span", { class: "muted" }, "none"),
                  (p.openRequests || []).map((r) => r.action + " (" + r.ageSeconds + " s)").join(", ") || "none",
                  (p.pendingRequests || []).map((r) => r.action).join(", ") || "none", console_, messages];
              })));
          }
          function render(d) {
            renderHost(d); renderReaders(d); renderTrust(d); renderCameras(d); renderChart(d); renderReads(d); renderMdocReads(d); renderPages(d);
            document.body.dataset.state = "live";
            document.body.dataset.reads = String((d.reads || []).length);
          }
          function live(kind) { const b = $("live"); b.textContent = kind; b.className = "badge " + (kind === "live" ? "ok" : "warning"); }
          async function poll() {
            try { render(await (await fetch("/diagnostics.json?page=" + page, { cache: "no-store" })).json()); live("polling"); } catch (e) { live("offline"); }
          }
          if (window.EventSource) {
            const source = new EventSource("/diagnostics/events?page=" + page);
            source.addEventListener("snapshot", (e) => { try { render(JSON.parse(e.data)); live("live"); } catch (err) { live("bad data"); } });
            source.onerror = () => live("reconnecting");
          } else {
            setInterval(poll, 1000);
          }
          poll();
        })();
        """
}
