#include "CSmartCardShim.h"

const SCARD_IO_REQUEST *CSmartCardShim_pci_t0(void) { return SCARD_PCI_T0; }
const SCARD_IO_REQUEST *CSmartCardShim_pci_t1(void) { return SCARD_PCI_T1; }
const SCARD_IO_REQUEST *CSmartCardShim_pci_raw(void) { return SCARD_PCI_RAW; }
DWORD CSmartCardShim_infinite(void) { return INFINITE; }
DWORD CSmartCardShim_autoallocate(void) { return SCARD_AUTOALLOCATE; }
int CSmartCardShim_max_atr_size(void) { return MAX_ATR_SIZE; }
const char *CSmartCardShim_stringify_error(LONG code) { return pcsc_stringify_error(code); }
