#include "COpenPACEShim.h"

#include <eac/ca.h>
#include <eac/eac.h>
#include <eac/pace.h>
#include <eac/ta.h>
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/objects.h>
#include <openssl/stack.h>
#include <stdlib.h>
#include <string.h>

// Exported by libeac but not in its public headers (eac_lib.h, misc.h).
BUF_MEM *BUF_MEM_create_init(const void *buf, size_t len);
BUF_MEM *KA_CTX_generate_key(const KA_CTX *ctx, BN_CTX *bn_ctx);
int KA_CTX_compute_key(KA_CTX *ctx, const BUF_MEM *in, BN_CTX *bn_ctx);
int KA_CTX_derive_keys(KA_CTX *ctx, const BUF_MEM *nonce, EVP_MD_CTX *md_ctx);

struct gbg_eac {
    EAC_CTX *ctx;
    PACE_SEC *secret;
};

static gbg_eac_bytes from_buffer(BUF_MEM *buffer) {
    gbg_eac_bytes out = {NULL, 0};
    if (buffer) {
        out.data = malloc(buffer->length ? buffer->length : 1);
        if (out.data) {
            memcpy(out.data, buffer->data, buffer->length);
            out.length = buffer->length;
        }
        BUF_MEM_clear_free(buffer);
    }
    return out;
}

static BUF_MEM *to_buffer(const unsigned char *data, size_t length) {
    return BUF_MEM_create_init(data, length);
}

void gbg_eac_bytes_free(gbg_eac_bytes bytes) { free(bytes.data); }

void gbg_eac_last_error(char *buffer, size_t size) {
    if (size == 0) return;
    buffer[0] = 0;
    unsigned long code = ERR_get_error();
    if (code) ERR_error_string_n(code, buffer, size);
    ERR_clear_error();
}

gbg_eac *gbg_eac_new(const unsigned char *security_infos, size_t length, int tr_2_01) {
    static int initialised = 0;
    if (!initialised) {
        EAC_init();
        initialised = 1;
    }
    gbg_eac *eac = calloc(1, sizeof *eac);
    if (!eac) return NULL;
    eac->ctx = EAC_CTX_new();
    if (!eac->ctx) {
        free(eac);
        return NULL;
    }
    if (tr_2_01) eac->ctx->tr_version = EAC_TR_VERSION_2_01;
    if (!EAC_CTX_init_ef_cardaccess(security_infos, length, eac->ctx)) {
        gbg_eac_free(eac);
        return NULL;
    }
    return eac;
}

void gbg_eac_free(gbg_eac *eac) {
    if (!eac) return;
    EAC_CTX_clear_free(eac->ctx);
    PACE_SEC_clear_free(eac->secret);
    free(eac);
}

static int oid_bytes(int nid, unsigned char *oid, size_t *oid_length) {
    const ASN1_OBJECT *object = OBJ_nid2obj(nid);
    if (!object) return 0;
    size_t length = OBJ_length(object);
    if (length > *oid_length) return 0;
    memcpy(oid, OBJ_get0_data(object), length);
    *oid_length = length;
    return 1;
}

int gbg_eac_pace_count(const gbg_eac *eac) {
    return eac->ctx->pace_ctxs ? OPENSSL_sk_num((const OPENSSL_STACK *)eac->ctx->pace_ctxs) : 0;
}

int gbg_eac_pace_select(gbg_eac *eac, int index, unsigned char *oid, size_t *oid_length, int *parameter_id) {
    if (index < 0 || index >= gbg_eac_pace_count(eac)) return 0;
    PACE_CTX *pace = OPENSSL_sk_value((const OPENSSL_STACK *)eac->ctx->pace_ctxs, index);
    if (!pace) return 0;
    eac->ctx->pace_ctx = pace;
    *parameter_id = pace->id;
    return oid_bytes(pace->protocol, oid, oid_length);
}

int gbg_eac_set_secret(gbg_eac *eac, const char *secret, size_t length, int type) {
    PACE_SEC_clear_free(eac->secret);
    eac->secret = PACE_SEC_new(secret, length, type == 1 ? PACE_MRZ : PACE_CAN);
    return eac->secret != NULL;
}

gbg_eac_bytes gbg_eac_pace_encrypt_nonce(gbg_eac *eac) {
    return from_buffer(eac->secret ? PACE_STEP1_enc_nonce(eac->ctx, eac->secret) : NULL);
}

int gbg_eac_pace_decrypt_nonce(gbg_eac *eac, const unsigned char *nonce, size_t length) {
    BUF_MEM *in = to_buffer(nonce, length);
    int ok = in && eac->secret && PACE_STEP2_dec_nonce(eac->ctx, eac->secret, in) == 1;
    BUF_MEM_free(in);
    return ok;
}

gbg_eac_bytes gbg_eac_pace_mapping_data(gbg_eac *eac) {
    return from_buffer(PACE_STEP3A_generate_mapping_data(eac->ctx));
}

