#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# SQLite beside a real bulk writer (issue 35, "Validate on real services"),
# as bench-pg.sh puts PostgreSQL: the commit latency of small transactions
# while cp, tar or rsync writes to the same filesystem, on a disk qemu holds
# to 16 MiB/s. A benchmark, run by hand, not in the suite:
#
#   MDR_WP_SVC_WRITER=tar MDR_WP_SVC_ORDER=both \
#       MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl \
#       tests/vm/vmtest --fs ext4 --mem 2560 --timeout 720 bench-sqlite
#
# The database: python3's sqlite3 module (the host's /usr, as every
# helper here) through helpers/sqlite-commits, a file on the test
# filesystem in WAL mode with synchronous=FULL. A process of the service
# holds a connection open in cgroup /mdr-sqlite for the whole boot (an
# application between its bursts; the WAL file stays). Each run is one
# connection in that cgroup committing BEGIN; INSERT of a 200-byte row;
# COMMIT as fast as it goes, each transaction timed to COMMIT's return.
# A first run of 8 s, uncounted, grows the WAL to its steady size.
#
# The cases, the writers, the orders, the daemon's configuration (only
# [Policy] Match=/mdr-sqlite Protect=yes) and the table are bench-pg's, in
# bench-service-lib.sh:
#   alone        the commit loop alone
#   kernel       beside the writer, the kernel alone
#   static-72    beside the writer held by a static io.max at 72 % of the device
#   mdreclaimd   beside the writer with mdreclaimd, the database alone configured
#   alone-end    the loop alone again, last: how far the figures drift
# Between cases the WAL is checkpointed (RESTART: the next run writes it
# from its start) and the database file read back into the cache.
#
# Knobs (in vmtest's environment as MDR_WP_SVC_X, in the guest's as
# MDR_SVC_X too):
#   MDR_SVC_WRITER=cp  cp of a 1.5 GiB file; tar: tar -cf - | tar -xf - of a
#     tree of 300 files of 4 MiB; rsync: rsync -a --whole-file of that tree
#     (both need vmtest --mem 2560: the tree is 1.2 GiB on a tmpfs)
#   MDR_SVC_ORDER=writer-first (default): the writer starts 2 s before the
#     loop's run; db-first: 2 s after it; both: the three writer cases in
#     each order
#   MDR_SVC_SECS=24    length of each run
#   MDR_SVC_TREE_FILES=300
#   MDR_SVC_SHORT=yes  the suite's short form (scenarios/service.sh,
#     bench-service-lib.sh): 10 s runs, cp first, kernel and mdreclaimd only,
#     with checks
#
# What is measured: commits/s over the run, p50, p99 and max of the
# transactions' latencies, the worst whole second's commits; the writer's
# MiB/s as bench-pg measures it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bench-service-lib.sh"
need_daemon

bench_name=sqlite bench_prefix=SVC
svc_label="the database" svc_unit=commit/s svc_ops=commits
sq="$MDR_VMDIR/helpers/sqlite-commits"
python3 -c 'import sqlite3' 2> /dev/null || fatal "python3 has no sqlite3 module on the host"
bench_setup mdr-sqlite

# The hooks of bench-service-lib.sh.
svc_settle() { [ -z "${holdpid:-}" ] || "$sq" "$db" checkpoint > /tmp/checkpoint.log || fail "checkpointing the WAL"; }
svc_prime() { [ -z "${holdpid:-}" ] || cat "$db" "$db-wal" > /dev/null; }
svc_run() { in_cgroup "$svccg" "$sq" "$db" "$secs" "/tmp/sq-$1.trace" > "/tmp/sq-$1.out" 2> "/tmp/sq-$1.err"; }
svc_ok() { grep -q '^commits [1-9]' "/tmp/sq-$1.out"; }
svc_warm() { in_cgroup "$svccg" "$sq" "$db" 4 > /dev/null 2>&1; }
# svc_summary NAME: "commits/s p50 p99 max worst-second commits" of a run
svc_summary() {
    local n s
    read -r _ n _ s < "/tmp/sq-$1.out"
    sort -k2,2n "/tmp/sq-$1.trace" 2> /dev/null | awk -v n="${n:-0}" -v s="${s:-1}" -v secs="$secs" '
        { l[NR] = $2; per[int($1)]++ } END {
            w = -1
            for (i = 0; i < secs; i++) if (w < 0 || per[i] + 0 < w) w = per[i] + 0
            if (NR == 0) { printf "0 0 0 0 0 0\n"; exit }
            i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
            printf "%.1f %.1f %.1f %.1f %d %d\n", n / s, l[i50], l[i99], l[NR], w, NR }'
}

one_fs() {
bench_fs "$1"
holdpid=
echo "==== $fs ($dev, $devno): SQLite commit loop, ${secs} s a run, beside $writer_kind; order $order"

learn_device

local t0 dir=$mnt/sqlite
db=$dir/bench.db
echo "== SQLite $(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)') on $fs, WAL, synchronous=FULL, in /mdr-sqlite"
t0=$(now)
mkdir -p "$dir"
"$sq" "$db" init || fatal "cannot make the database"
in_cgroup "$svccg" "$sq" "$db" hold 2> /dev/null &
holdpid=$!
# The first run, not counted: the WAL grows to its steady size here.
in_cgroup "$svccg" "$sq" "$db" "$([ "$short" = yes ] && echo 4 || echo 8)" > /tmp/sq-first.out 2>&1 ||
    fail "the first, uncounted run"
check "the service holds the database in /mdr-sqlite" grep -q . "$svccg/cgroup.procs"
note "made and first run ($(cat /tmp/sq-first.out)) in $(since "$t0") s; the WAL is" \
    "$(($(stat -c %s "$db-wal") / 1024)) KiB"

echo "== the commit loop alone"
run_case alone none

writer_cases

# The database alone again: how far the figure moved over the boot.
if [ "$short" = no ]; then
    echo "== the commit loop alone, again"
    run_case alone-end none
fi

echo
echo "== results, $fs, order $order (one connection, BEGIN; INSERT 200 B; COMMIT, ${secs} s; latency per transaction," \
    "commit included; worst 1s = commits in the worst whole second; kept = commit/s / alone's;" \
    "writer MiB/s = device completed over $writer_kind's run [its own io.stat, counted at dispatch];" \
    "of cap = writer MiB/s / static-72's; cap at = the writer's first io.max cap, after its start)"
results_table
[ "$short" = no ] || short_checks

# $holdpid is the shell that waits for the holder: the cgroup's own kill
# reaches the holder.
echo 1 > "$svccg/cgroup.kill"
wait "$holdpid" 2> /dev/null
holdpid=
rm -rf "$dir" "$mnt/bulk"
}

for f in $MDR_FS; do
    one_fs "$f"
done
writer_cleanup
finish
