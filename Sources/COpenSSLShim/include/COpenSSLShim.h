#ifndef COPENSSLSHIM_H
#define COPENSSLSHIM_H
/* OpenSSL macros and stack helpers, as plain functions for Swift. */
#include <openssl/x509.h>
#include <openssl/cms.h>
#include <openssl/bio.h>

void COpenSSLShim_free(void *pointer);
/* The oldest error on the thread's queue as text (into buf), or empty; clears the queue. */
void COpenSSLShim_last_error(char *buf, int size);
STACK_OF(X509) *COpenSSLShim_x509_stack_new(void);
int COpenSSLShim_x509_stack_push(STACK_OF(X509) *stack, X509 *cert);
void COpenSSLShim_x509_stack_free(STACK_OF(X509) *stack);
int COpenSSLShim_x509_stack_count(const STACK_OF(X509) *stack);
X509 *COpenSSLShim_x509_stack_value(const STACK_OF(X509) *stack, int index);
/* Copies a memory BIO's contents out: returns length, sets *data to BIO-owned storage. */
long COpenSSLShim_bio_mem_data(BIO *bio, char **data);
/* XN_FLAG_RFC2253 (a composite macro). */
unsigned long COpenSSLShim_name_flags_rfc2253(void);
#endif

#ifndef COPENSSLSHIM_EC_H
#define COPENSSLSHIM_EC_H
#include <stddef.h>
#include <stdint.h>
/* Elliptic-curve arithmetic for PACE (generic mapping needs a group with a new generator, which
   only OpenSSL's low-level EC API offers). Points are uncompressed octet strings (04 || x || y).
   A group is identified by its curve NID, optionally with a replacement generator.
   All functions return 0 on success, negative on error. */
int COpenSSLShim_ec_field_size(int nid);
/* The curve's ECParameters with explicit domain parameters (as chips write them in
   PACEDomainParameterInfo), DER; returns the length or -1 when out is too small. */
int COpenSSLShim_ec_explicit_parameters(int nid, uint8_t *out, size_t out_len);
/* The bit length of the curve's field prime (521 for P-521), or -1. */
int COpenSSLShim_ec_field_bits(int nid);
/* out = scalar · point (point = NULL means the generator; generator = NULL means the curve's). */
int COpenSSLShim_ec_mul(int nid, const uint8_t *generator, size_t generator_len,
                        const uint8_t *scalar, size_t scalar_len,
                        const uint8_t *point, size_t point_len, uint8_t *out, size_t *out_len);
/* out = scalar · G + point (PACE generic mapping: G' = s·G + H). */
int COpenSSLShim_ec_mul_add(int nid, const uint8_t *scalar, size_t scalar_len,
                            const uint8_t *point, size_t point_len, uint8_t *out, size_t *out_len);
/* A random private key in [1, n-1] (big-endian, field size) and its public point on the given generator. */
int COpenSSLShim_ec_keygen(int nid, const uint8_t *generator, size_t generator_len,
                           uint8_t *private_key, size_t *private_len, uint8_t *public_point, size_t *public_len);
/* Whether the octet string is a valid point on the curve (not infinity). */
int COpenSSLShim_ec_check_point(int nid, const uint8_t *point, size_t point_len);
#endif

#ifndef COPENSSLSHIM_DH_H
#define COPENSSLSHIM_DH_H
/* RFC 5114 MODP groups with prime-order subgroups (PACE parameter ids 0, 1, 2): p, g and q as
   big-endian bytes (buffers of at least 256 bytes). */
int COpenSSLShim_dh_rfc5114(int parameter_id, uint8_t *p, size_t *p_len, uint8_t *g, size_t *g_len, uint8_t *q, size_t *q_len);
/* out = base^exponent mod modulus, padded to the modulus length. */
int COpenSSLShim_bn_mod_exp(const uint8_t *base, size_t base_len, const uint8_t *exponent, size_t exponent_len,
                            const uint8_t *modulus, size_t modulus_len, uint8_t *out);
