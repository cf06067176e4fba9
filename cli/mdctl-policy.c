/* SPDX-License-Identifier: GPL-2.0-or-later */
/* policy list, show, set, unset. */
#include "mdctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "json-out.h"
#include "table.h"
#include "util.h"

/* ---- policies ---- */

static const char *join_strings(char *buf, size_t size, const Value *v) {
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; v && i < v->n && off < size; i++)
                if (v->items[i].kind == VALUE_STRING)
                        off += (size_t) snprintf(buf + off, size - off, "%s%s", i ? " " : "", v->items[i].s);
        return buf;
}

static int policy_list(sd_bus *bus, const Args *a) {
        static const char *const headers[] = { "NAME", "MODE", ">PRIORITY", "PROTECT", ">CGROUPS", "MATCH", "/FILE", NULL };
        Value list = {};
        Table t;
        int r = client_call(bus, "cannot list the policies", "ListPolicies", &list, "");

        if (r < 0)
                return r;
        if (a->json) {
                fputs("{\"policies\":", stdout);
                value_json(&list, stdout);
                fputs("}\n", stdout);
                value_clear(&list);
                return 0;
        }
        table_init(&t, headers);
        for (size_t i = 0; r >= 0 && i < list.n; i++) {
                const Value *p = &list.items[i];
                char prio[24], count[24], match[512];
                uint64_t u = 0;
                const char *cells[7];

                (void) value_get_u64(p, "priority", &u);
                snprintf(prio, sizeof(prio), "%" PRIu64, u);
                u = 0;
                (void) value_get_u64(p, "cgroups", &u);
                snprintf(count, sizeof(count), "%" PRIu64, u);
                cells[0] = value_get_str(p, "name");
                cells[1] = value_get_str(p, "mode");
                cells[2] = prio;
                cells[3] = value_is_true(p, "protect") ? "yes" : "no";
                cells[4] = count;
                cells[5] = join_strings(match, sizeof(match), value_get(p, "matches"));
                cells[6] = value_get_str(p, "file");
                r = table_add_row(&t, cells);
        }
        if (r < 0)
                r = client_fail("cannot build the table", r);
        else if ((r = print_table(&t, a)) >= 0 && a->legend)
                printf("\n%zu polic%s.\n", list.n, list.n == 1 ? "y" : "ies");
        table_clear(&t);
        value_clear(&list);
        return r < 0 ? r : 0;
}

static void policy_print(const Value *p) {
        const Value *settings = value_get(p, "settings"), *paths = value_get(p, "cgroup_paths");
        const char *text = value_get_str(p, "text"), *by_fs = value_get_str(p, "io_latency_target_by_filesystem");
        char match[1024];

        printf("# %s\n", or_dash(value_get_str(p, "file")));
        if (text)
                fputs(text, stdout);
        if (text && *text && text[strlen(text) - 1] != '\n')
                putchar('\n');
        printf("\n# Effective settings (defaults included):\nMatch=%s\n",
               join_strings(match, sizeof(match), value_get(p, "matches")));
        for (size_t i = 0; settings && i < settings->n; i++)
                if (settings->items[i].kind == VALUE_STRING)
                        printf("%s=%s\n", settings->items[i].key, settings->items[i].s);
        if (by_fs)
                printf("# IOLatencyTarget= unset: by the filesystems on its devices, [WritePoint]\n"
                       "# IOLatencyTargetByFilesystem=%s\n", by_fs);
        printf("\n# Governs %zu cgroup%s:\n", paths ? paths->n : 0, paths && paths->n == 1 ? "" : "s");
        for (size_t i = 0; paths && i < paths->n; i++)
                printf("#   %s\n", paths->items[i].s);
}

static int policy_show(sd_bus *bus, const Args *a) {
        Value p = {};
        char what[300];
        int r;

        snprintf(what, sizeof(what), "cannot show policy '%s'", a->argv[2]);
        r = client_call(bus, what, "GetPolicy", &p, "s", a->argv[2]);
        if (r < 0)
                return r;
        if (a->json)
                print_json(&p);
        else
                policy_print(&p);
        value_clear(&p);
        return 0;
}

/* What the mode in force means for the cgroups the policy governs. */
static void print_mode(const Value *outcome) {
        const char *mode = value_get_str(outcome, "mode");
        bool is_default = value_is_true(outcome, "mode_default");

        if (!mode)
                return;
        if (streq(mode, "enforce"))
                printf("Mode: enforce: the daemon acts on the cgroups it governs.\n");
        else if (streq(mode, "observe"))
                printf("Mode: observe%s: the daemon logs what it would do and changes nothing%s.\n",
                       is_default ? " (the default, no Mode= given)" : "",
                       is_default ? "; Mode=enforce makes it act" : "");
        else
                printf("Mode: %s: the daemon neither decides nor acts for its cgroups.\n", mode);
        /* What the mode means for the write point, which is what a user setting Protect= or a writer's
         * priority expects to see happen. */
        if (value_is_true(outcome, "protect") && !streq(mode, "off"))
                printf("Protected: the writers beside it are capped for it in their own mode (a cgroup under "
                       "no policy: enforce), whatever this policy's mode is.\n");
        else if (!value_is_true(outcome, "protect") && streq(mode, "observe") && value_is_true(outcome, "cap_writes"))
                printf("Write caps for a protected cgroup are only logged for its cgroups while it observes "
                       "(one under no policy is capped).\n");
}

