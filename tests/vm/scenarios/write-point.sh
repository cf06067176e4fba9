#!/bin/bash
# vm-fs: ext4 btrfs
# vm-write-bps: 16777216
# The write point on a real kernel, side by side in one run: a bulk writer
# (dd) beside a victim that makes small synchronous writes, on a disk qemu
# holds to 16 MiB/s. Cases: the victim alone; kernel alone; a static io.max
# on the writer at 72 % of the device, alone and with a queue depth of 4 (as
# "bench-write-point" also at 50 and 90 %, a queue depth of 4 without a cap,
# the daemon's own shallow queue set by hand with the 72 % cap, and io.cost
# with weights); the
# writer alone with and without the daemon (it must not be capped when
# nobody protected is active; the daemon learns the device there); mdreclaimd
# enforcing with the victim protected, and again with ManageQueueDepth=yes
# (the queue shallow while the victim is active, put back at stop); a kill -9
# of the daemon while a cap is
# applied: the next start restores it. Last, on btrfs, SIGTERM while
# a writer floods the disk and its dirty budget is being enforced: the daemon
# must exit within 2 s with every throttle restored, whatever its worker is
# waiting for in the kernel (docs/reliability.md).
#
# As "write-point" (the VM suite) the cases are short and what is asserted is
# what must hold every time: a cap while the victim stalls, the drain rate
# (not a lift) when the writer ends, none left after a stop or a crash, no
# cap when nobody stalls, and, on ext4, the short form of issue 15's bars
# against the static 72 % cap and against it with a queue depth of 4, with
# margins for the noise (below). The
# side-by-side figures are printed; under TCG they vary from run to run, so
# the full comparison is a benchmark:
# "bench-write-point" (the same script) runs longer cases on every --fs given:
#   MDRECLAIMD=build/daemon/mdreclaimd tests/vm/vmtest --fs ext4,xfs,btrfs bench-write-point
# MDR_WP_LIMIT=25% (in vmtest's environment) sets IOPressureLimit= (default 10%),
# MDR_WP_GLOBAL_GUARD=100% GlobalDirtyGuard= (default 80%; 100%: the host's
# dirty guard only where the kernel's own throttling starts),
# MDR_WP_GUARD_RATE=70% GuardRate= (unset: the shipped default, 75%).
# The mdreclaimd case runs the shipped defaults: on btrfs that is the latency
# target of IOLatencyTargetByFilesystem= (MDR_WP_FS_LATENCY, default
# btrfs:10ms; "off": the stall share on every filesystem); mdreclaimd-qd the
# stall share with ManageQueueDepth=yes.
# The bench also runs the daemon with IOLatencyTarget= (MDR_WP_LATENCY, default
# 10ms) on the victim, with and without ManageQueueDepth= (cases mdreclaimd-lat
# and mdreclaimd-lat-qd). MDR_WP_CASES="kernel static-72 mdreclaimd-lat-qd"
# runs only the cases named (the victim alone, the writer alone and the
# side-by-side table always; "kill" names the kill -9 test).
# MDR_WP_WRITER_POLICY=no leaves the writer under no policy.
# MDR_WP_DAEMON_B=PATH adds the case mdreclaimd-b: the same defaults with
# another build of the daemon (an absolute path in MDRECLAIMD's directory,
# which the guest sees), an A/B within one boot.
# MDR_WP_WRITERS=N: N writers instead of one, each a dd to its own file in a
# child cgroup of the writer's (mdr-writer/w1..wN): the static cases' io.max
# is on mdr-writer, a cap by hand on the slice that holds them all; with
# MDR_WP_WRITER_POLICY=no each child is a writer under no policy that the
# daemon finds and caps on its own. The kill -9 and the btrfs stop tests
# assume one writer: leave them out (MDR_WP_CASES, ext4).
# MDR_WP_ORDER=writer-first starts the writer 2 s before the victim's burst
# (the victim's cgroup holds an idle process meanwhile), instead of a second
# after it.
# MDR_WP_LRU_GEN=y|n: MGLRU on or off for the run (Debian 13's 6.12 boots with
# it on; Debian 12's 6.1 has it built in and off).
# MDR_WP_TIMELINE=1 (with MDRECLAIM_VM_ARTIFACTS) keeps each case's timeline
# there, times in seconds of guest uptime: timeline-FS-CASE.marks (the case's
# start, the writers' start, its end), .victim (each op: start from the
# victim's own, ms), .writers (every 100 ms: the host's dirty and writeback,
# the device's requests in flight, each writer cgroup's dirty, writeback and
# io.max wbps) and, for the daemon's cases, .daemon (its log, lines stamped).
# tests/vm/timeline merges them into one table.
. "$(dirname "$0")/lib.sh"
need_daemon

