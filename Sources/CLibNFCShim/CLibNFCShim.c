#include "CLibNFCShim.h"
#include <nfc/nfc.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/select.h>

/* libnfc's serial drivers wait with select(), and glibc aborts the whole process when select()
 * is handed a descriptor of FD_SETSIZE (1,024) or more. A descriptor is always the lowest free
 * one, so if the lowest free one is already past the limit, refuse instead of opening. */
static int CLibNFCShim_descriptors_exhausted(char *error, size_t error_size) {
    int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (probe < 0) return 0;
    close(probe);
    if (probe < FD_SETSIZE) return 0;
    if (error) snprintf(error, error_size, "this process has %d descriptors open; libnfc cannot wait on a device past %d", probe, FD_SETSIZE);
    return 1;
}

struct CLibNFCShim_session {
    nfc_context *context;
    nfc_device *device;
    nfc_target target;
    int selected;
    char connstring[NFC_BUFSIZE_CONNSTRING];
};

int CLibNFCShim_list(char *out, size_t out_size) {
    if (CLibNFCShim_descriptors_exhausted(NULL, 0)) return -1;
    nfc_context *context = NULL;
    nfc_init(&context);
    if (!context) return -1;
    nfc_connstring found[16];
    size_t count = nfc_list_devices(context, found, 16);
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        size_t length = strlen(found[i]);
        if (used + length + 1 > out_size) break;
        memcpy(out + used, found[i], length + 1);
        used += length + 1;
    }
    nfc_exit(context);
    return (int)count;
}

CLibNFCShim_session *CLibNFCShim_open(const char *connstring, char *error, size_t error_size) {
    CLibNFCShim_session *session = calloc(1, sizeof *session);
    if (!session) return NULL;
    if (CLibNFCShim_descriptors_exhausted(error, error_size)) { free(session); return NULL; }
    nfc_init(&session->context);
    if (!session->context) { snprintf(error, error_size, "libnfc could not start"); free(session); return NULL; }
    session->device = nfc_open(session->context, connstring);
    if (!session->device) {
        snprintf(error, error_size, "no libnfc device at %s", connstring ? connstring : "(default)");
        nfc_exit(session->context); free(session); return NULL;
    }
    if (nfc_initiator_init(session->device) < 0) {
        snprintf(error, error_size, "%s", nfc_strerror(session->device));
        nfc_close(session->device); nfc_exit(session->context); free(session); return NULL;
    }
    /* The device answers ISO 14443-4 for us (RATS, block chaining, WTX). */
    nfc_device_set_property_bool(session->device, NP_AUTO_ISO14443_4, true);
    nfc_device_set_property_bool(session->device, NP_INFINITE_SELECT, false);
    strncpy(session->connstring, nfc_device_get_connstring(session->device), sizeof session->connstring - 1);
    return session;
}

const char *CLibNFCShim_name(CLibNFCShim_session *session) { return nfc_device_get_name(session->device); }
const char *CLibNFCShim_connstring(CLibNFCShim_session *session) { return session->connstring; }

int CLibNFCShim_select(CLibNFCShim_session *session, uint8_t *uid, size_t *uid_len, uint8_t *ats, size_t *ats_len) {
    nfc_modulation type_a = { .nmt = NMT_ISO14443A, .nbr = NBR_106 };
    int rc = nfc_initiator_select_passive_target(session->device, type_a, NULL, 0, &session->target);
    if (rc > 0) {
        const nfc_iso14443a_info *info = &session->target.nti.nai;
        if (!(info->btSak & 0x20)) { session->selected = 0; return 0; } /* not ISO 14443-4 */
        size_t n = info->szUidLen < *uid_len ? info->szUidLen : *uid_len;
        memcpy(uid, info->abtUid, n); *uid_len = n;
        size_t a = info->szAtsLen < *ats_len ? info->szAtsLen : *ats_len;
        memcpy(ats, info->abtAts, a); *ats_len = a;
        session->selected = 1;
        return 1;
    }
    if (rc < 0) return rc;
    nfc_modulation type_b = { .nmt = NMT_ISO14443B, .nbr = NBR_106 };
    rc = nfc_initiator_select_passive_target(session->device, type_b, NULL, 0, &session->target);
    if (rc > 0) {
        const nfc_iso14443b_info *info = &session->target.nti.nbi;
        size_t n = 4 < *uid_len ? 4 : *uid_len;
        memcpy(uid, info->abtPupi, n); *uid_len = n;
        /* Type B: application data (4) and protocol info (3) from the ATQB, as PC/SC part 3
           uses them for the pseudo-ATR's historical bytes. */
        uint8_t atqb[7];
        memcpy(atqb, info->abtApplicationData, 4);
        memcpy(atqb + 4, info->abtProtocolInfo, 3);
        size_t a = sizeof atqb < *ats_len ? sizeof atqb : *ats_len;
        memcpy(ats, atqb, a); *ats_len = a;
        session->selected = 1;
        return 2;
    }
    return rc;
}

int CLibNFCShim_transceive(CLibNFCShim_session *session, const uint8_t *tx, size_t tx_len, uint8_t *rx, size_t rx_size, int timeout_ms) {
    return nfc_initiator_transceive_bytes(session->device, tx, tx_len, rx, rx_size, timeout_ms);
}

int CLibNFCShim_present(CLibNFCShim_session *session) {
    if (!session->selected) return NFC_ENOTSUCHDEV;
    return nfc_initiator_target_is_present(session->device, &session->target);
}

void CLibNFCShim_abort(CLibNFCShim_session *session) { if (session && session->device) nfc_abort_command(session->device); }
void CLibNFCShim_deselect(CLibNFCShim_session *session) { nfc_initiator_deselect_target(session->device); session->selected = 0; }

void CLibNFCShim_close(CLibNFCShim_session *session) {
    if (!session) return;
    if (session->device) nfc_close(session->device);
    if (session->context) nfc_exit(session->context);
    free(session);
}

const char *CLibNFCShim_strerror(int code) {
    switch (code) {
    case NFC_EIO: return "input/output error";
    case NFC_EINVARG: return "invalid argument";
    case NFC_EDEVNOTSUPP: return "operation not supported by the device";
    case NFC_ENOTSUCHDEV: return "no such device";
    case NFC_EOVFLOW: return "buffer overflow";
    case NFC_ETIMEOUT: return "timeout";
    case NFC_EOPABORTED: return "operation aborted";
    case NFC_ENOTIMPL: return "not implemented";
    case NFC_ETGRELEASED: return "target released";
    case NFC_ERFTRANS: return "RF transmission error";
    case NFC_EMFCAUTHFAIL: return "authentication failed";
    case NFC_ESOFT: return "software error";
    case NFC_ECHIP: return "device's internal chip error";
    default: return "libnfc error";
    }
}
