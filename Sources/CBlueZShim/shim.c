#include "CBlueZShim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

static void set_error(char *error, size_t length, const char *name, const char *message) {
    if (length == 0) return;
    snprintf(error, length, "%s: %s", name ? name : "error", message ? message : "");
}

/// Appends to `out` without overflowing; a line that does not fit is dropped whole.
static void append_line(char *out, size_t out_length, const char *path, int powered, const char *address, const char *alias) {
    size_t used = strlen(out);
    if (used >= out_length) return;
    char line[1024];
    int written = snprintf(line, sizeof line, "%s\t%d\t%s\t%s\n", path, powered, address ? address : "", alias ? alias : "");
    if (written <= 0 || (size_t)written >= sizeof line || used + (size_t)written >= out_length) return;
    memcpy(out + used, line, (size_t)written + 1);
}

/// Reads an a{sv} of org.bluez.Adapter1's properties, keeping Powered, Address and Alias.
static int read_adapter_properties(sd_bus_message *reply, int *powered, char *address, size_t address_length, char *alias, size_t alias_length) {
    int r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sv}");
    if (r < 0) return r;
    while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
        const char *name = NULL;
        if ((r = sd_bus_message_read(reply, "s", &name)) < 0) return r;
        if (strcmp(name, "Powered") == 0) {
            int value = 0;
            if ((r = sd_bus_message_read(reply, "v", "b", &value)) < 0) return r;
            *powered = value ? 1 : 0;
        } else if (strcmp(name, "Address") == 0 || strcmp(name, "Alias") == 0) {
            const char *value = NULL;
            if ((r = sd_bus_message_read(reply, "v", "s", &value)) < 0) return r;
            char *target = strcmp(name, "Address") == 0 ? address : alias;
            size_t length = strcmp(name, "Address") == 0 ? address_length : alias_length;
            snprintf(target, length, "%s", value ? value : "");
        } else {
            if ((r = sd_bus_message_skip(reply, "v")) < 0) return r;
        }
        if ((r = sd_bus_message_exit_container(reply)) < 0) return r;
    }
    if (r < 0) return r;
    return sd_bus_message_exit_container(reply);
}

// MARK: - The GATT client session

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

static int failed(int r, sd_bus_error *bus_error, char *error, size_t error_length, const char *what) {
    set_error(error, error_length, bus_error && bus_error->name ? bus_error->name : what,
              bus_error && bus_error->message ? bus_error->message : strerror(r < 0 ? -r : EIO));
    sd_bus_error_free(bus_error);
    return r < 0 ? r : -EIO;
}

int CBlueZShim_open(sd_bus **bus, const char *address, char *error, size_t error_length, unsigned long long timeout_usec) {
    if (error_length > 0) error[0] = 0;
    int r;
    if (address) {
        r = sd_bus_new(bus);
        if (r >= 0) r = sd_bus_set_address(*bus, address);
        if (r >= 0) r = sd_bus_set_bus_client(*bus, 1);
        if (r >= 0) r = sd_bus_start(*bus);
        if (r < 0) { sd_bus_unref(*bus); *bus = NULL; }
    } else {
        r = sd_bus_open_system(bus);
    }
    if (r < 0) {
        set_error(error, error_length, "connect", strerror(-r));
        return r;
    }
    sd_bus_set_method_call_timeout(*bus, timeout_usec);
    return 0;
}

void CBlueZShim_close(sd_bus *bus) { sd_bus_flush_close_unref(bus); }

void CBlueZShim_set_timeout(sd_bus *bus, unsigned long long timeout_usec) { sd_bus_set_method_call_timeout(bus, timeout_usec); }

int CBlueZShim_set_discovery_filter(sd_bus *bus, const char *adapter, const char *uuid, char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    int r;
    if (uuid)
        r = sd_bus_call_method(bus, "org.bluez", adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", &bus_error, NULL,
                               "a{sv}", 2, "UUIDs", "as", 1, uuid, "Transport", "s", "le");
    else
        r = sd_bus_call_method(bus, "org.bluez", adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", &bus_error, NULL,
                               "a{sv}", 1, "Transport", "s", "le");
    if (r < 0) return failed(r, &bus_error, error, error_length, "SetDiscoveryFilter");
    return 0;
}

