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
#
# Knobs (in vmtest's environment; vmtest passes on MDR_WP_* names, so each
# is read as MDR_PG_X, else MDR_WP_PG_X):
#   MDR_PG_ORDER=writer-first (default): cp starts 2 s before pgbench's run;
#     db-first: 2 s after it; both: the three writer cases in each order.
#   MDR_PG_SECS=24     length of each pgbench run
#   MDR_PG_SCALE=4     pgbench -i scale (4 branches: 60 MB of tables)
#   MDR_PG_CLIENTS=4   pgbench -c (threads: -j 2)
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
need_daemon

knob() { local v="MDR_PG_$1" w="MDR_WP_PG_$1"; echo "${!v:-${!w:-$2}}"; }
order=$(knob ORDER writer-first)
secs=$(knob SECS 24)
scale=$(knob SCALE 4)
clients=$(knob CLIENTS 4)
case $order in writer-first|db-first|both) ;; *) fatal "MDR_PG_ORDER must be writer-first, db-first or both (got $order)" ;; esac

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
sock=/tmp/mdr-pgsock
pg() { "$pgbin/psql" -h "$sock" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

conf=/tmp/mdr-conf
state=/tmp/mdr-state
bps=${MDR_WRITE_BPS:-16777216}
cap72=$((bps * 72 / 100))
truncate -s 1536M /tmp/mdr-src || fatal "cannot make the writer's source file"

pgcg=$(new_cgroup mdr-pg) || fatal "cannot create the database's cgroup"
wcg=$(new_cgroup mdr-writer) || fatal "cannot create the writer's cgroup"
check "io.max exists for the writer" test -e "$wcg/io.max"

# The daemon as write-point.sh runs it (its tick and rescan), shipped
# defaults otherwise; only the database has a policy.
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=500ms\nRescanInterval=2s\n[WritePoint]\nCapHoldTime=5s\n' \
    > "$conf/etc/mdreclaim/mdreclaimd.conf"
printf '[Policy]\nMatch=/mdr-pg\nProtect=yes\n' > "$conf/etc/mdreclaim/policies.d/pg.conf"

daemon_pid=
start_daemon() {
    "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
        --log-level info 2>> /tmp/daemon.log &
    daemon_pid=$!
    sleep 2
}
stop_daemon() { # SIGNAL
    kill "-$1" "$daemon_pid" 2> /dev/null
    wait "$daemon_pid" 2> /dev/null
    daemon_pid=
}

sectors_written() { awk '{ print $7 }' "/sys/dev/block/$devno/stat"; }
# cg_wbytes CGROUP: what the cgroup has written to the test device (io.stat)
cg_wbytes() {
    awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) print substr($i, 8) }' "$1/io.stat" |
        grep . || echo 0
}
wbps_now() { awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=/) print substr($i, 6) }' "$wcg/io.max"; }
rate() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { printf "%.2f", (b - a) / 1048576 / t }'; }

# settle: what a case left is written and dropped, the database's dirty
# buffers checkpointed, its history table emptied, so that each case starts
# alike.
settle() {
    rm -f "$mnt/bulk"
    sync
    if [ -n "${pgup:-}" ]; then
        pg -c 'TRUNCATE pgbench_history' -c 'VACUUM pgbench_branches' -c 'VACUUM pgbench_tellers' -c CHECKPOINT ||
            fail "settling the database"
    fi
    sync
    echo 3 > /proc/sys/vm/drop_caches
}

# writer SECS: cp in the writer's cgroup for at most SECS
writer() {
    in_cgroup "$wcg" timeout "$1" cp --sparse=never --reflink=never /tmp/mdr-src "$mnt/bulk"
}

# writer_alone NAME: the writer alone for the length of a case
writer_alone() {
    local s0 t0
    settle
    s0=$(sectors_written)
    t0=$(now)
    writer "$secs"
    rate $((s0 * 512)) $(($(sectors_written) * 512)) "$(since "$t0")" > "/tmp/wrate-$1"
    note "$1: the writer alone completed $(cat "/tmp/wrate-$1") MiB/s"
}

