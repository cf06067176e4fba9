/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `mdctl top`: the cgroup table refreshed in place, like systemd-cgtop. On a
 * terminal it redraws with plain ANSI sequences (cursor home, clear to end of
 * line and of screen) and reads single keys in termios raw mode: q quits,
 * d/p/m/n sort, space refreshes. Without a terminal it prints one table per
 * refresh. Works in any VT100-like terminal, tmux included; no curses.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "cgroup-view.h"

typedef struct TopOptions {
        uint64_t delay_usec;
        uint64_t iterations;    /* 0: until q */
        SortKey sort;
        bool legend;
        const char *output;     /* -o: the columns shown, checked already */
} TopOptions;

/* Returns 0 when the user quit or the iterations are done, negative after a reported failure. */
int top_run(sd_bus *bus, const TopOptions *o);
