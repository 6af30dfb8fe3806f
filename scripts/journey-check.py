#!/usr/bin/env python3
"""Checks a running `gbgbridge demo` (or `serve` with a card) as the sample journey uses it, with
Python's standard library only (a raw RFC 6455 client, so it runs on a bare Debian root):

  1. GET /            the journey page answers
  2. GET /gbg-bridge.js  the bridge script, and the page token in it
  3. WebSocket /gbg-bridge/ws?token=…  capability.query, then nfc.read with the demo passport's key
  4. the answer holds the passport: document number, passive authentication, a JPEG photo

Usage: scripts/journey-check.py [--port 8450] [--document-number L898902C3 --birth 740812 --expiry 120415]
Exit 0 when every step held, 1 naming the step that did not.
"""
import argparse, base64, json, os, re, socket, struct, sys, time, urllib.request

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--port", type=int, default=8450)
parser.add_argument("--document-number", default="L898902C3")
parser.add_argument("--birth", default="740812")
parser.add_argument("--expiry", default="120415")
parser.add_argument("--timeout", type=float, default=120)
args = parser.parse_args()
origin = "http://127.0.0.1:%d" % args.port


def fail(step, why):
    print("journey-check: %s: %s" % (step, why), file=sys.stderr)
    sys.exit(1)


def get(path):
    request = urllib.request.Request(origin + path, headers={"Referer": origin + "/"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read()


status, page = get("/")
if status != 200 or b"<html" not in page.lower():
    fail("page", "GET / answered %d without a page" % status)
status, script = get("/gbg-bridge.js")
match = re.search(rb"var token = \"([^\"]+)\"", script)
if status != 200 or not match:
    fail("bridge script", "GET /gbg-bridge.js gave no page token")
token = match.group(1).decode()

sock = socket.create_connection(("127.0.0.1", args.port), timeout=args.timeout)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall(("GET /gbg-bridge/ws?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nOrigin: %s\r\n\r\n" % (token, args.port, key, origin)).encode())
head = b""
while b"\r\n\r\n" not in head:
    chunk = sock.recv(4096)
    if not chunk:
        fail("websocket", "the host closed the connection during the handshake")
    head += chunk
if b" 101 " not in head.split(b"\r\n")[0]:
    fail("websocket", "no upgrade: %r" % head.split(b"\r\n")[0])
buffer = head.split(b"\r\n\r\n", 1)[1]


def send(message):
    payload = json.dumps(message).encode()
    mask = os.urandom(4)
    header = bytes([0x81])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    elif len(payload) < 65536:
        header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
    else:
        header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def read_exactly(count):
    global buffer
    while len(buffer) < count:
        chunk = sock.recv(65536)
        if not chunk:
            fail("websocket", "the host closed the connection")
        buffer += chunk
    data, buffer = buffer[:count], buffer[count:]
    return data


def receive():
    message = b""
    while True:
        first, second = read_exactly(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", read_exactly(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", read_exactly(8))[0]
        data = read_exactly(length)
        opcode = first & 0x0F
        if opcode == 0x8:
            fail("websocket", "the host closed the socket: %r" % data[2:])
        if opcode == 0x9:
            continue
        message += data
        if first & 0x80:
            return json.loads(message)


def request(action, data, correlation):
    send({"version": "1.0", "correlationId": correlation, "type": "request", "timestamp": int(time.time() * 1000),
          "payload": {"action": action, "data": data}})
    deadline = time.time() + args.timeout
    while time.time() < deadline:
        message = receive()
        if message.get("type") == "response" and message.get("correlationId") == correlation:
            return message["payload"]
    fail(action, "no answer within %d s" % args.timeout)


capabilities = request("capability.query", {}, "check-1")
if not capabilities.get("data", {}).get("capabilities", {}).get("nfc.read", {}).get("supported"):
    fail("capability.query", "nfc.read is not supported: %s" % json.dumps(capabilities)[:500])
key = {"documentNumber": args.document_number, "dateOfBirth": args.birth, "dateOfExpiry": args.expiry}
answer = request("nfc.read", {"accessKey": key, "timeoutSeconds": 30}, "check-2")
if answer.get("status") != "success":
    fail("nfc.read", "status %s: %s" % (answer.get("status"), json.dumps(answer.get("error"))))
data = answer["data"]
if data.get("document", {}).get("documentNumber") != args.document_number:
    fail("nfc.read", "not the passport asked for")
photo = base64.b64decode(data.get("photo") or "")
if data.get("photoMimeType") != "image/jpeg" or not photo.startswith(b"\xff\xd8"):
    fail("photo", "no JPEG photo: %s" % json.dumps({k: data.get(k) for k in ("photoMimeType", "parseErrors")}))
passive = data.get("verification", {}).get("passive", {}).get("status")
print("journey-check: page, bridge, capability.query and nfc.read hold: %s, passive %s, photo %dx%d (%d bytes)"
      % (data["document"]["documentNumber"], passive, data.get("photoWidth", 0), data.get("photoHeight", 0), len(photo)))
