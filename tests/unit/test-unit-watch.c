/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's PropertiesChanged signal of a unit, read as the unit watch reads
 * it: the unit's name from the object path, its ActiveState among the other
 * changed properties; signals without one, or of another interface or
 * object, say nothing. And whose signals are believed: the watch runs on a
 * connection to a broker played by the test, which sends what a real one
 * would deliver, the sender filled in: systemd's broadcasts are taken, a
 * signal of anyone else, or one sent to the daemon by name, is not.
 */
#include <errno.h>
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
#include <systemd/sd-id128.h>

#include "unit-watch.h"
#include "util.h"

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

/* The sender and destination checks alone, on messages built here. */
static sd_bus_message *from(sd_bus_message *m, const char *sender, const char *destination) {
        assert_true(sd_bus_message_set_sender(m, sender) >= 0);
        if (destination)
                assert_true(sd_bus_message_set_destination(m, destination) >= 0);
        return m;
}

static sd_bus_message *unsealed_signal(const char *active) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(bus, &m, "/org/freedesktop/systemd1/unit/a_2eservice",
                                                   "org.freedesktop.DBus.Properties", "PropertiesChanged"), 0);
        assert_true(sd_bus_message_append(m, "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "ActiveState", "s",
                                          active, 0) >= 0);
        return m;
}

static void test_only_systemd_broadcasts(void **state) {
        sd_bus_message *m;

        m = from(unsealed_signal("deactivating"), ":1.1", NULL);
        assert_true(unit_watch_from_systemd(m, ":1.1"));
        assert_false(unit_watch_from_systemd(m, ":1.2"));      /* systemd is another connection now */
        assert_false(unit_watch_from_systemd(m, NULL));        /* nobody owns its name */
        sd_bus_message_unref(m);
        /* Sent to the daemon alone: the broker delivers it whatever the match says. */
        m = from(unsealed_signal("deactivating"), ":1.99", ":1.7");
        assert_false(unit_watch_from_systemd(m, ":1.1"));
        sd_bus_message_unref(m);
        /* Even by systemd's connection: its unit signals are broadcasts, never addressed. */
        m = from(unsealed_signal("deactivating"), ":1.1", ":1.7");
        assert_false(unit_watch_from_systemd(m, ":1.1"));
        sd_bus_message_unref(m);
        /* No sender at all (a direct connection). */
        m = unsealed_signal("deactivating");
        assert_false(unit_watch_from_systemd(m, ":1.1"));
        sd_bus_message_unref(m);
}

static sd_bus_message *owner_changed(const char *sender, const char *name, const char *old, const char *new) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(bus, &m, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                   "NameOwnerChanged"), 0);
        assert_true(sd_bus_message_set_sender(m, sender) >= 0);
        assert_true(sd_bus_message_append(m, "sss", name, old, new) >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_true(sd_bus_message_rewind(m, true) >= 0);
        return m;
}

static void test_owner_follows_the_broker(void **state) {
        char *owner = strdup(":1.1");
        sd_bus_message *m;

        /* Anyone may send a NameOwnerChanged; only the broker's is believed. */
        m = owner_changed(":1.99", "org.freedesktop.systemd1", ":1.1", ":1.99");
        assert_int_equal(unit_watch_owner_changed(m, &owner), 0);
        assert_string_equal(owner, ":1.1");
        sd_bus_message_unref(m);
        m = owner_changed("org.freedesktop.DBus", "org.example.Other", "", ":1.99");
        assert_int_equal(unit_watch_owner_changed(m, &owner), 0);
        assert_string_equal(owner, ":1.1");
        sd_bus_message_unref(m);
        m = owner_changed("org.freedesktop.DBus", "org.freedesktop.systemd1", ":1.1", ":1.2");
        assert_int_equal(unit_watch_owner_changed(m, &owner), 1);
        assert_string_equal(owner, ":1.2");
        sd_bus_message_unref(m);
        m = owner_changed("org.freedesktop.DBus", "org.freedesktop.systemd1", ":1.2", "");
        assert_int_equal(unit_watch_owner_changed(m, &owner), 1);
        assert_null(owner);
        sd_bus_message_unref(m);
        m = owner_changed("org.freedesktop.DBus", "org.freedesktop.systemd1", "", ":1.3");
        assert_int_equal(unit_watch_owner_changed(m, &owner), 1);
        assert_string_equal(owner, ":1.3");
        sd_bus_message_unref(m);
        free(owner);
}

