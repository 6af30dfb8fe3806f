/* The low-level EC and DH APIs PACE needs are deprecated in OpenSSL 3 but remain the only way to
   build a group with a new generator; this file is their one user. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "COpenSSLShim.h"
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <string.h>

void COpenSSLShim_free(void *pointer) { OPENSSL_free(pointer); }

void COpenSSLShim_last_error(char *buf, int size) {
    unsigned long code = ERR_get_error();
    if (size > 0) buf[0] = 0;
    if (code != 0 && size > 0) ERR_error_string_n(code, buf, (size_t)size);
    ERR_clear_error();
}

STACK_OF(X509) *COpenSSLShim_x509_stack_new(void) { return sk_X509_new_null(); }
int COpenSSLShim_x509_stack_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
void COpenSSLShim_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
int COpenSSLShim_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
X509 *COpenSSLShim_x509_stack_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
long COpenSSLShim_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
unsigned long COpenSSLShim_name_flags_rfc2253(void) { return XN_FLAG_RFC2253; }

/* ---- EC arithmetic for PACE ---- */
#include <openssl/ec.h>
#include <openssl/bn.h>

static EC_GROUP *group_for(int nid, const uint8_t *generator, size_t generator_len) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group || !generator) return group;
    EC_POINT *g = EC_POINT_new(group);
    BN_CTX *ctx = BN_CTX_new();
    int ok = g && ctx && EC_POINT_oct2point(group, g, generator, generator_len, ctx) == 1 &&
             EC_GROUP_set_generator(group, g, EC_GROUP_get0_order(group), EC_GROUP_get0_cofactor(group)) == 1;
    EC_POINT_free(g);
    BN_CTX_free(ctx);
    if (!ok) { EC_GROUP_free(group); return NULL; }
    return group;
}

static int point_out(const EC_GROUP *group, const EC_POINT *point, uint8_t *out, size_t *out_len, BN_CTX *ctx) {
    if (EC_POINT_is_at_infinity(group, point)) return -5;
    size_t n = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, out, *out_len, ctx);
    if (n == 0) return -6;
    *out_len = n;
    return 0;
}

int COpenSSLShim_ec_field_size(int nid) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    int bits = EC_GROUP_get_degree(group);
    EC_GROUP_free(group);
    return (bits + 7) / 8;
}

int COpenSSLShim_ec_explicit_parameters(int nid, uint8_t *out, size_t out_len) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    EC_GROUP_set_asn1_flag(group, OPENSSL_EC_EXPLICIT_CURVE);
    EC_GROUP_set_point_conversion_form(group, POINT_CONVERSION_UNCOMPRESSED);
    int length = i2d_ECPKParameters(group, NULL);
    int rc = -1;
    if (length > 0 && (size_t)length <= out_len) {
        unsigned char *cursor = out;
        rc = i2d_ECPKParameters(group, &cursor) == length ? length : -1;
    }
    EC_GROUP_free(group);
    ERR_clear_error();
    return rc;
}

int COpenSSLShim_ec_field_bits(int nid) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    int bits = EC_GROUP_get_degree(group);
    EC_GROUP_free(group);
    return bits;
}

int COpenSSLShim_ec_mul(int nid, const uint8_t *generator, size_t generator_len,
                        const uint8_t *scalar, size_t scalar_len,
                        const uint8_t *point, size_t point_len, uint8_t *out, size_t *out_len) {
    EC_GROUP *group = group_for(nid, generator, generator_len);
    if (!group) return -1;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_bin2bn(scalar, (int)scalar_len, NULL);
    EC_POINT *p = point ? EC_POINT_new(group) : NULL;
    EC_POINT *r = EC_POINT_new(group);
    int rc = -2;
    if (ctx && k && r && (!point || (p && EC_POINT_oct2point(group, p, point, point_len, ctx) == 1 &&
                                     EC_POINT_is_on_curve(group, p, ctx) == 1))) {
        int ok = point ? EC_POINT_mul(group, r, NULL, p, k, ctx) : EC_POINT_mul(group, r, k, NULL, NULL, ctx);
        rc = ok == 1 ? point_out(group, r, out, out_len, ctx) : -3;
    }
    EC_POINT_free(p); EC_POINT_free(r); BN_free(k); BN_CTX_free(ctx); EC_GROUP_free(group);
    return rc;
}

