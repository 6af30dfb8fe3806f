#!/usr/bin/python3
"""CRLs of the test PKI's CSCA (Fixtures/pki) for the trust-refresh tests, made by Python's
cryptography: `crls.py CSCA-CERT CSCA-KEY DS-CERT OUT-DIR` writes
  mid.crl      thisUpdate 5 days ago, nothing revoked            (what the store holds at first)
  new.crl      thisUpdate an hour ago, the document signer revoked
  old.crl      thisUpdate 10 days ago                           (older than the store's: refused)
  future.crl   thisUpdate in 10 days                            (issued in the future: refused)
  forged.crl   the CSCA's name, signed by another key           (refused)
"""
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

csca = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), password=None)
ds = x509.load_pem_x509_certificate(open(sys.argv[3], "rb").read())
out = sys.argv[4]
now = datetime.datetime.now(datetime.timezone.utc)

def crl(name, issued, signer, revoke):
    builder = (x509.CertificateRevocationListBuilder().issuer_name(csca.subject).last_update(issued)
               .next_update(issued + datetime.timedelta(days=30)))
    if revoke:
        builder = builder.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(ds.serial_number)
                                                  .revocation_date(issued).build())
    open(out + "/" + name, "wb").write(builder.sign(signer, hashes.SHA256()).public_bytes(serialization.Encoding.DER))

crl("mid.crl", now - datetime.timedelta(days=5), key, False)
crl("new.crl", now - datetime.timedelta(hours=1), key, True)
crl("old.crl", now - datetime.timedelta(days=10), key, False)
crl("future.crl", now + datetime.timedelta(days=10), key, False)
other = ec.generate_private_key(ec.SECP256R1()) if isinstance(key, ec.EllipticCurvePrivateKey) else None
if other is None:
    from cryptography.hazmat.primitives.asymmetric import rsa
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
crl("forged.crl", now - datetime.timedelta(minutes=30), other, True)
