// The kiosk as GATT server (ISO 18013-5 mdoc central client mode: the kiosk advertises the
// engagement's service, the holder connects): a GATT application and an LE advertisement
// exported on our own sd-bus connection and registered with BlueZ's GattManager1 and
// LEAdvertisingManager1 (doc/org.bluez.GattManager.rst, GattCharacteristic.rst,
// LEAdvertisingManager.rst). BlueZ calls back into us (GetManagedObjects during registration,
// WriteValue, StartNotify, …), so every wait pumps the bus; nothing here blocks without a bound.

#include "CBlueZShim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-bus.h>

#define SERVER_ROOT "/org/gbgbridge/reader"
#define SERVICE_PATH SERVER_ROOT "/service0"
#define ADVERTISEMENT_PATH "/org/gbgbridge/advertisement0"
#define CHARACTERISTIC_IFACE "org.bluez.GattCharacteristic1"
#define MAX_ADAPTERS 8
#define MAX_VALUE 512

enum { STATE = 0, CLIENT2SERVER = 1, SERVER2CLIENT = 2, IDENT = 3, L2CAP = 4, CHARACTERISTICS = 5 };

struct characteristic {
    struct CBlueZServer *server;
    int index;
    char path[96];
    char uuid[40];
    unsigned char value[MAX_VALUE];
    size_t value_length;
};

struct CBlueZServer {
    sd_bus *bus;
    char service_uuid[40];
    struct characteristic characteristics[CHARACTERISTICS];
    int characteristic_count;  // 4, or 5 with the L2CAP characteristic
    unsigned char ident[64];
    size_t ident_length;
    unsigned char psm[8];      // the L2CAP characteristic's value
    size_t psm_length;
    sd_bus_slot *slots[16];
    int slot_count;
    // Pieces the holder wrote to Client2Server, each stored as 2 bytes of length then the bytes.
    unsigned char *inbox;
    size_t inbox_length, inbox_read, inbox_limit;
    int overflow;
    int last_state;  // the last byte written to State, -1 none
    int state_writes;
    int notifying;   // bit 0: State, bit 2: Server2Client
    unsigned mtu;
    int pending_replies;
    char registration_error[512];
};

static void set_error(char *error, size_t length, const char *name, const char *message) {
    if (length == 0) return;
    snprintf(error, length, "%s: %s", name ? name : "error", message ? message : "");
}

// MARK: - Properties and methods BlueZ calls

static int get_string(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                      void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)error;
    struct characteristic *c = userdata;
    if (strcmp(property, "UUID") == 0) return sd_bus_message_append(reply, "s", c->uuid);
    if (strcmp(property, "Service") == 0) return sd_bus_message_append(reply, "o", SERVICE_PATH);
    return -ENOENT;
}

static int get_flags(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                     void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)property; (void)error;
    struct characteristic *c = userdata;
    switch (c->index) {
    case STATE: return sd_bus_message_append(reply, "as", 2, "notify", "write-without-response");
    case CLIENT2SERVER: return sd_bus_message_append(reply, "as", 1, "write-without-response");
    case SERVER2CLIENT: return sd_bus_message_append(reply, "as", 1, "notify");
    default: return sd_bus_message_append(reply, "as", 1, "read");
    }
}

static int get_value(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                     void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)property; (void)error;
    struct characteristic *c = userdata;
    return sd_bus_message_append_array(reply, 'y', c->value, c->value_length);
}

