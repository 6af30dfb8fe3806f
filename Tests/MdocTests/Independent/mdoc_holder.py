#!/usr/bin/python3
"""An mdoc holder written from ISO/IEC 18013-5 and the NFC Forum Type 4 Tag, TNEP and Connection
Handover specifications with Python's cbor2 and cryptography alone (no GBGBridge code): it
connects to vpcd as the card of a virtual reader and presents an mDL — its own IACA, document
signer and device key, made at start — through static or negotiated handover, answering ENVELOPE
and GET RESPONSE, with device authentication by signature or MAC.
Usage: mdoc_holder.py PORT IACA_OUT.pem static|negotiated|qr:FILE signature|mac [ble SERVICE_UUID BUS_ADDRESS|bluez:hciN[:MODE]|bluez-central:hciN[:MODE]]
With ble it behaves as the phone wallets do: the engagement and the Handover Select offer BLE
alone (mdoc peripheral server mode, the service UUID, LE role peripheral), in negotiated handover
only when the reader's Handover Request offered BLE, and the session runs over GATT — served
through a stand-in bluetoothd on the D-Bus at BUS_ADDRESS (fake_bluez_holder.py), Ident derived
here from EDeviceKeyBytes. With bluez:hciN the GATT side is the real bluetoothd's (system bus): a
GATT application and an LE advertisement registered on adapter hciN (bluez_peripheral_holder.py,
MODE as it lists; "ble-ready" is printed once BlueZ took both). With bluez-central:hciN it offers
mdoc central client mode instead and connects to the reader's advertised service from hciN
(bluez_central_holder.py).
With qr:FILE (and ble) it engages by QR code instead (ISO 18013-5 §8.2.2.3): no vpcd; it writes the
code's text — "mdoc:" and the DeviceEngagement in base64url without padding — to FILE, and the
session transcript's handover is null; it serves BLE until killed.
Prints "ready" once its IACA is written; serves until vpcd closes the connection twice."""
import datetime
import hashlib
import os
import socket
import struct
import uuid as uuid_module
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test process ignores SIGTERM; its children must not
import cbor2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mdoc_common import (AESGCM, authentication_bytes, cose_key, cose_key_public, emac_key, iv, mac0, session_keys, sign1, tag24)

PORT, IACA_OUT, HANDOVER, DEVICE_AUTH = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
BLE = len(sys.argv) > 7 and sys.argv[5] == "ble"
BLE_UUID = bytes.fromhex(sys.argv[6].replace("-", "")) if BLE else b""
# "session": the bus in DBUS_SESSION_BUS_ADDRESS (a test's private bus, TestSupport's PrivateDBus).
BLE_BUS = (os.environ.get("DBUS_SESSION_BUS_ADDRESS", "") if sys.argv[7] == "session" else sys.argv[7]) if BLE else ""
# bluez-central:hciN: the holder in mdoc central client mode (the reader advertises and serves GATT).
BLE_CENTRAL = BLE_BUS.startswith("bluez-central:")
QR_FILE = HANDOVER[3:] if HANDOVER.startswith("qr:") else None
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def certificate(subject, issuer, public_key, signing_key, ca, eku=None):
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(NOW - datetime.timedelta(days=1))
               .not_valid_after(NOW + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True))
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage([x509.ObjectIdentifier(eku)]), critical=True)
    return builder.sign(signing_key, hashes.SHA256())


iaca_key = ec.generate_private_key(ec.SECP256R1())
iaca_name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "ZZ"), x509.NameAttribute(NameOID.COMMON_NAME, "Independent Python IACA")])
iaca = certificate(iaca_name, iaca_name, iaca_key.public_key(), iaca_key, True)
ds_key = ec.generate_private_key(ec.SECP256R1())
ds = certificate(x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "ZZ"), x509.NameAttribute(NameOID.COMMON_NAME, "Independent Python DS")]),
                 iaca_name, ds_key.public_key(), iaca_key, False, "1.0.18013.5.1.2")
device_key = ec.generate_private_key(ec.SECP256R1())
with open(IACA_OUT, "wb") as f:
    f.write(iaca.public_bytes(serialization.Encoding.PEM))

NAMESPACE = "org.iso.18013.5.1"
ELEMENTS = {"family_name": "Independent", "given_name": "Holder", "birth_date": cbor2.CBORTag(1004, "1980-02-29"),
            "issuing_country": "ZZ", "document_number": "PY-0001", "age_over_18": True,
            "expiry_date": cbor2.CBORTag(1004, "2031-01-01"), "issuing_authority": "Python",
            "portrait": open(os.path.join(os.path.dirname(__file__), "../../../Fixtures/faces/face-jpeg.jpg"), "rb").read()}
