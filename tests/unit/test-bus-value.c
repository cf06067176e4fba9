/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of mdctl's reading of replies: a message built here is read
 * into a tree, looked up by path, and printed as JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <systemd/sd-bus.h>

#include "bus-value.h"

static int peer = -1;

/* A message to read back: built on a bus whose peer never answers (messages need a started bus). */
static sd_bus_message *new_message(sd_bus **ret_bus) {
        sd_bus_message *m = NULL;
        sd_bus *bus = NULL;
        int fds[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        if (peer >= 0)
                close(peer);
        peer = fds[1];
        assert_int_equal(sd_bus_new(&bus), 0);
        assert_int_equal(sd_bus_set_fd(bus, fds[0], fds[0]), 0);
        assert_true(sd_bus_start(bus) >= 0);
        assert_int_equal(sd_bus_message_new_method_call(bus, &m, NULL, "/x", "x.y", "Z"), 0);
        *ret_bus = bus;
        return m;
}

static char *json_of(const Value *v) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        value_json(v, f);
        fclose(f);
        return buf;
}

static void test_dictionary(void **state) {
        sd_bus *bus;
        sd_bus_message *m = new_message(&bus);
        Value v = {};
        uint64_t u = 0;
        int64_t i = 0;
        char *json;

        assert_true(sd_bus_message_append(m, "a{sv}", 6,
                                          "path", "s", "/a \"b\"",
                                          "size", "t", UINT64_C(18446744073709551615),
                                          "rate", "x", INT64_C(-5),
                                          "avg", "d", 1.25,
                                          "on", "b", 1,
                                          "keys", "as", 2, "Match", "Mode") >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "a{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "a{sv}", 1, "n", "u", UINT32_C(7)) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_true(sd_bus_message_rewind(m, true) >= 0);

        assert_int_equal(value_read(m, &v), 0);
        assert_int_equal(v.kind, VALUE_OBJECT);
        assert_string_equal(value_get_str(&v, "path"), "/a \"b\"");
        assert_true(value_get_u64(&v, "size", &u));
        assert_true(u == UINT64_MAX);
        assert_false(value_get_u64(&v, "rate", &u));
        assert_true(value_get_i64(&v, "rate", &i));
        assert_int_equal(i, -5);
        assert_null(value_get(&v, "missing"));
        assert_null(value_get(&v, "path.deeper"));
        json = json_of(&v);
        assert_string_equal(json, "{\"path\":\"/a \\\"b\\\"\",\"size\":18446744073709551615,\"rate\":-5,"
                                  "\"avg\":1.25,\"on\":true,\"keys\":[\"Match\",\"Mode\"]}");
        free(json);
        value_clear(&v);

        /* The next value: an array of dictionaries. */
        assert_int_equal(value_read(m, &v), 0);
        assert_int_equal(v.kind, VALUE_ARRAY);
        assert_int_equal(v.n, 1);
        assert_true(value_get_u64(&v.items[0], "n", &u));
        assert_int_equal(u, 7);
        value_clear(&v);

        sd_bus_message_unref(m);
        sd_bus_close_unref(bus);
}

static void test_nested_and_structs(void **state) {
        sd_bus *bus;
        sd_bus_message *m = new_message(&bus);
        Value v = {};
        uint64_t u = 0;
        char *json;

        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_open_container(m, 'e', "sv") >= 0);
        assert_true(sd_bus_message_append(m, "s", "signals") >= 0);
        assert_true(sd_bus_message_open_container(m, 'v', "a{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "a{sv}", 1, "memory_stall", "a{sv}", 1, "some_ppm", "u", 1234) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_append(m, "a(ts)", 2, UINT64_C(1), "one", UINT64_C(2), "two") >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_true(sd_bus_message_rewind(m, true) >= 0);

        assert_int_equal(value_read_all(m, &v), 0);
        assert_int_equal(v.n, 2);
        assert_true(value_get_u64(&v.items[0], "signals.memory_stall.some_ppm", &u));
        assert_int_equal(u, 1234);
        json = json_of(&v);
        assert_string_equal(json, "[{\"signals\":{\"memory_stall\":{\"some_ppm\":1234}}},[[1,\"one\"],[2,\"two\"]]]");
        free(json);
        value_clear(&v);
        sd_bus_message_unref(m);
        sd_bus_close_unref(bus);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dictionary),
                cmocka_unit_test(test_nested_and_structs),
        };
        int r = cmocka_run_group_tests(tests, NULL, NULL);

        if (peer >= 0)
                close(peer);
        return r;
}
