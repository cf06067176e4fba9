/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who may change things through the control API (uid 0, or AdminGroup=,
 * resolved through NSS and cached), and how a caller names a cgroup.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "parse-util.h"
#include "util.h"

Api *api_of(const BusConnection *c) {
        return c->transport->userdata;
}

const char *api_config_root(const Api *a) {
        const char *r = a->manager->args.config_root;

        return (!r || streq(r, "/")) ? "" : r;
}

size_t api_cgroups_watched(const Observer *o) {
        size_t n = 0;

        for (size_t i = 0; i < o->cgroups.n; i++)
                n += !o->cgroups.entries[i].gone;
        return n;
}

/* ---- who may change things ---- */

/* How often a group that was not found is looked up again (it may be created later). */
#define ADMIN_GROUP_RETRY_USEC (10 * USEC_PER_SEC)

/* AdminGroup= to a GID: numeric, or through NSS when the setting changes (a missing group now and then). */
static void admin_group_resolve(Api *s, const char *group) {
        char buf[4096];
        struct group gr, *res = NULL;
        uint64_t gid, now = 0;

        now = manager_now_usec(s->manager);
        if (streq_ptr(group, s->admin_group) &&
            (s->have_admin_gid || !group || now < s->admin_group_checked_usec + ADMIN_GROUP_RETRY_USEC))
                return;
        if (!streq_ptr(group, s->admin_group)) {
                free(s->admin_group);
                s->admin_group = group ? strdup(group) : NULL;
                if (group && !s->admin_group)
                        return;
        }
        s->have_admin_gid = false;
        s->admin_group_checked_usec = now;
        if (!group)
                return;
        if (parse_uint_range(group, 0, UINT32_MAX - 1, &gid) >= 0) {
                s->admin_gid = (gid_t) gid;
                s->have_admin_gid = true;
        } else if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) == 0 && res) {
                s->admin_gid = res->gr_gid;
                s->have_admin_gid = true;
        } else
                log_warning("AdminGroup=%s: no such group (yet); only root may change things", group);
}

bool api_caller_is_admin(BusConnection *c) {
        Api *s = api_of(c);

        admin_group_resolve(s, s->manager->config->daemon.admin_group);
        return peer_creds_is_admin(&c->creds, s->have_admin_gid, s->admin_gid);
}

int api_check_admin(BusConnection *c, const char *what, sd_bus_error *error) {
        const char *group = api_of(c)->manager->config->daemon.admin_group;

        if (api_caller_is_admin(c))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: %s needs root%s%s%s; the caller is uid %u", what,
                                 group ? " or membership of group '" : " (no AdminGroup= is configured)",
                                 group ? group : "", group ? "' (AdminGroup=)" : "", (unsigned) c->creds.uid);
}

/* A cgroup path (relative to the root, or below the root's mount path) or a unit name. */
int api_resolve(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error) {
        const char *root = m->observer->root->path, *path = what;
        size_t rl = strlen(root), found = 0;
        CgEntry *hit = NULL, *other = NULL;

        if (what[0] == '/' && rl > 1 && strncmp(what, root, rl) == 0 && (what[rl] == '/' || !what[rl]))
                path = what[rl] ? what + rl : "/";
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];

                if (e->gone || !(what[0] == '/' ? streq(e->cg->path, path) : streq_ptr(e->unit, what)))
                        continue;
                if (found++ == 0)
                        hit = e;
                else
                        other = e;
        }
        if (found == 1) {
                *ret = hit;
                return 0;
        }
        if (found > 1)
                return sd_bus_error_setf(error, BUS_ERROR_AMBIGUOUS,
                                         "Unit '%s' names %zu cgroups (%s, %s%s); give the cgroup path", what, found,
                                         hit->cg->path, other->cg->path, found > 2 ? ", ..." : "");
        if (what[0] == '/')
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                         "No cgroup '%s' below %s among the %zu the daemon watches", path, root,
                                         api_cgroups_watched(m->observer));
        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                 "No unit '%s' among the %zu cgroups the daemon watches (a unit is found by the "
                                 "last component of its cgroup path; a path starting with '/' names a cgroup)",
                                 what, api_cgroups_watched(m->observer));
}
