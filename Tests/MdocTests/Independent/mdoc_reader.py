#!/usr/bin/python3
"""An mdoc reader written from ISO/IEC 18013-5 and the NFC Forum specifications with pyscard,
cbor2 and cryptography alone (no GBGBridge code): it reads the holder in a PC/SC reader — static
or negotiated handover, short APDUs with command chaining and GET RESPONSE — and verifies the
response (issuer signature, chain to the IACA given, digests, device signature or MAC).
Usage: mdoc_reader.py READER_SUBSTRING IACA.pem ELEMENT[,ELEMENT…]
Prints one JSON object."""
import hashlib
import json
import os
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test process ignores SIGTERM; its children must not
import time
import cbor2
from cryptography.hazmat.primitives.asymmetric import ec
from smartcard.System import readers
from mdoc_common import (AESGCM, authentication_bytes, cose_key, cose_key_public, emac_key, iv, load_certificate, session_keys,
                         tag24, verify_mac0, verify_sign1)

READER, IACA, ELEMENTS = sys.argv[1], load_certificate(open(sys.argv[2], "rb").read()), sys.argv[3].split(",")
NAMESPACE = "org.iso.18013.5.1"


def connect():
    deadline = time.time() + 10
    while True:
        for reader in readers():
            if READER in str(reader):
                try:
                    connection = reader.createConnection()
                    connection.connect()
                    return connection
                except Exception:
                    pass
        if time.time() > deadline:
            raise SystemExit(json.dumps({"error": "no card"}))
        time.sleep(0.2)


card = connect()
apdus = 0


def transmit(apdu):
    global apdus
    apdus += 1
    if apdus > 5000:
        raise SystemExit(json.dumps({"error": "too many APDUs"}))
    data, sw1, sw2 = card.transmit(list(apdu))
    return bytes(data), sw1 << 8 | sw2


def ok(apdu):
    data, sw = transmit(apdu)
    if sw != 0x9000:
        raise SystemExit(json.dumps({"error": "status %04X to %s" % (sw, bytes(apdu[:4]).hex())}))
    return data


def records(message):
    out, i = [], 0
    while i < len(message):
        header, type_length = message[i], message[i + 1]
        i += 2
        if header & 0x10:
            payload_length = message[i]
            i += 1
        else:
            payload_length = int.from_bytes(message[i:i + 4], "big")
            i += 4
        id_length = 0
        if header & 0x08:
            id_length = message[i]
            i += 1
        rtype = message[i:i + type_length]
        i += type_length
        rid = message[i:i + id_length]
        i += id_length
        out.append((header & 7, rtype, rid, message[i:i + payload_length]))
        i += payload_length
    return out


def record(tnf, rtype, payload, rid=b"", first=False, last=False):
    header = tnf | (0x80 if first else 0) | (0x40 if last else 0) | 0x10 | (0x08 if rid else 0)
    return bytes([header, len(rtype), len(payload)]) + (bytes([len(rid)]) if rid else b"") + rtype + rid + payload


def read_ndef():
    length = int.from_bytes(ok([0, 0xB0, 0, 0, 2]), "big")
    message = b""
    while len(message) < length:
        offset = 2 + len(message)
        message += ok([0, 0xB0, offset >> 8, offset & 0xFF, min(255, length - len(message))])
    return message


def write_ndef(message):
    ok([0, 0xD6, 0, 0, 2, 0, 0])
    sent = 0
    while sent < len(message):
        part = message[sent:sent + 255]
        offset = 2 + sent
        ok([0, 0xD6, offset >> 8, offset & 0xFF, len(part)] + list(part))
        sent += len(part)
    ok([0, 0xD6, 0, 0, 2, len(message) >> 8, len(message) & 0xFF])


def tnep(message):
    write_ndef(message)
    for _ in range(20):
        time.sleep(0.01)
        answer = read_ndef() if int.from_bytes(ok([0, 0xB0, 0, 0, 2]), "big") else b""
        if answer and answer != message:
            return answer
    raise SystemExit(json.dumps({"error": "no TNEP answer"}))


ok([0, 0xA4, 0x04, 0x00, 7] + list(bytes.fromhex("D2760000850101")) + [0])
ok([0, 0xA4, 0x00, 0x0C, 2, 0xE1, 0x03])
cc = ok([0, 0xB0, 0, 0, 15])
ok([0, 0xA4, 0x00, 0x0C, 2] + list(cc[9:11]))
initial = read_ndef()
handover_request = None
if records(initial)[0][1] == b"Hs":
    handover_select, mode = initial, "static"
else:
    name = b"urn:nfc:sn:handover"
    status = records(tnep(record(1, b"Ts", bytes([len(name)]) + name, first=True, last=True)))
    assert status[0][1] == b"Te" and status[0][3] == b"\x00", status
    ac = record(1, b"cr", os.urandom(2), first=True) + record(1, b"ac", b"\x01\x03nfc\x00", last=True)
    handover_request = record(1, b"Hr", b"\x15" + ac, first=True) + record(4, b"iso.org:18013:nfc", b"\x01", rid=b"nfc", last=True)
    handover_select, mode = tnep(handover_request), "negotiated"
