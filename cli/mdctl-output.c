/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "mdctl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "json-out.h"
#include "table.h"
#include "util.h"

int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *format, ...) {
        va_list ap;

        fputs("mdctl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputs(". Try 'mdctl --help'.\n", stderr);
        return -EINVAL;
}

void print_json(const Value *v) {
        value_json(v, stdout);
        putchar('\n');
}

const char *format_span(char buf[static 32], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s >= 86400)
                snprintf(buf, 32, "%" PRIu64 "d %" PRIu64 "h", s / 86400, s % 86400 / 3600);
        else if (s >= 3600)
                snprintf(buf, 32, "%" PRIu64 "h %" PRIu64 "min", s / 3600, s % 3600 / 60);
        else if (s >= 60)
                snprintf(buf, 32, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        else if (usec > 0 && usec < 10 * USEC_PER_SEC && usec % USEC_PER_SEC != 0)
                snprintf(buf, 32, "%" PRIu64 "ms", usec / 1000);     /* sub-second intervals */
        else
                snprintf(buf, 32, "%" PRIu64 "s", s);
        return buf;
}

const char *format_time(char buf[static 32], uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, 32, "@%" PRIu64, realtime_usec / USEC_PER_SEC);
        return buf;
}

const char *or_dash(const char *s) {
        return s ? s : "-";
}

void field(const char *label, const char *format, ...) __attribute__((format(printf, 2, 3)));
void field(const char *label, const char *format, ...) {
        va_list ap;

        printf("%14s: ", label);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        putchar('\n');
}

int print_table(Table *t, const Args *a) {
        TableLayout l = { .legend = a->legend, .width = table_output_width() };
        int r;

        if (a->output && table_choose(t, a->output) < 0)
                return -EINVAL;
        r = table_print(t, stdout, &l);
        return r < 0 ? client_fail("cannot print the table", r) : 0;
}

int print_result(sd_bus_message *reply, const Args *a) {
        const char *text = NULL;
        int r = sd_bus_message_read(reply, "s", &text);

        if (r < 0)
                return client_fail("cannot read the daemon's reply", r);
        if (a->json) {
                fputs("{\"result\":", stdout);
                json_string(stdout, text);
                fputs("}\n", stdout);
        } else
                printf("%s\n", text);
        return 0;
}
