/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unit-watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "util.h"

#define UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"
#define UNIT_INTERFACE "org.freedesktop.systemd1.Unit"
#define SYSTEMD_NAME "org.freedesktop.systemd1"
#define BUS_DRIVER_NAME "org.freedesktop.DBus"
/* The service manager's own socket (root's alone): what systemctl speaks to as root. */
#define MANAGER_PRIVATE_ADDRESS "unix:path=/run/systemd/private"
#define PROPERTIES_MATCH "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'," \
        "path_namespace='" UNIT_PATH_PREFIX "',arg0='" UNIT_INTERFACE "'"

/* A lost connection is opened again after 1 s, then twice as long each failure, to a minute. */
#define RETRY_FIRST_USEC (UINT64_C(1) * 1000 * 1000)
#define RETRY_MAX_USEC (UINT64_C(60) * 1000 * 1000)

struct UnitWatch {
        sd_event *event;
        sd_bus *bus;
        sd_bus_slot *match, *subscribe, *disconnected, *owner_match, *owner_call;
        sd_event_source *retry;         /* the next attempt to connect, once the connection is lost */
        uint64_t retry_usec;            /* the wait before it */
        char *systemd;                  /* the unique name that owns SYSTEMD_NAME; NULL: none known */
        bool direct;                    /* connected to the manager itself: its peer is systemd */
        bool subscribed;                /* the connection's Subscribe was answered */
        bool skip_direct;               /* the last direct connection ended before that: the bus next */
        bool reconnects;                /* opened by address (unit_watch_new), so it can be opened again */
        bool refusal_said;              /* a signal not from systemd was logged once */
        UnitStateFn fn;
        void *userdata;
};

UnitState unit_state_from_string(const char *s) {
        if (streq(s, "deactivating"))
                return UNIT_STATE_STOPPING;
        if (streq(s, "activating") || streq(s, "active"))
                return UNIT_STATE_STARTING;
        if (streq(s, "inactive") || streq(s, "failed"))
                return UNIT_STATE_STOPPED;
        return UNIT_STATE_OTHER;
}

/* Body: the interface (s), the changed properties (a{sv}), the invalidated ones (as). */
int unit_watch_parse(sd_bus_message *m, char *unit, size_t size, UnitState *ret_state) {
        _cleanup_free_ char *name = NULL;
        const char *interface, *key, *state = NULL;
        int r;

        r = sd_bus_path_decode(sd_bus_message_get_path(m), UNIT_PATH_PREFIX, &name);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(m, "s", &interface);
        if (r < 0)
                return r;
        if (!streq(interface, UNIT_INTERFACE))
                return 0;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                if (streq(key, "ActiveState"))
                        r = sd_bus_message_read(m, "v", "s", &state);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!state)
                return 0;
        if (strlen(name) >= size)
                return -ENAMETOOLONG;
        memcpy(unit, name, strlen(name) + 1);
        *ret_state = unit_state_from_string(state);
        return 1;
}

bool unit_watch_from_systemd(sd_bus_message *m, const char *systemd) {
        const char *sender = sd_bus_message_get_sender(m);

        /* The broker fills in the sender, so it cannot be forged; the match rule's sender= cannot be
         * trusted instead, as the broker delivers a signal sent to us by name whatever our rules say. */
        return systemd && sender && streq(sender, systemd) && !sd_bus_message_get_destination(m);
}

int unit_watch_owner_changed(sd_bus_message *m, char **systemd) {
        const char *name, *old_owner, *new_owner;
        char *copy = NULL;
        int r;

        /* Only the broker itself can send as its own name. */
        if (!streq_ptr(sd_bus_message_get_sender(m), BUS_DRIVER_NAME))
                return 0;
        r = sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner);
        if (r < 0)
                return r;
        if (!streq(name, SYSTEMD_NAME))
                return 0;
        if (*new_owner && !(copy = strdup(new_owner)))
                return -ENOMEM;
        free(*systemd);
        *systemd = copy;
        return 1;
}