ITEMS = {}
DIGESTS = {}
for index, (name, value) in enumerate(sorted(ELEMENTS.items())):
    item = cbor2.dumps({"digestID": index, "random": os.urandom(16), "elementIdentifier": name, "elementValue": value})
    ITEMS[name] = item
    DIGESTS[index] = hashlib.sha256(tag24(item)).digest()
tdate = lambda t: cbor2.CBORTag(0, t.strftime("%Y-%m-%dT%H:%M:%SZ"))
MSO = cbor2.dumps({"version": "1.0", "digestAlgorithm": "SHA-256", "valueDigests": {NAMESPACE: DIGESTS},
                   "deviceKeyInfo": {"deviceKey": cose_key(device_key.public_key())}, "docType": "org.iso.18013.5.1.mDL",
                   "validityInfo": {"signed": tdate(NOW), "validFrom": tdate(NOW), "validUntil": tdate(NOW + datetime.timedelta(days=365))}})
ISSUER_AUTH = sign1(tag24(MSO), ds_key, unprotected={33: ds.public_bytes(serialization.Encoding.DER)})


def record(tnf, rtype, payload, rid=b"", first=False, last=False):
    header = tnf | (0x80 if first else 0) | (0x40 if last else 0) | (0x10 if len(payload) < 256 else 0) | (0x08 if rid else 0)
    length = bytes([len(payload)]) if len(payload) < 256 else struct.pack(">I", len(payload))
    return bytes([header, len(rtype)]) + length + (bytes([len(rid)]) if rid else b"") + rtype + rid + payload


