#ifndef CLIBNFCSHIM_H
#define CLIBNFCSHIM_H
/* libnfc behind a small handle API: fixed-size C arrays (connection strings, target data) stay
   on this side. Functions returning int: >= 0 success, < 0 a libnfc error code. */
#include <stddef.h>
#include <stdint.h>

typedef struct CLibNFCShim_session CLibNFCShim_session;

/* Lists the devices libnfc finds (configuration, environment, autodetection) as NUL-separated
   connection strings in out; returns their number. */
int CLibNFCShim_list(char *out, size_t out_size);

/* Opens a device (NULL connstring: the default one) and puts it in initiator mode. */
CLibNFCShim_session *CLibNFCShim_open(const char *connstring, char *error, size_t error_size);
const char *CLibNFCShim_name(CLibNFCShim_session *session);
const char *CLibNFCShim_connstring(CLibNFCShim_session *session);
/* Polls once for an ISO 14443-4 target (type A at 106 kbps, then type B). Returns 1 for type A
   (uid = NFCID1, ats = the ATS without its length byte), 2 for type B (uid = PUPI, ats = the
   ATQB's application data and protocol info), 0 when none answers, < 0 on error. */
int CLibNFCShim_select(CLibNFCShim_session *session, uint8_t *uid, size_t *uid_len, uint8_t *ats, size_t *ats_len);
/* Sends an APDU to the selected target; returns the response length. */
int CLibNFCShim_transceive(CLibNFCShim_session *session, const uint8_t *tx, size_t tx_len, uint8_t *rx, size_t rx_size, int timeout_ms);
/* 0 when the selected target is still there. */
int CLibNFCShim_present(CLibNFCShim_session *session);
/* Interrupts a blocking command (callable from another thread). */
void CLibNFCShim_abort(CLibNFCShim_session *session);
void CLibNFCShim_deselect(CLibNFCShim_session *session);
void CLibNFCShim_close(CLibNFCShim_session *session);
const char *CLibNFCShim_strerror(int code);
#endif
