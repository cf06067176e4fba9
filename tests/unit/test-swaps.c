/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of /proc/swaps: its text, and the disks its areas are on. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "hostfs.h"
#include "swaps.h"

#define HEADER "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"

static void test_parse(void **s) {
        SwapArea a[2];

        assert_int_equal(swaps_parse(HEADER, a, 2), 0);
        assert_int_equal(swaps_parse(HEADER "/dev/vda2                               partition\t1048572\t\t0\t\t-2\n"
                                     "/srv/swap\\040file                       file\t\t524284\t\t1024\t\t-3\n", a, 2), 2);
        assert_string_equal(a[0].path, "/dev/vda2");
        assert_true(a[0].partition);
        assert_string_equal(a[1].path, "/srv/swap file");
        assert_false(a[1].partition);
        /* More areas than room: counted, not stored. */
        assert_int_equal(swaps_parse(HEADER "/a file 1 0 -2\n/b file 1 0 -3\n/c file 1 0 -4\n", a, 2), 3);
        assert_string_equal(a[1].path, "/b");
}

static void test_garbage_is_refused(void **s) {
        SwapArea a[2];

        assert_int_equal(swaps_parse("", a, 2), -EBADMSG);
        assert_int_equal(swaps_parse("/dev/vda2 partition 1 0 -2\n", a, 2), -EBADMSG);
        assert_int_equal(swaps_parse(HEADER "/dev/vda2 partition 1 0\n", a, 2), -EBADMSG);
        assert_int_equal(swaps_parse(HEADER "/dev/vda2 partition 1 0 -2 extra\n", a, 2), -EBADMSG);
        assert_int_equal(swaps_parse(HEADER "/dev/vda2 partition lots 0 -2\n", a, 2), -EBADMSG);
        assert_int_equal(swaps_parse(HEADER "/dev/vda2 partition 1 0 high\n", a, 2), -EBADMSG);
}