victim=$MDR_VMDIR/helpers/victim
case $MDR_SCENARIO_NAME in
bench-*) bench=1 secs=24 ;;
*) bench=0 secs=10 ;;
esac
# In the suite, dirty pages expire after 5 s, not 30: the writer's last pages,
# under the background threshold, are written that much sooner, and the drain
# of its cap (which lasts until they are) ends within seconds.
[ "$bench" = 1 ] || echo 500 > /proc/sys/vm/dirty_expire_centisecs
conf=/tmp/mdr-conf
state=/tmp/mdr-state
bps=${MDR_WRITE_BPS:-16777216}
# The request size of the daemon's shallow queue (WP_QUEUE_MAX_SECTORS_KB in
# daemon/deciding/write-point.h): what the lever's case checks it held, and
# the size of the bench's static setting "static-72-qd4-$qd_kb", the same
# queue set by hand (MDR_WP_QD_KB for a binary built with another size).
qd_kb=${MDR_WP_QD_KB:-32}

lru_gen=/sys/kernel/mm/lru_gen/enabled
if [ -n "${MDR_WP_LRU_GEN:-}" ]; then
    [ -w "$lru_gen" ] && echo "$MDR_WP_LRU_GEN" > "$lru_gen" || note "cannot set MGLRU to $MDR_WP_LRU_GEN on this kernel"
fi
[ "$bench" = 0 ] || echo "== MGLRU: $(cat "$lru_gen" 2>/dev/null || echo "not built in")"
vcg=$(new_cgroup mdr-victim) || fatal "cannot create the victim's cgroup"
wcg=$(new_cgroup mdr-writer) || fatal "cannot create the writer's cgroup"
check "io.max exists for the writer" test -e "$wcg/io.max"

mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
cat > "$conf/etc/mdreclaim/mdreclaimd.conf" <<EOT
[Daemon]
Interval=500ms
RescanInterval=2s
[WritePoint]
IOPressureLimit=${MDR_WP_LIMIT:-10%}
CapHoldTime=5s
GlobalDirtyGuard=${MDR_WP_GLOBAL_GUARD:-80%}
ManageQueueDepth=no
${MDR_WP_GUARD_RATE:+GuardRate=$MDR_WP_GUARD_RATE}
#IOLatencyTarget=
IOLatencyTargetByFilesystem=${MDR_WP_FS_LATENCY:-btrfs:10ms}
EOT
printf '[Policy]\nMatch=/mdr-victim\nMode=enforce\nProtect=yes\nPriority=90\n' \
    > "$conf/etc/mdreclaim/policies.d/victim.conf"
# MDR_WP_WRITER_POLICY=no: the protected side alone is configured, as a new
# user would (the writer is capped as a cgroup under no policy, which has no
# sample history to plot).
plot_writer=
if [ "${MDR_WP_WRITER_POLICY:-yes}" != no ]; then
    plot_writer=/mdr-writer
    printf '[Policy]\nMatch=/mdr-writer\nMode=enforce\nPriority=10\nWriteRateMin=10%%\n' \
        > "$conf/etc/mdreclaim/policies.d/writer.conf"
fi

sectors_written() { awk '{ print $7 }' "/sys/dev/block/$devno/stat"; }
# The writer's io.max wbps (MDR_WP_WRITERS: its own and its children's, joined by "+"); "" when none is set.
wbps_now() {
    local f
    for f in "$wcg/io.max" "$wcg"/w*/io.max; do
        [ -e "$f" ] && awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=/) print substr($i, 6) }' "$f"
    done | paste -sd+
}
settle() { sync; echo 3 > /proc/sys/vm/drop_caches; rm -f "$mnt"/bulk*; sync; }

nwriters=${MDR_WP_WRITERS:-1}
if [ "$nwriters" -gt 1 ]; then
    echo "+io +memory" > "$wcg/cgroup.subtree_control" || fatal "cannot enable io and memory below $wcg"
    for i in $(seq 1 "$nwriters"); do mkdir -p "$wcg/w$i"; done
fi
# writer_run SECS: the writer (MDR_WP_WRITERS: each of them) for SECS; returns when all have ended.
writer_run() {
    local i pids=
    if [ "$nwriters" -le 1 ]; then
        in_cgroup "$wcg" timeout "$1" dd if=/dev/zero of="$mnt/bulk" bs=1M count=100000 status=none
        return
    fi
    for i in $(seq 1 "$nwriters"); do
        in_cgroup "$wcg/w$i" timeout "$1" dd if=/dev/zero of="$mnt/bulk$i" bs=1M count=100000 status=none &
        pids="$pids $!"
    done
    wait $pids
}

