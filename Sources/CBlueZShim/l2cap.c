// LE credit-based L2CAP channels (Bluetooth Core Vol 3 Part A §4.22) through the kernel's
// Bluetooth sockets: what an mdoc holder offers through its L2CAP characteristic (ISO 18013-5
// §8.3.3.1.1.4, the PSM the reader connects to). BlueZ's D-Bus API has no call for them; the
// socket is the kernel's own (AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP, an LE address type).
// The structures and constants are the kernel's ABI (include/net/bluetooth/{bluetooth,l2cap}.h),
// written out here so the build needs no libbluetooth headers. Nothing here blocks without a bound.

#define _GNU_SOURCE
#include "CBlueZShim.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_BLUETOOTH
#define AF_BLUETOOTH 31
#endif
#define GBG_BTPROTO_L2CAP 0
#define GBG_SOL_BLUETOOTH 274
#define GBG_BT_SECURITY 4
#define GBG_BT_SNDMTU 12
#define GBG_BT_RCVMTU 13
#define GBG_BT_SECURITY_LOW 1

struct gbg_bdaddr { uint8_t b[6]; } __attribute__((packed));

struct gbg_sockaddr_l2 {
    sa_family_t l2_family;
    uint16_t l2_psm;      // little-endian on the wire (the kernel's __le16)
    struct gbg_bdaddr l2_bdaddr;
    uint16_t l2_cid;
    uint8_t l2_bdaddr_type;
};

struct gbg_bt_security { uint8_t level; uint8_t key_size; };

static void set_error(char *error, size_t length, const char *what, int code) {
    if (length == 0) return;
    snprintf(error, length, "%s: %s", what, strerror(code));
}

/// "AA:BB:CC:DD:EE:FF" into the kernel's byte order (least significant first); 0 or -EINVAL.
static int parse_address(const char *text, struct gbg_bdaddr *out) {
    unsigned values[6];
    char tail;
    if (!text || sscanf(text, "%2x:%2x:%2x:%2x:%2x:%2x%c", &values[0], &values[1], &values[2], &values[3], &values[4], &values[5], &tail) != 6)
        return -EINVAL;
    if (strlen(text) != 17) return -EINVAL;
    for (int i = 0; i < 6; i++) out->b[5 - i] = (uint8_t)values[i];
    return 0;
}

static uint16_t le16(uint16_t value) {
    uint8_t bytes[2] = { (uint8_t)(value & 0xFF), (uint8_t)(value >> 8) };
    uint16_t out;
    memcpy(&out, bytes, 2);
    return out;
}

static uint16_t from_le16(uint16_t value) {
    uint8_t bytes[2];
    memcpy(bytes, &value, 2);
    return (uint16_t)(bytes[0] | (bytes[1] << 8));
}

static int make_socket(const char *local_address, int local_type, uint16_t psm, char *error, size_t error_length) {
    int fd = socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, GBG_BTPROTO_L2CAP);
    if (fd < 0) {
        int code = errno;
        set_error(error, error_length, "socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)", code);
        return -code;
    }
    struct gbg_sockaddr_l2 local;
    memset(&local, 0, sizeof local);
    local.l2_family = AF_BLUETOOTH;
    local.l2_psm = le16(psm);
    local.l2_bdaddr_type = (uint8_t)local_type;
    if (local_address && local_address[0] && parse_address(local_address, &local.l2_bdaddr) < 0) {
        close(fd);
        set_error(error, error_length, "the adapter's address", EINVAL);
        return -EINVAL;
    }
    if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
        int code = errno;
        close(fd);
        set_error(error, error_length, "bind", code);
        return -code;
    }
    // An unauthenticated, unencrypted channel, as the wallets open (Android's "insecure" L2CAP
    // channel): the session is encrypted end to end by ISO 18013-5 §9.1.1 whatever the link is.
    struct gbg_bt_security security = { GBG_BT_SECURITY_LOW, 0 };
    (void)setsockopt(fd, GBG_SOL_BLUETOOTH, GBG_BT_SECURITY, &security, sizeof security);
    return fd;
}

