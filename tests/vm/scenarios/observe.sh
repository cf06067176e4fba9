#!/bin/bash
# vm-fs: ext4
# The observation core on a real kernel, with the daemon running:
#  (a) a memory hog in a cgroup whose policy has PressureTarget= fires the
#      daemon's PSI trigger there, and the daemon logs the `pressure` event
#      within one window of the kernel firing it;
#  (b) a writer's file_dirty and write rate appear against its own cgroup and
#      the disk's major:minor in `--sample-once --json`, and not against an
#      idle neighbour;
#  (c) removing the cgroup whose trigger is armed closes that trigger: the
#      daemon keeps running, logs no burst of lines, spends no CPU spinning,
#      and its status shows one trigger fewer.
# It also measures the trigger-to-handler latency (issue 4, "Cost"): a probe
# arms a trigger identical to the daemon's on the same file and records when
# its poll() returns; the daemon's `pressure` event carries the CLOCK_REALTIME
# at which its handler logged it (mdctl events --json). The kernel wakes both
# from the same update, so the difference is the daemon's wake-up plus its
# handler's work, less the probe's own wake-up.
#
# As "observe" (the VM suite) the hog runs about 12 s; as "bench-observe" (the
# same script) it runs 60 s, for more samples of the latency:
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl tests/vm/vmtest bench-observe
#
# MDR_OBS_CGROUPS="N [M ...]" (increasing) runs it beside many cgroups (issue
# 18): N empty cgroups below /mdr-many, of which the first 100 (or all, if
# fewer) are under a policy in observe mode that arms no trigger, so they are
# governed (sampled every tick from kept files) and the rest are sampled now
# and then. For every count but the last the daemon is started, measured once
# its first ticks are done (fds, PSS, the kernel memory charged to its own
# cgroup) and stopped; the scenario then runs at the last count, measured the
# same way. Give the guest memory for them (--mem 4096 at 10,000).
. "$(dirname "$0")/lib.sh"
need_daemon
MDCTL=${MDCTL:-$(dirname "$MDRECLAIMD")/../cli/mdctl}
[ -x "$MDCTL" ] || fatal "MDCTL is not set to a built mdctl (got '$MDCTL')"
command -v jq > /dev/null || fatal "jq is needed in the guest"

