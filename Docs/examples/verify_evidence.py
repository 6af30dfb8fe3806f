#!/usr/bin/env python3
"""Verify GBGBridge chip evidence on a backend, independently of the kiosk.

    python3 verify_evidence.py EVIDENCE.json [--challenge BASE64] [--csca CSCA.pem]

EVIDENCE.json is nfc.read's `data` (with `evidence: true`), its `evidence` object alone, or what
`gbgbridge read --evidence FILE` writes. The script checks, with nothing but Python's standard
library and `cryptography`:

  1. every data group's hash against the LDS security object in EF.SOD;
  2. EF.SOD's CMS signature with the document signer certificate it embeds (and, with --csca,
     that certificate's signature by the CSCA — a real backend checks the whole chain, validity
     and revocation against its ICAO master list);
  3. Active Authentication: the chip's INTERNAL AUTHENTICATE signature with DG15's public key over
     the challenge — with --challenge, only if that is the challenge the backend chose.

It prints a JSON verdict and exits 0 when everything it checked passed, 1 otherwise.
Chip Authentication and PACE-CAM cannot be checked from evidence (they happen inside the secure
channel); the script reports the host's statement of them as such.
"""
import argparse
import base64
import hashlib
import json
import sys

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
from cryptography.hazmat.primitives.serialization import load_der_public_key


# --- a minimal DER reader: (tag, value, whole encoding) triples ------------------------------

def der_items(data):
    """Yields (tag, value, encoded) for each TLV in `data`."""
    i = 0
    while i < len(data):
        start = i
        tag = data[i]
        i += 1
        if tag & 0x1F == 0x1F:                      # multi-byte tag
            while data[i] & 0x80:
                tag = (tag << 8) | data[i]
                i += 1
            tag = (tag << 8) | data[i]
            i += 1
        length = data[i]
        i += 1
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(data[i:i + count], "big")
            i += count
        yield tag, data[i:i + length], data[start:i + length]
        i += length


def children(value):
    return list(der_items(value))


