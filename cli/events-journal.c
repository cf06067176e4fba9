/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "events-journal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "event-log.h"
#include "parse-util.h"
#include "util.h"

/* The journal's own fields and those every event has as an argument of its own: not the event's fields. */
static bool own_field(const char *key, size_t n) {
        static const char *const skip[] = {
                "MESSAGE", "MESSAGE_ID", "PRIORITY", "SYSLOG_IDENTIFIER", "SYSLOG_FACILITY", "SYSLOG_PID",
                "SYSLOG_TIMESTAMP", "CGROUP", "UNIT", "ACTION", EVENT_FIELD_SEQ, EVENT_FIELD_SOCKET,
                "CODE_FILE", "CODE_LINE", "CODE_FUNC",
        };

        if (key[0] == '_')
                return false;
        for (size_t i = 0; i < ELEMENTSOF(skip); i++)
                if (strlen(skip[i]) == n && strncmp(skip[i], key, n) == 0)
                        return false;
        return true;
}

/* A field as the daemon's API gives it: the key in lower case; a whole number, yes/no, or a string. */
static int add_field(Value *fields, const char *data, size_t len) {
        const char *eq = memchr(data, '=', len);
        _cleanup_free_ char *value = NULL;
        Value *v;
        uint64_t u;
        int r;

        if (!eq || eq == data || !own_field(data, (size_t) (eq - data)))
                return 0;
        value = strndup(eq + 1, len - (size_t) (eq - data) - 1);
        if (!value)
                return -ENOMEM;
        r = value_push(fields, &v);
        if (r < 0)
                return r;
        v->key = strndup(data, (size_t) (eq - data));
        if (!v->key)
                return -ENOMEM;
        for (char *c = v->key; *c; c++)
                *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        if (streq(value, "yes") || streq(value, "no"))
                v->kind = VALUE_BOOL, v->b = streq(value, "yes");
        else if (value[0] >= '0' && value[0] <= '9' && parse_uint_range(value, 0, UINT64_MAX, &u) >= 0)
                v->kind = VALUE_UINT, v->u = u;
        else
                v->kind = VALUE_STRING, v->s = TAKE_PTR(value);
        return 0;
}

/* The entry's field `key` as a string (copied; "" when absent); NULL: out of memory. */
static char *field_text(sd_journal *j, const char *key) {
        const void *data;
        size_t len, n = strlen(key);

        if (sd_journal_get_data(j, key, &data, &len) < 0 || len <= n)
                return strdup("");
        return strndup((const char *) data + n + 1, len - n - 1);
}

static uint64_t field_number(sd_journal *j, const char *key, uint64_t fallback) {
        _cleanup_free_ char *s = field_text(j, key);
        uint64_t u;

        return s && parse_uint_range(s, 0, UINT64_MAX, &u) >= 0 ? u : fallback;
}

static int push_string(Value *event, char *s) {
        Value *v;
        int r;

        if (!s)
                return -ENOMEM;
        r = value_push(event, &v);
        if (r < 0) {
                free(s);
                return r;
        }
        *v = (Value) { .kind = VALUE_STRING, .s = s };
        return 0;
}

static int push_number(Value *event, ValueKind kind, uint64_t u) {
        Value *v;
        int r = value_push(event, &v);

        if (r < 0)
                return r;
        *v = (Value) { .kind = kind, .u = u };     /* an INT reads the same bits as i */
        return 0;
}

