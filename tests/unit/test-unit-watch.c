/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's PropertiesChanged signal of a unit, read as the unit watch reads
 * it: the unit's name from the object path, its ActiveState among the other
 * changed properties; signals without one, or of another interface or
 * object, say nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "unit-watch.h"

static sd_bus *bus;
static int peer = -1;

static int setup(void **state) {
        int fds[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        peer = fds[1];
        assert_int_equal(sd_bus_new(&bus), 0);
        assert_int_equal(sd_bus_set_fd(bus, fds[0], fds[0]), 0);
        assert_true(sd_bus_start(bus) >= 0);
        return 0;
}

static int teardown(void **state) {
        sd_bus_close_unref(bus);
        close(peer);
        return 0;
}

/* A PropertiesChanged signal of `path`, for `interface`, with ActiveState (NULL: without), read back. */
static sd_bus_message *signal_of(const char *path, const char *interface, const char *active) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(bus, &m, path, "org.freedesktop.DBus.Properties",
                                                   "PropertiesChanged"), 0);
        assert_true(sd_bus_message_append(m, "s", interface) >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "{sv}") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "SubState", "s", "stop-sigterm") >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "InactiveExitTimestamp", "t", UINT64_C(1234)) >= 0);
        if (active)
                assert_true(sd_bus_message_append(m, "{sv}", "ActiveState", "s", active) >= 0);
        assert_true(sd_bus_message_append(m, "{sv}", "Conditions", "a(sbbsi)", 0) >= 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_append(m, "as", 0) >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_true(sd_bus_message_rewind(m, true) >= 0);
        return m;
}

static void test_stopping_unit(void **state) {
        sd_bus_message *m = signal_of("/org/freedesktop/systemd1/unit/mdr_2dwriter_2eservice",
                                      "org.freedesktop.systemd1.Unit", "deactivating");
        char unit[64];
        UnitState s = UNIT_STATE_OTHER;

        assert_int_equal(unit_watch_parse(m, unit, sizeof(unit), &s), 1);
        assert_string_equal(unit, "mdr-writer.service");
        assert_int_equal(s, UNIT_STATE_STOPPING);
        sd_bus_message_unref(m);
}

static void test_states(void **state) {
        static const struct { const char *name; UnitState s; } cases[] = {
                { "active", UNIT_STATE_STARTING }, { "activating", UNIT_STATE_STARTING },
                { "inactive", UNIT_STATE_STOPPED }, { "failed", UNIT_STATE_STOPPED },
                { "deactivating", UNIT_STATE_STOPPING }, { "reloading", UNIT_STATE_OTHER },
                { "maintenance", UNIT_STATE_OTHER }, { "", UNIT_STATE_OTHER },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_int_equal(unit_state_from_string(cases[i].name), cases[i].s);
}

static void test_nothing_to_say(void **state) {
        char unit[64];
        UnitState s;
        sd_bus_message *m;

        /* No ActiveState among the changes. */
        m = signal_of("/org/freedesktop/systemd1/unit/a_2eservice", "org.freedesktop.systemd1.Unit", NULL);
        assert_int_equal(unit_watch_parse(m, unit, sizeof(unit), &s), 0);
        sd_bus_message_unref(m);
        /* The Service interface's own changes. */
        m = signal_of("/org/freedesktop/systemd1/unit/a_2eservice", "org.freedesktop.systemd1.Service", "active");
        assert_int_equal(unit_watch_parse(m, unit, sizeof(unit), &s), 0);
        sd_bus_message_unref(m);
        /* Not a unit's object. */
        m = signal_of("/org/freedesktop/systemd1/job/42", "org.freedesktop.systemd1.Unit", "active");
        assert_int_equal(unit_watch_parse(m, unit, sizeof(unit), &s), 0);
        sd_bus_message_unref(m);
        /* A name longer than the caller's room. */
        m = signal_of("/org/freedesktop/systemd1/unit/a_2eservice", "org.freedesktop.systemd1.Unit", "active");
        assert_int_equal(unit_watch_parse(m, unit, 4, &s), -ENAMETOOLONG);
        sd_bus_message_unref(m);
}

/* A signal whose body is not what systemd sends is an error, not a crash. */
static void test_malformed(void **state) {
        sd_bus_message *m = NULL;
        char unit[64];
        UnitState s;

        assert_int_equal(sd_bus_message_new_signal(bus, &m, "/org/freedesktop/systemd1/unit/a_2eservice",
                                                   "org.freedesktop.DBus.Properties", "PropertiesChanged"), 0);
        assert_true(sd_bus_message_append(m, "su", "org.freedesktop.systemd1.Unit", UINT32_C(7)) >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_true(sd_bus_message_rewind(m, true) >= 0);
        assert_true(unit_watch_parse(m, unit, sizeof(unit), &s) < 0);
        sd_bus_message_unref(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_stopping_unit, setup, teardown),
                cmocka_unit_test(test_states),
                cmocka_unit_test_setup_teardown(test_nothing_to_say, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