static void say_refused(UnitWatch *w, sd_bus_message *m) {
        const char *sender = sd_bus_message_get_sender(m), *destination = sd_bus_message_get_destination(m);

        /* Anyone on the bus may send these: said once, so that a flood of them fills no journal. */
        if (w->refusal_said) {
                log_debug("Ignoring a unit's PropertiesChanged signal from %s%s%s, not systemd's broadcast",
                          strna(sender), destination ? " to " : "", destination ?: "");
                return;
        }
        w->refusal_said = true;
        log_notice("Ignoring a unit's PropertiesChanged signal from %s%s%s: only systemd's broadcasts (from %s) "
                   "say that a unit stops; further ones are not logged", strna(sender),
                   destination ? " sent to this daemon alone as " : "", destination ?: "",
                   w->systemd ?: "no owner of " SYSTEMD_NAME " known");
}

static int on_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitWatch *w = userdata;
        char unit[256];
        UnitState state;
        int r;

        if (!w->direct && !unit_watch_from_systemd(m, w->systemd)) {
                say_refused(w, m);
                return 0;
        }
        r = unit_watch_parse(m, unit, sizeof(unit), &state);
        if (r < 0)
                log_debug_errno(r, "Ignoring a unit's PropertiesChanged signal that cannot be read: %m");
        else if (r > 0)
                w->fn(unit, state, w->userdata);
        return 0;
}

static int on_owner_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitWatch *w = userdata;
        int r = unit_watch_owner_changed(m, &w->systemd);

        if (r < 0)
                log_debug_errno(r, "Ignoring a NameOwnerChanged signal that cannot be read: %m");
        else if (r > 0)
                log_debug("%s is now owned by %s", SYSTEMD_NAME, w->systemd ?: "nobody");
        return 0;
}

/* The broker's answer to GetNameOwner: systemd's unique name, or an error when nobody owns the name. */
static int on_owner_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitWatch *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *owner;
        char *copy = NULL;

        if (!streq_ptr(sd_bus_message_get_sender(m), BUS_DRIVER_NAME))
                return 0;
        if (e)
                log_debug("No owner of %s yet (%s): no unit's signal is taken until one comes", SYSTEMD_NAME,
                          e->message ?: e->name);
        else if (sd_bus_message_read(m, "s", &owner) < 0 || !*owner)
                log_notice("The bus's answer naming the owner of %s cannot be read: no unit's signal is taken "
                           "until the name changes hands", SYSTEMD_NAME);
        else if (!(copy = strdup(owner)))
                log_warning("Out of memory keeping the owner of %s: no unit's signal is taken until the name "
                            "changes hands", SYSTEMD_NAME);
        free(w->systemd);
        w->systemd = copy;
        return 0;
}

static int on_subscribed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const sd_bus_error *e = sd_bus_message_get_error(m);

        UnitWatch *w = userdata;

        /* The connection closing answers the call too: that is said by on_disconnected(). */
        if (e && sd_bus_is_open(sd_bus_message_get_bus(m)) > 0)
                log_notice("systemd refused the subscription to its units' changes (%s); throttles on a "
                           "stopping unit are lifted only once its cgroup is empty", e->message ?: e->name);
        else if (!e) {
                w->subscribed = true;
                w->retry_usec = RETRY_FIRST_USEC;
                log_info("Watching systemd's units %s: a stopping unit's throttles go as it stops",
                         w->direct ? "on its own socket" : "on the system bus");
        }
        return 0;
}

