#include "CBlueZShim.h"

#include <errno.h>
#include <stdio.h>
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

int CBlueZShim_list_adapters(char *out, size_t out_length, char *error, size_t error_length, unsigned long long timeout_usec) {
    if (out_length > 0) out[0] = 0;
    if (error_length > 0) error[0] = 0;
    sd_bus *bus = NULL;
    sd_bus_message *reply = NULL;
    sd_bus_error bus_error = SD_BUS_ERROR_NULL;
    int r = sd_bus_open_system(&bus);
    if (r < 0) {
        set_error(error, error_length, "connect", strerror(-r));
        return r;
    }
    sd_bus_set_method_call_timeout(bus, timeout_usec);
    r = sd_bus_call_method(bus, "org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", &bus_error, &reply, "");
    if (r < 0) {
        set_error(error, error_length, bus_error.name ? bus_error.name : "call", bus_error.message ? bus_error.message : strerror(-r));
        goto done;
    }
    // a{oa{sa{sv}}}: each object, its interfaces, their properties.
    if ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{oa{sa{sv}}}")) < 0) goto malformed;
    int objects = 0;
    while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "oa{sa{sv}}")) > 0) {
        if (++objects > 4096) {
            r = -E2BIG;
            set_error(error, error_length, "too-many", "BlueZ lists more than 4096 objects");
            goto done;
        }
        const char *path = NULL;
        if ((r = sd_bus_message_read(reply, "o", &path)) < 0) goto malformed;
        char saved_path[512];
        snprintf(saved_path, sizeof saved_path, "%s", path);
        if ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sa{sv}}")) < 0) goto malformed;
        while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sa{sv}")) > 0) {
            const char *interface = NULL;
            if ((r = sd_bus_message_read(reply, "s", &interface)) < 0) goto malformed;
            if (strcmp(interface, "org.bluez.Adapter1") == 0) {
                int powered = 0;
                char address[64] = "", alias[256] = "";
                if ((r = read_adapter_properties(reply, &powered, address, sizeof address, alias, sizeof alias)) < 0) goto malformed;
                append_line(out, out_length, saved_path, powered, address, alias);
            } else if ((r = sd_bus_message_skip(reply, "a{sv}")) < 0) {
                goto malformed;
            }
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
    sd_bus_error_free(&bus_error);
    sd_bus_message_unref(reply);
    sd_bus_flush_close_unref(bus);
    return r < 0 ? r : 0;
}
