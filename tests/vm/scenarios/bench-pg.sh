#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# A real database beside a real bulk writer (issue 35, "Validate on real
# services"): PostgreSQL's commit latency under pgbench while `cp` copies a
# big file to the same filesystem, on a disk qemu holds to 16 MiB/s. A
# benchmark, run by hand, not in the suite:
#
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl \
#       tests/vm/vmtest --fs ext4 --timeout 900 bench-pg        (or xfs, btrfs)
#
# Needs Debian's postgresql on the host (the guest runs the host's /usr):
#   apt-get install -y postgresql
# (the package's postgres user is the one the server runs as; without it
# the scenario adds a system user in the guest).
#
# One boot, one filesystem per --fs given, in turn. First the writer alone,
# with the kernel and with mdreclaimd (the daemon learns the device's
# capacity there, as in write-point.sh; nothing runs in the database's
# cgroup yet). Then a cluster is made with initdb on the test filesystem
# (fsync=on, synchronous_commit=on), started as the postgres user in its
# own cgroup /mdr-pg, filled by `pgbench -i`, read into shared_buffers
# (pg_prewarm) and run once for 12 s uncounted. The cases, each with the
# server up beforehand and each pgbench run of the same length:
#   alone        pgbench alone
#   kernel       beside the writer, the kernel alone
#   static-72    beside the writer held by a static io.max at 72 % of the device
#   mdreclaimd   beside the writer with mdreclaimd running and only the
#                database configured: [Policy] Match=/mdr-pg Protect=yes
#                (no writer policy; the writer is a cgroup under none)
#   alone-end    pgbench alone again, last: how far the figures drift
# The writer is cp in cgroup /mdr-writer: a 1.5 GiB sparse file on the
# guest's tmpfs copied with --sparse=never --reflink=never, so every byte is
# written to the test filesystem and reading it costs no memory nor disk.
# What this shares with bench-sqlite.sh (the writers, the cases and their
# order, the daemon's configuration, the table) is in bench-service-lib.sh.
#
# Knobs (in vmtest's environment; vmtest passes on MDR_WP_* names, so each
# is read as MDR_PG_X, else MDR_WP_PG_X):
#   MDR_PG_ORDER=writer-first (default): cp starts 2 s before pgbench's run;
#     db-first: 2 s after it; both: the three writer cases in each order.
#   MDR_PG_SECS=24     length of each pgbench run
#   MDR_PG_SCALE=4     pgbench -i scale (4 branches: 60 MB of tables)
#   MDR_PG_CLIENTS=4   pgbench -c (threads: -j 2)
#   MDR_PG_WRITER=cp   or tar, rsync (bench-service-lib.sh; those two need
#     vmtest --mem 2560 for their tree)
#   MDR_PG_SELF_WRITE=yes  the database itself writes a lot: through every run,
#     alone included, one more session loads a table 8 MiB a statement
#     (INSERT ... generate_series, each committed: its WAL and its pages are
#     the server's own writes, in /mdr-pg). What the daemon must do then:
#     never cap the protected cgroup (a poll of its io.max says whether it
#     was), and still hold the writer beside it.
#   MDR_PG_SECOND=yes  two protected services: a second cluster in /mdr-pg2
#     (its own initdb, socket and pgbench of the same size, run beside the
#     first in every case), with its own policy, Match=/mdr-pg2 Protect=yes.
#     A second table gives its figures.
#
# What is measured: pgbench's per-transaction log (--log) gives each
# transaction's latency (a tpcb-like transaction: three updates, a select,
# an insert and a synchronous commit); p50, p99 and max over the run, tps
# from pgbench's own summary, the worst second from its progress lines.
# The writer's MiB/s is what the device completed over the writer's run
# (/sys/block/DEV/stat, the database's own writes included, as
# write-point.sh's run_case counts), with the writer cgroup's own share
# (its io.stat wbytes) beside it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bench-service-lib.sh"
need_daemon

bench_name=pg bench_prefix=PG
svc_label="the database" svc_unit=tps svc_ops=transactions
scale=$(bench_knob SCALE 4)
clients=$(bench_knob CLIENTS 4)
self_write=$(bench_knob SELF_WRITE no)
second=$(bench_knob SECOND no)
for v in self_write second; do
    case ${!v} in yes|no) ;; *) fatal "MDR_PG_${v^^} must be yes or no (got ${!v})" ;; esac
