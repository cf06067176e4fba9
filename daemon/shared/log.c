/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "name-escape.h"
#include "util.h"

static int max_level = LOG_INFO;
static int journal_state = -1; /* -1: not checked yet */

static const char *const level_names[] = {
        "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

void log_set_max_level(int level) {
        max_level = level;
}

int log_level_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || level >= (int) ELEMENTSOF(level_names))
                return NULL;
        return level_names[level];
}

int log_internal(int level, int error, const char *format, ...) {
        int err = error < 0 ? -error : error;

        if (level <= max_level) {
                char buf[2048], line[sizeof(buf) * 2];
                va_list ap;

                /* %m in the format refers to the error passed in. */
                errno = err;
                va_start(ap, format);
                vsnprintf(buf, sizeof(buf), format, ap);
                va_end(ap);
                /* One line of valid UTF-8 whatever a cgroup is named: a newline in a name could
                 * otherwise start a line of its own, with a priority of its own, in the journal. */
                name_escape_into(line, sizeof(line), buf);
                fprintf(stderr, "<%d>%s\n", level, line);
        }
        return -err;
}

bool ratelimit_below(RateLimit *rl, uint64_t now_usec, unsigned *ret_suppressed) {
        if (ret_suppressed)
                *ret_suppressed = 0;
        if (rl->begin_usec == 0 || now_usec - rl->begin_usec >= rl->interval_usec) {
                if (ret_suppressed)
                        *ret_suppressed = rl->suppressed;
                rl->begin_usec = now_usec ? now_usec : 1;
                rl->count = 1;
                rl->suppressed = 0;
                return true;
        }
        if (rl->count < rl->burst) {
                rl->count++;
                return true;
        }
        rl->suppressed++;
        return false;
}

bool log_stderr_is_journal(void) {
        if (journal_state < 0) {
                const char *e = getenv("JOURNAL_STREAM");
                unsigned long long dev, ino;
                struct stat st;

                journal_state = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
                        fstat(STDERR_FILENO, &st) >= 0 &&
                        (unsigned long long) st.st_dev == dev &&
                        (unsigned long long) st.st_ino == ino;
        }
        return journal_state;
}

static void log_event_journal(const LogEvent *ev, const char *message) {
        /* The fixed fields plus up to 16 caller fields. */
        struct iovec iov[24];
        char *owned[24];
        size_t n = 0, n_owned = 0;

#define ADD_FIELD(fmt, val) do {                                              \
                char *_s;                                                     \
                if (asprintf(&_s, fmt, val) >= 0) {                           \
                        owned[n_owned++] = _s;                                \
                        iov[n++] = (struct iovec) { _s, strlen(_s) };         \
                }                                                             \
        } while (0)

        ADD_FIELD("MESSAGE=%s", message);
        ADD_FIELD("PRIORITY=%d", ev->level);
        ADD_FIELD("SYSLOG_IDENTIFIER=%s", "mdreclaimd");
        if (ev->message_id)
                ADD_FIELD("MESSAGE_ID=%s", ev->message_id);
        if (ev->cgroup)
                ADD_FIELD("CGROUP=%s", ev->cgroup);
        if (ev->unit)
                ADD_FIELD("UNIT=%s", ev->unit);
        if (ev->action)
                ADD_FIELD("ACTION=%s", ev->action);
        for (size_t i = 0; ev->fields && ev->fields[i] && n < ELEMENTSOF(iov); i++)
                ADD_FIELD("%s", ev->fields[i]);
#undef ADD_FIELD

        if (sd_journal_sendv(iov, (int) n) < 0)
                fprintf(stderr, "<%d>%s\n", ev->level, message);
        for (size_t i = 0; i < n_owned; i++)
                free(owned[i]);
}

void log_event(const LogEvent *ev, const char *format, ...) {
        char message[1024];
        va_list ap;

        if (ev->level > max_level)
                return;

        va_start(ap, format);
        vsnprintf(message, sizeof(message), format, ap);
        va_end(ap);

        if (log_stderr_is_journal()) {
                log_event_journal(ev, message);
                return;
        }

        fprintf(stderr, "<%d>%s", ev->level, message);
        if (ev->cgroup)
                fprintf(stderr, " CGROUP=%s", ev->cgroup);
        if (ev->unit)
                fprintf(stderr, " UNIT=%s", ev->unit);
        if (ev->action)
                fprintf(stderr, " ACTION=%s", ev->action);
        for (size_t i = 0; ev->fields && ev->fields[i]; i++)
                fprintf(stderr, " %s", ev->fields[i]);
        fputc('\n', stderr);
}
