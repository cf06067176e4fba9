/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of the control API share: the Api's state, error names,
 * bounds, and each file's entry points. api.c (the vtable and the signals)
 * calls the methods; the method files call api-access.c and each other
 * downwards, never api.c.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "manager.h"
#include "policy-writer.h"
#include "transport.h"

#define BUS_OBJECT_PATH "/org/mdreclaim/Manager"
#define BUS_INTERFACE "org.mdreclaim.Manager1"

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
/* How long Release() holds a cgroup unthrottled when no time is given, and at the most. */
#define BUS_RELEASE_DEFAULT_USEC (10 * 60 * USEC_PER_SEC)
#define BUS_RELEASE_MAX_USEC (7 * 24 * 3600 * USEC_PER_SEC)
#define BUS_ERROR_NO_SUCH_ACTION "org.mdreclaim.Error.NoSuchAction"

/* How long Writeback(wait=true) waits for the writeback to finish. */
#define BUS_WAIT_USEC (60 * USEC_PER_SEC)
#define BUS_WAITERS_MAX 16

/* A caller of Writeback(wait=true): answered when its action finishes, or at its deadline. */
typedef struct BusWaiter {
        sd_bus_message *msg;
        uint64_t action_id;
        uint64_t deadline_usec;         /* CLOCK_MONOTONIC */
} BusWaiter;

typedef struct Api {
        Manager *manager;
        Transport *transport;
        uint64_t started_realtime_usec;
        PolicyWriter *writer;
        BusWaiter waiters[BUS_WAITERS_MAX];
        size_t n_waiters;
        sd_event_source *wait_source;   /* answers waiters whose deadline passed */
        sd_event_source *throttles_source;      /* sends ThrottlesChanged once per loop iteration that changed them */
        struct ApiProps *props;         /* api-props.c: the properties as last announced */
        /* AdminGroup= as last resolved */
        char *admin_group;
        bool have_admin_gid;
        gid_t admin_gid;
        uint64_t admin_group_checked_usec;
} Api;

/* ---- shared by the method files ---- */

/* The API a connection serves. */
Api *api_of(const BusConnection *c);
/* The configuration root policies are written below ("" for the real one). */
const char *api_config_root(const Api *a);
/* Whether the caller may change things (uid 0, or AdminGroup=). */
bool api_caller_is_admin(BusConnection *c);
/* 0 if the caller may `what`; otherwise AccessDenied, saying who may. */
int api_check_admin(BusConnection *c, const char *what, sd_bus_error *error);
/* A name in the escaped form every output uses, back to the raw one (*ret, to free); a name with
 * \000 in it is refused as invalid arguments (error set). */
int api_unescape_name(const char *what, char **ret, sd_bus_error *error);
/* A unit name or cgroup path, in the escaped form of names, to a watched cgroup; NoSuchCgroup or Ambiguous otherwise. */
int api_resolve(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error);
/* The same for a method whose one argument ("s") names the cgroup. */
int api_resolve_argument(sd_bus_message *msg, Manager *m, CgEntry **ret, sd_bus_error *error);
/*
 * What a policy change did, as an a{sv} appended to r (docs/control-api.md,
 * SetPolicy): the policy's mode and whether it is the default, how many
 * cgroups it governs and the first API_OUTCOME_PATHS_MAX, those its patterns
 * match that a more specific policy governs, and when it governs none the
 * nearest unit names watched. Empty for a policy no longer loaded.
 */
#define API_OUTCOME_PATHS_MAX 5
int api_append_policy_outcome(sd_bus_message *r, const Manager *m, const char *name);
/* A formatted text on the heap (for an answer), or NULL: out of memory. */
char *api_vtextf(const char *format, va_list ap) __attribute__((format(printf, 1, 0)));
/* Cgroups watched (not found gone). */
size_t api_cgroups_watched(const Observer *o);

/* api-read.c */
int method_get_status(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_cgroups_json(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_get_cgroup(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_policies(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_events(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_events_with_fields(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* An event's own fields (event-log.h) as a{sv}: keys in lower case, whole numbers as t, yes/no as b. */
int api_append_event_fields(sd_bus_message *r, const Event *e);
int method_list_throttles(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* api-explain.c */
int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* The cgroup's side of protection as a{sv} entries (docs/control-api.md, Explain): whether it is
 * protected, its limit and stall and the caps held for it; else the caps held on it and whom for. */
int api_append_protection(sd_bus_message *r, Manager *m, const CgEntry *e);

/* api-history.c */
int method_get_history(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* api-metrics.c */
int method_get_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* api-change.c */
int method_set_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_unset_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_end_release(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* The policy writer, and what api-actions.c needs. */
int api_changes_init(Api *a);
void api_changes_done(Api *a);

/* api-actions.c: one-shot actions, their ids, results and the callers waiting for them */
int method_reclaim(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_writeback(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_get_action(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_actions(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* An action as a{sv} (docs/control-api.md, GetAction). */
int api_append_action(sd_bus_message *r, const Action *a);
/* The waiters' timer, and ActionFinished for every action that finishes. */
int api_actions_init(Api *a);
void api_actions_done(Api *a);