int CBlueZShim_call_void(sd_bus *bus, const char *path, const char *interface, const char *method, char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(bus, "org.bluez", path, interface, method, &bus_error, NULL, "");
    if (r < 0) return failed(r, &bus_error, error, error_length, method);
    return 0;
}

/// Calls GetManagedObjects and enters its array; the caller walks the objects.
static int managed_objects(sd_bus *bus, sd_bus_message **reply, char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(bus, "org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", &bus_error, reply, "");
    if (r < 0) return failed(r, &bus_error, error, error_length, "GetManagedObjects");
    r = sd_bus_message_enter_container(*reply, SD_BUS_TYPE_ARRAY, "{oa{sa{sv}}}");
    if (r < 0) set_error(error, error_length, "malformed", "BlueZ's GetManagedObjects reply is not a{oa{sa{sv}}}");
    return r;
}

/// Reads one a{sv}, keeping string properties named in `names` (into `values`), a string array
/// "UUIDs" matched against `uuid` (into *has_uuid) and skipping the rest.
static int read_properties(sd_bus_message *m, const char *const *names, char (*values)[256], int count, const char *uuid, int *has_uuid) {
    int r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
    if (r < 0) return r;
    while ((r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
        const char *name = NULL;
        if ((r = sd_bus_message_read(m, "s", &name)) < 0) return r;
        int handled = 0;
        if (has_uuid && strcmp(name, "UUIDs") == 0) {
            if ((r = sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, "as")) < 0) return r;
            if ((r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s")) < 0) return r;
            const char *item = NULL;
            int items = 0;
            while ((r = sd_bus_message_read(m, "s", &item)) > 0) {
                if (++items > 256) return -E2BIG;
                if (uuid && strcasecmp(item, uuid) == 0) *has_uuid = 1;
            }
            if (r < 0) return r;
            if ((r = sd_bus_message_exit_container(m)) < 0) return r;
            if ((r = sd_bus_message_exit_container(m)) < 0) return r;
            handled = 1;
        }
        for (int i = 0; i < count && !handled; i++) {
            if (strcmp(name, names[i]) != 0) continue;
            char type;
            const char *contents = NULL;
            if ((r = sd_bus_message_peek_type(m, &type, &contents)) < 0) return r;
            if (contents && (strcmp(contents, "s") == 0 || strcmp(contents, "o") == 0)) {
                const char *value = NULL;
                if ((r = sd_bus_message_read(m, "v", contents, &value)) < 0) return r;
                snprintf(values[i], 256, "%s", value ? value : "");
                handled = 1;
            }
        }
        if (!handled && (r = sd_bus_message_skip(m, "v")) < 0) return r;
        if ((r = sd_bus_message_exit_container(m)) < 0) return r;
    }
    if (r < 0) return r;
    return sd_bus_message_exit_container(m);
}

/// Walks GetManagedObjects: for each object path and each of its interfaces, calls `visit`,
/// which must consume the interface's a{sv}.
typedef int (*visit_interface)(sd_bus_message *m, const char *path, const char *interface, void *context);

static int walk(sd_bus *bus, visit_interface visit, void *context, char *error, size_t error_length) {
    sd_bus_message *reply = NULL;
    int r = managed_objects(bus, &reply, error, error_length);
    if (r < 0) { sd_bus_message_unref(reply); return r; }
    int objects = 0;
    while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "oa{sa{sv}}")) > 0) {
        if (++objects > 4096) { r = -E2BIG; set_error(error, error_length, "too-many", "BlueZ lists more than 4096 objects"); goto done; }
        const char *path = NULL;
        if ((r = sd_bus_message_read(reply, "o", &path)) < 0) goto malformed;
        char saved[512];
        snprintf(saved, sizeof saved, "%s", path);
        if ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sa{sv}}")) < 0) goto malformed;
        while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sa{sv}")) > 0) {
            const char *interface = NULL;
            if ((r = sd_bus_message_read(reply, "s", &interface)) < 0) goto malformed;
            char saved_interface[128];
            snprintf(saved_interface, sizeof saved_interface, "%s", interface);
            if ((r = visit(reply, saved, saved_interface, context)) < 0) goto malformed;
            if ((r = sd_bus_message_exit_container(reply)) < 0) goto malformed;
        }
        if (r < 0) goto malformed;
        if ((r = sd_bus_message_exit_container(reply)) < 0) goto malformed;
        if ((r = sd_bus_message_exit_container(reply)) < 0) goto malformed;
    }
    if (r < 0) goto malformed;
    r = 0;
    goto done;