done

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -n 1)
[ -x "$pgbin/initdb" ] && [ -x "$pgbin/pgbench" ] ||
    fatal "PostgreSQL is not installed on the host (apt-get install -y postgresql)"
pguser=postgres
if ! id -u "$pguser" > /dev/null 2>&1; then
    # The guest's /etc is a tmpfs overlay: the user lives for this boot only.
    pguser=mdrpg
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$pguser" ||
        fatal "cannot add a user for the server"
fi
as_pg() { setpriv --reuid="$pguser" --regid="$(id -g "$pguser")" --clear-groups "$@"; }
sock=/tmp/mdr-pgsock sock2=/tmp/mdr-pgsock2
# pg ARGS...: psql to the cluster whose socket is $sock (a caller may set
# sock=$sock2 for the second)
pg() { "$pgbin/psql" -h "$sock" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

bench_setup mdr-pg
[ "$short" = no ] || fatal "MDR_PG_SHORT: only bench-sqlite has a short form (scenarios/service.sh)"
pgcg=$svccg pg2cg=
if [ "$second" = yes ]; then
    pg2cg=$(new_cgroup mdr-pg2) || fatal "cannot create the second database's cgroup"
    printf '[Policy]\nMatch=/mdr-pg2\nProtect=yes\n' > "$conf/etc/mdreclaim/policies.d/pg2.conf"
fi

# The hooks of bench-service-lib.sh. Between cases the database's dirty
# buffers are checkpointed and its history table emptied.
settle_cluster() {
    pg -c 'TRUNCATE pgbench_history' -c 'VACUUM pgbench_branches' -c 'VACUUM pgbench_tellers' -c CHECKPOINT ||
        fail "settling the database ($sock)"
}
svc_settle() {
    if [ -n "${pgup:-}" ]; then
        [ "$self_write" = no ] || pg -c 'TRUNCATE mdr_bulk' || fail "emptying the database's own load"
        settle_cluster
        [ -z "$pg2cg" ] || sock=$sock2 settle_cluster
    fi
}
svc_prime() { :; }
svc_run() {
    self_load_start "$1"
    pgbench_run "$1"
    self_load_stop "$1"
}
svc_ok() { grep -q '^tps = ' "/tmp/pgbench-$1.out" && { [ -z "$pg2cg" ] || grep -q '^tps = ' "/tmp/pgbench2-$1.out"; }; }
svc_summary() { summary "$1"; }
# warm SECS: an uncounted pgbench run against each database at once (only
# its own child is waited for: the daemon runs in the background too)
warm() {
    local p2=
    if [ -n "$pg2cg" ]; then
        in_cgroup "$pg2cg" "$pgbin/pgbench" -h "$sock2" -U postgres -n -c "$clients" -j 2 -T "$1" postgres \
            > /dev/null 2>&1 &
        p2=$!
    fi
    in_cgroup "$pgcg" "$pgbin/pgbench" -h "$sock" -U postgres -n -c "$clients" -j 2 -T "$1" postgres > /dev/null 2>&1
    local rc=$?
    [ -z "$p2" ] || wait "$p2" || rc=1
    return $rc
}
svc_warm() { warm 4; }

# pgbench_run NAME: one pgbench run of $secs in the database's cgroup,
# its per-transaction log under /tmp/pgb-NAME.*; with a second database,
# the same against it at once (/tmp/pgb2-NAME.*), its summary in
# /tmp/sum2-NAME
pgbench_run() {
    local p2=
    rm -f "/tmp/pgb-$1".* "/tmp/pgb2-$1".*
    if [ -n "$pg2cg" ]; then
        in_cgroup "$pg2cg" "$pgbin/pgbench" -h "$sock2" -U postgres -n -c "$clients" -j 2 -T "$secs" -P 1 \
            --log --log-prefix="/tmp/pgb2-$1" postgres > "/tmp/pgbench2-$1.out" 2> "/tmp/pgbench2-$1.err" &
        p2=$!
    fi
    in_cgroup "$pgcg" "$pgbin/pgbench" -h "$sock" -U postgres -n -c "$clients" -j 2 -T "$secs" -P 1 \
        --log --log-prefix="/tmp/pgb-$1" postgres > "/tmp/pgbench-$1.out" 2> "/tmp/pgbench-$1.err"
    if [ -n "$p2" ]; then
        wait "$p2"
        summary "$1" 2 > "/tmp/sum2-$1"
    fi
}

# self_load_start NAME / self_load_stop NAME (MDR_PG_SELF_WRITE=yes): the
# database's own bulk load through the run, 8 MiB a committed statement,
# counted in /tmp/self-NAME; and whether the protected cgroup's io.max ever
# held a cap meanwhile (polled every 0.2 s: /tmp/selfcap-NAME)
self_pids=
self_load_start() {
    [ "$self_write" = yes ] || return 0
    rm -f /tmp/self-stop "/tmp/self-$1" "/tmp/selfcap-$1"
    (while [ ! -e /tmp/self-stop ]; do
         pg -c "INSERT INTO mdr_bulk SELECT g, repeat('b', 1000) FROM generate_series(1, 8192) g" 2>> "/tmp/self-err-$1" ||
             { echo "$1: an INSERT of the database's own load failed" >> /tmp/self-errors; break; }
         echo 8 >> "/tmp/self-$1"
     done) &
    self_pids=$!
    (local line f
     while [ ! -e /tmp/self-stop ]; do
         for f in "$pgcg/io.max" ${pg2cg:+"$pg2cg/io.max"}; do
             while read -r line; do
                 [[ $line == "$devno "*wbps=[0-9]* ]] && echo "${f%/io.max}: $line" > "/tmp/selfcap-$1"
             done < "$f"
         done
         sleep 0.2
     done) &
    self_pids="$self_pids $!"
}
self_load_stop() {
    [ "$self_write" = yes ] || return 0
    touch /tmp/self-stop
    # shellcheck disable=SC2086
    wait $self_pids
    note "$1: the database's own load wrote $(awk '{ s += $1 } END { print s + 0 }' "/tmp/self-$1" 2> /dev/null) MiB" \
        "of rows in the run; its io.max: $(cat "/tmp/selfcap-$1" 2> /dev/null || echo "never capped")"
}

# summary NAME [2]: "tps p50 p99 max worst-second-tps txns" of a run (2: the
# second database's)
summary() {
    local tps worst1 k=${2:-}
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "/tmp/pgbench$k-$1.out" | tail -n 1)
    worst1=$(sed -n 's/^progress: [0-9.]* s, \([0-9.]*\) tps.*/\1/p' "/tmp/pgbench$k-$1.err" | sort -n | head -n 1)
    cat "/tmp/pgb$k-$1".* 2> /dev/null | awk '$3 ~ /^[0-9]+$/ { print $3 / 1000 }' | sort -n |
        awk -v tps="${tps:-0}" -v w="${worst1:-0}" '{ l[NR] = $1 } END {
            if (NR == 0) { printf "%s 0 0 0 %s 0\n", tps, w; exit }
            i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
            printf "%s %.1f %.1f %.1f %s %d\n", tps, l[i50], l[i99], l[NR], w, NR }'
}

