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

/* Shared by the method files. */
Manager *bus_manager_of(const BusConnection *c);
/* The configuration root policies are written below ("" for the real one). */
const char *bus_manager_config_root(const Manager *m);
/* 0 if the caller may `what`; otherwise AccessDenied, saying who may. */
int bus_manager_check_admin(BusConnection *c, const char *what, sd_bus_error *error);
/* A unit name or cgroup path to a watched cgroup; NoSuchCgroup or Ambiguous otherwise. */
int bus_manager_resolve(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error);

/* Registers the API on a new connection (its userdata is the connection). */
int bus_manager_attach(BusConnection *c);