int gbg_eac_pace_map(gbg_eac *eac, const unsigned char *peer, size_t length) {
    BUF_MEM *in = to_buffer(peer, length);
    int ok = in && PACE_STEP3A_map_generator(eac->ctx, in) == 1;
    BUF_MEM_free(in);
    return ok;
}

gbg_eac_bytes gbg_eac_pace_ephemeral_key(gbg_eac *eac) {
    return from_buffer(PACE_STEP3B_generate_ephemeral_key(eac->ctx));
}

int gbg_eac_pace_shared_secret(gbg_eac *eac, const unsigned char *peer, size_t length) {
    BUF_MEM *in = to_buffer(peer, length);
    int ok = in && PACE_STEP3B_compute_shared_secret(eac->ctx, in) == 1;
    BUF_MEM_free(in);
    return ok;
}

int gbg_eac_pace_derive_keys(gbg_eac *eac) { return PACE_STEP3C_derive_keys(eac->ctx) == 1; }

gbg_eac_bytes gbg_eac_pace_token(gbg_eac *eac, const unsigned char *peer, size_t length) {
    BUF_MEM *in = to_buffer(peer, length);
    gbg_eac_bytes out = from_buffer(in ? PACE_STEP3D_compute_authentication_token(eac->ctx, in) : NULL);
    BUF_MEM_free(in);
    return out;
}

int gbg_eac_pace_verify_token(gbg_eac *eac, const unsigned char *token, size_t length) {
    BUF_MEM *in = to_buffer(token, length);
    int ok = in && PACE_STEP3D_verify_authentication_token(eac->ctx, in) == 1;
    BUF_MEM_free(in);
    return ok;
}

int gbg_eac_ca_count(const gbg_eac *eac) {
    return eac->ctx->ca_ctxs ? OPENSSL_sk_num((const OPENSSL_STACK *)eac->ctx->ca_ctxs) : 0;
}

int gbg_eac_ca_select(gbg_eac *eac, int index, unsigned char *oid, size_t *oid_length, int *key_id) {
    if (index < 0 || index >= gbg_eac_ca_count(eac)) return 0;
    CA_CTX *ca = OPENSSL_sk_value((const OPENSSL_STACK *)eac->ctx->ca_ctxs, index);
    if (!ca) return 0;
    eac->ctx->ca_ctx = ca;
    *key_id = ca->id;
    return oid_bytes(ca->protocol, oid, oid_length);
}

gbg_eac_bytes gbg_eac_ca_chip_key(gbg_eac *eac) { return from_buffer(CA_STEP1_get_pubkey(eac->ctx)); }

int gbg_eac_ca_set_key(gbg_eac *eac, const unsigned char *private_key, size_t private_length,
                       const unsigned char *public_key, size_t public_length) {
    return CA_set_key(eac->ctx, private_key, private_length, public_key, public_length) == 1;
}

gbg_eac_bytes gbg_eac_ca_terminal_key(gbg_eac *eac) {
    if (!eac->ctx->ca_ctx) return from_buffer(NULL);
    return from_buffer(KA_CTX_generate_key(eac->ctx->ca_ctx->ka_ctx, eac->ctx->bn_ctx));
}

static int ca_agree(gbg_eac *eac, const unsigned char *peer, size_t length) {
    if (!eac->ctx->ca_ctx) return 0;
    BUF_MEM *in = to_buffer(peer, length);
    int ok = in && KA_CTX_compute_key(eac->ctx->ca_ctx->ka_ctx, in, eac->ctx->bn_ctx) == 1
        // ICAO 9303-11 §6.2 (TR-03110 v1): the session keys come from the shared secret alone, no nonce.
        && KA_CTX_derive_keys(eac->ctx->ca_ctx->ka_ctx, NULL, eac->ctx->md_ctx) == 1;
    BUF_MEM_free(in);
    return ok;
}

int gbg_eac_ca_terminal_agree(gbg_eac *eac, const unsigned char *chip_key, size_t length) {
    return ca_agree(eac, chip_key, length);
}

int gbg_eac_ca_chip_agree(gbg_eac *eac, const unsigned char *terminal_key, size_t length) {
    return ca_agree(eac, terminal_key, length);
}

int gbg_eac_ta_init(gbg_eac *eac, const unsigned char *cvca, size_t length) {
    return EAC_CTX_init_ta(eac->ctx, NULL, 0, cvca, length) == 1;
}

int gbg_eac_ta_import(gbg_eac *eac, const unsigned char *certificate, size_t length) {
    return TA_STEP2_import_certificate(eac->ctx, certificate, length) == 1;
}

gbg_eac_bytes gbg_eac_ta_nonce(gbg_eac *eac) { return from_buffer(TA_STEP4_get_nonce(eac->ctx)); }

