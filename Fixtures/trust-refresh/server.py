#!/usr/bin/python3
"""Test servers for `gbgbridge trust refresh` (Tests/MRTDTests/TrustRefreshTests.swift).

Makes its own test CA and a server certificate for 127.0.0.1 (Python's cryptography), then serves
DIRECTORY over HTTPS and plain HTTP on loopback, with the misbehaviours a refresh must survive:

  /files/NAME                the file, with an ETag (If-None-Match answered 304)
  /status/CODE               that status
  /huge                      announces 3 GiB and starts sending
  /huge-chunked              sends 64 MiB without a length
  /drip                      a byte a second
  /redirect-file             302 to file:///etc/passwd
  /redirect-http/NAME        302 from https down to http://…/files/NAME
  /redirect-loop             302 to itself
  /big-etag/NAME             the file, with a 2 KiB ETag and Last-Modified (validators no client should keep)
  /always-304/NAME           304 whatever was asked (to an unconditional request: a lying server)
  /zip/NAME.zip              the files NAME.* of the directory packed in a ZIP archive (as the BSI publishes its list)
  /zip-bomb                  a ZIP whose one .ml inflates to 256 MiB of zeros

Prints "READY <https-port> <http-port> <ca.pem>" once both listen; runs until killed.
"""
import datetime, hashlib, http.server, ipaddress, os, socketserver, ssl, sys, threading, time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

directory, work = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)

def name(text):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (x509.CertificateBuilder().subject_name(name("GBGBridge trust-refresh test CA")).issuer_name(name("GBGBridge trust-refresh test CA"))
      .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
      .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
key = ec.generate_private_key(ec.SECP256R1())
certificate = (x509.CertificateBuilder().subject_name(name("127.0.0.1")).issuer_name(ca.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                              critical=False).sign(ca_key, hashes.SHA256()))
ca_path, cert_path, key_path = (os.path.join(work, n) for n in ("ca.pem", "server.pem", "server.key"))
open(ca_path, "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(cert_path, "wb").write(certificate.public_bytes(serialization.Encoding.PEM))
open(key_path, "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

ports = {}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        try:
            if path.startswith("/files/"):
                full = os.path.join(directory, os.path.basename(path))
                if not os.path.isfile(full):
                    return self.send(404)
                body = open(full, "rb").read()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    return self.send(304, headers=[("ETag", etag)])
                return self.send(200, body, [("ETag", etag), ("Content-Type", "application/octet-stream")])
            if path.startswith("/status/"):
                return self.send(int(path.split("/")[2]))
            if path == "/huge":
                self.send_response(200)
                self.send_header("Content-Length", str(3 * 1024 ** 3))
                self.end_headers()
                for _ in range(64):
                    self.wfile.write(b"\0" * 65536)
                return
            if path == "/huge-chunked":
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"\0" * 65536
                for _ in range(1024):
                    self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            if path == "/drip":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(100000):
                    self.wfile.write(b"0")
                    self.wfile.flush()
                    time.sleep(1)
                return
            if path == "/redirect-file":
                return self.send(302, headers=[("Location", "file:///etc/passwd")])
            if path.startswith("/redirect-http/"):
                return self.send(302, headers=[("Location", "http://127.0.0.1:%d/files/%s" % (ports["http"], os.path.basename(path)))])
            if path == "/redirect-loop":
                return self.send(302, headers=[("Location", "/redirect-loop")])
            if path.startswith("/big-etag/"):
                body = open(os.path.join(directory, os.path.basename(path)), "rb").read()
                return self.send(200, body, [("ETag", '"' + "e" * 2048 + '"'), ("Last-Modified", "Mon" + "," * 2048 + " 01 Jan 2024 00:00:00 GMT")])
            if path.startswith("/always-304/"):
                return self.send(304)
            if path.startswith("/zip/"):
                import io, zipfile
                stem = os.path.basename(path)[:-len(".zip")]
                buffer = io.BytesIO()
                with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                    archive.writestr("README.txt", "the master list follows")
                    for name in sorted(os.listdir(directory)):
                        if name.startswith(stem + "."):
                            archive.write(os.path.join(directory, name), name)
                return self.send(200, buffer.getvalue(), [("Content-Type", "application/zip")])
            if path == "/zip-bomb":
                import io, zipfile
                buffer = io.BytesIO()
                with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                    with archive.open("bomb.ml", "w") as entry:
                        zeros = b"\0" * (1 << 20)
                        for _ in range(256):
                            entry.write(zeros)
                return self.send(200, buffer.getvalue(), [("Content-Type", "application/zip")])
            return self.send(404)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client hung up: what a refresh that gives up does

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up mid-handshake or mid-body is the point of several tests

https = Server(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert_path, key_path)
https.socket = context.wrap_socket(https.socket, server_side=True)
plain = Server(("127.0.0.1", 0), Handler)
ports["https"], ports["http"] = https.server_address[1], plain.server_address[1]
for server in (https, plain):
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("READY %d %d %s" % (ports["https"], ports["http"], ca_path), flush=True)
threading.Event().wait()