static void print_list(FILE *f, const Value *v, uint64_t total) {
        for (size_t i = 0; v && i < v->n; i++)
                if (v->items[i].kind == VALUE_STRING)
                        fprintf(f, "%s%s", i ? ", " : "", v->items[i].s);
        if (v && total > v->n)
                fprintf(f, " and %" PRIu64 " more", total - v->n);
}

/* Which cgroups the policy governs now; none is a warning, with the names that come nearest. */
static void print_governed(const char *name, const Value *outcome) {
        const Value *paths = value_get(outcome, "cgroup_paths"), *near = value_get(outcome, "nearest_units");
        const char *shadowed_path = value_get_str(outcome, "shadowed_path");
        uint64_t n = 0, shadowed = 0;

        (void) value_get_u64(outcome, "cgroups", &n);
        (void) value_get_u64(outcome, "shadowed", &shadowed);
        if (n > 0) {
                printf("Governs %" PRIu64 " cgroup%s: ", n, n == 1 ? "" : "s");
                print_list(stdout, paths, n);
                putchar('\n');
        } else {
                fprintf(stderr, "Warning: policy '%s' governs no cgroup the daemon watches", name);
                if (near && near->n > 0) {
                        fputs(". Nearest unit names: ", stderr);
                        print_list(stderr, near, near->n);
                }
                fputs(".\n", stderr);
        }
        if (shadowed > 0 && shadowed_path) {
                fprintf(stderr, "%s: its Match= also matches %s", n > 0 ? "Note" : "Warning", shadowed_path);
                if (shadowed > 1)
                        fprintf(stderr, " (and %" PRIu64 " more)", shadowed - 1);
                fprintf(stderr, ", but policy '%s' governs it: a more specific match wins.\n",
                        or_dash(value_get_str(outcome, "shadowed_by")));
        }
}

static void print_changed_json(const char *name, const char *file, const Value *outcome) {
        fputs("{\"policy\":", stdout);
        json_string(stdout, name);
        fputs(",\"file\":", stdout);
        json_string(stdout, file);
        for (size_t i = 0; i < outcome->n; i++) {
                fputc(',', stdout);
                json_string(stdout, outcome->items[i].key);
                fputc(':', stdout);
                value_json(&outcome->items[i], stdout);
        }
        fputs("}\n", stdout);
}

/* The daemon's answer to a change: the file, and what the policy does now (absent from an older daemon). */
static int read_change_reply(sd_bus_message *reply, const char **ret_file, Value *ret_outcome) {
        int r = sd_bus_message_read(reply, "s", ret_file);

        *ret_outcome = (Value) { .kind = VALUE_OBJECT };
        if (r < 0)
                return r;
        r = sd_bus_message_peek_type(reply, NULL, NULL);
        if (r <= 0)
                return r;       /* a daemon that answers with the file alone */
        return value_read(reply, ret_outcome);
}

/* set and unset: the daemon checks everything and answers with the file it wrote and what it governs. */
static int policy_change(sd_bus *bus, const Args *a, bool set) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *name = a->argv[2], *file = NULL;
        Value outcome;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, NULL, BUS_OBJECT_PATH, BUS_INTERFACE,
                                           set ? "SetPolicy" : "UnsetPolicy");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", name);
        if (r >= 0)
                r = sd_bus_message_append_strv(call, a->argv + 3);
        if (r < 0)
                return client_fail("cannot build the request", r);
        r = sd_bus_call(bus, call, 0, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "mdctl: policy '%s' not changed:%s%s\n", name,
                        error.message && strchr(error.message, '\n') ? "\n" : " ",
                        error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = read_change_reply(reply, &file, &outcome);
        if (r < 0) {
                value_clear(&outcome);
                return client_fail("cannot read the daemon's reply", r);
        }
        if (a->json)
                print_changed_json(name, file, &outcome);
        else {
                printf("Policy '%s' %s: %s. Applied.\n", name,
                       set ? "written" : a->argc > 3 ? "rewritten" : "removed", file);
                print_mode(&outcome);
                if (value_get(&outcome, "cgroups"))
                        print_governed(name, &outcome);
        }
        value_clear(&outcome);
        return 0;
}

int verb_policy(sd_bus *bus, const Args *a) {
        const char *sub = a->argv[1];

        if (streq(sub, "list"))
                return policy_list(bus, a);
        if (streq(sub, "show"))
                return policy_show(bus, a);
        if (streq(sub, "set"))
                return policy_change(bus, a, true);
        return policy_change(bus, a, false);
}

int check_policy_args(const Args *a) {
        const char *sub = a->argc > 1 ? a->argv[1] : NULL;

        if (!sub)
                return usage_error("policy needs a subcommand: list, show, set or unset");
        if (streq(sub, "list"))
                return a->argc == 2 ? 0 : usage_error("policy list takes no arguments");
        if (streq(sub, "show"))
                return a->argc == 3 ? 0 : usage_error("policy show takes one policy name");
        if (streq(sub, "set"))
                return a->argc >= 4 ? 0 : usage_error("policy set needs a name and at least one KEY=VALUE");
        if (streq(sub, "unset"))
                return a->argc >= 3 ? 0 : usage_error("policy unset needs a name (and optionally keys)");
        return usage_error("unknown policy subcommand '%s': expected list, show, set or unset", sub);
}
