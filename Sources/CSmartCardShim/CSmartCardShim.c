#include "CSmartCardShim.h"

const SCARD_IO_REQUEST *CSmartCardShim_pci_t0(void) { return SCARD_PCI_T0; }
const SCARD_IO_REQUEST *CSmartCardShim_pci_t1(void) { return SCARD_PCI_T1; }
const SCARD_IO_REQUEST *CSmartCardShim_pci_raw(void) { return SCARD_PCI_RAW; }
DWORD CSmartCardShim_infinite(void) { return INFINITE; }
DWORD CSmartCardShim_autoallocate(void) { return SCARD_AUTOALLOCATE; }
int CSmartCardShim_max_atr_size(void) { return MAX_ATR_SIZE; }
const char *CSmartCardShim_stringify_error(LONG code) { return pcsc_stringify_error(code); }

#include <PCSC/reader.h>
#include <string.h>

static DWORD little_endian(const unsigned char *p, size_t length) {
    DWORD value = 0;
    for (size_t i = length; i > 0; i--) value = (value << 8) | p[i - 1];
    return value;
}

int CSmartCardShim_reader_limits(SCARDHANDLE card, DWORD *max_input, DWORD *max_apdu_data_size) {
    int found = 0;
    unsigned char buffer[256];
    DWORD length = sizeof buffer;
    if (SCardGetAttrib(card, SCARD_ATTR_MAXINPUT, buffer, &length) == SCARD_S_SUCCESS && length >= 1 && length <= 4) {
        *max_input = little_endian(buffer, length);
        found |= 1;
    }
    /* The features the driver offers: tag, length 4, the control code (big-endian). */
    length = sizeof buffer;
    if (SCardControl(card, CM_IOCTL_GET_FEATURE_REQUEST, NULL, 0, buffer, sizeof buffer, &length) != SCARD_S_SUCCESS) return found;
    DWORD properties = 0;
    for (DWORD i = 0; i + 6 <= length; i += 2 + buffer[i + 1]) {
        if (buffer[i] == FEATURE_GET_TLV_PROPERTIES && buffer[i + 1] == 4) {
            properties = (DWORD)buffer[i + 2] << 24 | (DWORD)buffer[i + 3] << 16 | (DWORD)buffer[i + 4] << 8 | buffer[i + 5];
        }
    }
    if (properties == 0) return found;
    length = sizeof buffer;
    if (SCardControl(card, properties, NULL, 0, buffer, sizeof buffer, &length) != SCARD_S_SUCCESS) return found;
    /* Tag, length, value (little-endian). */
    for (DWORD i = 0; i + 2 <= length && i + 2 + buffer[i + 1] <= length; i += 2 + buffer[i + 1]) {
        if (buffer[i] == PCSCv2_PART10_PROPERTY_dwMaxAPDUDataSize && buffer[i + 1] >= 1 && buffer[i + 1] <= 4) {
            *max_apdu_data_size = little_endian(buffer + i + 2, buffer[i + 1]);
            found |= 2;
        }
    }
    return found;
}