int COpenSSLShim_ec_mul_add(int nid, const uint8_t *scalar, size_t scalar_len,
                            const uint8_t *point, size_t point_len, uint8_t *out, size_t *out_len) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_bin2bn(scalar, (int)scalar_len, NULL);
    BIGNUM *one = BN_new();
    EC_POINT *h = EC_POINT_new(group);
    EC_POINT *r = EC_POINT_new(group);
    int rc = -2;
    if (ctx && k && one && h && r && BN_one(one) &&
        EC_POINT_oct2point(group, h, point, point_len, ctx) == 1 && EC_POINT_is_on_curve(group, h, ctx) == 1) {
        /* r = k·G + 1·H */
        rc = EC_POINT_mul(group, r, k, h, one, ctx) == 1 ? point_out(group, r, out, out_len, ctx) : -3;
    }
    EC_POINT_free(h); EC_POINT_free(r); BN_free(k); BN_free(one); BN_CTX_free(ctx); EC_GROUP_free(group);
    return rc;
}

int COpenSSLShim_ec_keygen(int nid, const uint8_t *generator, size_t generator_len,
                           uint8_t *private_key, size_t *private_len, uint8_t *public_point, size_t *public_len) {
    EC_GROUP *group = group_for(nid, generator, generator_len);
    if (!group) return -1;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_new();
    EC_POINT *r = EC_POINT_new(group);
    int rc = -2;
    const BIGNUM *order = EC_GROUP_get0_order(group);
    int size = (EC_GROUP_get_degree(group) + 7) / 8;
    if (ctx && k && r && (size_t)size <= *private_len) {
        do {
            if (BN_priv_rand_range(k, order) != 1) { rc = -4; goto done; }
        } while (BN_is_zero(k));
        if (EC_POINT_mul(group, r, k, NULL, NULL, ctx) == 1 && BN_bn2binpad(k, private_key, size) == size) {
            *private_len = (size_t)size;
            rc = point_out(group, r, public_point, public_len, ctx);
        } else {
            rc = -3;
        }
    }
done:
    EC_POINT_free(r); BN_clear_free(k); BN_CTX_free(ctx); EC_GROUP_free(group);
    return rc;
}

int COpenSSLShim_ec_check_point(int nid, const uint8_t *point, size_t point_len) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    BN_CTX *ctx = BN_CTX_new();
    EC_POINT *p = EC_POINT_new(group);
    int ok = ctx && p && EC_POINT_oct2point(group, p, point, point_len, ctx) == 1 &&
             EC_POINT_is_on_curve(group, p, ctx) == 1 && !EC_POINT_is_at_infinity(group, p);
    EC_POINT_free(p); BN_CTX_free(ctx); EC_GROUP_free(group);
    return ok ? 0 : -2;
}

/* ---- DH arithmetic for PACE ---- */
#include <openssl/dh.h>

static int copy_bn(const BIGNUM *n, uint8_t *out, size_t *len) {
    int size = BN_num_bytes(n);
    if (size <= 0 || (size_t)size > *len) return -1;
    BN_bn2bin(n, out);
    *len = (size_t)size;
    return 0;
}

