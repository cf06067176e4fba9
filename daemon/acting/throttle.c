/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "throttle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cgparse.h"
#include "util.h"

const char *throttle_file(ThrottleKind kind) {
        return throttle_kind_to_string(kind);
}

static CgFile cg_file_of(ThrottleKind kind) {
        switch (kind) {
        case THROTTLE_IO_WBPS:
                return CG_IO_MAX;
        case THROTTLE_SWAP_MAX:
                return CG_MEMORY_SWAP_MAX;
        default:
                return CG_MEMORY_HIGH;
        }
}

int throttle_parse_io_max(const char *buf, uint32_t major, uint32_t minor, uint64_t *ret) {
        char prefix[32];
        size_t pl = (size_t) snprintf(prefix, sizeof(prefix), "%" PRIu32 ":%" PRIu32 " ", major, minor);

        for (const char *line = buf; *line; ) {
                const char *eol = strchrnul(line, '\n');

                if ((size_t) (eol - line) > pl && strncmp(line, prefix, pl) == 0) {
                        const char *w = strstr(line, " wbps=");
                        if (!w || w > eol)
                                return -EBADMSG;
                        w += 6;
                        if (strncmp(w, "max", 3) == 0 && (w[3] == ' ' || w + 3 == eol)) {
                                *ret = THROTTLE_NONE;
                                return 0;
                        }
                        return cg_parse_u64(w, strcspn(w, " \n"), ret);
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = THROTTLE_NONE;   /* no line: no limit on that device */
        return 0;
}

int throttle_read(Cgroup *cg, ThrottleKind kind, uint32_t major, uint32_t minor, uint64_t *ret) {
        char buf[4096];
        size_t len;
        int r;

        /* Opened and closed again: a throttled cgroup does not keep two more fds for it. */
        r = cgroup_read_once(cg, cg_file_of(kind), buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        if (kind == THROTTLE_IO_WBPS)
                return throttle_parse_io_max(buf, major, minor, ret);
        return cg_parse_u64(buf, len, ret);
}

const char *throttle_format(ThrottleKind kind, uint32_t major, uint32_t minor, uint64_t value, char *buf,
                            size_t size) {
        char v[24];

        if (value == THROTTLE_NONE)
                snprintf(v, sizeof(v), "max");
        else
                snprintf(v, sizeof(v), "%" PRIu64, value);
        if (kind == THROTTLE_IO_WBPS)
                snprintf(buf, size, "%" PRIu32 ":%" PRIu32 " wbps=%s", major, minor, v);
        else
                snprintf(buf, size, "%s", v);
        return buf;
}