# pg_cluster DATA CGROUP: a cluster made with initdb in DATA, its server
# started in CGROUP with its socket in $sock, filled by pgbench -i and read
# into shared_buffers
pg_cluster() {
local data=$1 cg=$2 t0
t0=$(now)
echo "== PostgreSQL ($("$pgbin/postgres" --version)) on $fs, as $pguser, in ${cg#/sys/fs/cgroup}"
mkdir -p "$data" "$sock"
chown "$pguser:" "$data" "$sock"
as_pg "$pgbin/initdb" -D "$data" -U postgres --auth=trust --no-locale -E UTF8 > /tmp/initdb.log 2>&1 ||
    { tail -n 20 /tmp/initdb.log; fatal "initdb failed"; }
# The settings the cases rely on, stated rather than taken from the
# defaults: every commit waits for its WAL to be on the disk. No checkpoint
# starts by itself within the run (settle asks for one between cases), and
# no autovacuum, so that every case sees the same background.
cat >> "$data/postgresql.conf" <<EOT
listen_addresses = ''
unix_socket_directories = '$sock'
fsync = on
synchronous_commit = on
full_page_writes = on
shared_buffers = 128MB
max_connections = 20
checkpoint_timeout = 1h
max_wal_size = 4GB
autovacuum = off
EOT
in_cgroup "$cg" setpriv --reuid="$pguser" --regid="$(id -g "$pguser")" --clear-groups \
    "$pgbin/pg_ctl" -D "$data" -l "/tmp/pg-${cg##*/}.log" -w -t 120 start > /dev/null ||
    { tail -n 20 "/tmp/pg-${cg##*/}.log"; fatal "the server did not start"; }
check "the server runs in ${cg#/sys/fs/cgroup}" grep -q . "$cg/cgroup.procs"
"$pgbin/pgbench" -h "$sock" -U postgres -i -q -s "$scale" postgres > /tmp/pgbench-init.log 2>&1 ||
    { tail -n 20 /tmp/pgbench-init.log; fatal "pgbench -i failed"; }
# pgbench -i loads through a small ring of buffers: the tables and their
# indexes are read into shared_buffers once here, so that no case (the
# first above all) pays for reading them from the disk.
pg -At -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
    -c "SELECT sum(pg_prewarm(oid)) FROM pg_class WHERE relname LIKE 'pgbench_%' AND relkind IN ('r', 'i')" \
    > /tmp/prewarm.log 2>&1 || note "pg_prewarm failed: $(tail -n 1 /tmp/prewarm.log)"
note "initdb, start and pgbench -i -s $scale took $(since "$t0") s; $(tail -n 1 /tmp/prewarm.log) blocks prewarmed;" \
    "$(pg -At -c "SHOW fsync" -c "SHOW synchronous_commit" -c "SHOW wal_sync_method" | paste -sd' ') (fsync, synchronous_commit, wal_sync_method)"
}

