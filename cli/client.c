/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name-escape.h"
#include "util.h"

/* A D-Bus address escapes everything but [-0-9A-Za-z_/.\]. */
static char *address_for(const char *path) {
        static const char ok[] = "-_/.\\";
        char *a = malloc(strlen("unix:path=") + 3 * strlen(path) + 1), *p;

        if (!a)
                return NULL;
        p = stpcpy(a, "unix:path=");
        for (const unsigned char *s = (const unsigned char *) path; *s; s++) {
                if ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                    strchr(ok, *s))
                        *p++ = (char) *s;
                else
                        p += sprintf(p, "%%%02x", *s);
        }
        *p = '\0';
        return a;
}

static const char *connect_hint(int r) {
        switch (-r) {
        case ENOENT:
        case ECONNREFUSED:
                return " Is mdreclaimd running? (systemctl status mdreclaimd)";
        case EACCES:
        case EPERM:
                return " The socket's directory or file does not let this user in.";
        default:
                return "";
        }
}

int client_open(const char *socket_path, sd_bus **ret) {
        _cleanup_free_ char *address = address_for(socket_path);
        sd_bus *bus = NULL;
        int r;

        if (!address)
                return -ENOMEM;
        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, 120 * UINT64_C(1000000));
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

int client_connect(const char *socket_path, sd_bus **ret) {
        int r = client_open(socket_path, ret);

        if (r < 0)
                fprintf(stderr, "mdctl: cannot connect to mdreclaimd at %s: %s.%s\n", socket_path, strerror(-r),
                        connect_hint(r));
        return r;
}

bool client_disconnected(int r) {
        return r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE;
}

int client_fail(const char *what, int r) {
        if (client_disconnected(r))
                fprintf(stderr, "mdctl: %s: mdreclaimd closed the connection (%s)\n", what, strerror(-r));
        else
                fprintf(stderr, "mdctl: %s: %s\n", what, strerror(-r));
        return r;
}

static int call_v(sd_bus *bus, const char *what, const char *method, sd_bus_message **ret,
                  const char *types, va_list ap) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_methodv(bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, method, &error, ret, types, ap);
        if (r < 0 && sd_bus_error_is_set(&error) && error.message) {
                /* The daemon's words: its message says what and why. */
                if (strchr(error.message, '\n'))
                        fprintf(stderr, "mdctl: %s:\n%s\n", what, error.message);
                else
                        fprintf(stderr, "mdctl: %s: %s%s\n", what, error.message,
                                sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD) ?
                                " (this mdreclaimd is older than mdctl)" : "");
        } else if (r < 0)
                client_fail(what, r);
        sd_bus_error_free(&error);
        return r;
}

int client_call_rawv(sd_bus *bus, const char *what, const char *method, sd_bus_message **ret,
                     const char *types, va_list ap) {
        return call_v(bus, what, method, ret, types, ap);
}

int client_call_raw(sd_bus *bus, const char *what, const char *method, sd_bus_message **ret,
                    const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_v(bus, what, method, ret, types, ap);
        va_end(ap);
        return r;
}

int client_call(sd_bus *bus, const char *what, const char *method, Value *ret, const char *types, ...) {
        sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_v(bus, what, method, &reply, types, ap);
        va_end(ap);
        if (r < 0)
                return r;
        if (ret) {
                r = value_read(reply, ret);
                if (r == -ENODATA) {
                        *ret = (Value) { .kind = VALUE_OBJECT };
                        r = 0;
                }
                if (r < 0)
                        client_fail("cannot read the daemon's reply", r);
        }
        sd_bus_message_unref(reply);
        return r;
}

char *client_name_arg(const char *s) {
        char *out = malloc(strlen(s) * 4 + 1), *p = out;

        if (!out)
                return NULL;
        while (*s) {
                char piece[NAME_PIECE_MAX];

                /* A backslash the user typed stays one: an escape of the names the daemon shows. */
                if (*s == '\\') {
                        *p++ = *s++;
                        continue;
                }
                s += name_escape_piece(s, piece);
                p = stpcpy(p, piece);
        }
        *p = '\0';
        return out;
}