static int connect_watch(UnitWatch *w);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        UnitWatch *w = userdata;
        int r = connect_watch(w);

        if (r >= 0)
                return 0;
        w->retry_usec = MIN(w->retry_usec * 2, RETRY_MAX_USEC);
        log_debug_errno(r, "Cannot connect to systemd again (%m); next attempt in %" PRIu64 " s",
                        w->retry_usec / USEC_PER_SEC);
        (void) sd_event_source_set_time_relative(s, w->retry_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitWatch *w = userdata;
        int r = -EOPNOTSUPP;

        /* A direct connection the manager closed before it answered (it refused us): the bus next. A
         * re-executed manager closes every direct connection after it answered: its socket again. */
        w->skip_direct = w->direct && !w->subscribed;
        /* One that never got its answer waits longer each time, as one that could not be opened. */
        if (!w->subscribed)
                w->retry_usec = MIN(w->retry_usec * 2, RETRY_MAX_USEC);
        if (w->reconnects) {
                r = w->retry ? sd_event_source_set_time_relative(w->retry, w->retry_usec)
                             : sd_event_add_time_relative(w->event, &w->retry, CLOCK_MONOTONIC, w->retry_usec, 0,
                                                          on_retry, w);
                if (r >= 0)
                        r = sd_event_source_set_enabled(w->retry, SD_EVENT_ONESHOT);
        }
        if (r >= 0)
                log_notice("%s went away; until it is back (first try in %" PRIu64 " s) throttles on a stopping "
                           "unit are lifted once its cgroup is empty", w->direct ? "The connection to systemd" :
                           "The system bus", w->retry_usec / USEC_PER_SEC);
        else
                log_notice("%s went away; throttles on a stopping unit are lifted only once its cgroup is empty",
                           w->direct ? "The connection to systemd" : "The system bus");
        /* No word will come that the units stopping now are gone or back: forget them all. */
        w->fn(NULL, UNIT_STATE_STOPPED, w->userdata);
        return 0;
}

/*
 * A connection to the service manager itself, as root's systemctl has: no
 * broker between, so nobody else can speak on it, and systemd's word on a
 * unit comes straight from it (the broker is one process more to wake before
 * the daemon hears of a stop, while systemd races to remove the cgroup).
 * systemd sends its units' changes to every such connection unasked.
 */
