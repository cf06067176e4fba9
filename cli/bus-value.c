/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-value.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json-out.h"
#include "util.h"

int value_push(Value *parent, Value **ret) {
        Value *n = realloc(parent->items, (parent->n + 1) * sizeof(Value));

        if (!n)
                return -ENOMEM;
        parent->items = n;
        *ret = &n[parent->n++];
        **ret = (Value) {};
        return 0;
}

static int read_basic(sd_bus_message *m, char type, Value *v) {
        union { uint8_t y; int16_t n; uint16_t q; int32_t i; uint32_t u; int64_t x; uint64_t t;
                double d; int b; const char *s; } x;
        int r = sd_bus_message_read_basic(m, type, &x);

        if (r < 0)
                return r;
        switch (type) {
        case 'y': *v = (Value) { .kind = VALUE_UINT, .u = x.y }; break;
        case 'q': *v = (Value) { .kind = VALUE_UINT, .u = x.q }; break;
        case 'u': *v = (Value) { .kind = VALUE_UINT, .u = x.u }; break;
        case 't': *v = (Value) { .kind = VALUE_UINT, .u = x.t }; break;
        case 'n': *v = (Value) { .kind = VALUE_INT, .i = x.n }; break;
        case 'i': *v = (Value) { .kind = VALUE_INT, .i = x.i }; break;
        case 'x': *v = (Value) { .kind = VALUE_INT, .i = x.x }; break;
        case 'd': *v = (Value) { .kind = VALUE_DOUBLE, .d = x.d }; break;
        case 'b': *v = (Value) { .kind = VALUE_BOOL, .b = x.b }; break;
        case 's': case 'o': case 'g':
                *v = (Value) { .kind = VALUE_STRING, .s = strdup(x.s) };
                return v->s ? 0 : -ENOMEM;
        default:
                return -EOPNOTSUPP;     /* unix fds: never sent by the daemon */
        }
        return 0;
}

/*
 * Object keys, each kept once for the process: a list of 50,000 cgroups
 * repeats the same thirty keys in every row, and a copy of each was most of
 * what reading it allocated. Open addressing; the table lives until exit.
 */
static struct {
        char **slots;
        size_t size, n;         /* size: a power of two, at least twice n */
} keys;

static size_t key_hash(const char *s) {
        size_t h = 5381;

        for (; *s; s++)
                h = h * 33 + (unsigned char) *s;
        return h;
}

static int keys_grow(void) {
        size_t size = keys.size ? keys.size * 2 : 64;
        char **slots = calloc(size, sizeof(char *));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < keys.size; i++)
                if (keys.slots[i]) {
                        size_t j = key_hash(keys.slots[i]) & (size - 1);

                        while (slots[j])
                                j = (j + 1) & (size - 1);
                        slots[j] = keys.slots[i];
                }
        free(keys.slots);
        keys.slots = slots;
        keys.size = size;
        return 0;
}

/* The interned copy of `key`, or NULL (out of memory). */
static char *value_key(const char *key) {
        size_t j;

        if (keys.n * 2 >= keys.size && keys_grow() < 0)
                return NULL;
        for (j = key_hash(key) & (keys.size - 1); keys.slots[j]; j = (j + 1) & (keys.size - 1))
                if (streq(keys.slots[j], key))
                        return keys.slots[j];
        keys.slots[j] = strdup(key);
        if (keys.slots[j])
                keys.n++;
        return keys.slots[j];
}