static void put(const char *dir, const char *rel, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void mkdirs(const char *dir, const char *rel) {
        char p[512];

        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        for (char *q = p + strlen(dir) + 1; *q; q++)
                if (*q == '/') {
                        *q = '\0';
                        (void) mkdir(p, 0755);
                        *q = '/';
                }
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/*
 * A swap file is on its filesystem's device; that device here is a
 * partition of a fixture disk 254:0, which is the one given. One on btrfs
 * is on its filesystem's disks, found by its fsid. A file named
 * in /proc/swaps that does not exist, or whose device has no entry below
 * /sys, is counted as unknown.
 */
static void test_disks(void **s) {
        char dir[] = "/tmp/test-swaps-XXXXXX", swapfile[600], text[1600], rel[128], proc[600], sys[600];
        struct stat st;
        HostRoot *h = NULL;
        SwapDisk d[4];
        size_t unknown = 99, n;

        assert_non_null(mkdtemp(dir));
        put(dir, "swapfile", "");
        snprintf(swapfile, sizeof(swapfile), "%s/swapfile", dir);
        assert_int_equal(stat(swapfile, &st), 0);
        mkdirs(dir, "proc");
        mkdirs(dir, "sys/devices/disk/part");
        mkdirs(dir, "sys/devices/disk/queue");
        mkdirs(dir, "sys/dev/block");
        put(dir, "sys/devices/disk/dev", "254:0\n");
        put(dir, "sys/devices/disk/part/partition", "2\n");
        snprintf(rel, sizeof(rel), "%s/sys/dev/block/%u:%u", dir, major(st.st_dev), minor(st.st_dev));
        assert_int_equal(symlink("../../devices/disk/part", rel), 0);
        snprintf(text, sizeof(text), HEADER "%s file 4 0 -2\n%s/missing file 4 0 -3\n%s file 4 0 -4\n", swapfile, dir,
                 swapfile);
        put(dir, "proc/swaps", text);
        snprintf(proc, sizeof(proc), "%s/proc", dir);
        snprintf(sys, sizeof(sys), "%s/sys", dir);
        assert_int_equal(host_root_open(proc, sys, &h), 0);

        /* The same disk twice is one; the missing file is unknown. */
        assert_int_equal(swaps_disks(h, d, 4, &unknown), 1);
        assert_int_equal(d[0].major, 254);
        assert_int_equal(d[0].minor, 0);
        assert_int_equal(unknown, 1);

        /* A partition (the kernel's name for it: the daemon's /dev may be private) on disk 254:16;
         * a partition /sys does not know. */
        mkdirs(dir, "sys/devices/disk2/vdb1");
        mkdirs(dir, "sys/devices/disk2/queue");
        mkdirs(dir, "sys/class/block/vdb1");
        put(dir, "sys/devices/disk2/dev", "254:16\n");
        put(dir, "sys/devices/disk2/vdb1/partition", "1\n");
        put(dir, "sys/class/block/vdb1/dev", "254:17\n");
        snprintf(rel, sizeof(rel), "%s/sys/dev/block/254:17", dir);
        assert_int_equal(symlink("../../devices/disk2/vdb1", rel), 0);
        put(dir, "proc/swaps", HEADER "/dev/vdb1 partition 1048572 0 -2\n/dev/vdc1 partition 1048572 0 -3\n");
        assert_int_equal(swaps_disks(h, d, 4, &unknown), 1);
        assert_int_equal(d[0].major, 254);
        assert_int_equal(d[0].minor, 16);
        assert_int_equal(unknown, 1);

        /* A swap file on btrfs shows an anonymous device: its filesystem's disks are what sysfs lists
         * under its fsid (two devices here, one a partition of disk 254:16; one /sys cannot place). */
        mkdirs(dir, "sys/fs/btrfs/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/devices/vdb1");
        mkdirs(dir, "sys/fs/btrfs/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/devices/vde");
        put(dir, "sys/fs/btrfs/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/devices/vdb1/dev", "254:17\n");
        put(dir, "sys/fs/btrfs/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/devices/vde/dev", "254:64\n");
        d[0] = (SwapDisk) { .major = 8, .minor = 0 };
        n = 1;
        assert_int_equal(swaps_btrfs_disks(h, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", d, &n, 4), 0);
        assert_int_equal(n, 2);
        assert_int_equal(d[1].major, 254);
        assert_int_equal(d[1].minor, 16);
        /* Each disk once; no such filesystem; one whose only device /sys cannot place; not an fsid. */
        assert_int_equal(swaps_btrfs_disks(h, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", d, &n, 4), 0);
        assert_int_equal(n, 2);
        assert_int_equal(swaps_btrfs_disks(h, "00000000-0000-0000-0000-000000000000", d, &n, 4), -ENOENT);
        mkdirs(dir, "sys/fs/btrfs/11111111-2222-3333-4444-555555555555/devices/vdf");
        put(dir, "sys/fs/btrfs/11111111-2222-3333-4444-555555555555/devices/vdf/dev", "254:80\n");
        assert_int_equal(swaps_btrfs_disks(h, "11111111-2222-3333-4444-555555555555", d, &n, 4), -ENOENT);
        assert_int_equal(swaps_btrfs_disks(h, "../../../etc", d, &n, 4), -EINVAL);
        assert_int_equal(n, 2);

        /* Swap off: no disk, nothing unknown. A file that is not /proc/swaps: an error. */
        put(dir, "proc/swaps", HEADER);
        assert_int_equal(swaps_disks(h, d, 4, &unknown), 0);
        assert_int_equal(unknown, 0);
        put(dir, "proc/swaps", "garbage\n");
        assert_int_equal(swaps_disks(h, d, 4, &unknown), -EBADMSG);
        host_root_free(h);
        snprintf(text, sizeof(text), "rm -rf '%s'", dir);
        assert_int_equal(system(text), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_garbage_is_refused),
                cmocka_unit_test(test_disks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
