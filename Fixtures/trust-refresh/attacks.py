#!/usr/bin/python3
"""The red team's trust-refresh attacks (issue 49), made by Python's cryptography against the test
PKI (Fixtures/pki): `attacks.py CSCA-CERT CSCA-KEY DS-CERT OUT-DIR` writes

  mitm-csca.cer      an attacker's self-signed CSCA with the test CSCA's very subject ("UT")
  mitm-ds.pem/.key   a document signer that attacker CSCA issued (the forged chip's)
  twin-csca.cer      a "twin": the test CSCA's subject and SubjectKeyIdentifier, another key, a later notAfter
  twin-ds.pem/.key   a document signer the twin issued
  link-csca.cer      a link certificate: a second test CSCA key (same subject), signed by the genuine key
  link-ds.pem/.key   a document signer the second key issued
  key2-empty.crl     the second key's CRL: the same issuer name, newer, nothing revoked
  link.sha256, mitm.sha256, twin.sha256   the SHA-256 fingerprints (upper-case hex) of those certificates
"""
import datetime, hashlib, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

csca = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
csca_key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), password=None)
ds = x509.load_pem_x509_certificate(open(sys.argv[3], "rb").read())
out = sys.argv[4]
now = datetime.datetime.now(datetime.timezone.utc)
ski = csca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value


def write(name, data):
    open(out + "/" + name, "wb").write(data)


def ca(subject_key, issuer, issuer_key, days, ski_value=None, aki_from=None):
    builder = (x509.CertificateBuilder().subject_name(csca.subject).issuer_name(issuer).public_key(subject_key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=2))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(ski_value or x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True))
    if aki_from is not None:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(aki_from.public_key()), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def document_signer(prefix, issuer_key, issuer_cert_key_for_aki):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "UT"), x509.NameAttribute(NameOID.COMMON_NAME, prefix + " document signer")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(csca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_cert_key_for_aki.public_key()), critical=False)
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            .sign(issuer_key, hashes.SHA256()))
    write(prefix + "-ds.pem", cert.public_bytes(serialization.Encoding.PEM))
    write(prefix + "-ds.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def fingerprint(name, cert):
    write(name, hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest().upper().encode())


# 1. A man in the middle's "UT" CSCA: self-signed, the genuine subject.
mitm_key = ec.generate_private_key(ec.SECP256R1())
mitm = ca(mitm_key, csca.subject, mitm_key, 3650)
write("mitm-csca.cer", mitm.public_bytes(serialization.Encoding.DER))
fingerprint("mitm.sha256", mitm)
document_signer("mitm", mitm_key, mitm_key)

# 2. The twin: the genuine subject and SubjectKeyIdentifier, another key, a later notAfter.
twin_key = ec.generate_private_key(ec.SECP256R1())
twin = ca(twin_key, csca.subject, twin_key, 7300, ski_value=ski)
write("twin-csca.cer", twin.public_bytes(serialization.Encoding.DER))
fingerprint("twin.sha256", twin)
document_signer("twin", twin_key, twin_key)

# 3. Key rollover: a second key of the same CSCA, introduced by a link certificate the genuine key signed.
key2 = ec.generate_private_key(ec.SECP256R1())
link = ca(key2, csca.subject, csca_key, 3650, aki_from=csca_key)
write("link-csca.cer", link.public_bytes(serialization.Encoding.DER))
fingerprint("link.sha256", link)
document_signer("link", key2, key2)
empty = (x509.CertificateRevocationListBuilder().issuer_name(csca.subject).last_update(now - datetime.timedelta(minutes=10))
         .next_update(now + datetime.timedelta(days=30))
         .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key2.public_key()), critical=False)
         .sign(key2, hashes.SHA256()))
write("key2-empty.crl", empty.public_bytes(serialization.Encoding.DER))
