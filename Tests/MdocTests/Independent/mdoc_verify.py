#!/usr/bin/python3
"""Verifies a DeviceResponse against its SessionTranscript with cbor2 and cryptography alone:
issuerAuth by the DS certificate in x5chain, the DS certificate by the IACA, every returned
element's digest, deviceSignature or deviceMac (EMacKey from the reader's ephemeral key).
Usage: mdoc_verify.py RESPONSE TRANSCRIPT READER_KEY(COSE_Key with d, or -) IACA_PEM
Prints one JSON object: {"issuerSignature", "chain", "digests": {element: bool}, "device"}."""
import hashlib
import json
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test process ignores SIGTERM; its children must not
import cbor2
from cryptography.hazmat.primitives.asymmetric import ec
from mdoc_common import (authentication_bytes, cose_key_public, emac_key, load_certificate, tag24, verify_mac0, verify_sign1, CURVES)


def main():
    response = cbor2.loads(open(sys.argv[1], "rb").read())
    transcript_bytes = open(sys.argv[2], "rb").read()
    if not isinstance(cbor2.loads(transcript_bytes), cbor2.CBORTag):
        transcript_bytes = tag24(transcript_bytes)
    reader_key = None if sys.argv[3] == "-" else cbor2.loads(open(sys.argv[3], "rb").read())
    iaca = load_certificate(open(sys.argv[4], "rb").read())
    out = {"documents": []}
    for document in response.get("documents", []):
        issuer_signed = document["issuerSigned"]
        auth = issuer_signed["issuerAuth"]
        x5chain = auth[1][33]
        ds = load_certificate(x5chain if isinstance(x5chain, bytes) else x5chain[0])
        result = {"docType": document["docType"]}
        result["issuerSignature"] = verify_sign1(auth, ds.public_key())
        try:
            iaca.public_key().verify(ds.signature, ds.tbs_certificate_bytes, ec.ECDSA(ds.signature_hash_algorithm))
            result["chain"] = ds.issuer == iaca.subject
        except Exception:
            result["chain"] = False
        mso = cbor2.loads(cbor2.loads(auth[2]).value)
        digests = {}
        for namespace, items in issuer_signed.get("nameSpaces", {}).items():
            for item in items:
                item_bytes = cbor2.dumps(item) if not isinstance(item, cbor2.CBORTag) else tag24(item.value)
                decoded = cbor2.loads(item.value)
                expected = mso["valueDigests"].get(namespace, {}).get(decoded["digestID"])
                digests[decoded["elementIdentifier"]] = expected == hashlib.sha256(item_bytes).digest()
        result["digests"] = digests
        result["msoDocType"] = mso["docType"] == document["docType"]
        device_signed = document["deviceSigned"]
        namespaces_bytes = tag24(device_signed["nameSpaces"].value)
        payload = authentication_bytes("DeviceAuthentication", transcript_bytes, cbor2.dumps(document["docType"]), namespaces_bytes)
        device_key = cose_key_public(mso["deviceKeyInfo"]["deviceKey"])
        device_auth = device_signed["deviceAuth"]
        if "deviceSignature" in device_auth:
            result["device"] = verify_sign1(device_auth["deviceSignature"], device_key, detached=payload)
            result["deviceAuthentication"] = "signature"
        else:
            result["deviceAuthentication"] = "mac"
            if reader_key is None:
                result["device"] = None
            else:
                private = ec.derive_private_key(int.from_bytes(reader_key[-4], "big"), CURVES[reader_key[-1]])
                result["device"] = verify_mac0(device_auth["deviceMac"], emac_key(private, device_key, transcript_bytes), payload)
        out["documents"].append(result)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