# pgbench_run NAME: one pgbench run of $secs in the database's cgroup,
# its per-transaction log under /tmp/pgb-NAME.*
pgbench_run() {
    rm -f "/tmp/pgb-$1".*
    in_cgroup "$pgcg" "$pgbin/pgbench" -h "$sock" -U postgres -n -c "$clients" -j 2 -T "$secs" -P 1 \
        --log --log-prefix="/tmp/pgb-$1" postgres > "/tmp/pgbench-$1.out" 2> "/tmp/pgbench-$1.err"
}

# summary NAME: "tps p50 p99 max worst-second-tps txns" of a run
summary() {
    local tps worst1
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "/tmp/pgbench-$1.out" | tail -n 1)
    worst1=$(sed -n 's/^progress: [0-9.]* s, \([0-9.]*\) tps.*/\1/p' "/tmp/pgbench-$1.err" | sort -n | head -n 1)
    cat "/tmp/pgb-$1".* 2> /dev/null | awk '$3 ~ /^[0-9]+$/ { print $3 / 1000 }' | sort -n |
        awk -v tps="${tps:-0}" -v w="${worst1:-0}" '{ l[NR] = $1 } END {
            if (NR == 0) { printf "%s 0 0 0 %s 0\n", tps, w; exit }
            i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
            printf "%s %.1f %.1f %.1f %s %d\n", tps, l[i50], l[i99], l[NR], w, NR }'
}

# watch_first_cap: in the background, when the writer's first cap came,
# counted from its start (t0), into /tmp/firstcap-$name; "-" when none
# came. io.max is read with builtins every 0.2 s (a fork may take half a
# second in a busy guest), so it is 0.0 for a cap set before the writer.
watch_first_cap() {
    (local line up
     while kill -0 "$wpid" 2> /dev/null; do
         while read -r line; do
             if [[ $line == "$devno "*wbps=[0-9]* ]]; then
                 read -r up _ < /proc/uptime
                 awk -v a="$t0" -v b="$up" 'BEGIN { printf "%.1f\n", b - a }'
                 exit
             fi
         done < "$wcg/io.max"
         sleep 0.2
     done
     echo -) > "/tmp/firstcap-$name" &
    fcpid=$!
}

# run_case NAME ORDER: one pgbench run; ORDER none: alone, writer-first:
# cp starts, pgbench's run 2 s later, cp stops with it; db-first: pgbench's
# run starts, cp 2 s later until its end. The writer's rate is over its
# own run.
run_case() {
    local name=$1 ord=$2 s0 s1 w0 t0 wpid='' bpid mid fcpid
    settle
    # The writer's cap halfway through, as io.max says, and what the daemon
    # (when it runs) says of the writer then.
    (sleep $((secs / 2)); wbps_now > "/tmp/wbps-mid-$name"
     if [ -n "$daemon_pid" ] && [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ]; then
         "$MDCTL" show /mdr-writer 2>&1 | head -n 30 > "/tmp/show-mid-$name"
     fi) &
    mid=$!
    case $ord in
    none)
        pgbench_run "$name" ;;
    writer-first)
        s0=$(sectors_written) w0=$(cg_wbytes "$wcg") t0=$(now)
        writer $((secs + 2)) &
        wpid=$!
        watch_first_cap
        sleep 2
        pgbench_run "$name" &
        bpid=$! ;;
    db-first)
        pgbench_run "$name" &
        bpid=$!
        sleep 2
        s0=$(sectors_written) w0=$(cg_wbytes "$wcg") t0=$(now)
        writer $((secs - 2)) &
        wpid=$!
        watch_first_cap ;;
    esac
    if [ -n "$wpid" ]; then
        wait "$wpid"
        s1=$(sectors_written)
        echo "$(rate $((s0 * 512)) $((s1 * 512)) "$(since "$t0")") $(rate "$w0" "$(cg_wbytes "$wcg")" "$(since "$t0")")" \
            > "/tmp/wrate-$name"
        wait "$bpid" "$fcpid"
    fi
    wait "$mid"
    check "$name: pgbench ran" grep -q '^tps = ' "/tmp/pgbench-$name.out"
    summary "$name" > "/tmp/sum-$name"
    read -r tps p50 p99 max w1 n < "/tmp/sum-$name"
    note "$name: $n transactions, tps $tps (worst second $w1), latency p50 $p50 p99 $p99 max $max ms"
    [ -z "$wpid" ] || note "$name: the device completed $(cut -d' ' -f1 "/tmp/wrate-$name") MiB/s over the" \
        "writer's run, the writer's own $(cut -d' ' -f2 "/tmp/wrate-$name") (io.stat, at dispatch);" \
        "its io.max mid-run: $(grep . "/tmp/wbps-mid-$name" || echo none), first capped $(cat "/tmp/firstcap-$name") s after its start" \
        "(it started at ${t0} s of uptime)"
    cases="$cases $name"
}

