/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mdctl's side of the control API: connecting to the daemon's socket and
 * calling a method, with every failure told to the user once, saying what
 * failed and why (the daemon's own message when it gave one).
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "bus-value.h"

#define CONTROL_SOCKET_DEFAULT "/run/mdreclaim/control"
#define BUS_OBJECT_PATH "/org/mdreclaim/Manager"
#define BUS_INTERFACE "org.mdreclaim.Manager1"

/* Connects to the daemon; on failure prints why and returns a negative errno. */
int client_connect(const char *socket_path, sd_bus **ret);
/* The same, silent (for a retry loop). */
int client_open(const char *socket_path, sd_bus **ret);
/* Whether r says the connection is gone (the daemon stopped or closed it). */
bool client_disconnected(int r);

/*
 * Calls `method` with arguments `types`, ...; reads the whole reply into
 * *ret (may be NULL). On failure prints "mdctl: <what>: <why>" and returns a
 * negative errno.
 */
int client_call(sd_bus *bus, const char *what, const char *method, Value *ret, const char *types, ...);

/* Calls `method` and hands the raw reply back (for replies mdctl reads itself). */
int client_call_raw(sd_bus *bus, const char *what, const char *method, sd_bus_message **ret,
                    const char *types, ...);

/* The same with the arguments as a va_list. */
int client_call_rawv(sd_bus *bus, const char *what, const char *method, sd_bus_message **ret,
                     const char *types, va_list ap);

/* Prints a failure that happened on an open connection (not the daemon's error). */
int client_fail(const char *what, int r);

/*
 * A unit name or cgroup path from the command line, fit to send: the bytes
 * that are not valid UTF-8 and the control characters in the escaped form of
 * names (name-escape.h), the rest as typed (a backslash too: the escapes mdctl
 * prints are taken back as typed). NULL: out of memory.
 */
char *client_name_arg(const char *s);