static int open_manager(sd_bus **ret) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        struct ucred peer = {};
        socklen_t len = sizeof(peer);
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        (void) sd_bus_set_description(bus, "mdreclaimd-units");
        r = sd_bus_set_address(bus, MANAGER_PRIVATE_ADDRESS);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0)
                return r;
        /* Whoever listens there must be root's (the manager's directory and socket are). */
        if (getsockopt(sd_bus_get_fd(bus), SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
                return negative_errno();
        if (peer.uid != 0)
                return -EPERM;
        *ret = TAKE_PTR(bus);
        return 0;
}

/* The connection's slots and the bus closed (no flush: a stop never waits on the bus). */
static void detach(UnitWatch *w) {
        w->match = sd_bus_slot_unref(w->match);
        w->subscribe = sd_bus_slot_unref(w->subscribe);
        w->disconnected = sd_bus_slot_unref(w->disconnected);
        w->owner_match = sd_bus_slot_unref(w->owner_match);
        w->owner_call = sd_bus_slot_unref(w->owner_call);
        free(w->systemd);
        w->systemd = NULL;
        w->subscribed = false;
        if (w->bus) {
                (void) sd_bus_detach_event(w->bus);
                w->bus = sd_bus_close_unref(w->bus);
        }
}

/* Takes over `bus`, started: the matches, the calls, and the loop; on failure it is closed. */
static int attach(UnitWatch *w, sd_bus *bus, bool direct) {
        int r;

        w->bus = bus;
        w->direct = direct;
        /* Never exit or block on it: the daemon works without. No flush at the loop's exit either:
         * a bus still connecting would hold the stop (and the throttles' restore) for its timeouts. */
        (void) sd_bus_set_exit_on_disconnect(w->bus, false);
        (void) sd_bus_set_close_on_exit(w->bus, false);
        /* Who systemd is on a broker's bus, before anything it says is listened to: the match on its
         * name's changes first, then the question, so that the last of the two to arrive is the newest.
         * A direct connection has one peer, the manager, and no broker to ask. */
        r = direct ? 0 : sd_bus_add_match_async(w->bus, &w->owner_match,
                                   "type='signal',sender='" BUS_DRIVER_NAME "',path='/org/freedesktop/DBus',"
                                   "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                   "arg0='" SYSTEMD_NAME "'",
                                   on_owner_signal, NULL, w);
        if (r >= 0 && !direct)
                r = sd_bus_call_method_async(w->bus, &w->owner_call, BUS_DRIVER_NAME, "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetNameOwner", on_owner_reply, w, "s",
                                             SYSTEMD_NAME);
        if (r >= 0)
                /* The sender is the broker's word; a direct connection has no broker to vouch for one. */
                r = sd_bus_add_match_async(w->bus, &w->match, direct ? PROPERTIES_MATCH :
                                           "sender='" SYSTEMD_NAME "'," PROPERTIES_MATCH,
                                           on_properties, NULL, w);
        if (r >= 0)
                r = sd_bus_match_signal(w->bus, &w->disconnected, "org.freedesktop.DBus.Local", NULL,
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, w);
        if (r >= 0)
                r = sd_bus_call_method_async(w->bus, &w->subscribe, "org.freedesktop.systemd1",
                                             "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                             "Subscribe", on_subscribed, w, NULL);
        /* Before the loop's other sources: a stop is news the actuator needs at once. */
        if (r >= 0)
                r = sd_bus_attach_event(w->bus, w->event, SD_EVENT_PRIORITY_IMPORTANT - 10);
        if (r < 0)
                detach(w);
        return r;
}

/* systemd's own socket, or failing that the system bus; the old connection, if any, closed first. */
static int connect_watch(UnitWatch *w) {
        sd_bus *bus = NULL;
        int r = -ECONNREFUSED;

        detach(w);
        if (!w->skip_direct) {
                r = open_manager(&bus);
                if (r >= 0) {
                        r = attach(w, bus, true);
                        if (r >= 0)
                                return 0;
                }
        }
        if (w->skip_direct)
                log_debug("systemd closed its own socket's connection before answering: its units are "
                          "watched on the system bus");
        else
                log_debug_errno(r, "Not on systemd's own socket (%m): its units are watched on the system bus");
        w->skip_direct = false;
        r = sd_bus_open_system_with_description(&bus, "mdreclaimd-units");
        if (r < 0)
                return r;
        return attach(w, bus, false);
}

static UnitWatch *watch_alloc(sd_event *event, UnitStateFn fn, void *userdata) {
        UnitWatch *w = calloc(1, sizeof(UnitWatch));

        if (!w)
                return NULL;
        w->event = sd_event_ref(event);
        w->fn = fn;
        w->userdata = userdata;
        w->retry_usec = RETRY_FIRST_USEC;
        return w;
}

int unit_watch_new(sd_event *event, UnitStateFn fn, void *userdata, UnitWatch **ret) {
        UnitWatch *w = watch_alloc(event, fn, userdata);
        int r;

        if (!w)
                return -ENOMEM;
        w->reconnects = true;
        r = connect_watch(w);
        if (r < 0) {
                unit_watch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int unit_watch_new_on_bus(sd_bus *bus, bool direct, sd_event *event, UnitStateFn fn, void *userdata,
                          UnitWatch **ret) {
        UnitWatch *w = watch_alloc(event, fn, userdata);
        int r;

        if (!w) {
                sd_bus_close_unref(bus);
                return -ENOMEM;
        }
        r = attach(w, bus, direct);
        if (r < 0) {
                unit_watch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

UnitWatch *unit_watch_free(UnitWatch *w) {
        if (!w)
                return NULL;
        detach(w);
        sd_event_source_disable_unref(w->retry);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}
