/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * org.mdreclaim.Manager1 on /org/mdreclaim/Manager: the methods and the Event
 * signal of the control API (docs/control-api.md). Reads are for anyone who
 * can reach the socket; changes need uid 0 or AdminGroup=, and a refused
 * caller changes nothing.
 */
#pragma once

#include "bus.h"

#define BUS_ERROR_NO_SUCH_CGROUP "org.mdreclaim.Error.NoSuchCgroup"
#define BUS_ERROR_AMBIGUOUS "org.mdreclaim.Error.Ambiguous"
#define BUS_ERROR_NO_SUCH_POLICY "org.mdreclaim.Error.NoSuchPolicy"
#define BUS_ERROR_INVALID_POLICY "org.mdreclaim.Error.InvalidPolicy"
#define BUS_ERROR_INVALID_CONFIGURATION "org.mdreclaim.Error.InvalidConfiguration"
#define BUS_ERROR_NOT_SUPPORTED "org.mdreclaim.Error.NotSupported"
#define BUS_ERROR_BUSY "org.mdreclaim.Error.Busy"
#define BUS_ERROR_REFUSED "org.mdreclaim.Error.Refused"
#define BUS_ERROR_TIMEOUT "org.mdreclaim.Error.Timeout"
#define BUS_ERROR_FAILED "org.mdreclaim.Error.Failed"

/* Bounds on what SetPolicy/UnsetPolicy take. */
#define BUS_POLICY_ARGS_MAX 64

/* Registers the API on a new connection (its userdata is the connection). */
int bus_manager_attach(BusConnection *c);

/* How long Writeback(wait=true) waits for the writeback to finish. */
#define BUS_WAIT_USEC (60 * USEC_PER_SEC)

/* The policy writer the API's policy changes go through, and the waiters' timer. */
int bus_manager_writer_new(BusServer *s);
void bus_manager_writer_free(BusServer *s);

/* Every event the daemon records: answers the callers waiting for it. */
void bus_manager_on_event(BusServer *s, const Event *e);