malformed:
    set_error(error, error_length, "malformed", "BlueZ's GetManagedObjects reply is not a{oa{sa{sv}}}");
done:
    sd_bus_message_unref(reply);
    return r;
}

struct device_search {
    const char *adapter, *uuid, *address;
    char found[512];
};

static int visit_device(sd_bus_message *m, const char *path, const char *interface, void *context) {
    struct device_search *search = context;
    if (strcmp(interface, "org.bluez.Device1") != 0) return sd_bus_message_skip(m, "a{sv}");
    const char *names[] = {"Adapter", "Address"};
    char values[2][256] = {"", ""};
    int has_uuid = 0;
    int r = read_properties(m, names, values, 2, search->uuid, &has_uuid);
    if (r < 0) return r;
    if (search->found[0]) return 0;
    if (strcmp(values[0], search->adapter) != 0) return 0;
    if (has_uuid || (search->address && strcasecmp(values[1], search->address) == 0)) snprintf(search->found, sizeof search->found, "%s", path);
    return 0;
}

int CBlueZShim_find_device(sd_bus *bus, const char *adapter, const char *uuid, const char *address,
                           char *out_path, size_t out_path_length, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    struct device_search search = {adapter, uuid, address, ""};
    int r = walk(bus, visit_device, &search, error, error_length);
    if (r < 0) return r;
    if (!search.found[0]) return 0;
    snprintf(out_path, out_path_length, "%s", search.found);
    return 1;
}

int CBlueZShim_get_bool(sd_bus *bus, const char *path, const char *interface, const char *property, int *value,
                        char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    int r = sd_bus_get_property_trivial(bus, "org.bluez", path, interface, property, &bus_error, 'b', value);
    if (r < 0) return failed(r, &bus_error, error, error_length, property);
    return 0;
}

int CBlueZShim_get_string(sd_bus *bus, const char *path, const char *interface, const char *property, char *out, size_t out_length,
                          char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    char *value = NULL;
    int r = sd_bus_get_property_string(bus, "org.bluez", path, interface, property, &bus_error, &value);
    if (r < 0) return failed(r, &bus_error, error, error_length, property);
    if (out_length > 0) snprintf(out, out_length, "%s", value ? value : "");
    free(value);
    return 0;
}

struct characteristic_search {
    const char *device, *service_uuid;
    const char *const *uuids;
    int count;
    char service[512];
    char (*paths)[512];
    char (*services)[512];
};

static int visit_service(sd_bus_message *m, const char *path, const char *interface, void *context) {
    struct characteristic_search *search = context;
    if (strcmp(interface, "org.bluez.GattService1") != 0) return sd_bus_message_skip(m, "a{sv}");
    const char *names[] = {"UUID", "Device"};
    char values[2][256] = {"", ""};
    int r = read_properties(m, names, values, 2, NULL, NULL);
    if (r < 0) return r;
    if (!search->service[0] && strcasecmp(values[0], search->service_uuid) == 0 && strcmp(values[1], search->device) == 0)
        snprintf(search->service, sizeof search->service, "%s", path);
    return 0;
}

static int visit_characteristic(sd_bus_message *m, const char *path, const char *interface, void *context) {
    struct characteristic_search *search = context;
    if (strcmp(interface, "org.bluez.GattCharacteristic1") != 0) return sd_bus_message_skip(m, "a{sv}");
    const char *names[] = {"UUID", "Service"};
    char values[2][256] = {"", ""};
    int r = read_properties(m, names, values, 2, NULL, NULL);
    if (r < 0) return r;
    if (strcmp(values[1], search->service) != 0) return 0;
    for (int i = 0; i < search->count; i++)
        if (!search->paths[i][0] && strcasecmp(values[0], search->uuids[i]) == 0) snprintf(search->paths[i], 512, "%s", path);
    return 0;
}

int CBlueZShim_find_characteristics(sd_bus *bus, const char *device, const char *service_uuid, const char *const *uuids, int count,
                                    char *paths, size_t path_length, char *error, size_t error_length) {
    if (error_length > 0) error[0] = 0;
    if (count < 0 || count > 8 || path_length != 512) return -EINVAL;
    char found[8][512];
    memset(found, 0, sizeof found);
    struct characteristic_search search = {device, service_uuid, uuids, count, "", found, NULL};
    int r = walk(bus, visit_service, &search, error, error_length);
    if (r < 0) return r;
    if (!search.service[0]) return 0;
    r = walk(bus, visit_characteristic, &search, error, error_length);
    if (r < 0) return r;
    for (int i = 0; i < count; i++) memcpy(paths + (size_t)i * path_length, found[i], 512);
    return 1;
}

