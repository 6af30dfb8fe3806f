#ifndef CSMARTCARDSHIM_H
#define CSMARTCARDSHIM_H
/* What pcsc-lite exposes only as macros or addresses of globals, as plain functions for Swift. */
#include <PCSC/winscard.h>
#include <PCSC/pcsclite.h>

const SCARD_IO_REQUEST *CSmartCardShim_pci_t0(void);
const SCARD_IO_REQUEST *CSmartCardShim_pci_t1(void);
const SCARD_IO_REQUEST *CSmartCardShim_pci_raw(void);
DWORD CSmartCardShim_infinite(void);
DWORD CSmartCardShim_autoallocate(void);
/* Maximum ATR length pcsc-lite stores in SCARD_READERSTATE. */
int CSmartCardShim_max_atr_size(void);
/* Human text pcsc-lite gives for a status code (static storage, never freed). */
const char *CSmartCardShim_stringify_error(LONG code);
/* What the reader says of its own limits, without asking the card: SCARD_ATTR_MAXINPUT (the
   longest command the reader passes on) and, through FEATURE_GET_TLV_PROPERTIES (PC/SC part 10),
   dwMaxAPDUDataSize (0: short APDUs only). Returns a bit set: 1 when *max_input was found,
   2 when *max_apdu_data_size was found. */
int CSmartCardShim_reader_limits(SCARDHANDLE card, DWORD *max_input, DWORD *max_apdu_data_size);
#endif