/* The entries of an a{s...} as an object. */
static int read_object(sd_bus_message *m, const char *contents, Value *v) {
        char entry[64];         /* "{sv}" -> "sv" */
        size_t len = strlen(contents);
        int r;

        if (len < 3 || len - 2 >= sizeof(entry))
                return -EOPNOTSUPP;
        memcpy(entry, contents + 1, len - 2);
        entry[len - 2] = '\0';
        *v = (Value) { .kind = VALUE_OBJECT };
        for (;;) {
                const char *key;
                Value *item;

                r = sd_bus_message_enter_container(m, 'e', entry);
                if (r <= 0)
                        return r;
                Value tmp = {};

                r = sd_bus_message_read_basic(m, 's', &key);
                if (r >= 0)
                        r = value_read(m, &tmp);
                if (r >= 0 && !(tmp.key = value_key(key)))
                        r = -ENOMEM;
                tmp.key_shared = true;
                if (r >= 0)
                        r = value_push(v, &item);
                if (r < 0) {
                        value_clear(&tmp);
                        return r;
                }
                *item = tmp;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
}

static int read_items(sd_bus_message *m, Value *v) {
        int r;

        *v = (Value) { .kind = VALUE_ARRAY };
        while ((r = sd_bus_message_at_end(m, false)) == 0) {
                Value *item;

                r = value_push(v, &item);
                if (r >= 0)
                        r = value_read(m, item);
                if (r < 0)
                        return r;
        }
        return r < 0 ? r : 0;
}

int value_read(sd_bus_message *m, Value *ret) {
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r <= 0)
                return r < 0 ? r : -ENODATA;
        if (!strchr("avr", type))
                return read_basic(m, type, ret);
        r = sd_bus_message_enter_container(m, type, contents);
        if (r < 0)
                return r;
        if (type == 'a' && contents[0] == '{' && contents[1] == 's')
                r = read_object(m, contents, ret);
        else if (type == 'v')
                r = value_read(m, ret);
        else
                r = read_items(m, ret);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 0;
}

int value_read_all(sd_bus_message *m, Value *ret) {
        return read_items(m, ret);
}

void value_clear(Value *v) {
        for (size_t i = 0; i < v->n; i++)
                value_clear(&v->items[i]);
        free(v->items);
        if (!v->key_shared)
                free(v->key);
        free(v->s);
        *v = (Value) {};
}

const Value *value_get(const Value *v, const char *path) {
        while (v && *path) {
                size_t len = strcspn(path, ".");
                const Value *found = NULL;

                if (v->kind != VALUE_OBJECT)
                        return NULL;
                for (size_t i = 0; i < v->n && !found; i++)
                        if (strlen(v->items[i].key) == len && strncmp(v->items[i].key, path, len) == 0)
                                found = &v->items[i];
                v = found;
                path += len + (path[len] == '.');
        }
        return v;
}

bool value_get_u64(const Value *v, const char *path, uint64_t *ret) {
        v = value_get(v, path);
        if (!v || (v->kind != VALUE_UINT && (v->kind != VALUE_INT || v->i < 0)))
                return false;
        *ret = v->kind == VALUE_UINT ? v->u : (uint64_t) v->i;
        return true;
}

bool value_is_true(const Value *v, const char *path) {
        v = value_get(v, path);
        return v && v->kind == VALUE_BOOL && v->b;
}

bool value_get_i64(const Value *v, const char *path, int64_t *ret) {
        v = value_get(v, path);
        if (!v || (v->kind != VALUE_INT && (v->kind != VALUE_UINT || v->u > INT64_MAX)))
                return false;
        *ret = v->kind == VALUE_INT ? v->i : (int64_t) v->u;
        return true;
}

const char *value_get_str(const Value *v, const char *path) {
        v = value_get(v, path);
        return v && v->kind == VALUE_STRING ? v->s : NULL;
}

void value_json(const Value *v, FILE *f) {
        switch (v->kind) {
        case VALUE_UINT:
                fprintf(f, "%" PRIu64, v->u);
                break;
        case VALUE_INT:
                fprintf(f, "%" PRId64, v->i);
                break;
        case VALUE_DOUBLE:
                fprintf(f, "%.15g", v->d);
                break;
        case VALUE_BOOL:
                fputs(v->b ? "true" : "false", f);
                break;
        case VALUE_STRING:
                json_string(f, v->s);
                break;
        case VALUE_ARRAY:
        case VALUE_OBJECT:
                fputc(v->kind == VALUE_ARRAY ? '[' : '{', f);
                for (size_t i = 0; i < v->n; i++) {
                        if (i)
                                fputc(',', f);
                        if (v->kind == VALUE_OBJECT) {
                                json_string(f, v->items[i].key);
                                fputc(':', f);
                        }
                        value_json(&v->items[i], f);
                }
                fputc(v->kind == VALUE_ARRAY ? ']' : '}', f);
                break;
        }
}
