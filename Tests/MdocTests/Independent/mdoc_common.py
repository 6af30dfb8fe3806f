"""ISO/IEC 18013-5 pieces written from the standard with Python's cbor2 and cryptography only:
an implementation independent of GBGBridge's Swift code, used to check it both ways."""
import hashlib
import cbor2
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature, decode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography import x509

CURVES = {1: ec.SECP256R1(), 2: ec.SECP384R1(), 3: ec.SECP521R1(), 256: ec.BrainpoolP256R1(), 258: ec.BrainpoolP384R1(), 259: ec.BrainpoolP512R1()}
HASHES = {-7: hashes.SHA256(), -35: hashes.SHA384(), -36: hashes.SHA512()}


def tag24(data: bytes) -> bytes:
    """#6.24(bstr) of already-encoded CBOR."""
    return cbor2.dumps(cbor2.CBORTag(24, data))


def cose_key_public(key: dict):
    curve = CURVES[key[-1]]
    return ec.EllipticCurvePublicNumbers(int.from_bytes(key[-2], "big"), int.from_bytes(key[-3], "big"), curve).public_key()


def cose_key(public_key) -> dict:
    numbers = public_key.public_numbers()
    size = (public_key.curve.key_size + 7) // 8
    crv = {"secp256r1": 1, "secp384r1": 2, "secp521r1": 3}[public_key.curve.name]
    return {1: 2, -1: crv, -2: numbers.x.to_bytes(size, "big"), -3: numbers.y.to_bytes(size, "big")}


def hkdf(secret: bytes, salt: bytes, info: bytes, length=32) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(secret)


def session_keys(private_key, peer_public, transcript_bytes: bytes):
    secret = private_key.exchange(ec.ECDH(), peer_public)
    salt = hashlib.sha256(transcript_bytes).digest()
    return hkdf(secret, salt, b"SKReader"), hkdf(secret, salt, b"SKDevice")


def iv(identifier: int, counter: int) -> bytes:
    return b"\x00\x00\x00\x00" + identifier.to_bytes(4, "big") + counter.to_bytes(4, "big")


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    return cbor2.dumps(["Signature1", protected, b"", payload])


def mac_structure(protected: bytes, payload: bytes) -> bytes:
    return cbor2.dumps(["MAC0", protected, b"", payload])


def verify_sign1(sign1, public_key, detached=None) -> bool:
    protected, _unprotected, payload, signature = sign1
    alg = cbor2.loads(protected)[1]
    message = sig_structure(protected, payload if payload is not None else detached)
    half = len(signature) // 2
    der = encode_dss_signature(int.from_bytes(signature[:half], "big"), int.from_bytes(signature[half:], "big"))
    try:
        public_key.verify(der, message, ec.ECDSA(HASHES[alg]))
        return True
    except Exception:
        return False


def sign1(payload: bytes, private_key, detached=False, unprotected=None):
    protected = cbor2.dumps({1: -7})
    der = private_key.sign(sig_structure(protected, payload), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return [protected, unprotected or {}, None if detached else payload, r.to_bytes(32, "big") + s.to_bytes(32, "big")]


def mac0(payload: bytes, key: bytes):
    protected = cbor2.dumps({1: 5})
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(mac_structure(protected, payload))
    return [protected, {}, None, h.finalize()]


def verify_mac0(mac, key: bytes, payload: bytes) -> bool:
    protected, _u, _p, tag = mac
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(mac_structure(protected, payload))
    try:
        h.verify(tag)
        return True
    except Exception:
        return False


def authentication_bytes(context: str, transcript_bytes: bytes, *rest) -> bytes:
    """#6.24(bstr [context, SessionTranscript, ...]), the transcript spliced in as its bytes."""
    transcript = cbor2.loads(transcript_bytes).value  # the SessionTranscript's encoding
    body = bytes([0x80 | (2 + len(rest))]) + cbor2.dumps(context) + transcript + b"".join(rest)
    return tag24(body)


def emac_key(private_key, peer_public, transcript_bytes: bytes) -> bytes:
    secret = private_key.exchange(ec.ECDH(), peer_public)
    return hkdf(secret, hashlib.sha256(transcript_bytes).digest(), b"EMacKey")


def load_certificate(data: bytes):
    return x509.load_pem_x509_certificate(data) if data.startswith(b"-----BEGIN") else x509.load_der_x509_certificate(data)
