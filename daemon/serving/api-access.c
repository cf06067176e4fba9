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

#include "api-internal.h"
#include "name-escape.h"
#include "nearest.h"
#include "parse-util.h"
#include "util.h"

Api *api_of(const BusConnection *c) {
        return c->set->userdata;
}

const char *api_config_root(const Api *a) {
        const char *r = a->manager->args.config_root;

        return (!r || streq(r, "/")) ? "" : r;
}

size_t api_cgroups_watched(const Observer *o) {
        return cgtable_live(&o->cgroups);
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

/* The cgroups at a path or of a unit name, through the table's indexes (no look at every entry): how
 * many, the first in path order and, of two or more, the next. Path order, not id order: ids follow
 * the order the cgroups were made in on cgroupfs, not on every filesystem (tmpfs hands inode numbers
 * out in per-CPU batches), and an error names the same two whatever the index's order. */
static size_t find_cgroups(Manager *m, const char *what, CgEntry **ret_hit, CgEntry **ret_other) {
        size_t found = 0, cursor = 0;
        CgEntry *e;

        while ((e = cgtable_next_named(&m->observer->cgroups, what, &cursor))) {
                if (e->gone)
                        continue;
                if (found++ == 0)
                        *ret_hit = e;
                else if (strcmp(e->cg->path, (*ret_hit)->cg->path) < 0) {
                        *ret_other = *ret_hit;
                        *ret_hit = e;
                } else if (found == 2 || strcmp(e->cg->path, (*ret_other)->cg->path) < 0)
                        *ret_other = e;
        }
        return found;
}

static int ambiguous(sd_bus_error *error, const char *what, size_t found, const CgEntry *hit, const CgEntry *other) {
        _cleanup_free_ char *a = name_escape(hit->cg->path), *b = name_escape(other->cg->path);

        if (!a || !b)
                return -ENOMEM;
        return sd_bus_error_setf(error, BUS_ERROR_AMBIGUOUS, "Unit '%s' names %zu cgroups (%s, %s%s); give the "
                                 "cgroup path", what, found, a, b, found > 2 ? ", ..." : "");
}

/* "; did you mean db.service or dbx.service?": the watched units or paths nearest to `path`, escaped. */
static void nearest_text(Manager *m, const char *path, char *buf, size_t size) {
        NearestNames near;
        size_t off;

        nearest_names_init(&near, path);
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                const CgEntry *e = &m->observer->cgroups.entries[i];

                const char *name = path[0] == '/' ? e->cg->path : e->unit;

                if (!e->gone && name)
                        nearest_names_offer(&near, name);
        }
        buf[0] = '\0';
        off = near.n ? (size_t) snprintf(buf, size, "; did you mean ") : 0;
        for (size_t i = 0; i < near.n && off < size; i++) {
                off += (size_t) snprintf(buf + off, size - off, "%s'", i == 0 ? "" : i + 1 == near.n ? " or " : ", ");
                if (off < size)
                        name_escape_into(buf + off, size - off, near.names[i]);
                off = strlen(buf);
                off += (size_t) snprintf(buf + off, size - off, "'%s", i + 1 == near.n ? "?" : "");
        }
}

static int no_such_cgroup(Manager *m, sd_bus_error *error, const char *what, const char *path) {
        _cleanup_free_ char *p = name_escape(path), *root = name_escape(m->observer->root->path);
        char near[3 * 300];

        if (!p || !root)
                return -ENOMEM;
        nearest_text(m, path, near, sizeof(near));
        if (what[0] == '/')
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                         "No cgroup '%s' below %s among the %zu the daemon watches%s", p, root,
                                         api_cgroups_watched(m->observer), near);
        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                 "No unit '%s' among the %zu cgroups the daemon watches (a unit is found by the "
                                 "last component of its cgroup path, a service also without its .service; a path "
                                 "starting with '/' names a cgroup)%s", p, api_cgroups_watched(m->observer), near);
}

/* Found as systemctl finds a unit: a name without a suffix is a service's ("db": db.service). */
static size_t find_as_service(Manager *m, const char *name, CgEntry **ret_hit, CgEntry **ret_other) {
        _cleanup_free_ char *service = NULL;

        if (name[0] == '/' || strchr(name, '.') || asprintf(&service, "%s.service", name) < 0)
                return 0;
        return find_cgroups(m, service, ret_hit, ret_other);
}

/* A cgroup path (relative to the root, or below the root's mount path) or a unit name, in the escaped
 * form of names (name-escape.h): what the daemon shows is what it takes back. */
int api_unescape_name(const char *what, char **ret, sd_bus_error *error) {
        int r = name_unescape(what, ret);

        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%s' holds \\000, a NUL byte: no cgroup is named so", what);
        return r;
}

int api_resolve(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error) {
        const char *root = m->observer->root->path, *path;
        _cleanup_free_ char *raw = NULL;
        CgEntry *hit = NULL, *other = NULL;
        size_t rl = strlen(root), found;
        int r;

        r = api_unescape_name(what, &raw, error);
        if (r < 0)
                return r;
        path = raw;
        if (raw[0] == '/' && rl > 1 && strncmp(raw, root, rl) == 0 && (raw[rl] == '/' || !raw[rl]))
                path = raw[rl] ? raw + rl : "/";
        found = find_cgroups(m, path, &hit, &other);
        /* Started since the last rescan, perhaps: looked for again after a walk. */
        if (found == 0 && manager_walk_for_lookup(m))
                found = find_cgroups(m, path, &hit, &other);
        if (found == 0)
                found = find_as_service(m, path, &hit, &other);
        if (found == 1) {
                *ret = hit;
                return 0;
        }
        if (found > 1)
                return ambiguous(error, what, found, hit, other);
        return no_such_cgroup(m, error, what, path);
}

int api_resolve_argument(sd_bus_message *msg, Manager *m, CgEntry **ret, sd_bus_error *error) {
        const char *what;
        int k = sd_bus_message_read(msg, "s", &what);

        return k < 0 ? k : api_resolve(m, what, ret, error);
}

char *api_vtextf(const char *format, va_list ap) {
        char *text;

        return vasprintf(&text, format, ap) < 0 ? NULL : text;
}
