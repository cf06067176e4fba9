/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reclaim, writeback, action and actions: one-shot actions, their ids, the
 * ones the daemon keeps, and waiting
 * for their result. A wait subscribes first, then asks, then checks the
 * action once, then waits for its ActionFinished: a result that came before
 * the wait began is not missed, and none is polled for.
 */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-view.h"
#include "client.h"
#include "json-out.h"
#include "parse-util.h"
#include "table.h"
#include "util.h"

/* How long --wait waits without --timeout. */
#define WAIT_DEFAULT_USEC (120 * USEC_PER_SEC)

typedef struct ActionWait {
        uint64_t id;
        bool known;             /* the id is known (the request was answered) */
        bool finished;
        Value action;           /* GetAction's, or the signal's */
} ActionWait;

static bool state_finished(const Value *action) {
        const char *state = value_get_str(action, "state");

        return streq_ptr(state, "done") || streq_ptr(state, "failed");
}

static int on_action_finished(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ActionWait *w = userdata;
        const char *kind, *state;
        uint64_t id;
        Value v = {};

        /* One of someone else's actions, or one that ended before the answer gave the id (GetAction tells). */
        if (sd_bus_message_read(m, "tss", &id, &kind, &state) < 0 || !w->known || id != w->id || w->finished)
                return 0;
        if (value_read(m, &v) < 0)
                return 0;
        value_clear(&w->action);
        w->action = v;
        w->finished = true;
        return 0;
}

/* Before the request: the signal is ours from the first moment on. */
static int subscribe(sd_bus *bus, ActionWait *w, const char *what) {
        int r = sd_bus_match_signal(bus, NULL, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "ActionFinished",
                                    on_action_finished, w);

        if (r < 0)
                return client_fail(what, r);
        return client_call(bus, what, "Subscribe", NULL, "");
}

/* The request's answer: its text and the action's id (a daemon older than ids gives none). */
static int read_answer(sd_bus_message *reply, const char **ret_text, uint64_t *ret_id, bool *ret_have_id) {
        int r = sd_bus_message_read(reply, "s", ret_text);

        if (r < 0)
                return client_fail("cannot read the daemon's reply", r);
        r = sd_bus_message_peek_type(reply, NULL, NULL);
        *ret_have_id = r > 0 && sd_bus_message_read(reply, "t", ret_id) > 0;
        return 0;
}

static void print_queued(const char *text, uint64_t id, bool have_id, const Args *a) {
        if (!a->json) {
                printf("%s\n", text);
                return;
        }
        fputs("{\"result\":", stdout);
        json_string(stdout, text);
        if (have_id)
                printf(",\"id\":%" PRIu64, id);
        fputs("}\n", stdout);
}

/* The action's end: its message (JSON: the id, the answer and the action), and 0, or -EIO if it failed. */
static int print_finished(const ActionWait *w, const char *text, const Args *a) {
        const char *message = value_get_str(&w->action, "message");
        bool failed = streq_ptr(value_get_str(&w->action, "state"), "failed");

        if (a->json) {
                printf("{\"id\":%" PRIu64 ",\"result\":", w->id);
                json_string(stdout, text);
                fputs(",\"action\":", stdout);
                value_json(&w->action, stdout);
                fputs("}\n", stdout);
        } else if (!failed)
                printf("%s (action %" PRIu64 ")\n", or_dash(message), w->id);
        if (!failed)
                return 0;
        fprintf(stderr, "mdctl: action %" PRIu64 " failed: %s\n", w->id, or_dash(message));
        return -EIO;
}

/* Waits for w's ActionFinished until the deadline; the daemon's end and the deadline are said. */
static int wait_finished(sd_bus *bus, ActionWait *w, uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        char span[32];

        while (!w->finished) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int r = sd_bus_process(bus, NULL);

                if (r > 0)
                        continue;
                if (r >= 0 && now >= deadline) {
                        fprintf(stderr, "mdctl: action %" PRIu64 " did not finish within %s; it may still run "
                                "('mdctl action %" PRIu64 "' tells)\n", w->id, format_span(span, timeout_usec), w->id);
                        return -ETIME;
                }
                if (r >= 0)
                        r = sd_bus_wait(bus, deadline - now);
                if (r < 0 && client_disconnected(r)) {
                        fprintf(stderr, "mdctl: mdreclaimd closed the connection while action %" PRIu64 " ran (it "
                                "stopped or restarted): its result is lost, and ids start again with each run\n",
                                w->id);
                        return r;
                }
                if (r < 0)
                        return client_fail("cannot wait for the action", r);
        }
        return 0;
}

