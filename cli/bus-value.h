/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A D-Bus reply read whole into a small tree, so that mdctl can print any
 * reply as JSON (dictionaries a{sv} become objects, arrays and structs
 * arrays, variants their value) and pick figures out of it by path
 * ("signals.memory_stall.some_ppm") for its tables.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

typedef enum ValueKind {
        VALUE_UINT,
        VALUE_INT,
        VALUE_DOUBLE,
        VALUE_BOOL,
        VALUE_STRING,
        VALUE_ARRAY,            /* arrays and structs */
        VALUE_OBJECT,           /* dictionaries with string keys */
} ValueKind;

typedef struct Value {
        ValueKind kind;
        bool key_shared;        /* the key is interned (value_key()), not the member's own */
        char *key;              /* for members of an object */
        union {                 /* by kind: a list of 50,000 rows holds 1.5 million of these */
                uint64_t u;
                int64_t i;
                double d;
                bool b;
        };
        char *s;                /* a string's (NULL for other kinds) */
        struct Value *items;    /* members or elements */
        size_t n;
} Value;

/* Reads the next complete value of `m`. */
int value_read(sd_bus_message *m, Value *ret);
/* Reads every remaining value of `m` as one array. */
int value_read_all(sd_bus_message *m, Value *ret);
void value_clear(Value *v);
/* A new empty item (or member: set its key) at the end of an array or object. */
int value_push(Value *parent, Value **ret);

/* The member at a dotted path of objects, or NULL. */
const Value *value_get(const Value *v, const char *path);
/* Numbers and strings at a path; false (and *ret untouched) if absent or of another kind. */
bool value_get_u64(const Value *v, const char *path, uint64_t *ret);
bool value_get_i64(const Value *v, const char *path, int64_t *ret);
const char *value_get_str(const Value *v, const char *path);
/* Whether the member at a path is a boolean and true (absent, or of another kind: false). */
bool value_is_true(const Value *v, const char *path);

void value_json(const Value *v, FILE *f);
