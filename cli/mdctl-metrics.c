/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics: the daemon's OpenMetrics exposition (GetMetrics), printed as it comes. */
#include "mdctl.h"

#include <stdio.h>

#include "client.h"
#include "util.h"

int verb_metrics(sd_bus *bus, const Args *a) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *text;
        int r;

        r = client_call_raw(bus, "cannot get the metrics", "GetMetrics", &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0)
                return client_fail("cannot read the daemon's reply", r);
        fputs(text, stdout);
        return 0;
}