/* Asks with `method` (the arguments follow `types`), then, with --wait, waits for the action's end. */
static int act(sd_bus *bus, const Args *a, const char *what, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ActionWait w = {};
        const char *text;
        bool have_id = false;
        va_list ap;
        int r;

        if (a->wait && (r = subscribe(bus, &w, what)) < 0)
                return r;
        va_start(ap, types);
        r = client_call_rawv(bus, what, method, &reply, types, ap);
        va_end(ap);
        if (r < 0)
                return r;
        r = read_answer(reply, &text, &w.id, &have_id);
        if (r < 0)
                return r;
        if (!a->wait) {
                print_queued(text, w.id, have_id, a);
                return 0;
        }
        if (!have_id) {
                fprintf(stderr, "mdctl: %s: this mdreclaimd gives no action id (it is older than mdctl); "
                        "--wait needs one\n", what);
                return -EPROTO;
        }
        w.known = true;
        /* It may have ended already (before the answer, or while it was read). */
        r = client_call(bus, what, "GetAction", &w.action, "t", w.id);
        if (r >= 0 && state_finished(&w.action))
                w.finished = true;
        if (r >= 0)
                r = wait_finished(bus, &w, a->have_timeout ? a->timeout_usec : WAIT_DEFAULT_USEC);
        if (r >= 0)
                r = print_finished(&w, text, a);
        value_clear(&w.action);
        return r;
}

/* A yes on the terminal: 1; anything else 0. */
static int ask_yes(void) {
        char line[16];

        if (!fgets(line, sizeof(line), stdin))
                return 0;
        return streq(line, "y\n") || streq(line, "Y\n") || streq(line, "yes\n");
}

/*
 * A reclaim of a protected cgroup (Protect=yes) takes the cache its service
 * reads from, which it then reads from the disk again: said first, and asked
 * on a terminal; without one, refused unless --yes. 0 to go on, else the error.
 */
static int confirm_protected(sd_bus *bus, const Args *a, const char *what, const char *name) {
        Value x = {};
        char size[32];
        bool protect;
        int r = client_call(bus, what, "Explain", &x, "s", name);

        if (r < 0 || a->yes)
                return value_clear(&x), r < 0 ? r : 0;
        protect = value_is_true(&x, "protect");
        if (protect)
                fprintf(stderr, "%s is protected (policy '%s', Protect=yes): the reclaim takes %s of its memory, "
                        "%s, and its reads then wait for the disk.\n", name, value_get_str(&x, "policy") ?: "-",
                        a->have_bytes ? format_size(size, a->bytes) : "all that can be freed",
                        a->cache_only ? "its cache only" : "cache first");
        value_clear(&x);
        if (!protect)
                return 0;
        if (!isatty(STDIN_FILENO)) {
                fprintf(stderr, "mdctl: not reclaiming from the protected %s without a terminal to ask on; "
                        "--yes reclaims all the same\n", name);
                return -ECANCELED;
        }
        fputs("Reclaim all the same? [y/N] ", stderr);
        if (ask_yes())
                return 0;
        fprintf(stderr, "mdctl: nothing reclaimed\n");
        return -ECANCELED;
}

int verb_reclaim(sd_bus *bus, const Args *a) {
        _cleanup_free_ char *name = client_name_arg(a->argv[1]);
        char what[300];
        int r;

        if (!name)
                return client_fail("cannot reclaim", -ENOMEM);
        snprintf(what, sizeof(what), "cannot reclaim from %s", name);
        r = confirm_protected(bus, a, what, name);
        if (r < 0)
                return r;
        return act(bus, a, what, "Reclaim", "stb", name, a->have_bytes ? a->bytes : UINT64_C(0),
                   (int) a->cache_only);
}

int verb_writeback(sd_bus *bus, const Args *a) {
        _cleanup_free_ char *name = client_name_arg(a->argv[1]);
        char what[300];

        if (!name)
                return client_fail("cannot write back", -ENOMEM);
        snprintf(what, sizeof(what), "cannot write back %s", name);
        /* Waited for here, not by the daemon: a wait of its own would not survive a lost connection. */
        return act(bus, a, what, "Writeback", "sb", name, 0);
}

/* ---- action ---- */

static void show_time(const char *label, const Value *v, const char *key) {
        char when[32];
        uint64_t usec;

        if (value_get_u64(v, key, &usec))
                field(label, "%s", format_time(when, usec));
}

