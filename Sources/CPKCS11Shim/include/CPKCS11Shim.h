#ifndef CPKCS11SHIM_H
#define CPKCS11SHIM_H

#include <stddef.h>
#include <stdint.h>

/* What gbgbridge_pkcs11_sign signs with. */
enum {
    GBG_P11_ECDSA = 0,      /* CKM_ECDSA over a digest: the token answers r || s */
    GBG_P11_RSA_PKCS = 1,   /* CKM_RSA_PKCS over a DigestInfo */
    GBG_P11_RSA_PSS = 2     /* CKM_RSA_PKCS_PSS over a digest, with hash/MGF/salt */
};

/* Loads the PKCS#11 module at module_path (dlopen), finds the token whose label is token_label
   (any token with a key when NULL), logs in with pin (when not NULL), finds the one private key
   with object_label and/or id, and signs data with the mechanism `kind`. On success returns 0 and
   the signature in out (out_len in: its size, out: the length). On failure returns -1 and a
   sentence in error (never the PIN). Blocking: call it off the Swift cooperative pool. */
int gbgbridge_pkcs11_sign(const char *module_path, const char *token_label, const char *object_label,
                          const uint8_t *id, size_t id_len, const char *pin, int kind,
                          unsigned long pss_hash, unsigned long pss_mgf, unsigned long pss_salt,
                          const uint8_t *data, size_t data_len, uint8_t *out, size_t *out_len,
                          char *error, size_t error_len);

#endif