def oid(value):
    """Dotted form of an OBJECT IDENTIFIER's content octets."""
    first = value[0]
    arcs = [first // 40 if first < 80 else 2, first % 40 if first < 80 else first - 80]
    n = 0
    for byte in value[1:]:
        n = (n << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(n)
            n = 0
    return ".".join(map(str, arcs))


HASHES = {
    "1.3.14.3.2.26": "sha1", "2.16.840.1.101.3.4.2.4": "sha224", "2.16.840.1.101.3.4.2.1": "sha256",
    "2.16.840.1.101.3.4.2.2": "sha384", "2.16.840.1.101.3.4.2.3": "sha512",
}
CRYPTO_HASHES = {"sha1": hashes.SHA1(), "sha224": hashes.SHA224(), "sha256": hashes.SHA256(),
                 "sha384": hashes.SHA384(), "sha512": hashes.SHA512()}


# --- EF.SOD ------------------------------------------------------------------------------------

def parse_sod(sod):
    """EF.SOD (tag 77) → (LDS security object bytes, digest name, {dg: hash}, signer cert, signer info)."""
    (tag, content, _), = der_items(sod)
    assert tag == 0x77, "EF.SOD does not start with tag 77"
    (_, content_info, _), = der_items(content)
    _, explicit = children(content_info)[:2]            # contentType, [0] content
    (_, signed_data, _), = der_items(explicit[1])
    fields = children(signed_data)
    encap = children(fields[2][1])                        # encapContentInfo
    (_, octets, _), = der_items(encap[1][1])              # [0] EXPLICIT OCTET STRING
    lds = octets
    certificates = [f for f in fields if f[0] == 0xA0]
    signer_infos = [f for f in fields if f[0] == 0x31][-1]
    certificate = x509.load_der_x509_certificate(children(certificates[0][1])[0][2]) if certificates else None
    signer_info = children(signer_infos[1])[0][1]
    lso = children(children(lds)[0][1])                   # LDSSecurityObject
    digest = HASHES[oid(children(lso[1][1])[0][1])]
    hashes_by_dg = {}
    for _, entry, _ in children(lso[2][1]):
        number, value = children(entry)
        hashes_by_dg[int.from_bytes(number[1], "big")] = value[1]
    return lds, digest, hashes_by_dg, certificate, signer_info


def verify_sod_signature(lds, certificate, signer_info):
    """The CMS signature: signed attributes (messageDigest = hash of the LDS object) signed by the DS."""
    fields = children(signer_info)
    digest_name = HASHES[oid(children(fields[2][1])[0][1])]
    signed_attributes = next((f for f in fields if f[0] == 0xA0), None)
    # signatureAlgorithm and signature follow the signed attributes (unsigned ones may come after).
    position = max(i for i, f in enumerate(fields) if f[0] == 0x04)
    signature_algorithm = oid(children(fields[position - 1][1])[0][1])
    signature = fields[position][1]
    if signed_attributes is not None:
        for _, attribute, _ in children(signed_attributes[1]):
            attribute_type, values = children(attribute)
            if oid(attribute_type[1]) == "1.2.840.113549.1.9.4":       # messageDigest
                if children(values[1])[0][1] != hashlib.new(digest_name, lds).digest():
                    return False, "messageDigest does not match the LDS security object"
        signed = b"\x31" + signed_attributes[2][1:]                   # [0] IMPLICIT → SET OF
    else:
        signed = lds
    key = certificate.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            if signature_algorithm == "1.2.840.113549.1.1.10":
                key.verify(signature, signed, padding.PSS(padding.MGF1(CRYPTO_HASHES[digest_name]), padding.PSS.AUTO),
                           CRYPTO_HASHES[digest_name])
            else:
                key.verify(signature, signed, padding.PKCS1v15(), CRYPTO_HASHES[digest_name])
        else:
            key.verify(signature, signed, ec.ECDSA(CRYPTO_HASHES[digest_name]))
    except InvalidSignature:
        return False, "the signature does not verify with the embedded document signer certificate"
    return True, "signed by " + certificate.subject.rfc4514_string()


# --- Active Authentication -------------------------------------------------------------------

ISO9796_TRAILERS = {0x33: "sha1", 0x34: "sha256", 0x35: "sha512", 0x36: "sha384", 0x38: "sha224"}


def verify_active_authentication(dg15, challenge, signature):
    (tag, spki, _), = der_items(dg15)
    assert tag == 0x6F, "DG15 does not start with tag 6F"
    key = load_der_public_key(spki)
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        size = (numbers.n.bit_length() + 7) // 8
        block = pow(int.from_bytes(signature, "big"), numbers.e, numbers.n).to_bytes(size, "big")
        # ISO/IEC 9796-2 scheme 1: 6A ‖ M1 ‖ H(M1 ‖ challenge) ‖ BC (SHA-1) or ‖ hash-id CC.
        if block[0] != 0x6A:
            return False
        if block[-1] == 0xBC:
            name, trailer = "sha1", 1
        elif block[-1] == 0xCC and block[-2] in ISO9796_TRAILERS:
            name, trailer = ISO9796_TRAILERS[block[-2]], 2
        else:
            return False
        length = hashlib.new(name).digest_size
        recovered = block[1:len(block) - trailer - length]
        return hashlib.new(name, recovered + challenge).digest() == block[len(block) - trailer - length:len(block) - trailer]
    # ECDSA: the signature is plain r ‖ s (BSI TR-03111); SHA-256 unless DG14's
    # ActiveAuthenticationInfo names another (our evidence's chips use ecdsa-with-SHA256).
    half = len(signature) // 2
    der = utils.encode_dss_signature(int.from_bytes(signature[:half], "big"), int.from_bytes(signature[half:], "big"))
    try:
        key.verify(der, challenge, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("evidence")
    parser.add_argument("--challenge", help="the 8-byte challenge the backend chose, base64")
    parser.add_argument("--csca", help="the CSCA certificate (PEM) that should have issued the document signer")
    arguments = parser.parse_args()

    document = json.load(open(arguments.evidence))
    evidence = document.get("evidence", document)
    files = {entry["name"]: base64.b64decode(entry["data"], validate=True) for entry in evidence["chip"]["lds"]}
    verdict = {}

    lds, digest, expected, certificate, signer_info = parse_sod(files["EF.SOD"])
    groups = {}
    for number, value in sorted(expected.items()):
        content = files.get("DG%d" % number)
        groups["DG%d" % number] = "missing" if content is None else (
            "matched" if hashlib.new(digest, content).digest() == value else "MISMATCHED")
    signature_ok, signature_detail = verify_sod_signature(lds, certificate, signer_info)
    chain = "not checked"
    if arguments.csca:
        csca = x509.load_pem_x509_certificate(open(arguments.csca, "rb").read())
        try:
            issuer_key = csca.public_key()
            if isinstance(issuer_key, rsa.RSAPublicKey):
                issuer_key.verify(certificate.signature, certificate.tbs_certificate_bytes, padding.PKCS1v15(),
                                  certificate.signature_hash_algorithm)
            else:
                issuer_key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                                  ec.ECDSA(certificate.signature_hash_algorithm))
            if certificate.issuer != csca.subject:
                raise ValueError("issuer name differs")
            chain = "issued by " + csca.subject.rfc4514_string()
        except (ValueError, TypeError, InvalidSignature):
            chain = "NOT issued by the given CSCA"
    passive_ok = signature_ok and all(v == "matched" for v in groups.values()) and not chain.startswith("NOT")
    verdict["passive"] = {"result": "PASSED" if passive_ok else "FAILED", "digest": digest, "dataGroups": groups,
                          "signature": signature_detail, "chain": chain}

    exchange = evidence["chip"].get("activeAuthentication")
    if "DG15" not in files:
        verdict["active"] = {"result": "NOT_SUPPORTED"}
    elif exchange is None:
        verdict["active"] = {"result": "FAILED", "detail": "DG15 is there but the evidence has no INTERNAL AUTHENTICATE exchange"}
    else:
        challenge = base64.b64decode(exchange["challenge"])
        ok = verify_active_authentication(files["DG15"], challenge, base64.b64decode(exchange["signature"]))
        if arguments.challenge and base64.b64decode(arguments.challenge) != challenge:
            ok, detail = False, "the chip signed another challenge than ours (replay?)"
        else:
            detail = "signature over the challenge verifies with DG15's key" if ok else "signature does not verify"
        verdict["active"] = {"result": "PASSED" if ok else "FAILED", "detail": detail,
                             "challengeFromBackend": bool(arguments.challenge)}
    host = {entry["type"]: entry["result"] for entry in evidence["chip"].get("auth", [])}
    verdict["chip"] = {"result": "NOT_CHECKED", "host": host.get("CHIP_AUTHENTICATION"),
                       "detail": "Chip Authentication / PACE-CAM cannot be verified from evidence"}
    print(json.dumps(verdict, indent=2))
    failed = not passive_ok or verdict["active"]["result"] == "FAILED"
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