static void show_action(const Value *v) {
        char span[32], size[FORMAT_SIZE_MAX];
        uint64_t id = 0, x;
        const char *unit = value_get_str(v, "unit");

        (void) value_get_u64(v, "id", &id);
        field("Action", "%" PRIu64 " (%s)", id, or_dash(value_get_str(v, "kind")));
        field("State", "%s", or_dash(value_get_str(v, "state")));
        field("Cgroup", "%s%s%s%s", or_dash(value_get_str(v, "path")), unit ? " (" : "", unit ? unit : "",
              unit ? ")" : "");
        field("Asked by", "%s", or_dash(value_get_str(v, "asked_by")));
        show_time("Queued", v, "queued_realtime_usec");
        show_time("Started", v, "started_realtime_usec");
        show_time("Finished", v, "finished_realtime_usec");
        if (value_get_u64(v, "duration_usec", &x))
                field("Took", "%s", format_span(span, x));
        if (value_get_u64(v, "bytes_asked", &x))
                field("Asked", "%s", format_size(size, x));
        if (value_get_u64(v, "bytes_freed", &x))
                field("Freed", "%s", format_size(size, x));
        if (value_get_u64(v, "files", &x))
                field("Files", "%" PRIu64, x);
        if (value_get_u64(v, "dirty_before", &x))
                field("Dirty before", "%s (dirty+writeback)", format_size(size, x));
        if (value_get_u64(v, "dirty_after", &x))
                field("Dirty after", "%s", format_size(size, x));
        if (value_get_str(v, "message"))
                field("Result", "%s", value_get_str(v, "message"));
}

int check_action_args(const Args *a) {
        uint64_t id;

        if (parse_uint_range(a->argv[1], 1, UINT64_MAX, &id) < 0)
                return usage_error("invalid action id '%s': expected a number above 0", a->argv[1]);
        return 0;
}

int verb_action(sd_bus *bus, const Args *a) {
        char what[64];
        uint64_t id = 0;
        Value v = {};
        int r;

        (void) parse_uint_range(a->argv[1], 1, UINT64_MAX, &id);
        snprintf(what, sizeof(what), "cannot show action %" PRIu64, id);
        r = client_call(bus, what, "GetAction", &v, "t", id);
        if (r >= 0 && a->json)
                print_json(&v);
        else if (r >= 0)
                show_action(&v);
        value_clear(&v);
        return r < 0 ? r : 0;
}

/* ---- actions ---- */

const char *const action_columns[] = { ">ID", "KIND", "STATE", "/CGROUP", "2QUEUED", "1RESULT", NULL };

/*
 * What came of it, short: "freed 12.0M of 16.0M", "3 files, dirty 40.0M -> 0B",
 * ", budget reached" after either if it stopped there, "failed: WHY"; NULL before the end.
 */
static const char *result_cell(char buf[static 160], const Value *v) {
        const char *state = value_get_str(v, "state");
        const char *reached;
        char x[32], y[32];
        uint64_t files;

        if (streq_ptr(state, "failed")) {
                snprintf(buf, 160, "failed: %s", or_dash(value_get_str(v, "error")));
                return buf;
        }
        if (!streq_ptr(state, "done"))
                return NULL;
        reached = value_is_true(v, "budget_reached") ? ", budget reached" : "";
        if (streq_ptr(value_get_str(v, "kind"), "writeback")) {
                if (!value_get_u64(v, "files", &files))
                        return NULL;
                if (cell_size(x, v, "dirty_before") && cell_size(y, v, "dirty_after"))
                        snprintf(buf, 160, "%" PRIu64 " file%s, dirty %s -> %s%s", files, files == 1 ? "" : "s", x,
                                 y, reached);
                else
                        snprintf(buf, 160, "%" PRIu64 " file%s%s", files, files == 1 ? "" : "s", reached);
                return buf;
        }
        if (!cell_size(x, v, "bytes_freed") || !cell_size(y, v, "bytes_asked"))
                return NULL;
        snprintf(buf, 160, "freed %s of %s%s%s", x, y, value_is_true(v, "cache_only") ? ", cache only" : "",
                 reached);
        return buf;
}

int verb_actions(sd_bus *bus, const Args *a) {
        Value list = {};
        Table t = {};
        int r = client_call(bus, "cannot list the actions", "ListActions", &list, "");

        if (r < 0)
                return r;
        if (a->json) {
                fputs("{\"actions\":", stdout);
                value_json(&list, stdout);
                fputs("}\n", stdout);
                value_clear(&list);
                return 0;
        }
        table_init(&t, action_columns);
        for (size_t i = 0; r >= 0 && list.kind == VALUE_ARRAY && i < list.n; i++) {
                const Value *v = &list.items[i];
                char id[24], queued[32], result[160];
                uint64_t n = 0;
                const char *cells[] = { id, value_get_str(v, "kind"), value_get_str(v, "state"),
                                        value_get_str(v, "unit") ?: value_get_str(v, "path"),
                                        cell_time(queued, v, "queued_realtime_usec"), result_cell(result, v) };

                (void) value_get_u64(v, "id", &n);
                snprintf(id, sizeof(id), "%" PRIu64, n);
                r = table_add_row(&t, cells);
        }
        if (r < 0)
                r = client_fail("cannot build the table", r);
        else if ((r = print_table(&t, a)) >= 0 && a->legend)
                printf("\n%zu action%s kept (up to 64). 'mdctl action ID' shows one in full.\n", list.n,
                       list.n == 1 ? "" : "s");
        table_clear(&t);
        value_clear(&list);
        return r < 0 ? r : 0;
}