engagement = next(payload for tnf, rtype, rid, payload in records(handover_select) if rtype == b"iso.org:18013:deviceengagement")
device_engagement = cbor2.loads(engagement)
e_device = cose_key_public(cbor2.loads(device_engagement[1][1].value))
e_reader = ec.generate_private_key(ec.SECP256R1())
e_reader_bytes = cbor2.CBORTag(24, cbor2.dumps(cose_key(e_reader.public_key())))
transcript_bytes = tag24(cbor2.dumps([cbor2.CBORTag(24, engagement), e_reader_bytes, [handover_select, handover_request]]))
sk_reader, sk_device = session_keys(e_reader, e_device, transcript_bytes)
items_request = cbor2.dumps({"docType": "org.iso.18013.5.1.mDL", "nameSpaces": {NAMESPACE: {e: False for e in ELEMENTS}}})
device_request = cbor2.dumps({"version": "1.0", "docRequests": [{"itemsRequest": cbor2.CBORTag(24, items_request)}]})
establishment = cbor2.dumps({"eReaderKey": e_reader_bytes, "data": AESGCM(sk_reader).encrypt(iv(0, 1), device_request, None)})


def envelope(message):
    n = len(message)
    head = bytes([n]) if n < 0x80 else b"\x81" + bytes([n]) if n < 0x100 else b"\x82" + n.to_bytes(2, "big") if n < 0x10000 else b"\x83" + n.to_bytes(3, "big")
    wrapped = b"\x53" + head + message
    for start in range(0, len(wrapped), 255):
        part = wrapped[start:start + 255]
        last = start + 255 >= len(wrapped)
        data, sw = transmit([0x00 if last else 0x10, 0xC3, 0, 0, len(part)] + list(part) + ([0] if last else []))
        if not last and sw != 0x9000:
            raise SystemExit(json.dumps({"error": "chained ENVELOPE %04X" % sw}))
    answer = data
    while sw >> 8 == 0x61:
        data, sw = transmit([0, 0xC0, 0, 0, sw & 0xFF])
        answer += data
    if sw != 0x9000:
        raise SystemExit(json.dumps({"error": "ENVELOPE %04X" % sw}))
    if not answer:
        return b""
    n = answer[1]
    start = 2 + (n & 0x7F if n & 0x80 else 0)
    return answer[start:]


ok([0, 0xA4, 0x04, 0x0C, 7] + list(bytes.fromhex("A0000002480400")))
session_data = cbor2.loads(envelope(establishment))
response = cbor2.loads(AESGCM(sk_device).decrypt(iv(1, 1), session_data["data"], None))
envelope(cbor2.dumps({"status": 20}))
result = {"handover": mode, "apdus": apdus, "documents": []}
for document in response.get("documents", []):
    auth = document["issuerSigned"]["issuerAuth"]
    x5chain = auth[1][33]
    ds = load_certificate(x5chain if isinstance(x5chain, bytes) else x5chain[0])
    try:
        IACA.public_key().verify(ds.signature, ds.tbs_certificate_bytes, ec.ECDSA(ds.signature_hash_algorithm))
        chain = ds.issuer == IACA.subject
    except Exception:
        chain = False
    mso = cbor2.loads(cbor2.loads(auth[2]).value)
    elements, digests = {}, {}
    for namespace, items in document["issuerSigned"].get("nameSpaces", {}).items():
        for item in items:
            decoded = cbor2.loads(item.value)
            digests[decoded["elementIdentifier"]] = mso["valueDigests"][namespace].get(decoded["digestID"]) == hashlib.sha256(tag24(item.value)).digest()
            value = decoded["elementValue"]
            elements[decoded["elementIdentifier"]] = value.value if isinstance(value, cbor2.CBORTag) else (len(value) if isinstance(value, bytes) else value)
    namespaces = document["deviceSigned"]["nameSpaces"]
    payload = authentication_bytes("DeviceAuthentication", transcript_bytes, cbor2.dumps(document["docType"]), tag24(namespaces.value))
    device_key = cose_key_public(mso["deviceKeyInfo"]["deviceKey"])
    device_auth = document["deviceSigned"]["deviceAuth"]
    if "deviceSignature" in device_auth:
        device = verify_sign1(device_auth["deviceSignature"], device_key, detached=payload)
    else:
        device = verify_mac0(device_auth["deviceMac"], emac_key(e_reader, device_key, transcript_bytes), payload)
    result["documents"].append({"docType": document["docType"], "issuerSignature": verify_sign1(auth, ds.public_key()), "chain": chain,
                                "digests": digests, "device": device, "elements": elements,
                                "deviceAuthentication": "signature" if "deviceSignature" in device_auth else "mac"})
print(json.dumps(result, sort_keys=True, default=str))