static void read_mtus(int fd, unsigned *send_mtu, unsigned *receive_mtu) {
    uint16_t value = 0;
    socklen_t length = sizeof value;
    if (send_mtu) *send_mtu = getsockopt(fd, GBG_SOL_BLUETOOTH, GBG_BT_SNDMTU, &value, &length) == 0 ? value : 0;
    value = 0;
    length = sizeof value;
    if (receive_mtu) *receive_mtu = getsockopt(fd, GBG_SOL_BLUETOOTH, GBG_BT_RCVMTU, &value, &length) == 0 ? value : 0;
}

static long long remaining_ms(const struct timespec *start, unsigned long long timeout_usec) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long elapsed = (now.tv_sec - start->tv_sec) * 1000LL + (now.tv_nsec - start->tv_nsec) / 1000000LL;
    long long total = (long long)(timeout_usec / 1000ULL);
    return total - elapsed;
}

int CBlueZShim_l2cap_connect(const char *local_address, const char *peer_address, int peer_type, unsigned psm, int *fd_out,
                             unsigned *send_mtu, unsigned *receive_mtu, unsigned long long timeout_usec, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    *fd_out = -1;
    struct gbg_sockaddr_l2 peer;
    memset(&peer, 0, sizeof peer);
    peer.l2_family = AF_BLUETOOTH;
    if (psm == 0 || psm > 0xFFFF) { set_error(error, error_length, "the PSM", EINVAL); return -EINVAL; }
    peer.l2_psm = le16((uint16_t)psm);
    if (peer_type != CBLUEZSHIM_LE_PUBLIC && peer_type != CBLUEZSHIM_LE_RANDOM) { set_error(error, error_length, "the holder's address type", EINVAL); return -EINVAL; }
    peer.l2_bdaddr_type = (uint8_t)peer_type;
    if (parse_address(peer_address, &peer.l2_bdaddr) < 0) { set_error(error, error_length, "the holder's address", EINVAL); return -EINVAL; }
    int fd = make_socket(local_address, CBLUEZSHIM_LE_PUBLIC, 0, error, error_length);
    if (fd < 0) return fd;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (connect(fd, (struct sockaddr *)&peer, sizeof peer) < 0 && errno != EINPROGRESS && errno != EAGAIN) {
        int code = errno;
        close(fd);
        set_error(error, error_length, "connect", code);
        return -code;
    }
    for (;;) {
        long long left = remaining_ms(&start, timeout_usec);
        if (left <= 0) {
            close(fd);
            set_error(error, error_length, "connect", ETIMEDOUT);
            return -ETIMEDOUT;
        }
        struct pollfd descriptor = { fd, POLLOUT, 0 };
        int ready = poll(&descriptor, 1, (int)(left > 1000 ? 1000 : left));
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) {
            int code = errno;
            close(fd);
            set_error(error, error_length, "poll", code);
            return -code;
        }
        if (ready == 0) continue;
        int failure = 0;
        socklen_t length = sizeof failure;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) < 0) failure = errno;
        if (failure != 0) {
            close(fd);
            set_error(error, error_length, "connect", failure);
            return -failure;
        }
        break;
    }
    read_mtus(fd, send_mtu, receive_mtu);
    *fd_out = fd;
    return 0;
}

int CBlueZShim_l2cap_listen(const char *local_address, int *fd_out, unsigned *psm, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    *fd_out = -1;
    int fd = make_socket(local_address, CBLUEZSHIM_LE_PUBLIC, 0, error, error_length);
    if (fd < 0) return fd;
    if (listen(fd, 1) < 0) {
        int code = errno;
        close(fd);
        set_error(error, error_length, "listen", code);
        return -code;
    }
    struct gbg_sockaddr_l2 bound;
    memset(&bound, 0, sizeof bound);
    socklen_t length = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &length) < 0) {
        int code = errno;
        close(fd);
        set_error(error, error_length, "getsockname", code);
        return -code;
    }
    *psm = from_le16(bound.l2_psm);
    *fd_out = fd;
    return 0;
}

int CBlueZShim_l2cap_accept(int listener, int *fd_out, unsigned *send_mtu, unsigned *receive_mtu, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    *fd_out = -1;
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        int code = errno;
        if (code == EAGAIN || code == EWOULDBLOCK) return 0;
        set_error(error, error_length, "accept", code);
        return -code;
    }
    read_mtus(fd, send_mtu, receive_mtu);
    *fd_out = fd;
    return 1;
}
