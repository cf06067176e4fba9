/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The methods of org.mdreclaim.Manager1 that change something: policies
 * (through the policy writer), reload, and the actions handed to the two
 * points (reclaim, writeback, with callers waiting for their events). Each
 * checks the caller first; a refused caller changes nothing.
 */
#pragma once

#include <systemd/sd-bus.h>

#include "bus.h"

int bus_set_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_unset_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_reclaim(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_writeback(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* How long Writeback(wait=true) waits for the writeback to finish. */
#define BUS_WAIT_USEC (60 * USEC_PER_SEC)

/* The policy writer the API's policy changes go through, and the waiters' timer. */
int bus_changes_init(BusServer *s);
void bus_changes_deinit(BusServer *s);

/* Every event the daemon records: answers the callers waiting for it. */
void bus_changes_on_event(BusServer *s, const Event *e);
