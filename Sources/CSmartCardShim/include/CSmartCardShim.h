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
#endif
