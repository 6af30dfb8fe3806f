#!/usr/bin/python3
"""Writes a VICAL (ISO 18013-5 Annex C) with cbor2 and cryptography alone: a fresh VICAL CA
certifies a VICAL signer, which signs (COSE_Sign1, ES256, x5chain [signer, CA]) a list of the IACA
certificates given. Usage: make_vical.py OUT.vical CA_OUT.pem IACA.pem… Prints the CA's SHA-256."""
import datetime
import hashlib
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test process ignores SIGTERM; its children must not
import cbor2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mdoc_common import load_certificate, sign1

now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def certificate(subject, issuer, key, signer, ca):
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True).sign(signer, hashes.SHA256()))


ca_key, signer_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test VICAL CA")])
ca = certificate(ca_name, ca_name, ca_key, ca_key, True)
signer = certificate(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test VICAL Signer")]), ca_name, signer_key, ca_key, False)
infos = []
for path in sys.argv[3:]:
    iaca = load_certificate(open(path, "rb").read())
    infos.append({"certificate": iaca.public_bytes(serialization.Encoding.DER), "serialNumber": cbor2.CBORTag(2, iaca.serial_number.to_bytes(20, "big").lstrip(b"\0")),
                  "ski": b"", "docType": ["org.iso.18013.5.1.mDL"], "issuingCountry": "UT"})
payload = cbor2.dumps({"version": "1.0", "vicalProvider": "GBGBridge tests", "date": cbor2.CBORTag(0, now.strftime("%Y-%m-%dT%H:%M:%SZ")),
                       "vicalIssueID": 1, "certificateInfos": infos})
der = lambda c: c.public_bytes(serialization.Encoding.DER)
vical = cbor2.dumps(cbor2.CBORTag(18, sign1(payload, signer_key, unprotected={33: [der(signer), der(ca)]})))
open(sys.argv[1], "wb").write(vical)
open(sys.argv[2], "wb").write(ca.public_bytes(serialization.Encoding.PEM))
print(hashlib.sha256(der(ca)).hexdigest().upper())
