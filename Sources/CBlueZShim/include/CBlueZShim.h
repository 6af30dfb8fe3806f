#ifndef CBLUEZSHIM_H
#define CBLUEZSHIM_H

#include <stddef.h>

/// The adapters BlueZ lists on the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured), one line each:
/// "<object path>\t<powered 0|1>\t<address>\t<alias>\n", into `out` (NUL-terminated, cut at
/// `out_length`). Every call on the bus is bounded by `timeout_usec`.
/// Returns 0, or a negative errno with the D-Bus error's name and message in `error`:
/// -ECONNREFUSED/-ENOENT no bus, and the D-Bus error names (ServiceUnknown, AccessDenied, …).
int CBlueZShim_list_adapters(char *out, size_t out_length, char *error, size_t error_length, unsigned long long timeout_usec);



// A GATT client session over one system-bus connection. sd-bus is not thread-safe: every call
// on one `sd_bus` comes from one thread (the Swift side keeps a dedicated thread per session).
// Each returns 0 (or 1/0 for found/not found) or a negative errno, with the D-Bus error in `error`.
typedef struct sd_bus sd_bus;

/// `address` NULL: the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured); else that bus ("unix:path=…").
int CBlueZShim_open(sd_bus **bus, const char *address, char *error, size_t error_length, unsigned long long timeout_usec);
void CBlueZShim_close(sd_bus *bus);
/// Bounds every later call on `bus` by `timeout_usec`.
void CBlueZShim_set_timeout(sd_bus *bus, unsigned long long timeout_usec);

/// SetDiscoveryFilter({UUIDs: [uuid], Transport: "le"}) on `adapter` (uuid may be NULL).
int CBlueZShim_set_discovery_filter(sd_bus *bus, const char *adapter, const char *uuid, char *error, size_t error_length);
/// A method without arguments or answer on `path`'s `interface` (StartDiscovery, Connect, …).
int CBlueZShim_call_void(sd_bus *bus, const char *path, const char *interface, const char *method, char *error, size_t error_length);
/// A device under `adapter` whose UUIDs hold `uuid` (case-insensitive), or whose Address is
/// `address` (when not NULL): 1 with its path in `out_path`, 0 when none (yet).
int CBlueZShim_find_device(sd_bus *bus, const char *adapter, const char *uuid, const char *address,
                           char *out_path, size_t out_path_length, char *error, size_t error_length);
/// A boolean property (ServicesResolved, Connected).
int CBlueZShim_get_bool(sd_bus *bus, const char *path, const char *interface, const char *property, int *value,
                        char *error, size_t error_length);
/// The paths of `device`'s service `service_uuid` characteristics `uuids[0..count)`: "" where absent.
/// 1 when the service was found, 0 when not (yet).
int CBlueZShim_find_characteristics(sd_bus *bus, const char *device, const char *service_uuid, const char *const *uuids, int count,
                                    char *paths, size_t path_length, char *error, size_t error_length);
/// ReadValue({}): at most `out_length` bytes into `out`, the count in `*read`.
int CBlueZShim_read_value(sd_bus *bus, const char *characteristic, unsigned char *out, size_t out_length, size_t *read,
                          char *error, size_t error_length);
/// WriteValue(bytes, {type: "command"|"request"}).
int CBlueZShim_write_value(sd_bus *bus, const char *characteristic, const unsigned char *bytes, size_t length, const char *type,
                           char *error, size_t error_length);
/// AcquireNotify({}) or AcquireWrite({}): a descriptor of our own (close it) and the ATT MTU.
int CBlueZShim_acquire(sd_bus *bus, const char *characteristic, const char *method, int *fd, unsigned *mtu,
                       char *error, size_t error_length);

// A GATT server for mdoc central client mode (server.c): the kiosk's service with State,
// Client2Server, Server2Client and Ident (uuids[0..3]) — and, when `psm` is not NULL, an L2CAP
// characteristic (uuids[4], read: those bytes) —, exported on its own bus connection and
// registered, with an LE advertisement of the service, on each adapter of `adapters` (object
// paths, one per line). Single-threaded like the client: every call from one thread.
typedef struct CBlueZServer CBlueZServer;
/// Registers everything and waits (pumping the bus) for BlueZ's answers, at most `timeout_usec`.
/// `inbox_limit` bounds the bytes of Client2Server pieces kept until taken (more: overflow).
int CBlueZShim_server_open(CBlueZServer **server, const char *address, const char *adapters, const char *service_uuid,
                           const char *const *uuids, const unsigned char *ident, size_t ident_length,
                           const unsigned char *psm, size_t psm_length, size_t inbox_limit,
                           unsigned long long timeout_usec, char *error, size_t error_length);
/// Handles what BlueZ sent, waiting at most `timeout_usec` for something to arrive. 0 or -errno.
int CBlueZShim_server_pump(CBlueZServer *server, unsigned long long timeout_usec);
/// The last byte the holder wrote to State (-1 none), how many State writes, which
/// notifications are on (bit 0 State, bit 2 Server2Client), the link's ATT MTU as BlueZ last
/// gave it (23 until then), and whether Client2Server overflowed the inbox.
void CBlueZShim_server_status(CBlueZServer *server, int *last_state, int *state_writes, int *notifying, unsigned *mtu, int *overflow);
/// The next piece written to Client2Server: 1 with it in `out`, 0 when none is waiting.
int CBlueZShim_server_take_piece(CBlueZServer *server, unsigned char *out, size_t out_length, size_t *length);
/// Sets characteristic 0 (State) or 2 (Server2Client) to `bytes` (≤ 512) and notifies it.
int CBlueZShim_server_notify(CBlueZServer *server, int characteristic, const unsigned char *bytes, size_t length,
                             char *error, size_t error_length);
void CBlueZShim_server_close(CBlueZServer *server);

/// A string property (Device1.Address, Device1.AddressType, Adapter1.Address) into `out`.
int CBlueZShim_get_string(sd_bus *bus, const char *path, const char *interface, const char *property, char *out, size_t out_length,
                          char *error, size_t error_length);

// LE credit-based L2CAP channels (l2cap.c): the kernel's Bluetooth sockets, SOCK_SEQPACKET (each
// send one SDU of at most the send MTU, each receive one SDU), non-blocking. Addresses as
// "AA:BB:CC:DD:EE:FF"; a local address NULL or "" binds BDADDR_ANY.
#define CBLUEZSHIM_LE_PUBLIC 1
#define CBLUEZSHIM_LE_RANDOM 2
/// Connects to `peer_address` (of `peer_type`) on `psm` from the adapter at `local_address`,
/// waiting at most `timeout_usec`: 0 with the socket in `*fd` and the channel's MTUs, or -errno.
int CBlueZShim_l2cap_connect(const char *local_address, const char *peer_address, int peer_type, unsigned psm, int *fd,
                             unsigned *send_mtu, unsigned *receive_mtu, unsigned long long timeout_usec, char *error, size_t error_length);
/// Listens on a dynamic LE PSM (the kernel picks it, 0x80–0xFF): 0 with the socket and the PSM, or -errno.
int CBlueZShim_l2cap_listen(const char *local_address, int *fd, unsigned *psm, char *error, size_t error_length);
/// Accepts one waiting connection: 1 with it in `*fd`, 0 when none waits, or -errno.
int CBlueZShim_l2cap_accept(int listener, int *fd, unsigned *send_mtu, unsigned *receive_mtu, char *error, size_t error_length);
#endif