/// Reads WriteValue's / ReadValue's options, keeping "mtu".
static int read_options(sd_bus_message *m, unsigned *mtu) {
    int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
    if (r < 0) return r;
    int entries = 0;
    while ((r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
        if (++entries > 64) return -E2BIG;
        const char *name = NULL;
        if ((r = sd_bus_message_read(m, "s", &name)) < 0) return r;
        if (strcmp(name, "mtu") == 0) {
            uint16_t value = 0;
            if ((r = sd_bus_message_read(m, "v", "q", &value)) < 0) return r;
            if (value >= 23) *mtu = value;
        } else if ((r = sd_bus_message_skip(m, "v")) < 0) {
            return r;
        }
        if ((r = sd_bus_message_exit_container(m)) < 0) return r;
    }
    if (r < 0) return r;
    return sd_bus_message_exit_container(m);
}

static int method_read_value(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    struct characteristic *c = userdata;
    if (c->index != IDENT && c->index != L2CAP) return sd_bus_error_set(error, "org.bluez.Error.NotPermitted", "not readable");
    unsigned mtu = 0;
    int r = read_options(m, &mtu);
    if (r < 0) return r;
    if (mtu) c->server->mtu = mtu;
    sd_bus_message *reply = NULL;
    r = sd_bus_message_new_method_return(m, &reply);
    if (r >= 0 && c->index == IDENT) r = sd_bus_message_append_array(reply, 'y', c->server->ident, c->server->ident_length);
    if (r >= 0 && c->index == L2CAP) r = sd_bus_message_append_array(reply, 'y', c->server->psm, c->server->psm_length);
    if (r >= 0) r = sd_bus_send(NULL, reply, NULL);
    sd_bus_message_unref(reply);
    return r < 0 ? r : 1;
}

static int method_write_value(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    struct characteristic *c = userdata;
    struct CBlueZServer *s = c->server;
    const void *bytes = NULL;
    size_t length = 0;
    int r = sd_bus_message_read_array(m, 'y', &bytes, &length);
    if (r < 0) return r;
    unsigned mtu = 0;
    if ((r = read_options(m, &mtu)) < 0) return r;
    if (mtu) s->mtu = mtu;
    if (c->index == STATE) {
        s->last_state = length > 0 ? ((const unsigned char *)bytes)[0] : -1;
        s->state_writes++;
    } else if (c->index == CLIENT2SERVER) {
        if (length > MAX_VALUE || s->inbox_length + 2 + length > s->inbox_limit) {
            s->overflow = 1;  // the holder sent more than a message may be: the reader refuses it
        } else {
            s->inbox[s->inbox_length++] = (unsigned char)(length >> 8);
            s->inbox[s->inbox_length++] = (unsigned char)(length & 0xFF);
            memcpy(s->inbox + s->inbox_length, bytes, length);
            s->inbox_length += length;
        }
    } else {
        return sd_bus_error_set(error, "org.bluez.Error.NotPermitted", "not writable");
    }
    return sd_bus_reply_method_return(m, "");
}

static int method_start_notify(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    struct characteristic *c = userdata;
    if (c->index != STATE && c->index != SERVER2CLIENT) return sd_bus_error_set(error, "org.bluez.Error.NotSupported", "no notifications");
    c->server->notifying |= 1 << c->index;
    return sd_bus_reply_method_return(m, "");
}

static int method_stop_notify(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    struct characteristic *c = userdata;
    c->server->notifying &= ~(1 << c->index);
    return sd_bus_reply_method_return(m, "");
}

static const sd_bus_vtable characteristic_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("UUID", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Service", "o", get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Flags", "as", get_flags, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Value", "ay", get_value, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_METHOD("ReadValue", "a{sv}", "ay", method_read_value, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("WriteValue", "aya{sv}", "", method_write_value, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StartNotify", "", "", method_start_notify, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StopNotify", "", "", method_stop_notify, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END
};

static int get_service(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                       void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)error;
    struct CBlueZServer *s = userdata;
    if (strcmp(property, "UUID") == 0) return sd_bus_message_append(reply, "s", s->service_uuid);
    return sd_bus_message_append(reply, "b", 1);  // Primary
}

static const sd_bus_vtable service_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("UUID", "s", get_service, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Primary", "b", get_service, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_VTABLE_END
};

static int get_advertisement(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                             void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)error;
    struct CBlueZServer *s = userdata;
    if (strcmp(property, "Type") == 0) return sd_bus_message_append(reply, "s", "peripheral");
    return sd_bus_message_append(reply, "as", 1, s->service_uuid);  // ServiceUUIDs
}

static int method_release(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)userdata; (void)error;
    return sd_bus_reply_method_return(m, "");
}

static const sd_bus_vtable advertisement_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Type", "s", get_advertisement, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("ServiceUUIDs", "as", get_advertisement, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD("Release", "", "", method_release, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END
};

