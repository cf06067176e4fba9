/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's word that a unit is stopping, from its PropertiesChanged signals:
 * on a direct connection to the manager's own socket (/run/systemd/private,
 * root's; systemd sends its units' changes there unasked), or on the system
 * bus after Subscribe() where that socket cannot be reached. A stopping
 * unit's cgroup is about to empty and be removed: a throttle still on it then
 * outlives it, so the actuator lifts them as the stop begins rather than
 * when the last process is gone, which races with systemd's own removal of
 * the cgroup.
 *
 * On the direct connection systemd is the only peer. On the system bus, only
 * systemd's own broadcasts are believed: any client of the bus may send a
 * signal to the daemon by name, and the broker hands it over whatever the
 * match rules say. The watch keeps the unique name that owns
 * org.freedesktop.systemd1 (asked at start, then followed through the
 * broker's NameOwnerChanged) and takes a unit's signal only from it, and
 * only when it was sent to no one in particular.
 *
 * A connection lost (a re-executed systemd closes every direct one; the bus
 * restarted) is opened again after 1 s, then twice as long each failure, to
 * a minute: the manager's socket first, unless the last direct connection
 * ended before systemd answered on it.
 *
 * Optional: without either (no systemd, tests on a fixture tree) the daemon
 * goes on without it, and the cgroup.events watch alone lifts.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

typedef enum UnitState {
        UNIT_STATE_OTHER,       /* a state that says nothing here (reloading, maintenance, ...) */
        UNIT_STATE_STARTING,    /* activating, active: not stopping (any more) */
        UNIT_STATE_STOPPING,    /* deactivating */
        UNIT_STATE_STOPPED,     /* inactive, failed */
} UnitState;

/* `unit`: the unit's name, e.g. "writer.service"; NULL: the bus went away, every unit's state is unknown. */
typedef void (*UnitStateFn)(const char *unit, UnitState state, void *userdata);

typedef struct UnitWatch UnitWatch;

/*
 * Connects to systemd's own socket (root's), or failing that to the system
 * bus, and subscribes; -errno when there is neither (the caller goes on
 * without).
 */
int unit_watch_new(sd_event *event, UnitStateFn fn, void *userdata, UnitWatch **ret);
/*
 * The same on `bus`, started, which it takes over (and closes on failure):
 * a direct connection to the manager (`direct`: every message on it is
 * systemd's), or one to a bus broker (only systemd's broadcasts are taken).
 */
int unit_watch_new_on_bus(sd_bus *bus, bool direct, sd_event *event, UnitStateFn fn, void *userdata,
                          UnitWatch **ret);
UnitWatch *unit_watch_free(UnitWatch *w);

/*
 * Whether `m` is systemd's: sent by `systemd`, the unique name that owns
 * org.freedesktop.systemd1 (NULL: none known, nothing is), with no
 * destination (a broadcast, not a message to this daemon alone).
 */
bool unit_watch_from_systemd(sd_bus_message *m, const char *systemd);

/*
 * Reads a NameOwnerChanged signal: when the broker sent it
 * (org.freedesktop.DBus) and it is about org.freedesktop.systemd1, the new
 * owner replaces *systemd (NULL: nobody owns it now) and 1 is returned; 0 for
 * a signal of anyone else or about another name; -errno for a malformed one.
 */
int unit_watch_owner_changed(sd_bus_message *m, char **systemd);

/*
 * Reads a PropertiesChanged signal of a unit object: its name (decoded from
 * the object path, into `unit`) and its ActiveState, if the signal carries
 * one. Returns 1 with both, 0 for a signal without ActiveState or not a
 * unit's, -errno for a malformed one.
 */
int unit_watch_parse(sd_bus_message *m, char *unit, size_t size, UnitState *ret_state);

UnitState unit_state_from_string(const char *s);
