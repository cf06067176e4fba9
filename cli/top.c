/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "top.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "parse-util.h"
#include "util.h"

static volatile sig_atomic_t got_signal;        /* SIGINT/SIGTERM: quit */
static volatile sig_atomic_t got_winch;

static void on_signal(int sig) {
        if (sig == SIGWINCH)
                got_winch = 1;
        else
                got_signal = 1;
}

typedef struct Screen {
        bool tty;
        struct termios saved;
        bool raw;
        unsigned rows, cols;
} Screen;

static void screen_size(Screen *s) {
        struct winsize ws;

        s->rows = 24;
        s->cols = 80;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
                s->rows = ws.ws_row;
                s->cols = ws.ws_col;
        }
}

/* Keys arrive one by one, unechoed; output processing stays on so "\n" still returns the carriage. */
static int screen_raw(Screen *s) {
        struct termios t;

        if (tcgetattr(STDIN_FILENO, &s->saved) < 0)
                return negative_errno();
        t = s->saved;
        t.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) < 0)
                return negative_errno();
        s->raw = true;
        fputs("\033[?25l\033[H\033[2J", stdout);  /* hide the cursor, clear */
        return 0;
}

static void screen_restore(Screen *s) {
        if (!s->raw)
                return;
        (void) tcsetattr(STDIN_FILENO, TCSANOW, &s->saved);
        fputs("\033[?25h", stdout);
        fflush(stdout);
        s->raw = false;
}

/* Cut to `width` columns (0: whole), "..." at the end, never inside a character. */
static void put_cut(FILE *f, char *line, size_t width) {
        size_t cols = 0, i = 0;

        for (; line[i]; i++)
                cols += ((unsigned char) line[i] & 0xC0) != 0x80;
        if (width > 3 && cols > width) {
                cols = 0;
                for (i = 0; line[i] && cols < width - 3; i++)
                        cols += ((unsigned char) line[i] & 0xC0) != 0x80;
                while (i > 0 && ((unsigned char) line[i] & 0xC0) == 0x80)
                        i--;
                strcpy(line + i, "...");
        }
        fprintf(f, "%s\n", line);
}

static void header(const Value *st, const TopOptions *o, size_t width, FILE *f) {
        char dirty[32], thr[32], avail[32], ms[32], is[32];
        uint64_t n = 0, np = 0;

        (void) value_get_u64(st, "cgroups", &n);
        (void) value_get_u64(st, "cgroups_with_policy", &np);
        fprintf(f, "mdreclaimd %s: %" PRIu64 " cgroups, %" PRIu64 " under a policy; sorted by %s\n",
                strna(value_get_str(st, "version")), n, np, sort_key_to_string(o->sort));
        fprintf(f, "host: available %s, dirty %s of %s; stall memory %s, io %s\n",
                cell_size(avail, st, "system.meminfo.MemAvailable") ?: "-",
                cell_size(dirty, st, "system.dirty_bytes") ?: "-",
                cell_size(thr, st, "system.dirty_threshold_bytes") ?: "-",
                cell_ppm(ms, st, "system.memory_stall.some_ppm") ?: "-",
                cell_ppm(is, st, "system.io_stall.some_ppm") ?: "-");
        {
                char text[1024], line[1100];
                snprintf(line, sizeof(line), "protecting %s", protection_text(text, sizeof(text), st));
                put_cut(f, line, width);
        }
}

/* One frame: the status, then the table, cut to the screen on a terminal. */
static int frame(sd_bus *bus, const TopOptions *o, Screen *s) {
        Value st = {}, list = {}, throttles = {};
        Table t = {};
        int r;

        r = client_call(bus, "cannot get the status", "GetStatus", &st, "");
        if (r >= 0)
                r = client_call(bus, "cannot list the cgroups", "ListCgroups", &list, "");
        if (r >= 0)
                r = client_call(bus, "cannot list the throttles", "ListThrottles", &throttles, "");
        if (r >= 0) {
                cgroups_sort(&list, o->sort);
                r = cgroups_table(&list, &throttles, false, &t);
        }
        if (r >= 0 && o->output)
                r = table_choose(&t, o->output);
        if (r >= 0) {
                if (s->tty) {
                        screen_size(s);
                        fputs("\033[H", stdout);
                }
                header(&st, o, s->tty ? s->cols : table_output_width(), stdout);
                fputc('\n', stdout);
                TableLayout l = { .legend = o->legend, .width = s->tty ? s->cols : table_output_width(),
                                  .max_rows = s->tty && s->rows > 5 ? s->rows - 5 : 0 };
                (void) table_print(&t, stdout, &l);
                if (s->tty)
                        fputs("\033[J", stdout);        /* clear what the last frame left below */
                else
                        fputc('\n', stdout);
                fflush(stdout);
        }
        table_clear(&t);
        value_clear(&st);
        value_clear(&list);
        value_clear(&throttles);
        return r;
}

/* Waits for a key until `deadline`; returns the key, 0 on timeout or a signal. */
static int wait_key(const Screen *s, uint64_t deadline) {
        struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char c;

        if (now >= deadline)
                return 0;
        if (!s->tty) {
                struct timespec ts = timespec_from_usec(deadline - now);
                (void) nanosleep(&ts, NULL);
                return 0;
        }
        if (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) <= 0)
                return 0;
        return read(STDIN_FILENO, &c, 1) == 1 ? (unsigned char) c : 0;
}

/* Applies a key; returns true to quit. */
static bool handle_key(int key, TopOptions *o, uint64_t *deadline) {
        static const struct { char key; SortKey sort; } keys[] = {
                { 'd', SORT_DIRTY }, { 'p', SORT_PRESSURE }, { 'm', SORT_MEMORY }, { 'n', SORT_NAME },
        };

        if (key == 'q' || key == 'Q' || key == 3 /* ^C without ISIG */)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (key == keys[i].key) {
                        o->sort = keys[i].sort;
                        *deadline = 0;
                }
        if (key == ' ' || key == '\n' || key == '\r')
                *deadline = 0;
        return false;
}

static void install_signals(void) {
        struct sigaction sa = { .sa_handler = on_signal };

        /* No SA_RESTART: a signal ends the wait at once. */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGWINCH, &sa, NULL);
}

int top_run(sd_bus *bus, const TopOptions *opts) {
        TopOptions o = *opts;
        Screen s = { .tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) };
        uint64_t done = 0;
        int r = 0;

        install_signals();
        if (s.tty && (r = screen_raw(&s)) < 0)
                return client_fail("cannot set up the terminal", r);
        while (!got_signal) {
                uint64_t deadline;

                r = frame(bus, &o, &s);
                if (r < 0 || (o.iterations > 0 && ++done >= o.iterations))
                        break;
                deadline = now_usec(CLOCK_MONOTONIC) + o.delay_usec;
                while (!got_signal && now_usec(CLOCK_MONOTONIC) < deadline) {
                        int key = wait_key(&s, deadline);

                        if (got_winch) {
                                got_winch = 0;
                                deadline = 0;
                        }
                        if (key && handle_key(key, &o, &deadline))
                                got_signal = 1;
                }
        }
        screen_restore(&s);
        return r < 0 ? r : 0;
}
