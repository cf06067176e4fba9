#!/bin/bash
# Issue 39's run on real cgroups (Debian's 6.1 under qemu): the daemon beside
# N cgroups (MDR_OBS_CGROUPS, 10,000 by default), 100 of them governed. A
# benchmark, not a test: it prints figures and fails only when it cannot run.
#
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl \
#       flock /tmp/vm.lock tests/vm/vmtest --mem 4096 --timeout 1500 tests/bench/vm-scale.sh
#
# What it prints: what inotify reports for a mkdir and an rmdir on cgroupfs
# (the daemon's discovery rests on it) and its limits; the daemon's CPU over
# a minute idle, over a minute with a cgroup made or removed every 5 s, and
# over 20 s of `mdctl show` of names that are nowhere as an unprivileged user;
# its fds, PSS and the unreclaimable slab charged to its own cgroup; and how
# long a new cgroup takes to be counted (mkdir to `mdctl status`, which
# itself takes a while to start under TCG: an upper bound).
. "$MDR_VMDIR/scenarios/lib.sh"
need_daemon
MDCTL=${MDCTL:-$(dirname "$MDRECLAIMD")/../cli/mdctl}
[ -x "$MDCTL" ] || fatal "MDCTL is not set to a built mdctl (got '$MDCTL')"
command -v jq > /dev/null || fatal "jq is needed in the guest"
n=${MDR_OBS_CGROUPS:-10000}
conf=/tmp/mdr-conf
state=/tmp/mdr-state
sock=/tmp/mdr-control
log=/tmp/daemon.log
many=/sys/fs/cgroup/mdr-many
mdctl() { "$MDCTL" --socket "$sock" "$@"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

echo "guest: $(uname -r), nproc $(nproc), $(grep MemTotal /proc/meminfo | tr -s ' ')"
echo "== inotify on cgroupfs: fs.inotify.max_user_watches $(cat /proc/sys/fs/inotify/max_user_watches)," \
     "max_queued_events $(cat /proc/sys/fs/inotify/max_queued_events)"
python3 - <<'EOT'
import ctypes, os, struct, select
libc = ctypes.CDLL(None, use_errno=True)
IN = {0x100: "IN_CREATE", 0x200: "IN_DELETE", 0x400: "IN_DELETE_SELF", 0x8000: "IN_IGNORED",
      0x40000000: "IN_ISDIR", 0x40: "IN_MOVED_FROM", 0x80: "IN_MOVED_TO", 0x800: "IN_MOVE_SELF"}
fd = libc.inotify_init1(os.O_NONBLOCK)
parent = "/sys/fs/cgroup/mdr-ino"
os.makedirs(parent, exist_ok=True)
wp = libc.inotify_add_watch(fd, parent.encode(), 0x100 | 0x200 | 0x40 | 0x80 | 0xc00)
os.mkdir(parent + "/child")
wc = libc.inotify_add_watch(fd, (parent + "/child").encode(), 0x100 | 0x200 | 0xc00)
dirfd = os.open(parent + "/child", os.O_RDONLY | os.O_DIRECTORY)    # held, as for a governed cgroup
os.rmdir(parent + "/child")
def drain(what):
    select.select([fd], [], [], 1.0)
    try:
        buf = os.read(fd, 4096)
    except BlockingIOError:
        buf = b""
    off = 0
    while off < len(buf):
        wd, mask, cookie, ln = struct.unpack_from("iIII", buf, off)
        name = buf[off + 16:off + 16 + ln].rstrip(b"\0").decode()
        off += 16 + ln
        flags = "|".join(v for k, v in IN.items() if mask & k)
        print(f"       {what}: {'parent' if wd == wp else 'child'} watch: {flags} {name}")
drain("rmdir with the child's directory held open")
os.close(dirfd)
drain("after its fd was closed")
os.rmdir(parent)
EOT

echo "== $n cgroups below $many (100 governed)"
mkdir -p "$many/gov" && echo "+memory +io" > "$many/cgroup.subtree_control" &&
    echo "+memory +io" > "$many/gov/cgroup.subtree_control" || fatal "cannot create $many"
for ((i = 0; i < 100; i++)); do echo "$many/gov/g$i"; done | xargs mkdir
for ((i = 100; i < n; i++)); do echo "$many/c$i"; done | xargs mkdir
note "$(find /sys/fs/cgroup -mindepth 1 -type d | wc -l) cgroups in the tree"

mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=1s\n' > "$conf/etc/mdreclaim/mdreclaimd.conf"
printf '[Policy]\nMatch=/mdr-many/gov/*\nMode=observe\n' > "$conf/etc/mdreclaim/policies.d/many.conf"
dcg=$(new_cgroup mdr-daemon) || fatal "cannot create the daemon's cgroup"
started=$(date +%s.%N)
(echo "$BASHPID" > "$dcg/cgroup.procs" && exec "$MDRECLAIMD" --cgroup-root /sys/fs/cgroup \
    --config-root "$conf" --state-dir "$state" --control-socket "$sock" 2> "$log") &
daemon=$!
wait_for 600 mdctl status > /dev/null 2>&1 || fatal "the daemon did not answer"
note "the control socket answered $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the start"
sleep "${MDR_OBS_SETTLE:-40}"

# window SECONDS LABEL: the daemon's CPU over the window, as a share of one core.
window() {
    local t0 t1
    t0=$(cpu_ticks "$daemon")
    sleep "$1"
    t1=$(cpu_ticks "$daemon")
    echo "cpu: $2 $(awk -v d=$(( t1 - t0 )) -v hz="$hz" -v s="$1" 'BEGIN { printf "%.2f", d * 100 / hz / s }')" \
         "% of a core ($(( t1 - t0 )) ticks in $1 s)"
}
resources() {
    echo "resources: cgroups $(mdctl --json status | jq .cgroups) fds $(ls "/proc/$daemon/fd" | wc -l)" \
         "pss_kib $(awk '$1 == "Pss:" { print $2 }' "/proc/$daemon/smaps_rollup")" \
         "rss_kib $(awk '$1 == "VmRSS:" { print $2 }' "/proc/$daemon/status")" \
         "slab_unreclaimable_kib $(( $(memstat "$dcg" slab_unreclaimable) / 1024 ))"
}
resources
window 60 "idle"

echo "== a new cgroup counted (mkdir to mdctl status; mdctl's own start included)"
for i in 1 2 3 4 5; do
    before=$(mdctl --json status | jq .cgroups)
    t0=$(date +%s%N)
    mkdir "$many/new$i"
    while [ "$(mdctl --json status | jq .cgroups)" -le "$before" ]; do :; done
    echo "seen: new$i $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    sleep 1
done
t0=$(date +%s%N); mdctl --json status > /dev/null; note "one mdctl status alone: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
note "slow samples, the last round: $(mdctl --json status | jq -r 'if .cold_round_usec > 0 then
                                        "took \(.cold_round_usec / 1e6 | floor) s" else "none done yet" end')" \
     "($(mdctl --json status | jq .cold_samples_deferred) samples put off by ColdSampleBudget=)"

echo "== churn: a cgroup made or removed every 5 s"
( for i in $(seq 1 6); do mkdir "$many/churn$i"; sleep 5; rmdir "$many/churn$i"; sleep 5; done ) &
churn=$!
window 60 "churn"
wait "$churn"

echo "== 20 s of mdctl show of names that are nowhere, as nobody"
( end=$(( $(date +%s) + 20 )); while [ "$(date +%s)" -lt "$end" ]; do
    setpriv --reuid=65534 --regid=65534 --clear-groups "$MDCTL" --socket "$sock" show "nosuch-$RANDOM.service" \
        > /dev/null 2>&1; done ) &
window 20 "lookups"
resources
grep -c "Walked the tree" "$log" | sed 's/^/walks logged (debug only): /'

kill -TERM "$daemon"
wait "$daemon"
note "daemon log (last lines):"; tail -n 5 "$log" | sed 's/^/       /'
find "$many" -mindepth 1 -depth -type d -exec rmdir {} + 2> /dev/null
rmdir "$many" 2> /dev/null
pass "the run finished"
finish