int gbg_eac_ta_verify(gbg_eac *eac, const unsigned char *comp_terminal_key, size_t comp_length,
                      const unsigned char *id_picc, size_t id_length, const unsigned char *signature, size_t signature_length) {
    BUF_MEM *comp = to_buffer(comp_terminal_key, comp_length);
    BUF_MEM *id = to_buffer(id_picc, id_length);
    BUF_MEM *sig = to_buffer(signature, signature_length);
    int ok = comp && id && sig && TA_STEP6_verify(eac->ctx, comp, id, NULL, sig) == 1;
    BUF_MEM_free(comp);
    BUF_MEM_free(id);
    BUF_MEM_free(sig);
    return ok;
}

int gbg_eac_ta_set_private_key(gbg_eac *eac, const unsigned char *key, size_t key_length) {
    // Set after the chain is imported: with a private key in the context, OpenPACE 1.1.2 takes
    // the next certificate's domain parameters from it and fails ("Failed to extract domain
    // parameters") on an OpenSSL 3 key.
    if (!eac->ctx->ta_ctx) return 0;
    const unsigned char *p = key;
    EVP_PKEY *pkey = d2i_AutoPrivateKey(NULL, &p, (long) key_length);
    if (!pkey) return 0;
    EVP_PKEY_free(eac->ctx->ta_ctx->priv_key);
    eac->ctx->ta_ctx->priv_key = pkey;
    return 1;
}

int gbg_eac_ta_set_nonce(gbg_eac *eac, const unsigned char *nonce, size_t length) {
    BUF_MEM *in = to_buffer(nonce, length);
    int ok = in && TA_STEP4_set_nonce(eac->ctx, in) == 1;
    BUF_MEM_free(in);
    return ok;
}

gbg_eac_bytes gbg_eac_ta_sign(gbg_eac *eac, const unsigned char *comp_terminal_key, size_t comp_length,
                              const unsigned char *id_picc, size_t id_length) {
    BUF_MEM *comp = to_buffer(comp_terminal_key, comp_length);
    BUF_MEM *id = to_buffer(id_picc, id_length);
    BUF_MEM *signature = comp && id ? TA_STEP5_sign(eac->ctx, comp, id, NULL) : NULL;
    BUF_MEM_free(comp);
    BUF_MEM_free(id);
    return from_buffer(signature);
}

gbg_eac_bytes gbg_eac_comp(gbg_eac *eac, int protocol, const unsigned char *key, size_t length) {
    BUF_MEM *in = to_buffer(key, length);
    BUF_MEM *out = in ? EAC_Comp(eac->ctx, protocol == 1 ? EAC_ID_CA : EAC_ID_PACE, in) : NULL;
    BUF_MEM_free(in);
    return from_buffer(out);
}

int gbg_eac_start_secure_messaging(gbg_eac *eac, int protocol) {
    return EAC_CTX_set_encryption_ctx(eac->ctx, protocol == 1 ? EAC_ID_CA : EAC_ID_PACE) == 1;
}

int gbg_eac_block_size(const gbg_eac *eac) {
    if (!eac->ctx->key_ctx || !eac->ctx->key_ctx->cipher) return 0;
    return EVP_CIPHER_block_size(eac->ctx->key_ctx->cipher);
}

int gbg_eac_increment_ssc(gbg_eac *eac) { return EAC_increment_ssc(eac->ctx) == 1; }

gbg_eac_bytes gbg_eac_pad(gbg_eac *eac, const unsigned char *data, size_t length) {
    BUF_MEM *in = to_buffer(data, length);
    gbg_eac_bytes out = from_buffer(in ? EAC_add_iso_pad(eac->ctx, in) : NULL);
    BUF_MEM_free(in);
    return out;
}

gbg_eac_bytes gbg_eac_unpad(const unsigned char *data, size_t length) {
    BUF_MEM *in = to_buffer(data, length);
    gbg_eac_bytes out = from_buffer(in ? EAC_remove_iso_pad(in) : NULL);
    BUF_MEM_free(in);
    return out;
}

gbg_eac_bytes gbg_eac_encrypt(gbg_eac *eac, const unsigned char *padded, size_t length) {
    BUF_MEM *in = to_buffer(padded, length);
    gbg_eac_bytes out = from_buffer(in ? EAC_encrypt(eac->ctx, in) : NULL);
    BUF_MEM_free(in);
    return out;
}

gbg_eac_bytes gbg_eac_decrypt(gbg_eac *eac, const unsigned char *padded, size_t length) {
    BUF_MEM *in = to_buffer(padded, length);
    gbg_eac_bytes out = from_buffer(in ? EAC_decrypt(eac->ctx, in) : NULL);
    BUF_MEM_free(in);
    return out;
}

gbg_eac_bytes gbg_eac_mac(gbg_eac *eac, const unsigned char *padded, size_t length) {
    BUF_MEM *in = to_buffer(padded, length);
    gbg_eac_bytes out = from_buffer(in ? EAC_authenticate(eac->ctx, in) : NULL);
    BUF_MEM_free(in);
    return out;
}
