/* AES-GCM, HKDF and HMAC through OpenSSL 3's EVP interfaces (ISO 18013-5 session encryption,
   EMacKey, COSE_Mac0). The OSSL_PARAM arrays HKDF and HMAC take are macros, hence C. */
#include "COpenSSLShim.h"
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <string.h>

int COpenSSLShim_aes_gcm(int encrypt, const uint8_t *key, size_t key_len, const uint8_t *iv, size_t iv_len,
                         const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t in_len, uint8_t *out, size_t *out_len) {
    const EVP_CIPHER *cipher = key_len == 16 ? EVP_aes_128_gcm() : key_len == 24 ? EVP_aes_192_gcm() : key_len == 32 ? EVP_aes_256_gcm() : NULL;
    if (!cipher || iv_len == 0 || iv_len > 64 || (!encrypt && in_len < 16) || in_len > (size_t)INT32_MAX - 32) return -1;
    size_t body = encrypt ? in_len : in_len - 16;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx) return -1;
    int result = -1, length = 0, final_length = 0;
    if (EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, encrypt) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)iv_len, NULL) != 1) goto done;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, key, iv, encrypt) != 1) goto done;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &length, aad, (int)aad_len) != 1) goto done;
    if (body > 0 && EVP_CipherUpdate(ctx, out, &length, in, (int)body) != 1) goto done;
    if (!encrypt && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)(in + body)) != 1) goto done;
    if (EVP_CipherFinal_ex(ctx, out + length, &final_length) != 1) { result = encrypt ? -1 : -2; goto done; }
    if (encrypt) {
        if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, out + body) != 1) goto done;
        *out_len = body + 16;
    } else {
        *out_len = body;
    }
    result = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return result;
}

int COpenSSLShim_hkdf(const char *digest, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
                      const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (!kdf) return -1;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (!ctx) return -1;
    OSSL_PARAM params[5], *p = params;
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest, 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
    /* An empty salt is a zero-length octet string; OpenSSL then uses HashLen zero bytes. */
    static const uint8_t empty = 0;
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)(salt_len ? salt : &empty), salt_len);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)(info_len ? info : &empty), info_len);
    *p = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok ? 0 : -1;
}

int COpenSSLShim_hmac(const char *digest, const uint8_t *key, size_t key_len, const uint8_t *data, size_t data_len,
                      uint8_t *out, size_t *out_len) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!mac) return -1;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (!ctx) return -1;
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    static const uint8_t empty = 0;
    int ok = EVP_MAC_init(ctx, key_len ? key : &empty, key_len, params) == 1 &&
             EVP_MAC_update(ctx, data, data_len) == 1 &&
             EVP_MAC_final(ctx, out, out_len, 64) == 1;
    EVP_MAC_CTX_free(ctx);
    return ok ? 0 : -1;
}

/* ---- EC keys from raw parts (COSE_Key x/y/d) ---- */
#include <openssl/ec.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/bn.h>

static EVP_PKEY *key_from_params(OSSL_PARAM_BLD *builder, int selection) {
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(builder);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *key = NULL;
    if (params && ctx && EVP_PKEY_fromdata_init(ctx) == 1) EVP_PKEY_fromdata(ctx, &key, selection, params);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return key;
}

EVP_PKEY *COpenSSLShim_ec_public_key(int nid, const uint8_t *point, size_t point_len) {
    const char *name = OBJ_nid2sn(nid);
    if (!name || point_len < 3 || point[0] != 0x04) return NULL;
    /* EVP_PKEY_fromdata does not check the point; EC_POINT_oct2point does. */
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    EC_POINT *p = group ? EC_POINT_new(group) : NULL;
    int on_curve = p && EC_POINT_oct2point(group, p, point, point_len, NULL) == 1 && EC_POINT_is_at_infinity(group, p) == 0;
    EC_POINT_free(p);
    EC_GROUP_free(group);
    if (!on_curve) return NULL;
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    if (!builder) return NULL;
    EVP_PKEY *key = NULL;
    if (OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, name, 0) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, point_len) == 1)
        key = key_from_params(builder, EVP_PKEY_PUBLIC_KEY);
    OSSL_PARAM_BLD_free(builder);
    return key;
}

EVP_PKEY *COpenSSLShim_ec_private_key(int nid, const uint8_t *scalar, size_t scalar_len) {
    const char *name = OBJ_nid2sn(nid);
    EC_GROUP *group = name ? EC_GROUP_new_by_curve_name(nid) : NULL;
    if (!group) return NULL;
    BIGNUM *d = BN_bin2bn(scalar, (int)scalar_len, NULL);
    EC_POINT *q = EC_POINT_new(group);
    uint8_t point[200];
    size_t point_len = 0;
    EVP_PKEY *key = NULL;
    OSSL_PARAM_BLD *builder = NULL;
    if (!d || !q || BN_is_zero(d) || BN_cmp(d, EC_GROUP_get0_order(group)) >= 0) goto done;
    if (EC_POINT_mul(group, q, d, NULL, NULL, NULL) != 1) goto done;
    point_len = EC_POINT_point2oct(group, q, POINT_CONVERSION_UNCOMPRESSED, point, sizeof point, NULL);
    if (point_len == 0) goto done;
    builder = OSSL_PARAM_BLD_new();
    if (builder && OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, name, 0) == 1 &&
        OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_PRIV_KEY, d) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, point_len) == 1)
        key = key_from_params(builder, EVP_PKEY_KEYPAIR);
done:
    OSSL_PARAM_BLD_free(builder);
    EC_POINT_free(q);
    BN_clear_free(d);
    EC_GROUP_free(group);
    return key;
}