// MARK: - Pumping

static unsigned long long now_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
}

int CBlueZShim_server_pump(CBlueZServer *s, unsigned long long timeout_usec) {
    int r;
    int handled = 0;
    while ((r = sd_bus_process(s->bus, NULL)) > 0) {
        if (++handled > 10000) return 0;  // a flood: the caller looks at what arrived and comes back
    }
    if (r < 0) return r;
    r = sd_bus_wait(s->bus, timeout_usec);
    if (r < 0 && r != -EINTR) return r;
    while ((r = sd_bus_process(s->bus, NULL)) > 0) {
        if (++handled > 10000) return 0;
    }
    return r < 0 ? r : 0;
}

static int registered(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)ret_error;
    struct CBlueZServer *s = userdata;
    s->pending_replies--;
    const sd_bus_error *error = sd_bus_message_get_error(m);
    if (error && s->registration_error[0] == 0)
        snprintf(s->registration_error, sizeof s->registration_error, "%s: %s", error->name ? error->name : "error",
                 error->message ? error->message : "");
    return 0;
}

// MARK: - Life

static int add_slot(CBlueZServer *s, int r, sd_bus_slot *slot) {
    if (r >= 0 && s->slot_count < (int)(sizeof s->slots / sizeof s->slots[0])) s->slots[s->slot_count++] = slot;
    return r;
}

int CBlueZShim_server_open(CBlueZServer **out, const char *address, const char *adapters, const char *service_uuid,
                           const char *const *uuids, const unsigned char *ident, size_t ident_length,
                           const unsigned char *psm, size_t psm_length, size_t inbox_limit,
                           unsigned long long timeout_usec, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    *out = NULL;
    if (ident_length > sizeof(((CBlueZServer *)0)->ident) || psm_length > sizeof(((CBlueZServer *)0)->psm) || strlen(service_uuid) >= 40) {
        set_error(error, error_length, "arguments", "an Ident or service UUID out of bounds");
        return -EINVAL;
    }
    CBlueZServer *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->inbox_limit = inbox_limit;
    s->inbox = malloc(inbox_limit ? inbox_limit : 1);
    if (!s->inbox) { free(s); return -ENOMEM; }
    s->last_state = -1;
    s->mtu = 23;
    snprintf(s->service_uuid, sizeof s->service_uuid, "%s", service_uuid);
    memcpy(s->ident, ident, ident_length);
    s->ident_length = ident_length;
    s->characteristic_count = psm ? CHARACTERISTICS : L2CAP;
    if (psm) memcpy(s->psm, psm, psm_length);
    s->psm_length = psm ? psm_length : 0;
    int r = CBlueZShim_open(&s->bus, address, error, error_length, timeout_usec);
    if (r < 0) { free(s->inbox); free(s); return r; }

    sd_bus_slot *slot = NULL;
    r = add_slot(s, sd_bus_add_object_manager(s->bus, &slot, SERVER_ROOT), slot);
    if (r >= 0) r = add_slot(s, sd_bus_add_object_vtable(s->bus, &slot, SERVICE_PATH, "org.bluez.GattService1", service_vtable, s), slot);
    for (int i = 0; r >= 0 && i < s->characteristic_count; i++) {
        struct characteristic *c = &s->characteristics[i];
        c->server = s;
        c->index = i;
        snprintf(c->path, sizeof c->path, SERVICE_PATH "/char%d", i);
        snprintf(c->uuid, sizeof c->uuid, "%s", uuids[i]);
        r = add_slot(s, sd_bus_add_object_vtable(s->bus, &slot, c->path, CHARACTERISTIC_IFACE, characteristic_vtable, c), slot);
    }
    if (r >= 0) r = add_slot(s, sd_bus_add_object_vtable(s->bus, &slot, ADVERTISEMENT_PATH, "org.bluez.LEAdvertisement1", advertisement_vtable, s), slot);
    if (r < 0) {
        set_error(error, error_length, "exporting the GATT application", strerror(-r));
        CBlueZShim_server_close(s);
        return r;
    }

    // Register the application and the advertisement on every adapter named (one per line),
    // asynchronously: BlueZ asks us for our objects before it answers.
    char list[MAX_ADAPTERS * 128];
    snprintf(list, sizeof list, "%s", adapters);
    int count = 0;
    for (char *save = NULL, *adapter = strtok_r(list, "\n", &save); adapter && count < MAX_ADAPTERS && r >= 0;
         adapter = strtok_r(NULL, "\n", &save), count++) {
        r = sd_bus_call_method_async(s->bus, NULL, "org.bluez", adapter, "org.bluez.GattManager1", "RegisterApplication", registered, s,
                                     "oa{sv}", SERVER_ROOT, 0);
        if (r >= 0) s->pending_replies++;
        if (r >= 0) r = sd_bus_call_method_async(s->bus, NULL, "org.bluez", adapter, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                                                 registered, s, "oa{sv}", ADVERTISEMENT_PATH, 0);
        if (r >= 0) s->pending_replies++;
    }
    if (r < 0) {
        set_error(error, error_length, "registering with BlueZ", strerror(-r));
        CBlueZShim_server_close(s);
        return r;
    }
    unsigned long long deadline = now_usec() + timeout_usec;
    while (s->pending_replies > 0) {
        unsigned long long now = now_usec();
        if (now >= deadline) {
            set_error(error, error_length, "org.freedesktop.DBus.Error.Timeout", "BlueZ did not answer the GATT application's registration");
            CBlueZShim_server_close(s);
            return -ETIMEDOUT;
        }
        r = CBlueZShim_server_pump(s, deadline - now);
        if (r < 0) {
            set_error(error, error_length, "registering with BlueZ", strerror(-r));
            CBlueZShim_server_close(s);
            return r;
        }
    }
    if (s->registration_error[0]) {
        set_error(error, error_length, s->registration_error, "");
        CBlueZShim_server_close(s);
        return -EIO;
    }
    *out = s;
    return 0;
}

