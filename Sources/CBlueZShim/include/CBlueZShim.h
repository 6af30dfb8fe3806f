#ifndef CBLUEZSHIM_H
#define CBLUEZSHIM_H

#include <stddef.h>

/// The adapters BlueZ lists on the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured), one line each:
/// "<object path>\t<powered 0|1>\t<address>\t<alias>\n", into `out` (NUL-terminated, cut at
/// `out_length`). Every call on the bus is bounded by `timeout_usec`.
/// Returns 0, or a negative errno with the D-Bus error's name and message in `error`:
/// -ECONNREFUSED/-ENOENT no bus, and the D-Bus error names (ServiceUnknown, AccessDenied, …).
int CBlueZShim_list_adapters(char *out, size_t out_length, char *error, size_t error_length, unsigned long long timeout_usec);

#endif