class Holder:
    def __init__(self):
        self.reset()

    def reset(self):
        self.app = None
        self.file = None
        self.ndef = b""
        self.phase = None
        self.write = None
        self.hs = None
        self.hr = None
        self.pending = b""
        self.incoming = b""
        self.session = None
        self.e_key = ec.generate_private_key(ec.SECP256R1())
        self.e_key_bytes = cbor2.dumps(cbor2.CBORTag(24, cbor2.dumps(cose_key(self.e_key.public_key()))))
        engagement = {0: "1.0", 1: [1, cbor2.CBORTag(24, cbor2.dumps(cose_key(self.e_key.public_key())))]}
        if BLE:
            engagement[2] = [[2, 1, {0: False, 1: True, 11: BLE_UUID} if BLE_CENTRAL else {0: True, 1: False, 10: BLE_UUID}]]
        self.engagement = cbor2.dumps(engagement)

    def ident(self):
        # ISO 18013-5 §8.3.3.1.1.3: HKDF-SHA-256(EDeviceKeyBytes, no salt, "BLEIdent", 16).
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        return HKDF(hashes.SHA256(), 16, None, b"BLEIdent").derive(self.e_key_bytes)

    def handover_select(self):
        if BLE:
            if HANDOVER == "negotiated" and b"application/vnd.bluetooth.le.oob" not in (self.hr or b""):
                print("the reader's Handover Request does not offer BLE", file=sys.stderr, flush=True)
                raise EOFError
            # LE role: peripheral only (0x00), or central only (0x01) in central client mode; the
            # service UUID as a 128-bit AD (little-endian).
            oob = (b"\x02\x1c\x01" if BLE_CENTRAL else b"\x02\x1c\x00") + b"\x11\x07" + BLE_UUID[::-1]
            ac = record(1, b"ac", b"\x01\x010\x01\x04mdoc", first=True, last=True)
            return (record(1, b"Hs", b"\x15" + ac, first=True)
                    + record(2, b"application/vnd.bluetooth.le.oob", oob, rid=b"0")
                    + record(4, b"iso.org:18013:deviceengagement", self.engagement, rid=b"mdoc", last=True))
        ac = record(1, b"ac", b"\x01\x03nfc\x01\x04mdoc", first=True, last=True)
        return (record(1, b"Hs", b"\x15" + ac, first=True)
                + record(4, b"iso.org:18013:nfc", b"\x01\x03\x01\xff\xff\x04\x02\x01\x00\x00", rid=b"nfc")
                + record(4, b"iso.org:18013:deviceengagement", self.engagement, rid=b"mdoc", last=True))

    def apdu(self, c):
        cla, ins, p1, p2 = c[0], c[1], c[2], c[3]
        body = c[4:]
        data, le = b"", 256
        if len(body) == 1:
            le = body[0] or 256
        elif len(body) > 1:
            if body[0] == 0 and len(body) >= 3:  # extended
                lc = int.from_bytes(body[1:3], "big")
                if len(body) == 3:
                    le, lc = lc or 65536, 0
                data = body[3:3 + lc]
                rest = body[3 + lc:]
                if rest:
                    le = int.from_bytes(rest, "big") or 65536
            else:
                lc = body[0]
                data = body[1:1 + lc]
                rest = body[1 + lc:]
                if rest:
                    le = rest[0] or 256
        if ins == 0xA4 and p1 == 0x04:
            if data == bytes.fromhex("D2760000850101"):
                self.reset()
                self.app = "ndef"
                if HANDOVER == "static":
                    self.hs = self.handover_select()
                    self.ndef = len(self.hs).to_bytes(2, "big") + self.hs
                else:
                    name = b"urn:nfc:sn:handover"
                    tp = record(1, b"Tp", b"\x10" + bytes([len(name)]) + name + b"\x00\x00\x0f\x7f\xff", first=True, last=True)
                    self.ndef = len(tp).to_bytes(2, "big") + tp
                    self.phase = "select"
                return b"\x90\x00"
            if data == bytes.fromhex("A0000002480400") and self.hs:
                self.app = "mdoc"
                return b"\x90\x00"
            return b"\x6a\x82"
        if ins == 0xA4 and p1 == 0x00:
            self.file = data
            return b"\x90\x00" if data in (b"\xe1\x03", b"\xe1\x04") else b"\x6a\x82"
        if ins == 0xB0:
            content = bytes.fromhex("000F20FFFFFFFF0406E1047FFF00") + (b"\x00" if HANDOVER == "negotiated" else b"\xff") if self.file == b"\xe1\x03" else self.ndef
            offset = p1 << 8 | p2
            if offset > len(content):
                return b"\x6b\x00"
            return content[offset:offset + le] + b"\x90\x00"
        if ins == 0xD6:
            offset = p1 << 8 | p2
            if offset == 0 and len(data) == 2:
                n = int.from_bytes(data, "big")
                if n == 0:
                    self.write = b""
                    self.ndef = b"\x00\x00"
                    return b"\x90\x00"
                message = self.write
                self.write = None
                if self.phase == "select":
                    self.phase = "request"
                    te = record(1, b"Te", b"\x00", first=True, last=True)
                    self.ndef = len(te).to_bytes(2, "big") + te
                elif self.phase == "request":
                    self.hr = message
                    self.hs = self.handover_select()
                    self.ndef = len(self.hs).to_bytes(2, "big") + self.hs
                    self.phase = "done"
                return b"\x90\x00"
            self.write += data
            return b"\x90\x00"
        if ins == 0xC3:
            self.incoming += data
            if cla & 0x10:
                return b"\x90\x00"
            message = self.incoming
            self.incoming = b""
            n = message[1]
            start = 2
            if n & 0x80:
                start = 2 + (n & 0x7F)
            answer = self.respond(message[start:])
            if not answer:
                return b"\x90\x00"
            length = len(answer)
            if length < 0x80:
                head = bytes([length])
            elif length < 0x100:
                head = b"\x81" + bytes([length])
            elif length < 0x10000:
                head = b"\x82" + length.to_bytes(2, "big")
            else:
                head = b"\x83" + length.to_bytes(3, "big")
            self.pending = b"\x53" + head + answer
            return self.chunk(le)
        if ins == 0xC0:
            return self.chunk(le)
        return b"\x6d\x00"

    def chunk(self, le):
        part, self.pending = self.pending[:min(le, 65533)], self.pending[min(le, 65533):]
        if not self.pending:
            return part + b"\x90\x00"
        return part + b"\x61" + bytes([len(self.pending) if len(self.pending) <= 255 else 0])

    def respond(self, message):
        decoded = cbor2.loads(message)
        if self.session is None:
            reader_key_bytes = decoded["eReaderKey"]
            reader_key = cose_key_public(cbor2.loads(reader_key_bytes.value))
            handover = None if QR_FILE else [self.hs, self.hr]
            transcript = [cbor2.CBORTag(24, self.engagement), reader_key_bytes, handover]
            self.transcript_bytes = tag24(cbor2.dumps(transcript))
            sk_reader, sk_device = session_keys(self.e_key, reader_key, self.transcript_bytes)
            self.session = (sk_reader, sk_device)
            self.reader_key = reader_key
            request = cbor2.loads(AESGCM(sk_reader).decrypt(iv(0, 1), decoded["data"], None))
            return cbor2.dumps({"data": AESGCM(sk_device).encrypt(iv(1, 1), self.answer(request), None)})
        if decoded.get("status") == 20:
            return b""
        return cbor2.dumps({"status": 10})

    def answer(self, request):
        documents = []
        for doc in request["docRequests"]:
            items = cbor2.loads(doc["itemsRequest"].value)
            if items["docType"] != "org.iso.18013.5.1.mDL":
                continue
            wanted = items["nameSpaces"].get(NAMESPACE, {})
            returned = [cbor2.CBORTag(24, ITEMS[name]) for name in wanted if name in ITEMS]
            device_namespaces = cbor2.CBORTag(24, cbor2.dumps({}))
            payload = authentication_bytes("DeviceAuthentication", self.transcript_bytes, cbor2.dumps("org.iso.18013.5.1.mDL"),
                                           cbor2.dumps(device_namespaces))
            if DEVICE_AUTH == "mac":
                auth = {"deviceMac": mac0(payload, emac_key(device_key, self.reader_key, self.transcript_bytes))}
            else:
                auth = {"deviceSignature": sign1(payload, device_key, detached=True)}
            documents.append({"docType": "org.iso.18013.5.1.mDL",
                              "issuerSigned": {"nameSpaces": {NAMESPACE: returned}, "issuerAuth": ISSUER_AUTH},
                              "deviceSigned": {"nameSpaces": device_namespaces, "deviceAuth": auth}})
        return cbor2.dumps({"version": "1.0", "documents": documents, "status": 0})