int COpenSSLShim_dh_rfc5114(int parameter_id, uint8_t *p, size_t *p_len, uint8_t *g, size_t *g_len, uint8_t *q, size_t *q_len) {
    DH *dh = parameter_id == 0 ? DH_get_1024_160() : parameter_id == 1 ? DH_get_2048_224() : parameter_id == 2 ? DH_get_2048_256() : NULL;
    if (!dh) return -1;
    const BIGNUM *bp = NULL, *bq = NULL, *bg = NULL;
    DH_get0_pqg(dh, &bp, &bq, &bg);
    int rc = (bp && bq && bg && copy_bn(bp, p, p_len) == 0 && copy_bn(bg, g, g_len) == 0 && copy_bn(bq, q, q_len) == 0) ? 0 : -2;
    DH_free(dh);
    return rc;
}

int COpenSSLShim_bn_mod_exp(const uint8_t *base, size_t base_len, const uint8_t *exponent, size_t exponent_len,
                            const uint8_t *modulus, size_t modulus_len, uint8_t *out) {
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *b = BN_bin2bn(base, (int)base_len, NULL), *e = BN_bin2bn(exponent, (int)exponent_len, NULL);
    BIGNUM *m = BN_bin2bn(modulus, (int)modulus_len, NULL), *r = BN_new();
    int rc = (ctx && b && e && m && r && !BN_is_zero(m) && BN_mod_exp(r, b, e, m, ctx) == 1 &&
              BN_bn2binpad(r, out, (int)modulus_len) == (int)modulus_len) ? 0 : -1;
    BN_free(b); BN_clear_free(e); BN_free(m); BN_free(r); BN_CTX_free(ctx);
    return rc;
}

int COpenSSLShim_bn_mod_mul(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                            const uint8_t *modulus, size_t modulus_len, uint8_t *out) {
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *x = BN_bin2bn(a, (int)a_len, NULL), *y = BN_bin2bn(b, (int)b_len, NULL);
    BIGNUM *m = BN_bin2bn(modulus, (int)modulus_len, NULL), *r = BN_new();
    int rc = (ctx && x && y && m && r && !BN_is_zero(m) && BN_mod_mul(r, x, y, m, ctx) == 1 &&
              BN_bn2binpad(r, out, (int)modulus_len) == (int)modulus_len) ? 0 : -1;
    BN_free(x); BN_free(y); BN_free(m); BN_free(r); BN_CTX_free(ctx);
    return rc;
}

int COpenSSLShim_bn_div(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len, uint8_t *out, size_t out_len) {
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *x = BN_bin2bn(a, (int)a_len, NULL), *y = BN_bin2bn(b, (int)b_len, NULL), *r = BN_new();
    int rc = (ctx && x && y && r && !BN_is_zero(y) && BN_div(r, NULL, x, y, ctx) == 1 &&
              BN_bn2binpad(r, out, (int)out_len) == (int)out_len) ? 0 : -1;
    BN_free(x); BN_free(y); BN_free(r); BN_CTX_free(ctx);
    return rc;
}

int COpenSSLShim_bn_rand_range(const uint8_t *range, size_t range_len, uint8_t *out) {
    BIGNUM *n = BN_bin2bn(range, (int)range_len, NULL), *r = BN_new();
    int rc = -1;
    if (n && r) {
        do { if (BN_priv_rand_range(r, n) != 1) goto done; } while (BN_is_zero(r));
        rc = BN_bn2binpad(r, out, (int)range_len) == (int)range_len ? 0 : -2;
    }
done:
    BN_free(n); BN_clear_free(r);
    return rc;
}

int COpenSSLShim_ec_scalar_divide(int nid, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                                  uint8_t *out, size_t *out_len) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    if (!group) return -1;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *x = BN_bin2bn(a, (int)a_len, NULL), *y = BN_bin2bn(b, (int)b_len, NULL), *inverse = BN_new(), *r = BN_new();
    const BIGNUM *order = EC_GROUP_get0_order(group);
    int size = (EC_GROUP_get_degree(group) + 7) / 8;
    int rc = -2;
    if (ctx && x && y && inverse && r && (size_t)size <= *out_len && BN_mod_inverse(inverse, y, order, ctx) &&
        BN_mod_mul(r, x, inverse, order, ctx) == 1 && BN_bn2binpad(r, out, size) == size) {
        *out_len = (size_t)size;
        rc = 0;
    }
    BN_clear_free(x); BN_clear_free(y); BN_clear_free(inverse); BN_clear_free(r); BN_CTX_free(ctx); EC_GROUP_free(group);
    return rc;
}