/* ---- the watch itself, on a connection to a broker the test plays ---- */

#define SELF ":1.7"             /* the daemon's unique name, as the broker's Hello gives it */
#define SYSTEMD ":1.1"
#define INTRUDER ":1.99"

typedef struct Broker {
        sd_event *event;
        sd_bus *server;         /* the broker's end */
        UnitWatch *watch;
        const char *systemd;    /* who owns org.freedesktop.systemd1 when asked; NULL: nobody */
        bool subscribed;        /* Subscribe was called */
        bool owner_asked;       /* GetNameOwner was answered */
        bool direct;            /* the server is the manager itself, not a broker */
        unsigned calls;         /* the unit callback's calls */
        char unit[64];
        UnitState state;
} Broker;

static void on_unit(const char *unit, UnitState s, void *userdata) {
        Broker *b = userdata;

        b->calls++;
        snprintf(b->unit, sizeof(b->unit), "%s", unit ?: "(all)");
        b->state = s;
}

/* Answers what the watch asks the broker and systemd; the sender filled in as a broker does. */
static int on_call(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sd_bus_message *reply = NULL;
        Broker *b = userdata;
        const char *member = sd_bus_message_get_member(m);
        uint8_t type;

        if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
                return 0;
        if (streq(member, "GetNameOwner") && !b->systemd) {
                assert_true(sd_bus_message_new_method_errorf(m, &reply, "org.freedesktop.DBus.Error.NameHasNoOwner",
                                                             "no owner") >= 0);
        } else {
                assert_true(sd_bus_message_new_method_return(m, &reply) >= 0);
                if (streq(member, "Hello"))
                        assert_true(sd_bus_message_append(reply, "s", SELF) >= 0);
                else if (streq(member, "GetNameOwner"))
                        assert_true(sd_bus_message_append(reply, "s", b->systemd) >= 0);
        }
        /* The manager's own socket has no broker to fill in a sender. */
        if (!b->direct)
                assert_true(sd_bus_message_set_sender(reply, streq(member, "Subscribe") ? SYSTEMD
                                                                                         : "org.freedesktop.DBus") >= 0);
        assert_true(sd_bus_send(b->server, reply, NULL) >= 0);
        sd_bus_message_unref(reply);
        if (streq(member, "Subscribe"))
                b->subscribed = true;
        if (streq(member, "GetNameOwner"))
                b->owner_asked = true;
        return 1;
}

/* Runs the loop until `*flag` or a second has passed. */
static void run_until(Broker *b, const bool *flag) {
        for (int i = 0; i < 100 && !*flag; i++)
                assert_true(sd_event_run(b->event, 10 * 1000) >= 0);
}

/* Runs the loop until nothing is left to do. */
static void settle(Broker *b) {
        for (int i = 0; i < 20; i++)
                assert_true(sd_event_run(b->event, 5 * 1000) >= 0);
}

static void server_start(Broker *b, const char *systemd, bool direct) {
        sd_bus *client = NULL;
        sd_id128_t id;
        int fds[2];

        *b = (Broker) { .systemd = systemd, .direct = direct };
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        assert_int_equal(sd_event_new(&b->event), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_bus_new(&b->server), 0);
        assert_int_equal(sd_bus_set_fd(b->server, fds[1], fds[1]), 0);
        assert_int_equal(sd_bus_set_server(b->server, 1, id), 0);
        assert_int_equal(sd_bus_set_anonymous(b->server, 1), 0);
        assert_true(sd_bus_add_filter(b->server, NULL, on_call, b) >= 0);
        assert_true(sd_bus_start(b->server) >= 0);
        assert_true(sd_bus_attach_event(b->server, b->event, 0) >= 0);
        assert_int_equal(sd_bus_new(&client), 0);
        assert_int_equal(sd_bus_set_fd(client, fds[0], fds[0]), 0);
        assert_int_equal(sd_bus_set_bus_client(client, !direct), 0);
        assert_int_equal(sd_bus_set_anonymous(client, 1), 0);
        assert_true(sd_bus_start(client) >= 0);
        assert_int_equal(unit_watch_new_on_bus(client, direct, b->event, on_unit, b, &b->watch), 0);
        run_until(b, &b->subscribed);
        assert_true(b->subscribed);
        /* A broker is asked who systemd is; the manager's own socket has nobody else to ask about. */
        assert_true(b->owner_asked == !direct);
}