def serve(holder):
    sock = socket.create_connection(("127.0.0.1", PORT))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print("ready", flush=True)

    def read(n):
        data = b""
        while len(data) < n:
            part = sock.recv(n - len(data))
            if not part:
                raise EOFError
            data += part
        return data
    try:
        while True:
            length = int.from_bytes(read(2), "big")
            payload = read(length)
            if length == 1:
                if payload[0] in (0, 1, 2) and not (BLE and holder.session is not None):
                    holder.reset()
                elif payload[0] == 4:
                    atr = bytes.fromhex("3B8080010101")[:5]
                    sock.sendall(len(atr).to_bytes(2, "big") + atr)
                continue
            answer = holder.apdu(payload)
            sock.sendall(len(answer).to_bytes(2, "big") + answer)
    except EOFError:
        pass


if BLE:
    # The GATT side on the stand-in bluetoothd or on the real one, its GLib loop here; vpcd on a thread of its own.
    import threading

    import dbus
    import dbus.mainloop.glib
    from gi.repository import GLib

    dbus.mainloop.glib.threads_init()
    loop = dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    the_holder = Holder()
    service_uuid = str(uuid_module.UUID(bytes=BLE_UUID))
    if BLE_CENTRAL:
        import bluez_central_holder
        _, adapter_name, *rest = BLE_BUS.split(":")
        kept = bluez_central_holder.serve(dbus.SystemBus(mainloop=loop), "/org/bluez/" + adapter_name, service_uuid,
                                          lambda: the_holder.ident(), the_holder.respond, rest[0] if rest else "good")
    elif BLE_BUS.startswith("bluez:"):
        import bluez_peripheral_holder
        _, adapter_name, *rest = BLE_BUS.split(":")
        kept = bluez_peripheral_holder.serve(dbus.SystemBus(mainloop=loop), "/org/bluez/" + adapter_name, service_uuid,
                                             lambda: the_holder.ident(), the_holder.respond, rest[0] if rest else "good")
    else:
        import fake_bluez_holder
        bus = dbus.bus.BusConnection(BLE_BUS, mainloop=loop)
        kept = fake_bluez_holder.serve(bus, service_uuid, lambda: the_holder.ident(), the_holder.respond)
    main = GLib.MainLoop()

    def vpcd():
        serve(the_holder)
        GLib.idle_add(main.quit)
    if QR_FILE:
        import base64
        with open(QR_FILE + ".part", "w") as out:
            out.write("mdoc:" + base64.urlsafe_b64encode(the_holder.engagement).decode().rstrip("="))
        os.rename(QR_FILE + ".part", QR_FILE)
        print("ready", flush=True)
    else:
        threading.Thread(target=vpcd, daemon=True).start()
    main.run()
else:
    serve(Holder())