int COpenSSLShim_spki_ec(const uint8_t *der, size_t der_len, int *nid, uint8_t *point, size_t *point_len) {
    const unsigned char *cursor = der;
    EVP_PKEY *key = d2i_PUBKEY(NULL, &cursor, (long)der_len);
    if (!key) { ERR_clear_error(); return -1; }
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY(key);
    int rc = -2;
    if (ec) {
        const EC_GROUP *group = EC_KEY_get0_group(ec);
        BN_CTX *ctx = BN_CTX_new();
        int found = EC_GROUP_get_curve_name(group);
        if (found == NID_undef && ctx) found = EC_GROUP_check_named_curve(group, 0, ctx);
        const EC_POINT *pub = EC_KEY_get0_public_key(ec);
        if (found > 0 && pub) {
            size_t n = EC_POINT_point2oct(group, pub, POINT_CONVERSION_UNCOMPRESSED, point, *point_len, ctx);
            if (n > 0) { *point_len = n; *nid = found; rc = 0; }
        }
        BN_CTX_free(ctx);
        EC_KEY_free(ec);
    }
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

/* PACE Integrated Mapping, ECDH: the point encoding f_G of ICAO 9303-11 Appendix B.2 (affine
   coordinates, p ≡ 3 mod 4, cofactor 1), applied to R mod p. */
int COpenSSLShim_ec_im_encode(int nid, const uint8_t *random, size_t random_len, uint8_t *out, size_t *out_len) {
    int rc = -1;
    EC_GROUP *group = EC_GROUP_new_by_curve_name(nid);
    BN_CTX *ctx = BN_CTX_new();
    EC_POINT *point = NULL;
    if (!group || !ctx) goto done;
    BN_CTX_start(ctx);
    BIGNUM *p = BN_CTX_get(ctx), *a = BN_CTX_get(ctx), *b = BN_CTX_get(ctx), *t = BN_CTX_get(ctx);
    BIGNUM *alpha = BN_CTX_get(ctx), *s = BN_CTX_get(ctx), *x2 = BN_CTX_get(ctx), *x3 = BN_CTX_get(ctx);
    BIGNUM *h2 = BN_CTX_get(ctx), *u = BN_CTX_get(ctx), *e = BN_CTX_get(ctx), *A = BN_CTX_get(ctx);
    BIGNUM *tmp = BN_CTX_get(ctx), *y = BN_CTX_get(ctx), *three = BN_CTX_get(ctx);
    if (!three || EC_GROUP_get_curve(group, p, a, b, ctx) != 1) goto done;
    if (!BN_is_bit_set(p, 0) || !BN_is_bit_set(p, 1)) { rc = -2; goto done; }          /* p ≡ 3 mod 4 */
    if (!BN_is_one(EC_GROUP_get0_cofactor(group))) { rc = -3; goto done; }
    if (!BN_bin2bn(random, (int)random_len, t) || !BN_nnmod(t, t, p, ctx) || BN_is_zero(t)) { rc = -4; goto done; }
    BN_set_word(three, 3);
    /* alpha = -t^2 */
    if (!BN_mod_sqr(alpha, t, p, ctx) || !BN_mod_sub(alpha, p, alpha, p, ctx)) goto done;
    /* s = alpha + alpha^2 */
    if (!BN_mod_sqr(tmp, alpha, p, ctx) || !BN_mod_add(s, alpha, tmp, p, ctx)) goto done;
    /* X2 = -b (1 + s) / (a s) */
    if (!BN_mod_mul(tmp, a, s, p, ctx) || BN_is_zero(tmp) || !BN_mod_inverse(tmp, tmp, p, ctx)) goto done;
    if (!BN_add_word(s, 1) || !BN_mod_mul(x2, b, s, p, ctx) || !BN_mod_sub(x2, p, x2, p, ctx) ||
        !BN_mod_mul(x2, x2, tmp, p, ctx)) goto done;
    /* X3 = alpha X2 */
    if (!BN_mod_mul(x3, alpha, x2, p, ctx)) goto done;
    /* h2 = X2^3 + a X2 + b */
    if (!BN_mod_exp(h2, x2, three, p, ctx) || !BN_mod_mul(tmp, a, x2, p, ctx) || !BN_mod_add(h2, h2, tmp, p, ctx) ||
        !BN_mod_add(h2, h2, b, p, ctx)) goto done;
    /* U = t^3 h2 */
    if (!BN_mod_exp(u, t, three, p, ctx) || !BN_mod_mul(u, u, h2, p, ctx)) goto done;
    /* A = h2^(p - 1 - (p + 1)/4) */
    if (!BN_copy(e, p) || !BN_add_word(e, 1) || !BN_rshift(e, e, 2) || !BN_sub(e, p, e) || !BN_sub_word(e, 1) ||
        !BN_mod_exp(A, h2, e, p, ctx)) goto done;
    /* A^2 h2 == 1 ? (X2, A h2) : (X3, A U) */
    if (!BN_mod_sqr(tmp, A, p, ctx) || !BN_mod_mul(tmp, tmp, h2, p, ctx)) goto done;
    point = EC_POINT_new(group);
    if (!point) goto done;
    if (BN_is_one(tmp)) {
        if (!BN_mod_mul(y, A, h2, p, ctx) || EC_POINT_set_affine_coordinates(group, point, x2, y, ctx) != 1) { rc = -5; goto done; }
    } else {
        if (!BN_mod_mul(y, A, u, p, ctx) || EC_POINT_set_affine_coordinates(group, point, x3, y, ctx) != 1) { rc = -5; goto done; }
    }
    size_t n = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, out, *out_len, ctx);
    if (n == 0) { rc = -6; goto done; }
    *out_len = n;
    rc = 0;
done:
    EC_POINT_free(point);
    if (ctx) { BN_CTX_end(ctx); BN_CTX_free(ctx); }
    EC_GROUP_free(group);
    return rc;
}