case $MDR_SCENARIO_NAME in
bench-*) probe_secs=60 ;;
*) probe_secs=10 ;;
esac
conf=/tmp/mdr-conf
state=/tmp/mdr-state
sock=/tmp/mdr-control
log=/tmp/daemon.log
mnt=/mnt/ext4
dev=$(findmnt -no SOURCE "$mnt")
devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
mdctl() { "$MDCTL" --socket "$sock" "$@"; }
triggers() { mdctl --json status | jq -r '.psi_triggers // empty'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
kill_cgroup() {
    local pid
    for pid in $(cat "$1/cgroup.procs"); do kill -KILL "$pid" 2>/dev/null; done
    wait_for 10 test -z "$(cat "$1/cgroup.procs")"
}

hog=$(new_cgroup mdr-hog) || fatal "cannot create the hog's cgroup"
vcg=$(new_cgroup mdr-victim) || fatal "cannot create the victim's cgroup"
wcg=$(new_cgroup mdr-writer) || fatal "cannot create the writer's cgroup"

mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
cat > "$conf/etc/mdreclaim/mdreclaimd.conf" <<EOT
[Daemon]
Interval=1s
RescanInterval=2s
PressureWindow=1s
EOT
# Observe mode: triggers are armed and decisions logged, nothing is written,
# so the hog and the writer run as the kernel alone would let them.
printf '[Policy]\nMatch=/mdr-hog\nMode=observe\nPressureTarget=10%%\n' \
    > "$conf/etc/mdreclaim/policies.d/hog.conf"
printf '[Policy]\nMatch=/mdr-victim\nMode=observe\nProtect=yes\n' \
    > "$conf/etc/mdreclaim/policies.d/victim.conf"

# The daemon runs in a cgroup of its own, so that the kernel memory its open
# files hold is charged there and can be read.
dcg=$(new_cgroup mdr-daemon) || fatal "cannot create the daemon's cgroup"
start_daemon() {
    (echo "$BASHPID" > "$dcg/cgroup.procs" && exec "$MDRECLAIMD" --cgroup-root /sys/fs/cgroup \
        --config-root "$conf" --state-dir "$state" --control-socket "$sock" --log-level debug 2> "$log") &
    daemon=$!
}
# After its first ticks (a cold interval covers every cgroup once): fds, PSS,
# and the unreclaimable slab charged to its cgroup.
measure_daemon() {
    local fds pss slab ticks
    sleep "${MDR_OBS_SETTLE:-40}"
    fds=$(ls "/proc/$daemon/fd" | wc -l)
    pss=$(awk '$1 == "Pss:" { print $2 }' "/proc/$daemon/smaps_rollup")
    slab=$(memstat "$dcg" slab_unreclaimable)
    ticks=$(cpu_ticks "$daemon")
    note "resources at $1 cgroups (+$(( $(find /sys/fs/cgroup -mindepth 1 -type d | wc -l) - $1 )) others), "\
"${MDR_OBS_SETTLE:-40} s after start: $fds fds, PSS ${pss} KiB, slab_unreclaimable of its cgroup" \
        "$(( slab / 1024 )) KiB, CPU since start $ticks ticks of $(getconf CLK_TCK)/s"
    echo "resources: cgroups $1 fds $fds pss_kib $pss slab_kib $(( slab / 1024 ))"
}
many=/sys/fs/cgroup/mdr-many
# make_many N: grows /mdr-many to N cgroups (the first 100 in gov/, governed).
make_many() {
    local i n_gov=$(( $1 < 100 ? $1 : 100 ))
    if [ ! -d "$many" ]; then
        mkdir "$many" "$many/gov" && echo "+memory +io" > "$many/cgroup.subtree_control" &&
            echo "+memory +io" > "$many/gov/cgroup.subtree_control" || fatal "cannot create $many"
        printf '[Policy]\nMatch=/mdr-many/gov/*\nMode=observe\n' > "$conf/etc/mdreclaim/policies.d/many.conf"
    fi
    for ((i = 0; i < n_gov; i++)); do [ -d "$many/gov/g$i" ] || echo "$many/gov/g$i"; done | xargs -r mkdir
    for ((i = n_gov; i < $1; i++)); do [ -d "$many/c$i" ] || echo "$many/c$i"; done | xargs -r mkdir
    [ "$(find "$many" -mindepth 1 -type d | wc -l)" -ge "$1" ] || fatal "cannot create $1 cgroups in $many"
}
n_many=
for n in ${MDR_OBS_CGROUPS:-}; do
    [ -n "$n_many" ] || echo "== beside many cgroups: ${MDR_OBS_CGROUPS}"
    make_many "$n"
    n_many=$n
    [ "$n" = "${MDR_OBS_CGROUPS##* }" ] && break
    start_daemon
    wait_for 600 socket_up || fatal "the daemon's control socket did not answer at $n cgroups"
    measure_daemon "$n"
    kill -TERM "$daemon"
    wait "$daemon"
done

echo "== the daemon, with a memory trigger on /mdr-hog and an io trigger on /mdr-victim"
start_daemon
check "the control socket answers" wait_for $(( 30 + ${n_many:-0} / 50 )) socket_up
armed_hog() { grep -q "PSI trigger armed on /mdr-hog's memory.pressure" "$log"; }
armed_victim() { grep -q "PSI trigger armed on /mdr-victim's io.pressure" "$log"; }
check "a memory trigger is armed on /mdr-hog" wait_for 10 armed_hog
check "an io trigger is armed on /mdr-victim" wait_for 10 armed_victim
grep 'PSI trigger armed' "$log" | sed 's/^/       daemon: /'
spec=$(sed -n "s|.*PSI trigger armed on /mdr-hog's memory.pressure: some \([0-9]*\)us per \([0-9]*\)us.*|some \1 \2|p" "$log" | tail -n 1)
window_us=${spec##* }
[ -n "$spec" ] || fatal "the daemon's trigger on /mdr-hog is not in its log"
[ -z "$n_many" ] || measure_daemon "$n_many"
n_before=$(triggers)
check_cmp "status counts the host's two triggers and the two cgroups' (armed)" "${n_before:-0}" -eq 4

echo "== (a) a memory hog in /mdr-hog, under memory.high"
echo 48M > "$hog/memory.high"
rm -f /tmp/probe-armed
# The probe runs SCHED_FIFO, so that it wakes before the daemon and its
# timestamp is close to the kernel's update: the figure is then the daemon's.
chrt -f 50 python3 "$MDR_VMDIR/helpers/psi-probe" "$hog/memory.pressure" "$spec" "$probe_secs" /tmp/probe-armed \
    > /tmp/probe.out &
probe=$!
# Under TCG on a loaded host python's start alone has taken seconds; a probe
# that is still not armed after 30 s says where it is before the scenario ends.
if ! wait_for 30 test -e /tmp/probe-armed; then
    note "probe (pid $probe): $(tr '\0' ' ' < "/proc/$probe/cmdline" 2> /dev/null)"
    note "state: $(awk '{ print $3 }' "/proc/$probe/stat" 2> /dev/null), wchan: $(cat "/proc/$probe/wchan" 2> /dev/null)"
    sed 's/^/       kernel stack: /' "/proc/$probe/stack" 2> /dev/null
    kill -KILL "$probe" 2> /dev/null
    fatal "the probe's trigger was not armed within 30 s"
fi
sleep 1.5   # both triggers see an idle window before the stall begins
# (in a subshell whose stderr is dropped: bash would report the KILL below)
(in_cgroup "$hog" timeout $((probe_secs + 30)) stress-ng --vm 1 --vm-bytes 160M --vm-keep \
    --timeout $((probe_secs + 20))s --quiet) 2> /dev/null &
hogpid=$!
# Bursts: the hog runs 3 s, then is frozen 2.5 s (cgroup.freeze; a frozen
# task does not stall). Under steady pressure the two triggers' once-per-window
# rate limits drift apart and fire at different updates; after an idle gap
# longer than the window both restart their windows at the same update, so
# the first event of each burst is the same kernel event for both.
(while kill -0 "$probe" 2>/dev/null; do
    sleep 3; echo 1 > "$hog/cgroup.freeze"; sleep 2.5; echo 0 > "$hog/cgroup.freeze"
done) &
toggler=$!
wait "$probe"
probe_rc=$?
kill "$toggler" 2>/dev/null; wait "$toggler" 2>/dev/null
echo 0 > "$hog/cgroup.freeze"
kill_cgroup "$hog"
wait "$hogpid" 2>/dev/null
check_cmp "the probe's identical trigger fired under the hog (exit code)" "$probe_rc" -eq 0
n_fired=$(grep -c '^fired' /tmp/probe.out)
n_logged=$(grep 'ACTION=pressure' "$log" | grep -c 'CGROUP=/mdr-hog ')
note "probe: $n_fired events; daemon: $n_logged pressure events logged for /mdr-hog"
check_cmp "the daemon logged pressure events for /mdr-hog" "$n_logged" -gt 0
grep 'ACTION=pressure' "$log" | grep 'CGROUP=/mdr-hog ' | head -n 2 | sed 's/^/       daemon: /'
mdctl --json events > /tmp/events.json
jq -r '.events[] | select(.action == "pressure" and .cgroup == "/mdr-hog") | .realtime_usec' \
    /tmp/events.json > /tmp/daemon-times
# Pairs each probe event with the daemon's nearest event (half a window at
# most apart). Prints: the first event's delay (ms); then, over the first event
# of each burst (the probe's previous event 1.5 windows or more before), the
# pairs, min, median, max (ms); then the same over all events.
python3 - "$window_us" /tmp/probe.out /tmp/daemon-times > /tmp/latency <<'EOF'
import sys
win = int(sys.argv[1])
probe = [int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("fired")]
daemon = sorted(int(l) for l in open(sys.argv[3]) if l.strip())
first = f"{(daemon[0] - probe[0]) / 1000:.2f}" if probe and daemon else "none"
def pairs(ps):
    d = []
    for p in ps:
        near = min(daemon, key=lambda t: abs(t - p), default=None)
        if near is not None and abs(near - p) <= win // 2:
            d.append((near - p) / 1000)
    d.sort()
    if not d:
        return "0 - - -"
    return f"{len(d)} {d[0]:.2f} {d[len(d) // 2]:.2f} {d[-1]:.2f}"
bursts = [p for i, p in enumerate(probe) if i == 0 or p - probe[i - 1] >= win * 3 // 2]
print(first, pairs(bursts), pairs(probe))
EOF
read -r first bpairs bmin bmed bmax pairs lmin lmed lmax < /tmp/latency
# A daemon that logs when its trigger woke the loop (debug: "trigger #N woke
# the loop at Tus, handler ran A..Bus", CLOCK_MONOTONIC) gives the figure
# itself: its wake-up against the probe's, and its handler's start and end.
grep -o "/mdr-hog: memory trigger #[0-9]* woke the loop at [0-9]*us, handler ran [0-9]*\.\.[0-9]*us" "$log" |
    sed 's/.* at \([0-9]*\)us, handler ran \([0-9]*\)\.\.\([0-9]*\)us/\1 \2 \3/' > /tmp/daemon-wakes
if [ -s /tmp/daemon-wakes ]; then
    python3 - "$window_us" /tmp/probe.out /tmp/daemon-wakes <<'EOF'
import sys
win = int(sys.argv[1])
probe = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("fired")]
wakes = [tuple(map(int, l.split())) for l in open(sys.argv[3]) if l.strip()]
wake, start, run = [], [], []
for p in probe:
    w = min(wakes, key=lambda x: abs(x[0] - p), default=None)
    if w and abs(w[0] - p) <= win // 2:
        wake.append((w[0] - p) / 1000); start.append((w[1] - p) / 1000); run.append((w[2] - w[1]) / 1000)
def s(d):
    d = sorted(d)
    return f"min {d[0]:.2f}, median {d[len(d) // 2]:.2f}, max {d[-1]:.2f}" if d else "-"
print(f"       daemon's own times, {len(wake)} pairs (ms after the probe's wake-up): loop woke {s(wake)}; "
      f"handler began {s(start)}; handler ran for {s(run)}")
EOF
fi
# A daemon that times its ticks (debug: "Tick N: S slices, the longest Aus"):
# how long one stretch of its own sampling kept the loop from a wake-up.
grep -o "Tick [0-9]*: [0-9]* slices, the longest [0-9]*us" "$log" | awk '{ sub(/us$/, "", $7); print $3, $7 }' > /tmp/ticks
if [ -s /tmp/ticks ]; then
    python3 - /tmp/ticks <<'EOF'
import sys
t = [tuple(map(int, l.split()[:2])) for l in open(sys.argv[1]) if l.strip()]
sl = sorted(x[0] for x in t); lo = sorted(x[1] / 1000 for x in t)
print(f"       the daemon's ticks, {len(t)}: slices per tick median {sl[len(sl) // 2]}, max {sl[-1]}; "
      f"longest slice of a tick (ms) median {lo[len(lo) // 2]:.2f}, max {lo[-1]:.2f}")
EOF
fi
note "first event: the daemon's came ${first} ms after the probe's"
note "first event of each burst, $bpairs bursts (ms): min $bmin, median $bmed, max $bmax"
note "all $pairs paired events, bursts or not (ms): min $lmin, median $lmed, max $lmax"
echo "latency: trigger $spec on a cgroup's memory.pressure; first event of each burst, $bpairs bursts, ms: min $bmin median $bmed max $bmax"
# One window (the trigger's own rate limit) is the margin: the daemon's first
# event must come from the same kernel update as the probe's, not a later one.
check "the daemon's first pressure event on /mdr-hog is within one window of the probe's (ms)" \
    awk -v f="$first" -v w="$window_us" 'BEGIN { exit !(f != "none" && f * 1000 < w && f * 1000 > -w) }'
check_cmp "most probe events have a daemon event beside them (pairs vs half the probe's events)" \
    "$pairs" -ge $(( (n_fired + 1) / 2 ))

echo "== (b) a writer's dirty data and write rate, by cgroup and device ($devno)"
# Background writeback from 32 MiB of dirty data on, so that the writer's
# pages reach the disk while it writes (1 GiB guest: the default would wait).
sysctl -q -w vm.dirty_background_bytes=33554432
(in_cgroup "$wcg" timeout 40 dd if=/dev/zero of="$mnt/bulk" bs=1M count=2000 status=none) 2> /dev/null &
writer=$!
sleep 4
"$MDRECLAIMD" --cgroup-root /sys/fs/cgroup --sample-once --json --sample-window 2s > /tmp/sample.json
rc=$?
check_cmp "--sample-once --json beside the running daemon exits 0" "$rc" -eq 0
kill_cgroup "$wcg"
wait "$writer" 2>/dev/null
q() { jq -r "$@" /tmp/sample.json; }
w='.cgroups[] | select(.path == "/mdr-writer")'
v='.cgroups[] | select(.path == "/mdr-victim")'
dirty=$(q "$w | .file_dirty")
wrate=$(q --arg d "$devno" "[$w | .signals.devices[]? | select(.device == \$d) | .wbytes_per_sec][0] // 0 | floor")
vrate=$(q --arg d "$devno" "[$v | .signals.devices[]? | select(.device == \$d) | .wbytes_per_sec][0] // 0 | floor")
note "/mdr-writer: file_dirty $(mib "${dirty:-0}") MiB, writes on $devno $(mib "${wrate:-0}") MiB/s; /mdr-victim: $vrate B/s"
q "$w | .signals.devices" | tr -d ' \n'; echo
check_cmp "the writer's file_dirty is reported (bytes)" "${dirty:-0}" -gt 0
check_cmp "the writer's wbytes_per_sec on $devno is reported (bytes/s)" "${wrate:-0}" -gt 0
check_cmp "the idle neighbour has no writes on $devno (bytes/s)" "${vrate:-0}" -eq 0
rm -f "$mnt/bulk"

echo "== (c) removing /mdr-hog while its trigger is armed"
sleep 2
l0=$(wc -l < "$log")
sleep 3
l1=$(wc -l < "$log")
quiet=$((l1 - l0))
c0=$(cpu_ticks "$daemon")
rmdir "$hog"
check "the cgroup is gone" test ! -d "$hog"
one_fewer() { [ "$(triggers)" = $((n_before - 1)) ]; }
check "status shows one trigger fewer" wait_for 15 one_fewer
sleep 3
l3=$(wc -l < "$log")
c1=$(cpu_ticks "$daemon")
after=$((l3 - l1))
note "log lines: $quiet in 3 s before the removal, $after from the removal to 3 s after the status changed"
note "daemon CPU from the removal on: $((c1 - c0)) ticks of $(getconf CLK_TCK)/s"
check "the daemon is still running" kill -0 "$daemon"
check "status still answers" socket_up
check_cmp "no burst of log lines after the removal (lines)" "$after" -le $((quiet * 3 + 20))
check_cmp "no error-level lines" "$(grep -c '^<[0-3]>' "$log")" -eq 0
ticks=$(getconf CLK_TCK)
check_cmp "the daemon did not spin (CPU ticks, well under the seconds elapsed)" $((c1 - c0)) -lt $((ticks * 4))
grep -E 'mdr-hog' "$log" | grep -v 'ACTION=pressure\|ACTION=' | tail -n 3 | sed 's/^/       daemon: /'
note "$(mdctl status | grep -i 'PSI')"

kill -TERM "$daemon"
wait "$daemon"
check_cmp "the daemon stops cleanly (exit code)" "$?" -eq 0
rmdir "$vcg" "$wcg" 2>/dev/null
finish