/* The entry at the cursor as (seq, realtime_usec, priority, action, cgroup, unit, message, fields). */
static int entry_event(sd_journal *j, uint64_t realtime, Value *ret) {
        static const char *const texts[] = { "ACTION", "CGROUP", "UNIT", "MESSAGE" };
        const void *data;
        size_t len;
        Value *fields;
        int r;

        *ret = (Value) { .kind = VALUE_ARRAY };
        r = push_number(ret, VALUE_UINT, field_number(j, EVENT_FIELD_SEQ, 0));
        if (r >= 0)
                r = push_number(ret, VALUE_UINT, realtime);
        if (r >= 0)
                r = push_number(ret, VALUE_INT, field_number(j, "PRIORITY", 6));
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(texts); i++)
                r = push_string(ret, field_text(j, texts[i]));
        if (r >= 0)
                r = value_push(ret, &fields);
        if (r < 0)
                return r;
        fields->kind = VALUE_OBJECT;
        SD_JOURNAL_FOREACH_DATA(j, data, len) {
                r = add_field(fields, data, len);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int entry_origin(sd_journal *j, EventOrigin *ret) {
        _cleanup_free_ char *boot = field_text(j, "_BOOT_ID");

        ret->pid = field_number(j, "_PID", 0);
        if (!boot)
                return -ENOMEM;
        if (sd_id128_from_string(boot, &ret->boot) < 0)
                ret->boot = SD_ID128_NULL;
        return 0;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

/* Whether a directory holds journal files this user cannot read (one level of machine ids below). */
static bool unreadable_below(const char *dir, int depth) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return errno == EACCES;
        while ((de = readdir(d))) {
                char path[512];
                size_t n = strlen(de->d_name);

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (n > 8 && streq(de->d_name + n - 8, ".journal") && access(path, R_OK) < 0)
                        return true;
                if (depth > 0 && de->d_type == DT_DIR && unreadable_below(path, depth - 1))
                        return true;
        }
        return false;
}

static void say_unreadable(const JournalQuery *q) {
        bool unreadable = q->directory ? unreadable_below(q->directory, 0) :
                          unreadable_below("/var/log/journal", 1) || unreadable_below("/run/log/journal", 1);

        if (unreadable)
                fprintf(stderr, "mdctl: the journal is not readable by uid %u: the events from before mdreclaimd's "
                        "last start are not shown (root and the groups adm and systemd-journal may read it)\n",
                        (unsigned) geteuid());
}

static int journal_open(const JournalQuery *q, sd_journal **ret) {
        _cleanup_free_ char *match = NULL;
        int r;

        r = q->directory ? sd_journal_open_directory(ret, q->directory, 0) :
                           sd_journal_open(ret, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
        if (r < 0)
                return r;
        if (asprintf(&match, EVENT_FIELD_SOCKET "=%s", q->socket) < 0)
                return -ENOMEM;
        r = sd_journal_add_match(*ret, match, 0);
        if (r >= 0)
                r = sd_journal_add_match(*ret, "SYSLOG_IDENTIFIER=mdreclaimd", 0);
        return r;
}

/* Oldest first. */
static void reverse(Value *events) {
        for (size_t i = 0; i < events->n / 2; i++) {
                Value t = events->items[i];

                events->items[i] = events->items[events->n - 1 - i];
                events->items[events->n - 1 - i] = t;
        }
}

/* From the newest back: the events kept, up to q->max, down to q->since_usec. */
static int read_back(sd_journal *j, const JournalQuery *q, Value *events, bool *ret_more) {
        int r;

        *ret_more = false;
        r = sd_journal_seek_tail(j);
        while (r >= 0 && (r = sd_journal_previous(j)) > 0) {
                Value e = {}, *slot;
                EventOrigin origin;
                uint64_t t;

                r = sd_journal_get_realtime_usec(j, &t);
                if (r < 0 || t < q->since_usec)
                        break;
                r = entry_origin(j, &origin);
                if (r >= 0)
                        r = entry_event(j, t, &e);
                if (r < 0) {
                        value_clear(&e);
                        break;
                }
                if (!q->keep(&e, &origin, q->userdata)) {
                        value_clear(&e);
                        continue;
                }
                if (events->n == q->max) {
                        value_clear(&e);
                        *ret_more = true;
                        break;
                }
                r = value_push(events, &slot);
                if (r < 0) {
                        value_clear(&e);
                        break;
                }
                *slot = e;
        }
        return r < 0 && r != -EADDRNOTAVAIL ? r : 0;
}

int journal_events(const JournalQuery *q, Value *ret, bool *ret_more) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        int r;

        *ret = (Value) { .kind = VALUE_ARRAY };
        *ret_more = false;
        r = journal_open(q, &j);
        if (r == -EACCES || r == -EPERM || r == -ENOENT) {
                say_unreadable(q);
                return 0;
        }
        if (r < 0) {
                fprintf(stderr, "mdctl: cannot read the journal%s%s: %s\n", q->directory ? " in " : "",
                        q->directory ?: "", strerror(-r));
                return r;
        }
        r = read_back(j, q, ret, ret_more);
        if (r < 0) {
                fprintf(stderr, "mdctl: cannot read the journal: %s\n", strerror(-r));
                value_clear(ret);
                return r;
        }
        reverse(ret);
        if (ret->n == 0)
                say_unreadable(q);
        return 0;
}