one_fs() {
bench_fs "$1"
pgup=
echo "==== $fs ($dev, $devno): pgbench -c $clients -j 2 -T $secs, scale $scale; order $order"

learn_device

pg_cluster "$mnt/pgdata" "$pgcg"
[ -z "$pg2cg" ] || sock=$sock2 pg_cluster "$mnt/pgdata2" "$pg2cg"
[ "$self_write" = no ] || pg -c 'CREATE TABLE mdr_bulk (id int, pad text)' || fatal "cannot make the table of the database's own load"
pgup=1

# A first run, not counted: the server creates its first WAL segments
# (16 MiB each, written and synced) here, where later runs recycle them.
warm 12 || fail "the warm-up run of pgbench"

echo "== pgbench alone"
run_case alone none

writer_cases

# The database alone again: how far the figure moved over the boot.
echo "== pgbench alone, again"
run_case alone-end none

echo
echo "== results, $fs, order $order (pgbench -c $clients -j 2, ${secs} s; latency per transaction, commit included;" \
    "kept = tps / alone's; writer MiB/s = device completed over $writer_kind's run [its own io.stat, counted at dispatch]; of cap = writer MiB/s / static-72's;" \
    "cap at = the writer's first io.max cap, after its start)"
results_table
if [ -n "$pg2cg" ]; then
    echo
    echo "== the second database (/mdr-pg2, protected too), the same runs; kept = tps / its own alone's"
    results_table sum2
fi
if [ "$self_write" = yes ]; then
    echo "== the database's own load (MiB of rows written in each run):" \
        "$(for c in $cases; do printf '%s %s, ' "$c" "$(awk '{ s += $1 } END { print s + 0 }' "/tmp/self-$c" 2> /dev/null)"; done)"
    check "the protected databases' io.max were never capped" \
        test -z "$(cat /tmp/selfcap-* 2> /dev/null)"
    check "every INSERT of the database's own load succeeded" test ! -s /tmp/self-errors
    [ ! -s /tmp/self-errors ] || sed 's/^/       /' /tmp/self-errors
fi

as_pg "$pgbin/pg_ctl" -D "$mnt/pgdata" -m fast -w stop > /dev/null || fail "stopping the server"
[ -z "$pg2cg" ] || as_pg "$pgbin/pg_ctl" -D "$mnt/pgdata2" -m fast -w stop > /dev/null || fail "stopping the second server"
pgup=
rm -rf "$mnt/pgdata" "$mnt/pgdata2" "$mnt/bulk"
}

for f in $MDR_FS; do
    one_fs "$f"
done
writer_cleanup
finish