void CBlueZShim_server_status(CBlueZServer *s, int *last_state, int *state_writes, int *notifying, unsigned *mtu, int *overflow) {
    *last_state = s->last_state;
    *state_writes = s->state_writes;
    *notifying = s->notifying;
    *mtu = s->mtu;
    *overflow = s->overflow;
}

int CBlueZShim_server_take_piece(CBlueZServer *s, unsigned char *out, size_t out_length, size_t *length) {
    if (s->inbox_read + 2 > s->inbox_length) {
        s->inbox_read = s->inbox_length = 0;
        return 0;
    }
    size_t size = (size_t)s->inbox[s->inbox_read] << 8 | s->inbox[s->inbox_read + 1];
    if (size > out_length) return -EMSGSIZE;
    memcpy(out, s->inbox + s->inbox_read + 2, size);
    s->inbox_read += 2 + size;
    *length = size;
    return 1;
}

int CBlueZShim_server_notify(CBlueZServer *s, int characteristic, const unsigned char *bytes, size_t length, char *error, size_t error_length) {
    if ((characteristic != STATE && characteristic != SERVER2CLIENT) || length > MAX_VALUE) {
        set_error(error, error_length, "notify", "not a notifying characteristic, or a value over 512 bytes");
        return -EINVAL;
    }
    struct characteristic *c = &s->characteristics[characteristic];
    memcpy(c->value, bytes, length);
    c->value_length = length;
    int r = sd_bus_emit_properties_changed(s->bus, c->path, CHARACTERISTIC_IFACE, "Value", NULL);
    if (r >= 0) r = sd_bus_flush(s->bus);
    if (r < 0) {
        set_error(error, error_length, "notify", strerror(-r));
        return r;
    }
    return 0;
}

void CBlueZShim_server_close(CBlueZServer *s) {
    if (!s) return;
    for (int i = 0; i < s->slot_count; i++) sd_bus_slot_unref(s->slots[i]);
    // Leaving the bus is enough: BlueZ drops the application and the advertisement of a client that left.
    if (s->bus) sd_bus_flush_close_unref(s->bus);
    free(s->inbox);
    free(s);
}