one_fs() {
fs=$1
mnt=/mnt/$fs
dev=$(findmnt -no SOURCE "$mnt")
devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
pgup=
cases=
echo "==== $fs ($dev, $devno): pgbench -c $clients -j 2 -T $secs, scale $scale; order $order"

echo "== the writer alone: kernel, then mdreclaimd (it learns the device)"
writer_alone writer-kernel
rm -f "$state/devices"
: > /tmp/daemon.log
start_daemon
writer_alone writer-mdreclaimd
stop_daemon TERM
note "device capacities the daemon learnt: $(grep -v '^#' "$state/devices" 2> /dev/null | tr '\n' ' ')"
cp "$state/devices" /tmp/devices-learnt 2> /dev/null
check "the daemon learnt the device's capacity" grep -q . /tmp/devices-learnt
check "the writer was not capped while nobody protected ran" test "$(wbps_now)" = "" -o "$(wbps_now)" = max

echo "== PostgreSQL ($("$pgbin/postgres" --version)) on $fs, as $pguser, in /mdr-pg"
local t0 data=$mnt/pgdata
t0=$(now)
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
in_cgroup "$pgcg" setpriv --reuid="$pguser" --regid="$(id -g "$pguser")" --clear-groups \
    "$pgbin/pg_ctl" -D "$data" -l /tmp/pg.log -w -t 120 start > /dev/null ||
    { tail -n 20 /tmp/pg.log; fatal "the server did not start"; }
check "the server runs in /mdr-pg" grep -q . "$pgcg/cgroup.procs"
pgup=1
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

# A first run, not counted: the server creates its first WAL segments
# (16 MiB each, written and synced) here, where later runs recycle them.
in_cgroup "$pgcg" "$pgbin/pgbench" -h "$sock" -U postgres -n -c "$clients" -j 2 -T 12 postgres > /dev/null 2>&1 ||
    fail "the warm-up run of pgbench"

echo "== pgbench alone"
run_case alone none

local ords=$order
[ "$order" = both ] && ords="writer-first db-first"
local ord sfx
for ord in $ords; do
    sfx=
    [ "$order" = both ] && sfx=-${ord%%-*}
    echo "== beside cp, the kernel alone ($ord)"
    run_case "kernel$sfx" "$ord"

    echo "== beside cp held by a static io.max at 72 % of the device ($cap72 B/s, $ord)"
    echo "$devno wbps=$cap72" > "$wcg/io.max"
    run_case "static-72$sfx" "$ord"
    echo "$devno wbps=max" > "$wcg/io.max"

    echo "== beside cp with mdreclaimd, the database alone configured (Match=/mdr-pg, Protect=yes; $ord)"
    cp /tmp/devices-learnt "$state/devices" 2> /dev/null
    note "device capacities the daemon starts from: $(grep -v '^#' "$state/devices" 2> /dev/null | tr '\n' ' ')"
    : > /tmp/daemon.log
    start_daemon
    # The daemon sees the database at work on its own before anyone
    # contends (its baseline), as a service there before the writer.
    in_cgroup "$pgcg" "$pgbin/pgbench" -h "$sock" -U postgres -n -c "$clients" -j 2 -T 4 postgres > /dev/null 2>&1
    run_case "mdreclaimd$sfx" "$ord"
    [ -s "/tmp/show-mid-mdreclaimd$sfx" ] && grep -E '^ *(Policy|Throttle|Why):' "/tmp/show-mid-mdreclaimd$sfx" |
        sed 's/^ */       mdctl show \/mdr-writer (mid-run): /'
    stop_daemon TERM
    check "mdreclaimd$sfx: a clean stop restored the writer's io.max" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
    echo "       the daemon's write-point actions in the case (first 12):"
    grep -E 'ACTION=(cap-writes|drain-cap|lift-cap|restore-on-stop)' /tmp/daemon.log | head -n 12 |
        sed 's/ KNOB=.*//; s/^<[0-9]>/       daemon: /'
    grep -c 'ACTION=cap-writes' /tmp/daemon.log | sed 's/^/       cap changes in the case: /'
    grep -E '^<[0-3]>' /tmp/daemon.log | head -n 5 | sed 's/^/       daemon error: /'
    [ -z "${MDR_ARTIFACTS:-}" ] || { mkdir -p "$MDR_ARTIFACTS" && cp /tmp/daemon.log "$MDR_ARTIFACTS/bench-pg-$fs-mdreclaimd$sfx-daemon.log"; }
done

# The database alone again: how far the figure moved over the boot.
echo "== pgbench alone, again"
run_case alone-end none

echo
echo "== results, $fs, order $order (pgbench -c $clients -j 2, ${secs} s; latency per transaction, commit included;" \
    "kept = tps / alone's; writer MiB/s = device completed over cp's run [cp's own io.stat, counted at dispatch]; of cap = writer MiB/s / static-72's;" \
    "cap at = the writer's first io.max cap, after its start)"
printf '%-18s %8s %8s %8s %9s %8s %7s %18s %7s %7s\n' case tps "p50 ms" "p99 ms" "max ms" "worst 1s" kept "writer MiB/s" "of cap" "cap at"
local c tps p50 p99 max w1 n a_tps wr wo ws fc
read -r a_tps _ < /tmp/sum-alone
for c in $cases; do
    read -r tps p50 p99 max w1 n < "/tmp/sum-$c"
    wr=- wo='' ws='' fc=-
    if [ -s "/tmp/wrate-$c" ] && [ "${c#alone}" = "$c" ]; then
        read -r wr wo < "/tmp/wrate-$c"
        fc=$(cat "/tmp/firstcap-$c")
        case $c in *-writer) sfx=-writer ;; *-db) sfx=-db ;; *) sfx= ;; esac
        [ -s "/tmp/wrate-static-72$sfx" ] && ws=$(awk -v r="$wr" -v s="$(cut -d' ' -f1 "/tmp/wrate-static-72$sfx")" \
            'BEGIN { if (s > 0) printf "%.0f%%", 100 * r / s }')
    fi
    awk -v c="$c" -v t="$tps" -v a="$a_tps" -v p50="$p50" -v p99="$p99" -v mx="$max" -v w1="$w1" \
        -v wr="$wr" -v wo="$wo" -v ws="${ws:--}" -v fc="$fc" 'BEGIN {
        wcol = wr == "-" ? "-" : sprintf("%.2f [%.2f]", wr, wo)
        printf "%-18s %8.1f %8.1f %8.1f %9.1f %8.1f %6.0f%% %18s %7s %7s\n", c, t, p50, p99, mx, w1, (a > 0 ? 100 * t / a : 0), wcol, ws, (fc == "-" ? "-" : fc " s") }'
done
awk -v a="$(cat /tmp/wrate-writer-kernel)" -v b="$(cat /tmp/wrate-writer-mdreclaimd)" 'BEGIN {
    printf "writer alone (no database): kernel %.2f MiB/s, with mdreclaimd %.2f MiB/s (%.0f%%); static cap %.2f MiB/s\n",
        a, b, (a > 0 ? 100 * b / a : 0), '"$cap72"' / 1048576 }'

as_pg "$pgbin/pg_ctl" -D "$data" -m fast -w stop > /dev/null || fail "stopping the server"
pgup=
rm -rf "$data" "$mnt/bulk"
}

for f in $MDR_FS; do
    one_fs "$f"
done
rm -f /tmp/mdr-src
finish