static void broker_start(Broker *b, const char *systemd) {
        server_start(b, systemd, false);
}

static void broker_stop(Broker *b) {
        unit_watch_free(b->watch);
        sd_bus_flush_close_unref(b->server);
        sd_event_unref(b->event);
}

/* A unit's PropertiesChanged as the broker delivers it: from `sender`, to `destination` (NULL: a broadcast). */
static void deliver(Broker *b, const char *sender, const char *destination, const char *active) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(b->server, &m, "/org/freedesktop/systemd1/unit/db_2eservice",
                                                   "org.freedesktop.DBus.Properties", "PropertiesChanged"), 0);
        assert_true(sd_bus_message_set_sender(m, sender) >= 0);
        if (destination)
                assert_true(sd_bus_message_set_destination(m, destination) >= 0);
        assert_true(sd_bus_message_append(m, "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "ActiveState", "s",
                                          active, 0) >= 0);
        assert_true(sd_bus_send(b->server, m, NULL) >= 0);
        sd_bus_message_unref(m);
        settle(b);
}

static void deliver_owner(Broker *b, const char *sender, const char *new_owner) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(b->server, &m, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                   "NameOwnerChanged"), 0);
        assert_true(sd_bus_message_set_sender(m, sender) >= 0);
        assert_true(sd_bus_message_append(m, "sss", "org.freedesktop.systemd1", "", new_owner) >= 0);
        assert_true(sd_bus_send(b->server, m, NULL) >= 0);
        sd_bus_message_unref(m);
        settle(b);
}

/* An unprivileged client says "db.service is stopping" to the daemon by name: nothing is lifted. */
static void test_forged_stop_ignored(void **state) {
        Broker b;

        broker_start(&b, SYSTEMD);
        deliver(&b, INTRUDER, SELF, "deactivating");
        assert_int_equal(b.calls, 0);
        /* Addressed, even from systemd's connection: not how systemd speaks of its units. */
        deliver(&b, SYSTEMD, SELF, "deactivating");
        assert_int_equal(b.calls, 0);
        /* A broadcast of someone else (a broker delivers it only when a rule lets it through). */
        deliver(&b, INTRUDER, NULL, "deactivating");
        assert_int_equal(b.calls, 0);
        /* systemd's own broadcast is taken. */
        deliver(&b, SYSTEMD, NULL, "deactivating");
        assert_int_equal(b.calls, 1);
        assert_string_equal(b.unit, "db.service");
        assert_int_equal(b.state, UNIT_STATE_STOPPING);
        broker_stop(&b);
}

/* systemd's name changing hands (a re-executed manager, a new connection) moves the trust with it. */
static void test_trust_follows_the_owner(void **state) {
        Broker b;

        broker_start(&b, SYSTEMD);
        /* A client claims the name in a NameOwnerChanged of its own: not believed. */
        deliver_owner(&b, INTRUDER, INTRUDER);
        deliver(&b, INTRUDER, NULL, "deactivating");
        assert_int_equal(b.calls, 0);
        /* The broker says systemd is :1.2 now: :1.1 is no longer believed, :1.2 is. */
        deliver_owner(&b, "org.freedesktop.DBus", ":1.2");
        deliver(&b, SYSTEMD, NULL, "deactivating");
        assert_int_equal(b.calls, 0);
        deliver(&b, ":1.2", NULL, "deactivating");
        assert_int_equal(b.calls, 1);
        /* Nobody owns it: nobody is believed. */
        deliver_owner(&b, "org.freedesktop.DBus", "");
        deliver(&b, ":1.2", NULL, "active");
        assert_int_equal(b.calls, 1);
        broker_stop(&b);
}