#include <openssl/x509v3.h>

int COpenSSLShim_crl_distribution_uris(X509 *certificate, char *out, int max_uris, int max_len) {
    STACK_OF(DIST_POINT) *points = X509_get_ext_d2i(certificate, NID_crl_distribution_points, NULL, NULL);
    if (!points) return 0;
    int written = 0;
    for (int i = 0; i < sk_DIST_POINT_num(points) && written < max_uris; i++) {
        DIST_POINT *point = sk_DIST_POINT_value(points, i);
        if (!point || !point->distpoint || point->distpoint->type != 0) continue;
        GENERAL_NAMES *names = point->distpoint->name.fullname;
        for (int j = 0; j < sk_GENERAL_NAME_num(names) && written < max_uris; j++) {
            GENERAL_NAME *name = sk_GENERAL_NAME_value(names, j);
            if (!name || name->type != GEN_URI) continue;
            ASN1_IA5STRING *uri = name->d.uniformResourceIdentifier;
            int length = ASN1_STRING_length(uri);
            const unsigned char *data = ASN1_STRING_get0_data(uri);
            if (!data || length <= 0 || length >= max_len) continue;
            memcpy(out + (size_t)written * (size_t)max_len, data, (size_t)length);
            out[(size_t)written * (size_t)max_len + (size_t)length] = 0;
            written++;
        }
    }
    CRL_DIST_POINTS_free(points);
    return written;
}