/* out = a·b mod modulus, padded to the modulus length. */
int COpenSSLShim_bn_mod_mul(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                            const uint8_t *modulus, size_t modulus_len, uint8_t *out);
/* out = floor(a / b), padded to out_len (fails when it does not fit or b is zero). */
int COpenSSLShim_bn_div(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len, uint8_t *out, size_t out_len);
/* A random value in [1, range-1], padded to range_len. */
int COpenSSLShim_bn_rand_range(const uint8_t *range, size_t range_len, uint8_t *out);
#endif

#ifndef COPENSSLSHIM_SCALAR_H
#define COPENSSLSHIM_SCALAR_H
/* out = a · b⁻¹ mod n (n the curve order), padded to the field size (PACE-CAM's CA_IC). */
int COpenSSLShim_ec_scalar_divide(int nid, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                                  uint8_t *out, size_t *out_len);
#endif

#ifndef COPENSSLSHIM_SPKI_H
#define COPENSSLSHIM_SPKI_H
/* For an EC SubjectPublicKeyInfo (named curve or explicit domain parameters): the NID of the
   standard curve the parameters equal, and the uncompressed public point. */
int COpenSSLShim_spki_ec(const uint8_t *der, size_t der_len, int *nid, uint8_t *point, size_t *point_len);
/* PACE-IM (ECDH) point encoding f_G(R mod p), ICAO 9303-11 Appendix B.2; uncompressed point out.
   < 0: -2 p is not 3 mod 4, -3 cofactor is not 1, -4 R mod p is zero, other: failure. */
int COpenSSLShim_ec_im_encode(int nid, const uint8_t *random, size_t random_len, uint8_t *out, size_t *out_len);
#endif

#ifndef COPENSSLSHIM_CRLDP_H
#define COPENSSLSHIM_CRLDP_H
#include <openssl/x509.h>
/* The URIs of a certificate's CRL distribution points (full names of type URI), each written as
   a NUL-terminated string into `out` (max_uris strings of max_len bytes; longer ones are skipped).
   Returns how many were written. */
int COpenSSLShim_crl_distribution_uris(X509 *certificate, char *out, int max_uris, int max_len);
#endif

#ifndef COPENSSLSHIM_AEAD_H
#define COPENSSLSHIM_AEAD_H
#include <stddef.h>
#include <stdint.h>
/* AES-GCM (key of 16, 24 or 32 bytes, 16-byte tag). Encrypting: out = ciphertext || tag, out_len
   = in_len + 16. Decrypting: in = ciphertext || tag, out = plaintext. Returns 0, -2 when the tag
   does not verify, -1 on other failures. out must hold in_len + 16 bytes. */
int COpenSSLShim_aes_gcm(int encrypt, const uint8_t *key, size_t key_len, const uint8_t *iv, size_t iv_len,
                         const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len);
/* HKDF (RFC 5869, extract then expand) with the named digest ("SHA256"); 0 or -1. */
int COpenSSLShim_hkdf(const char *digest, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
                      const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len);
/* HMAC with the named digest; out must hold the digest's size (at most 64); 0 or -1. */
int COpenSSLShim_hmac(const char *digest, const uint8_t *key, size_t key_len, const uint8_t *data, size_t data_len,
                      uint8_t *out, size_t *out_len);
#endif

#ifndef COPENSSLSHIM_RAWKEY_H
#define COPENSSLSHIM_RAWKEY_H
#include <openssl/evp.h>
/* An EC public key on the curve `nid` from an uncompressed point (checked on the curve), or NULL. */
EVP_PKEY *COpenSSLShim_ec_public_key(int nid, const uint8_t *point, size_t point_len);
/* An EC private key on the curve `nid` from its scalar (big-endian), the public point computed; or NULL. */
EVP_PKEY *COpenSSLShim_ec_private_key(int nid, const uint8_t *scalar, size_t scalar_len);
#endif