timeline=
[ -z "${MDR_WP_TIMELINE:-}" ] || [ -z "${MDR_ARTIFACTS:-}" ] || timeline=1
# (a read, not lib.sh's now(): no process a line)
stamp_lines() { local l up _; while IFS= read -r l; do read -r up _ < /proc/uptime; printf '%s %s\n' "$up" "$l"; done; }
# writers_trace FILE: every 100 ms, the host's dirty and writeback bytes and
# the device's requests in flight (reads, writes), then each writer cgroup's
# dirty and writeback bytes and io.max wbps, until killed (one awk a sample, to keep the guest's
# CPU for the case).
writers_trace() {
    local up _
    while :; do
        read -r up _ < /proc/uptime
        awk -v t="$up" -v top="$wcg" -v dev="$devno" '
            FILENAME == "/proc/meminfo" { if ($1 == "Dirty:") hd = $2 * 1024; if ($1 == "Writeback:") hw = $2 * 1024; next }
            FILENAME ~ /inflight$/ { inr = $1; inw = $2; next }
            { c = FILENAME; sub(/\/[^\/]*$/, "", c); c = substr(c, length(top) + 1); if (c == "") c = "/"
              if (!(c in seen)) { seen[c] = 1; order[n++] = c; cap[c] = "max" } }
            FILENAME ~ /memory.stat$/ && $1 == "file_dirty" { dirty[c] = $2 }
            FILENAME ~ /memory.stat$/ && $1 == "file_writeback" { wb[c] = $2 }
            FILENAME ~ /io.max$/ && $1 == dev { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=/) cap[c] = substr($i, 6) }
            END { printf "%s host dirty %d writeback %d inflight %d %d\n", t, hd, hw, inr, inw
                  for (i = 0; i < n; i++) printf "%s %s dirty %d writeback %d wbps %s\n", t, order[i], dirty[order[i]], wb[order[i]], cap[order[i]] }
        ' /proc/meminfo "/sys/dev/block/$devno/inflight" "$wcg/memory.stat" "$wcg/io.max" "$wcg"/w*/memory.stat "$wcg"/w*/io.max 2>/dev/null
        sleep 0.1
    done > "$1"
}

daemon_pid=
start_daemon() {
    if [ -n "$timeline" ]; then
        # Through a FIFO: the guest has no /dev/fd for a process substitution.
        rm -f /tmp/daemon.fifo && mkfifo /tmp/daemon.fifo || fatal "cannot make a FIFO for the daemon's log"
        stamp_lines < /tmp/daemon.fifo >> /tmp/daemon.log &
        "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
            --log-level "${MDR_WP_LOG_LEVEL:-info}" 2> /tmp/daemon.fifo &
    else
        "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
            --log-level "${MDR_WP_LOG_LEVEL:-info}" 2>> /tmp/daemon.log &
    fi
    daemon_pid=$!
    sleep 2
}
stop_daemon() { # SIGNAL
    kill "-$1" "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
    daemon_pid=
}

