/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GetMetrics(): the metrics exposition (metrics.h) for anyone who can reach
 * the socket, as `mdctl metrics` prints it.
 */
#include "api-internal.h"
#include "metrics.h"
#include "util.h"

int method_get_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = metrics_render(api_of(userdata)->manager, &text, &size);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", text);
}
