// Test-only: OpenPACE (libeac, BSI TR-03110 in C) as an independent PACE / Chip Authentication
// peer for our reader and our emulator. Byte buffers in, malloc'd byte buffers out; no OpenSSL
// or libeac type crosses into Swift.
#ifndef GBG_COPENPACE_SHIM_H
#define GBG_COPENPACE_SHIM_H

#include <stddef.h>

/// An OpenPACE EAC context (terminal or card side) with its PACE secret.
typedef struct gbg_eac gbg_eac;

/// Bytes OpenPACE produced (malloc'd); `data` is NULL when the step failed. Free with
/// gbg_eac_bytes_free.
typedef struct {
    unsigned char *data;
    size_t length;
} gbg_eac_bytes;

void gbg_eac_bytes_free(gbg_eac_bytes bytes);

/// The last OpenSSL / OpenPACE error as text (empty when none), cleared by the call.
void gbg_eac_last_error(char *buffer, size_t size);

/// A context over a SET OF SecurityInfo (EF.CardAccess, or DG14's inner SET).
/// `tr_2_01`: TR-03110 v2.01 behaviour, which OpenPACE requires for the Integrated Mapping.
gbg_eac *gbg_eac_new(const unsigned char *security_infos, size_t length, int tr_2_01);
void gbg_eac_free(gbg_eac *eac);

/// PACEInfos OpenPACE understood, and choosing one: its OID (DER content bytes) and parameter id.
int gbg_eac_pace_count(const gbg_eac *eac);
int gbg_eac_pace_select(gbg_eac *eac, int index, unsigned char *oid, size_t *oid_length, int *parameter_id);
/// The PACE password: type 1 = MRZ (TD1 layout: see OpenPACE's encoded_mrz), 2 = CAN.
int gbg_eac_set_secret(gbg_eac *eac, const char *secret, size_t length, int type);

/// PACE steps (TR-03110-2 §3.2; the same calls serve the card and the terminal).
gbg_eac_bytes gbg_eac_pace_encrypt_nonce(gbg_eac *eac);
int gbg_eac_pace_decrypt_nonce(gbg_eac *eac, const unsigned char *nonce, size_t length);
gbg_eac_bytes gbg_eac_pace_mapping_data(gbg_eac *eac);
int gbg_eac_pace_map(gbg_eac *eac, const unsigned char *peer_mapping_data, size_t length);
gbg_eac_bytes gbg_eac_pace_ephemeral_key(gbg_eac *eac);
int gbg_eac_pace_shared_secret(gbg_eac *eac, const unsigned char *peer_key, size_t length);
int gbg_eac_pace_derive_keys(gbg_eac *eac);
gbg_eac_bytes gbg_eac_pace_token(gbg_eac *eac, const unsigned char *peer_key, size_t length);
int gbg_eac_pace_verify_token(gbg_eac *eac, const unsigned char *token, size_t length);

/// Chip Authentication (ICAO 9303-11 §6.2, TR-03110 v1: keys from the shared secret alone).
int gbg_eac_ca_count(const gbg_eac *eac);
int gbg_eac_ca_select(gbg_eac *eac, int index, unsigned char *oid, size_t *oid_length, int *key_id);
/// The chip's static public key (encoded point or DH value) from the ChipAuthenticationPublicKeyInfo.
gbg_eac_bytes gbg_eac_ca_chip_key(gbg_eac *eac);
/// Card side: the chip's key pair, raw (EC: the private scalar and the encoded point; DH: the
/// private and public values), on the domain parameters of the selected ChipAuthenticationPublicKeyInfo.
int gbg_eac_ca_set_key(gbg_eac *eac, const unsigned char *private_key, size_t private_length,
                       const unsigned char *public_key, size_t public_length);
/// Terminal side: an ephemeral key on the chip key's domain parameters, then the key agreement
/// with the chip's public key and the session keys.
gbg_eac_bytes gbg_eac_ca_terminal_key(gbg_eac *eac);
int gbg_eac_ca_terminal_agree(gbg_eac *eac, const unsigned char *chip_key, size_t length);
/// Card side: the key agreement with the terminal's ephemeral key and the session keys.
int gbg_eac_ca_chip_agree(gbg_eac *eac, const unsigned char *terminal_key, size_t length);

/// Terminal Authentication, card side (BSI TR-03110-2 §3.3; OpenPACE's TA_STEP2/4/6): the CVCA
/// as trust anchor, each certificate (7F21 …) of the terminal's chain imported in order, the
/// nonce r_PICC, and the terminal's signature checked over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD).
int gbg_eac_ta_init(gbg_eac *eac, const unsigned char *cvca, size_t length);
int gbg_eac_ta_import(gbg_eac *eac, const unsigned char *certificate, size_t length);
gbg_eac_bytes gbg_eac_ta_nonce(gbg_eac *eac);
int gbg_eac_ta_verify(gbg_eac *eac, const unsigned char *comp_terminal_key, size_t comp_length,
                      const unsigned char *id_picc, size_t id_length, const unsigned char *signature, size_t signature_length);
/// Terminal Authentication, terminal side: after gbg_eac_ta_init with the CVCA and the chain
/// imported (gbg_eac_ta_import), the terminal's private key (DER), the chip's r_PICC, and the
/// signature over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD) (TA_STEP5).
int gbg_eac_ta_set_private_key(gbg_eac *eac, const unsigned char *key, size_t key_length);
int gbg_eac_ta_set_nonce(gbg_eac *eac, const unsigned char *nonce, size_t length);
gbg_eac_bytes gbg_eac_ta_sign(gbg_eac *eac, const unsigned char *comp_terminal_key, size_t comp_length,
                              const unsigned char *id_picc, size_t id_length);
/// OpenPACE's Comp() of a public key with the key agreement of PACE (protocol 0) or CA (1).
gbg_eac_bytes gbg_eac_comp(gbg_eac *eac, int protocol, const unsigned char *key, size_t length);

/// Secure messaging with the keys of `protocol` (0 = PACE, 1 = CA); the send sequence counter starts at 0.
int gbg_eac_start_secure_messaging(gbg_eac *eac, int protocol);
int gbg_eac_block_size(const gbg_eac *eac);
int gbg_eac_increment_ssc(gbg_eac *eac);
gbg_eac_bytes gbg_eac_pad(gbg_eac *eac, const unsigned char *data, size_t length);
gbg_eac_bytes gbg_eac_unpad(const unsigned char *data, size_t length);
gbg_eac_bytes gbg_eac_encrypt(gbg_eac *eac, const unsigned char *padded, size_t length);
gbg_eac_bytes gbg_eac_decrypt(gbg_eac *eac, const unsigned char *padded, size_t length);
/// The MAC over SSC ‖ `padded` (TR-03110 F.2), 8 bytes.
gbg_eac_bytes gbg_eac_mac(gbg_eac *eac, const unsigned char *padded, size_t length);

#endif