# start_contention SECS LABEL: the writer and the victim in the background for
# at most SECS, until end_contention kills them.
start_contention() {
    writer_run "$1" &
    bg_writer=$!
    in_cgroup "$vcg" python3 "$victim" "$mnt/victim" "$1" "victim ($2)" > /dev/null &
    bg_victim=$!
}
end_contention() {
    local pid
    for pid in $(cat "$wcg"/cgroup.procs "$wcg"/w*/cgroup.procs "$vcg/cgroup.procs" 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null
    done
    wait "$bg_writer" "$bg_victim" 2>/dev/null
}

# run_case NAME: the victim beside the writer for $secs; prints the victim's
# line and records the writer's completed MiB/s. The victim runs first, as a
# service that is there before a writer comes: the writer starts a second into
# it. Its first second counts in the victim's ops and p99; its worst op is
# the worst from the writer's start on (issue 15: "counting from the first
# second the writer starts"), a worse one before it printed beside.
# With MDR_WP_ORDER=writer-first the writer comes first: the victim's
# cgroup holds an idle process (a service that runs but has not yet begun its
# burst), the writer starts, and the victim's burst 2 s later, every op of it
# counted.
run_case() {
    local name=$1 s0 s1 t0 vpid idle= tracer= tl=
    settle
    if [ -n "$timeline" ]; then
        tl=$MDR_ARTIFACTS/timeline-$fs-$name
        writers_trace "$tl.writers" &
        tracer=$!
        echo "$(now) case $name begins" > "$tl.marks"
    fi
    if [ "${MDR_WP_ORDER:-victim-first}" = writer-first ]; then
        in_cgroup "$vcg" sleep $((secs + 4)) &
        idle=$!
        s0=$(sectors_written)
        t0=$(now)
        [ -z "$tl" ] || echo "$(now) writers start" >> "$tl.marks"
        writer_run "$((secs + 1))" &
        writer=$!
        sleep 2
        in_cgroup "$vcg" env ${tl:+VICTIM_TRACE=$tl.victim} python3 "$victim" "$mnt/victim" "$secs" \
            "$(printf '%-16s' "$name")" > "/tmp/case-$name" &
        vpid=$!
    else
        # The writer a second after the victim's first op, not after its start: under TCG, with
        # the caches just dropped, Python can take seconds to start, and the writer came first.
        rm -f /tmp/victim-ready
        in_cgroup "$vcg" env VICTIM_FROM=1 VICTIM_READY=/tmp/victim-ready ${tl:+VICTIM_TRACE=$tl.victim} \
            python3 "$victim" "$mnt/victim" "$secs" "$(printf '%-16s' "$name")" > "/tmp/case-$name" &
        vpid=$!
        wait_for 30 test -e /tmp/victim-ready || note "$name: the victim made no op within 30 s"
        sleep 1
        s0=$(sectors_written)
        t0=$(now)
        [ -z "$tl" ] || echo "$(now) writers start" >> "$tl.marks"
        writer_run "$((secs - 1))" &
        writer=$!
    fi
    # The writer's cap halfway through, as the file says.
    (sleep $((secs / 2)); wbps_now > "/tmp/wbps-mid-$name") &
    wait "$vpid"
    cat "/tmp/case-$name"
    wait "$writer"
    s1=$(sectors_written)
    if [ -n "$tracer" ]; then
        kill "$tracer" 2>/dev/null; wait "$tracer" 2>/dev/null
        echo "$(now) case $name ends" >> "$tl.marks"
        [ -z "$daemon_pid" ] || cp /tmp/daemon.log "$tl.daemon"
    fi
    [ -z "$idle" ] || { kill "$idle" 2>/dev/null; wait "$idle" 2>/dev/null; }
    awk -v a="$s0" -v b="$s1" -v t="$(since "$t0")" 'BEGIN { printf "%.2f\n", (b - a) * 512 / 1048576 / t }' \
        > "/tmp/wrate-$name"
    note "$name: writer completed $(cat "/tmp/wrate-$name") MiB/s on the device"
}

# writer_alone NAME: the writer alone for $secs, completed MiB/s
writer_alone() {
    local s0 t0
    settle
    s0=$(sectors_written)
    t0=$(now)
    writer_run "$secs"
    awk -v a="$s0" -v b="$(sectors_written)" -v t="$(since "$t0")" \
        'BEGIN { printf "%.2f\n", (b - a) * 512 / 1048576 / t }' > "/tmp/wrate-$1"
    note "$1: writer alone completed $(cat "/tmp/wrate-$1") MiB/s"
}

# want CASE: whether the bench runs CASE (MDR_WP_CASES, default every case).
want() { [ -z "${MDR_WP_CASES:-}" ] || [[ " ${MDR_WP_CASES//,/ } " == *" $1 "* ]]; }

# daemon_case NAME QUEUE LATENCY: the mdreclaimd case again with
# ManageQueueDepth=QUEUE (yes: the device's queue shallow while the victim is
# active, its exact values back after the stop) and [WritePoint]
# IOLatencyTarget=LATENCY (off: the stall share, on every filesystem).
daemon_case() {
    local name=$1 qd=$2 lat=$3 q=/sys/block/${dev#/dev/}/queue nr ms sampler
    nr=$(cat "$q/nr_requests") ms=$(cat "$q/max_sectors_kb")
    echo "== mdreclaimd enforcing, victim protected, ManageQueueDepth=$qd, IOLatencyTarget=$lat (queue: nr_requests $nr, max_sectors_kb $ms)"
    sed -i "s/^ManageQueueDepth=.*/ManageQueueDepth=$qd/" "$conf/etc/mdreclaim/mdreclaimd.conf"
    [ "$lat" = default ] || sed -i "s/^#\?IOLatencyTarget=.*/IOLatencyTarget=$lat/" "$conf/etc/mdreclaim/mdreclaimd.conf"
    cp /tmp/devices-learnt "$state/devices" 2>/dev/null
    note "device capacities the daemon starts from: $(grep -v '^#' "$state/devices" 2>/dev/null | tr '\n' ' ')"
    : > /tmp/daemon.log
    start_daemon
    in_cgroup "$vcg" python3 "$victim" "$mnt/victim" 6 "victim, daemon up" > /dev/null
    (sleep $((secs / 2)); echo "$(cat "$q/nr_requests") $(cat "$q/max_sectors_kb")" > /tmp/qd-mid) &
    sampler=$!
    run_case "$name"
    wait "$sampler"
    if [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ] && [ -n "${MDR_ARTIFACTS:-}" ] && command -v gnuplot > /dev/null; then
        "$MDCTL" plot /mdr-victim $plot_writer --since 40s -o "$MDR_ARTIFACTS/write-point-$fs-${name#mdreclaimd-}.png" > /dev/null &&
            note "plot of the $name case: write-point-$fs-${name#mdreclaimd-}.png"
    fi
    stop_daemon TERM
    sed -i 's/^ManageQueueDepth=.*/ManageQueueDepth=no/; s/^IOLatencyTarget=.*/#IOLatencyTarget=/' \
        "$conf/etc/mdreclaim/mdreclaimd.conf"
    cp /tmp/daemon.log "/tmp/daemon-$fs-$name.log"
    if [ "$qd" = yes ]; then
        check "$name: the queue was shallow in the middle of the case" test "$(cat /tmp/qd-mid)" = "4 $qd_kb"
        check "$name: a clean stop put nr_requests back ($nr)" test "$(cat "$q/nr_requests")" = "$nr"
        check "$name: ... and max_sectors_kb ($ms)" test "$(cat "$q/max_sectors_kb")" = "$ms"
    fi
    check "$name: a clean stop restored the writer's io.max" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
    cases="$cases $name"
    grep -E 'ACTION=(shallow-queue|restore-queue|restore-on-stop|queue-refused|cap-writes|drain-cap|lift-cap)' /tmp/daemon.log |
        head -n 14 | sed 's/ KNOB=.*//; s/ CGROUP=.*//; s/^<[0-9]>/       daemon: /'
    grep -c 'ACTION=cap-writes' /tmp/daemon.log | sed 's/^/       cap changes in the case: /'
}

one_fs() {
fs=$1
mnt=/mnt/$fs
dev=$(findmnt -no SOURCE "$mnt")
devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
echo "==== $fs ($dev, $devno)"
echo "== victim alone"
settle
in_cgroup "$vcg" python3 "$victim" "$mnt/victim" "$secs" "$(printf '%-16s' alone)" | tee /tmp/case-alone

# The kernel alone is what the writer's rate is judged against: always run.
echo "== kernel alone"
run_case kernel
cases="kernel"

if [ "$bench" = 0 ] || want static-72; then
    echo "== static io.max on the writer, 72 % of the device"
    echo "$devno wbps=$((bps * 72 / 100))" > "$wcg/io.max"
    run_case static-72
    echo "$devno wbps=max" > "$wcg/io.max"
    cases="$cases static-72"
fi
if [ "$bench" = 1 ]; then
    # The static sweep the daemon is measured against: caps by hand at about
    # half and nine tenths of the device, and a shallow device queue alone.
    for pct in 50 90; do
        want "static-$pct" || continue
        echo "== static io.max on the writer, $pct % of the device"
        echo "$devno wbps=$((bps * pct / 100))" > "$wcg/io.max"
        run_case "static-$pct"
        echo "$devno wbps=max" > "$wcg/io.max"
        cases="$cases static-$pct"
    done
fi
q=/sys/block/${dev#/dev/}/queue
nr=$(cat "$q/nr_requests") ms=$(cat "$q/max_sectors_kb")
if [ "$bench" = 1 ] && want qd4; then
    echo "== queue depth 4 (nr_requests=4, max_sectors_kb=128), no cap"
    echo 4 > "$q/nr_requests" && echo 128 > "$q/max_sectors_kb"
    run_case qd4
    cases="$cases qd4"
fi
# The best static setting of the issue's sweep: what the worst op with
# ManageQueueDepth= is held to (in the suite too, on ext4).
if [ "$bench" = 0 ] || want static-72-qd4; then
    echo "== queue depth 4 and io.max at 72 % of the device (the best pair measured by hand, issue 15)"
    echo 4 > "$q/nr_requests" && echo 128 > "$q/max_sectors_kb"
    echo "$devno wbps=$((bps * 72 / 100))" > "$wcg/io.max"
    run_case static-72-qd4
    echo "$devno wbps=max" > "$wcg/io.max"
    cases="$cases static-72-qd4"
fi
# The daemon's shallow queue set by hand, with the same cap: what the lever
# buys by being there only while the victim is active, and no more.
if [ "$bench" = 1 ] && want "static-72-qd4-$qd_kb"; then
    echo "== queue depth 4 with $qd_kb KiB requests (the daemon's) and io.max at 72 % of the device"
    echo 4 > "$q/nr_requests" && echo "$qd_kb" > "$q/max_sectors_kb"
    echo "$devno wbps=$((bps * 72 / 100))" > "$wcg/io.max"
    run_case "static-72-qd4-$qd_kb"
    echo "$devno wbps=max" > "$wcg/io.max"
    cases="$cases static-72-qd4-$qd_kb"
fi
echo "$nr" > "$q/nr_requests"; echo "$ms" > "$q/max_sectors_kb"
if [ "$bench" = 1 ]; then
    # The kernel's own proportional controller, as an operator could set it:
    # io.cost with a 50 ms write latency target at the 95th percentile, the
    # victim weighted 100 times the writer.
    if [ -e /sys/fs/cgroup/io.cost.qos ] && want iocost; then
        echo "== io.cost: wlat 50 ms (p95), victim weight 1000, writer weight 10"
        echo "$devno enable=1 ctrl=user rpct=95 rlat=50000 wpct=95 wlat=50000 min=10 max=100" > /sys/fs/cgroup/io.cost.qos
        echo "default 1000" > "$vcg/io.weight"; echo "default 10" > "$wcg/io.weight"
        run_case iocost
        echo "$devno enable=0" > /sys/fs/cgroup/io.cost.qos
        echo "default 100" > "$vcg/io.weight"; echo "default 100" > "$wcg/io.weight"
        cases="$cases iocost"
    fi
fi

# First the writer alone, with and without the daemon: the daemon learns the
# device's capacity there (saved in its state directory, as a daemon that has
# run on the host before would know it).
echo "== the writer alone: kernel, then mdreclaimd (nobody protected stalls)"
writer_alone writer-kernel
rm -f "$state/devices"
start_daemon
writer_alone writer-mdreclaimd
stop_daemon TERM
note "device capacities the daemon learnt: $(grep -v '^#' "$state/devices" 2>/dev/null | tr '\n' ' ')"
# Kept, so that each daemon case starts from what the writer alone taught it, not from what the
# case before it left (a capped writer on a device busy with the victim's syncs pulls it down).
cp "$state/devices" /tmp/devices-learnt 2>/dev/null

if [ "$bench" = 0 ] || want mdreclaimd; then
echo "== mdreclaimd enforcing, victim protected (IOLatencyTargetByFilesystem=${MDR_WP_FS_LATENCY:-btrfs:10ms})"
: > /tmp/daemon.log
start_daemon
# The daemon runs before the writer comes, as a service would: it sees what
# the victim stalls on its own (its baseline) before anyone contends.
in_cgroup "$vcg" python3 "$victim" "$mnt/victim" 6 "victim, daemon up" > /dev/null
# The guard caps a writer's cgroup once the victim is active, before it writes:
# what must hold is a cap on the writer while both run, seen in the file.
run_case mdreclaimd
cases="$cases mdreclaimd"
capped=$(cat /tmp/wbps-mid-mdreclaimd)
# The bench's picture of the case: the victim's stall, the writer's dirty data
# and writes, and the cap, from the daemon's own history (vmtest keeps it
# where MDRECLAIM_VM_ARTIFACTS says).
if [ "$bench" = 1 ] && [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ] && [ -n "${MDR_ARTIFACTS:-}" ] &&
        command -v gnuplot > /dev/null; then
    "$MDCTL" plot /mdr-victim $plot_writer --since 40s -o "$MDR_ARTIFACTS/write-point-$fs.png" > /dev/null &&
        note "plot of the mdreclaimd case: write-point-$fs.png"
fi
# The writer's end (timeout kills dd): its cap rises to the drain rate, nine
# tenths of the device the daemon learnt above, while what it left is
# written, and goes once it is; lifted at once, that backlog would all queue
# in front of the victim (the worst op of a run came there before).
drained() { grep -q "ACTION=lift-cap.*what the cgroup left is written\|ACTION=lift-cap.*drain's time is up" /tmp/daemon.log; }
wait_for 70 drained
grep -E "ACTION=(drain-cap|lift-cap)" /tmp/daemon.log | tail -n 2 | sed 's/ CGROUP=.*//; s/^<[0-9]>/       daemon: /'
check "the writer's end raised its cap to the drain rate (drain-cap), not lifted at once" \
    grep -q "ACTION=drain-cap.*no process left" /tmp/daemon.log
check "... nor lifted as the cgroup emptied" test -z "$(grep 'ACTION=lift-cap.*no process left' /tmp/daemon.log)"
check "... and lifted once what it left was written" drained
[ "$bench" = 1 ] || check "... not at the drain's time limit" \
    test -z "$(grep "ACTION=lift-cap.*drain's time is up" /tmp/daemon.log)"
stop_daemon TERM
cp /tmp/daemon.log "/tmp/daemon-$fs.log"
[ -z "${MDR_ARTIFACTS:-}" ] || cp /tmp/daemon.log "$MDR_ARTIFACTS/daemon-$fs.log"
note "the writer's io.max wbps in the middle of the case: ${capped:-none}"
check "a cap held the writer in the middle of the case" test -n "$capped" -a "$capped" != max
check "a clean stop restored the writer's io.max" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
fi
if [ "$bench" = 0 ] || want mdreclaimd-qd; then
    daemon_case mdreclaimd-qd yes off
fi
if [ "$bench" = 1 ]; then
    # Another build of the daemon under the same defaults, for an A/B within one boot.
    if [ -n "${MDR_WP_DAEMON_B:-}" ]; then
        # A path the guest cannot run would make the case one with no daemon at all.
        [ -x "$MDR_WP_DAEMON_B" ] || fatal "MDR_WP_DAEMON_B=$MDR_WP_DAEMON_B: no such program in the guest (give an absolute path in MDRECLAIMD's directory)"
        MDRECLAIMD=$MDR_WP_DAEMON_B daemon_case mdreclaimd-b no default
    fi
    want mdreclaimd-lat && daemon_case mdreclaimd-lat no "${MDR_WP_LATENCY:-10ms}"
    want mdreclaimd-lat-qd && daemon_case mdreclaimd-lat-qd yes "${MDR_WP_LATENCY:-10ms}"
fi

if [ "$bench" = 0 ] || want kill; then
echo "== kill -9 while a cap is applied, then start again"
: > /tmp/daemon.log
start_daemon
start_contention 30 "kill test"
for _ in $(seq 120); do [ -n "$(wbps_now)" ] && [ "$(wbps_now)" != max ] && break; sleep 0.25; done
cap=$(wbps_now)
check "a cap was in place before the kill" test -n "$cap" -a "$cap" != max
stop_daemon KILL
left=$(wbps_now)
check "a cap outlived the killed daemon" test -n "$left" -a "$left" != max
check "the ledger recorded it" grep -q mdr-writer "$state/throttles"
end_contention
start_daemon
check "the next start restored the writer's io.max" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
# A kill may come while the worker steps memory.high down: the step in the file is ours too.
check "... and its memory.high" test "$(cat "$wcg/memory.high")" = max
check "... and said so" grep -q 'restore-after-restart\|left by a previous run' /tmp/daemon.log
stop_daemon TERM
fi

echo
echo "== results (isolation = victim ops / alone; latency = p99 / alone p99; conservation = writer MiB/s / kernel alone)"
ops() { sed -n 's/.*: \([0-9]*\) ops in.*/\1/p' "/tmp/case-$1"; }
p99() { sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' "/tmp/case-$1"; }
worst() { sed -n 's/.*worst \([0-9.]*\) ms.*/\1/p' "/tmp/case-$1"; }
printf '%-18s %9s %10s %10s %12s %14s\n' case "victim ops" isolation "p99 x" "worst ms" "writer MiB/s"
for c in $cases; do
    awk -v c="$c" -v o="$(ops "$c")" -v a="$(ops alone)" -v p="$(p99 "$c")" -v pa="$(p99 alone)" \
        -v w="$(worst "$c")" -v r="$(cat "/tmp/wrate-$c")" -v rk="$(cat /tmp/wrate-kernel)" 'BEGIN {
        printf "%-18s %9d %9.0f%% %10.1f %12.0f %9.2f (%3.0f%%)\n", c, o, 100 * o / a, p / pa, w, r, 100 * r / rk }'
done
# Issue 15's bar for each daemon case against the static 72 % cap: isolation at
# least as high, p99 and worst op no higher, the writer at 90 % of the cap's rate.
if [[ " $cases " == *" static-72 "* ]]; then
    for c in $cases; do
        [[ $c == mdreclaimd* ]] || continue
        awk -v c="$c" -v o="$(ops "$c")" -v os="$(ops static-72)" -v p="$(p99 "$c")" -v ps="$(p99 static-72)" \
            -v w="$(worst "$c")" -v ws="$(worst static-72)" -v r="$(cat "/tmp/wrate-$c")" \
            -v rs="$(cat /tmp/wrate-static-72)" 'BEGIN {
            miss = ""
            if (o < os) miss = miss " isolation"
            if (p > ps) miss = miss " p99"
            if (w > ws) miss = miss " worst"
            if (r < 0.9 * rs) miss = miss " writer"
            printf "%-18s vs static-72: ops %d vs %d, p99 %.1f vs %.1f ms, worst %.0f vs %.0f ms, writer %.0f%% of the cap'"'"'s: %s\n",
                c, o, os, p, ps, w, ws, 100 * r / rs, miss == "" ? "dominates" : "misses" miss }'
    done
fi
awk -v a="$(cat /tmp/wrate-writer-kernel)" -v b="$(cat /tmp/wrate-writer-mdreclaimd)" 'BEGIN {
    printf "writer alone: kernel %.2f MiB/s, with mdreclaimd %.2f MiB/s (%.0f%%)\n", a, b, 100 * b / a }'
# scaled A N D: A * N / D as an integer ("" when A is not a number: the check then fails)
scaled() { awk -v x="$1" -v n="$2" -v d="$3" 'BEGIN { if (x ~ /^[0-9]+(\.[0-9]+)?$/) printf "%d", x * n / d }'; }
# The suite's short form of issue 15's bar, on ext4: the default mode against
# the static 72 % cap in the same boot, one 10 s case each. Dominance itself
# is the bench's, on medians of three 24 s runs; one short run moves by more
# than the margins between the two (the first run of this check: the victim's
# ops 0.95x the cap's, p99 +0.2 ms, worst op +3 ms, the writer at 88 %). So
# each axis has a margin for that noise: ops at least 85 % of the cap's, p99
# at most half again the cap's plus 2 ms (a quarter and 1 ms failed a CI run,
# 19.4 against 14.0 ms, with the guard 4 % above the cap from a capacity
# learnt a tenth over what the device sustained that boot), the writer at
# 80 % of its rate under the cap. The worst op is one operation of a 10 s run, and the cap's swung
# from 157 to 652 ms between boots (ci29: 157, against the daemon's 402), so
# it is held to a bound of its own: under 1 s. A daemon that caps late
# or not at all fails it by far (the kernel alone, in the bench: a tenth of
# the cap's ops, a worst op of 6-8 s), and one that caps too hard fails the
# writer's line.
if [ "$bench" = 0 ] && [ "$fs" = ext4 ] && [[ " $cases " == *" static-72 "* ]] && [[ " $cases " == *" mdreclaimd "* ]]; then
    check_cmp "short form, ext4: the victim's ops with mdreclaimd at least 85 % of the static 72 % cap's" \
        "$(ops mdreclaimd)" -ge "$(scaled "$(ops static-72)" 85 100)"
    check_cmp "short form: its p99 at most the cap's plus a half and 2 ms (tenths of ms)" \
        "$(scaled "$(p99 mdreclaimd)" 10 1)" -le "$(scaled "$(p99 static-72)" 15 1 | awk 'NF { print $1 + 20 }')"
    check_cmp "short form: its worst op under 1 s (the kernel alone: 6-8 s) (tenths of ms)" \
        "$(scaled "$(worst mdreclaimd)" 10 1)" -lt 10000
    check_cmp "short form: the writer at 80 % of its rate under the cap or more (percent)" \
        "$(awk -v r="$(cat /tmp/wrate-mdreclaimd)" -v rs="$(cat /tmp/wrate-static-72)" 'BEGIN { if (rs > 0) printf "%d", 100 * r / rs }')" -ge 80
fi

# The short form of the second bar: the worst op with ManageQueueDepth=yes no
# longer than that of the best static setting (72 % and a queue of 4) in the
# same boot. In the bench's four ext4 boots the daemon's was 64-122 ms against
# the setting's 71-102, 1.7 times it at most in one run; a daemon whose queue
# stays deep waits behind it (the 72 % cap alone: 157-652 ms). So the margin
# is half the setting's figure and 50 ms.
if [ "$bench" = 0 ] && [ "$fs" = ext4 ] && [[ " $cases " == *" static-72-qd4 "* ]] && [[ " $cases " == *" mdreclaimd-qd "* ]]; then
    check_cmp "short form, ext4: the worst op with ManageQueueDepth=yes at most 1.5x that of 72 % with a queue of 4, plus 50 ms (tenths of ms)" \
        "$(scaled "$(worst mdreclaimd-qd)" 10 1)" -le "$(scaled "$(worst static-72-qd4)" 15 1 | awk 'NF { print $1 + 500 }')"
fi

check_cmp "the writer alone keeps at least 85 % of its rate with the daemon (percent)" \
    "$(awk -v a="$(cat /tmp/wrate-writer-kernel)" -v b="$(cat /tmp/wrate-writer-mdreclaimd)" 'BEGIN { printf "%d", 100 * b / a }')" -ge 85
if [ -e "/tmp/daemon-$fs.log" ]; then
    echo "== what the daemon did in the mdreclaimd case (first 14 cap events)"
    grep -E 'ACTION=(cap-writes|lift-cap)' "/tmp/daemon-$fs.log" | head -n 14 | sed 's/ CGROUP=.*//; s/^<[0-9]>/       daemon: /'
fi
grep -E 'cap-writes|lift-cap|restore' /tmp/daemon.log | tail -n 2 | sed 's/ CGROUP=.*//; s/^<[0-9]>/       daemon (last daemon run): /'
rm -f "/tmp/daemon-$fs.log"
rm -f "$mnt"/bulk "$mnt"/victim
}

# stop_under_writeback FS: SIGTERM while a writer floods FS beyond its dirty
# budget (memory.high, written by the worker, reclaims in the worker's own
# context and waits on writeback) and the victim stalls (io.max caps); twice.
throttled() { [ "$(cat "$wcg/memory.high")" != max ] || grep -q wbps= "$wcg/io.max"; }
stop_under_writeback() {
    local fs=$1 mnt=/mnt/$1 round t0 took high wmax rc
    echo "==== stop within 2 s under writeback on $fs"
    printf '[Policy]\nMatch=/mdr-writer\nMode=enforce\nPriority=10\nWriteRateMin=10%%\nDirtyLimit=32M\n' \
        > "$conf/etc/mdreclaim/policies.d/writer.conf"
    for round in 1 2; do
        : > /tmp/daemon.log
        start_daemon
        start_contention 40 "stop test"
        # A throttle in force, then a moment for the worker to be inside it.
        wait_for 30 throttled
        high=$(cat "$wcg/memory.high")
        note "$fs round $round: before the stop memory.high $high, io.max '$(cat "$wcg/io.max")', dirty $(mib "$(memstat "$wcg" file_dirty)") MiB, writeback $(mib "$(memstat "$wcg" file_writeback)") MiB"
        check "$fs round $round: a throttle was in force before the stop" throttled
        sleep 1.5
        t0=$(date +%s%N)
        kill -TERM "$daemon_pid"
        rc=0
        wait "$daemon_pid" || rc=$?
        took=$(( ($(date +%s%N) - t0) / 1000000 ))
        daemon_pid=
        note "$fs round $round: the daemon exited ${took} ms after SIGTERM"
        check_cmp "$fs round $round: exit within 2 s of SIGTERM under writeback (ms)" "$took" -le 2000
        check_cmp "$fs round $round: exit status" "$rc" -eq 0
        check "$fs round $round: memory.high restored" test "$(cat "$wcg/memory.high")" = max
        wmax=$(wbps_now)
        check "$fs round $round: io.max restored" test "$wmax" = "" -o "$wmax" = max
        end_contention
        rm -f "$mnt/bulk" "$mnt/victim"
        sync
    done
    grep -E 'stop|restor|abandon' /tmp/daemon.log | tail -n 4 | sed 's/ CGROUP=.*//; s/^<[0-9]>/       daemon: /'
}

for f in $MDR_FS; do
    one_fs "$f"
    [ "$bench" = 1 ] || break
done
case " $MDR_FS " in
*" btrfs "*)
    mnt=/mnt/btrfs
    devno=$(cat "/sys/class/block/$(basename "$(findmnt -no SOURCE "$mnt")")/dev")
    stop_under_writeback btrfs ;;
esac
finish