int CBlueZShim_read_value(sd_bus *bus, const char *characteristic, unsigned char *out, size_t out_length, size_t *read,
                          char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    *read = 0;
    int r = sd_bus_call_method(bus, "org.bluez", characteristic, "org.bluez.GattCharacteristic1", "ReadValue", &bus_error, &reply, "a{sv}", 0);
    if (r < 0) { sd_bus_message_unref(reply); return failed(r, &bus_error, error, error_length, "ReadValue"); }
    const void *bytes = NULL;
    size_t length = 0;
    r = sd_bus_message_read_array(reply, 'y', &bytes, &length);
    if (r < 0) {
        set_error(error, error_length, "malformed", "ReadValue's answer is not a byte array");
    } else {
        if (length > out_length) length = out_length;
        if (length) memcpy(out, bytes, length);
        *read = length;
        r = 0;
    }
    sd_bus_message_unref(reply);
    return r;
}

int CBlueZShim_write_value(sd_bus *bus, const char *characteristic, const unsigned char *bytes, size_t length, const char *type,
                           char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    sd_bus_message *call = NULL;
    int r = sd_bus_message_new_method_call(bus, &call, "org.bluez", characteristic, "org.bluez.GattCharacteristic1", "WriteValue");
    if (r >= 0) r = sd_bus_message_append_array(call, 'y', bytes, length);
    if (r >= 0) r = sd_bus_message_append(call, "a{sv}", 1, "type", "s", type);
    if (r < 0) { sd_bus_message_unref(call); set_error(error, error_length, "WriteValue", strerror(-r)); return r; }
    r = sd_bus_call(bus, call, 0, &bus_error, NULL);
    sd_bus_message_unref(call);
    if (r < 0) return failed(r, &bus_error, error, error_length, "WriteValue");
    return 0;
}

int CBlueZShim_acquire(sd_bus *bus, const char *characteristic, const char *method, int *fd, unsigned *mtu,
                       char *error, size_t error_length) {
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    *fd = -1;
    int r = sd_bus_call_method(bus, "org.bluez", characteristic, "org.bluez.GattCharacteristic1", method, &bus_error, &reply, "a{sv}", 0);
    if (r < 0) { sd_bus_message_unref(reply); return failed(r, &bus_error, error, error_length, method); }
    int received = -1;
    uint16_t value = 0;
    r = sd_bus_message_read(reply, "hq", &received, &value);
    if (r < 0) {
        set_error(error, error_length, "malformed", "the answer is not (fd, mtu)");
    } else {
        *fd = fcntl(received, F_DUPFD_CLOEXEC, 3);
        *mtu = value;
        r = *fd < 0 ? -errno : 0;
        if (r < 0) set_error(error, error_length, method, strerror(-r));
    }
    sd_bus_message_unref(reply);
    return r;
}

// MARK: - Adapters

struct adapter_list {
    char *out;
    size_t out_length;
};

static int visit_adapter(sd_bus_message *m, const char *path, const char *interface, void *context) {
    struct adapter_list *list = context;
    if (strcmp(interface, "org.bluez.Adapter1") != 0) return sd_bus_message_skip(m, "a{sv}");
    int powered = 0;
    char address[64] = "", alias[256] = "";
    int r = read_adapter_properties(m, &powered, address, sizeof address, alias, sizeof alias);
    if (r < 0) return r;
    append_line(list->out, list->out_length, path, powered, address, alias);
    return 0;
}

int CBlueZShim_list_adapters(char *out, size_t out_length, char *error, size_t error_length, unsigned long long timeout_usec) {
    if (out_length > 0) out[0] = 0;
    sd_bus *bus = NULL;
    int r = CBlueZShim_open(&bus, NULL, error, error_length, timeout_usec);
    if (r < 0) return r;
    struct adapter_list list = {out, out_length};
    r = walk(bus, visit_adapter, &list, error, error_length);
    sd_bus_flush_close_unref(bus);
    return r < 0 ? r : 0;
}