/* No systemd on the bus when the watch starts: nothing is believed until the broker names one. */
static void test_no_owner_at_start(void **state) {
        Broker b;

        broker_start(&b, NULL);
        deliver(&b, SYSTEMD, NULL, "deactivating");
        assert_int_equal(b.calls, 0);
        deliver_owner(&b, "org.freedesktop.DBus", SYSTEMD);
        deliver(&b, SYSTEMD, NULL, "deactivating");
        assert_int_equal(b.calls, 1);
        broker_stop(&b);
}

/* The bus's going away is said by sd-bus itself; a peer's message that claims to be that word is refused. */
static void test_forged_disconnect_ignored(void **state) {
        sd_bus_message *m = NULL;
        Broker b;

        broker_start(&b, SYSTEMD);
        assert_int_equal(sd_bus_message_new_signal(b.server, &m, "/org/freedesktop/DBus/Local",
                                                   "org.freedesktop.DBus.Local", "Disconnected"), 0);
        assert_true(sd_bus_message_set_sender(m, INTRUDER) >= 0);
        assert_true(sd_bus_message_set_destination(m, SELF) >= 0);
        assert_true(sd_bus_send(b.server, m, NULL) >= 0);
        sd_bus_message_unref(m);
        settle(&b);
        assert_int_equal(b.calls, 0);
        /* And the connection lives on. */
        deliver(&b, SYSTEMD, NULL, "deactivating");
        assert_int_equal(b.calls, 1);
        assert_string_equal(b.unit, "db.service");
        broker_stop(&b);
}

/* A PropertiesChanged of `path` for `interface` with one string property, as the manager sends it on its socket. */
static void send_direct(Broker *b, const char *path, const char *interface, const char *key, const char *value) {
        sd_bus_message *m = NULL;

        assert_int_equal(sd_bus_message_new_signal(b->server, &m, path, "org.freedesktop.DBus.Properties",
                                                   "PropertiesChanged"), 0);
        assert_true(sd_bus_message_set_sender(m, "org.freedesktop.systemd1") >= 0);
        assert_true(sd_bus_message_append(m, "sa{sv}as", interface, 1, key, "s", value, 0) >= 0);
        assert_true(sd_bus_send(b->server, m, NULL) >= 0);
        sd_bus_message_unref(m);
        settle(b);
}

/*
 * On the manager's own socket (root's) systemd is the only peer: its
 * signals are taken whatever sender they name (systemd names itself, and no
 * broker vouches for it), and no GetNameOwner is asked. When the manager
 * closes the connection, every unit's state is forgotten at once.
 */
static void test_direct_connection(void **state) {
        Broker b;

        server_start(&b, NULL, true);
        send_direct(&b, "/org/freedesktop/systemd1/unit/db_2eservice", "org.freedesktop.systemd1.Unit",
                    "ActiveState", "deactivating");
        assert_int_equal(b.calls, 1);
        assert_string_equal(b.unit, "db.service");
        assert_int_equal(b.state, UNIT_STATE_STOPPING);
        /* Another object's change, or another interface's, says nothing. */
        send_direct(&b, "/org/freedesktop/systemd1/job/7", "org.freedesktop.systemd1.Job", "State", "running");
        assert_int_equal(b.calls, 1);
        /* The manager closes the connection (a re-exec does): every unit's state is forgotten. */
        b.server = sd_bus_flush_close_unref(b.server);
        settle(&b);
        assert_int_equal(b.calls, 2);
        assert_string_equal(b.unit, "(all)");
        broker_stop(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_stopping_unit, setup, teardown),
                cmocka_unit_test(test_states),
                cmocka_unit_test_setup_teardown(test_nothing_to_say, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_only_systemd_broadcasts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner_follows_the_broker, setup, teardown),
                cmocka_unit_test(test_forged_stop_ignored),
                cmocka_unit_test(test_trust_follows_the_owner),
                cmocka_unit_test(test_no_owner_at_start),
                cmocka_unit_test(test_forged_disconnect_ignored),
                cmocka_unit_test(test_direct_connection),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
