#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# SIGKILL at random moments, while every kind of throttle is in force
# (issue 38): after each restart every knob is what it was before the
# daemon touched it, and no ledger record is left over.
#
# The workloads run throughout, on a 16 MiB/s disk with swap on:
#  - a Protect=yes victim (fdatasync loop): its writers' io.max caps
#    (GuardRate=), the disk's queue made shallow (ManageQueueDepth=yes:
#    nr_requests, max_sectors_kb);
#  - a dd writer under DirtyLimit=: its memory.high budget (write point);
#  - an allocator with AllocationThrottle=yes, the host held "under
#    pressure" (MemAvailableMin=99%): its allocation throttle (memory.high,
#    allocation point);
#  - a cache reader asked for cache-only reclaims in a loop: memory.swap.max
#    held at 0 for each one's length (swap hold).
# The operator's own values (memory.high, memory.swap.max) are set on the
# cgroups first, so "as before" is a value, not only "max".
# Each of MDR_KR_KILLS (10 in the suite; more for a long form) rounds: start the daemon; wait until its ledgers
# hold every kind (at most 20 s), then a random 0-500 ms; SIGKILL; the
# kinds recorded at the kill are counted. Then a daemon with the same
# ledgers and no policy (its start restores, it sets nothing) must leave
# every knob as first read and both ledgers empty; it is stopped and the
# next round begins.
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl tests/vm/vmtest kill-restore
. "$(dirname "$0")/lib.sh"
need_daemon
[ -x "${MDCTL:-}" ] || fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
mnt=/mnt/ext4
kills=${MDR_KR_KILLS:-10}
conf=/tmp/mdr-conf
bare=/tmp/mdr-bare      # the restoring daemon's configuration: no policy
state=/tmp/mdr-state
log=/tmp/daemon.log
sock=$state/control
mkdir -p "$conf/etc/mdreclaim/policies.d" "$bare/etc/mdreclaim" "$state"
cat > "$conf/etc/mdreclaim/mdreclaimd.conf" <<'EOT'
[Daemon]
Interval=250ms
RescanInterval=1s
ColdSampleInterval=500ms
[WritePoint]
ManageQueueDepth=yes
GuardRate=10%
CapHoldTime=10min
[AllocationPoint]
MemAvailableMin=99%
ThrottleHoldTime=10min
EOT
printf '[Daemon]\nInterval=250ms\n' > "$bare/etc/mdreclaim/mdreclaimd.conf"
policy() { local n=$1; shift; { echo '[Policy]'; printf '%s\n' "$@"; } > "$conf/etc/mdreclaim/policies.d/$n.conf"; }
policy victim Match=/mdr-victim Protect=yes Mode=enforce Priority=90
policy writer Match=/mdr-writer Mode=enforce Priority=10 DirtyLimit=16M
policy alloc Match=/mdr-alloc Mode=enforce Priority=50 AllocationThrottle=yes
policy cache Match=/mdr-cache Mode=enforce Priority=60

disk=$(basename "$(findmnt -no SOURCE "$mnt")")
queue=/sys/block/$disk/queue
cgs=(mdr-victim mdr-writer mdr-alloc mdr-cache)
# Every knob the daemon may touch here, one line each.
knobs() {
    local c f v
    printf 'nr_requests %s\nmax_sectors_kb %s\n' "$(< $queue/nr_requests)" "$(< $queue/max_sectors_kb)"
    for c in "${cgs[@]}"; do
        for f in memory.high memory.swap.max io.max; do
            v=; read -r -d '' v < "/sys/fs/cgroup/$c/$f"
            printf '%s/%s %s\n' "$c" "$f" "${v//$'\n'/ }"
        done
    done
}
# The kinds the two ledgers hold now: io.max, budget (memory.high asked by the
# write point), alloc (memory.high asked by the allocation point), swap,
# nr_requests, max_sectors_kb.
kinds() {
    cat "$state/throttles" "$state/queues" 2> /dev/null | awk -F'\t' '
        $1 ~ /^[0-9]+$/ {
            if ($2 == "memory.high") { if ($7 != "max") print "budget"; if ($10 != "max") print "alloc" }
            else if ($2 == "memory.swap.max") print "swap"
            else print $2 }' | sort -u | paste -sd ' '
}
all_kinds="alloc budget io.max max_sectors_kb nr_requests swap"
records() { cat "$state/throttles" "$state/queues" 2> /dev/null | grep -c '^[0-9]'; }

echo "==== the workloads, with the operator's values"
fallocate -l 384M $mnt/swapfile && chmod 600 $mnt/swapfile && mkswap $mnt/swapfile > /dev/null &&
    swapon $mnt/swapfile || fatal "cannot turn swap on"
head -c 96M /dev/zero > $mnt/clean && sync
for c in "${cgs[@]}"; do new_cgroup "$c" > /dev/null || fatal "cannot create $c"; done
echo 943718400 > /sys/fs/cgroup/mdr-writer/memory.high
echo 1610612736 > /sys/fs/cgroup/mdr-alloc/memory.high
echo 314572800 > /sys/fs/cgroup/mdr-cache/memory.swap.max
# Where memory.reclaim takes swappiness= (6.12), a cache-only reclaim asks
# for it and holds no memory.swap.max: no swap hold to be killed under.
# Only a kernel without it refuses the argument (EINVAL); an empty cgroup's
# reclaim may fail otherwise (EAGAIN), the argument taken.
swap_hold=no
probe=$( { echo "0 swappiness=0" > /sys/fs/cgroup/mdr-cache/memory.reclaim; } 2>&1 ) ||
    [[ $probe != *"Invalid argument"* ]] || swap_hold=yes
if [ "$swap_hold" = no ]; then
    all_kinds=${all_kinds% swap}
    note "memory.reclaim takes swappiness= here: cache-only reclaims hold no memory.swap.max"
fi
in_cgroup /sys/fs/cgroup/mdr-victim python3 "$MDR_VMDIR/helpers/victim" $mnt/victim 3600 > /dev/null &
in_cgroup /sys/fs/cgroup/mdr-writer bash -c \
    "while :; do dd if=/dev/zero of=$mnt/bulk bs=1M count=512 status=none; done" &
# Grows 2 MiB every 0.25 s and gives back half at 256 MiB: always growing
# somewhere, never past the swap it may be pushed into.
in_cgroup /sys/fs/cgroup/mdr-alloc python3 -c '
import time
chunks = []
while True:
    b = bytearray(2 << 20)
    for i in range(0, len(b), 4096): b[i] = 1
    chunks.append(b)
    if len(chunks) >= 128: del chunks[:64]
    time.sleep(0.25)' &
in_cgroup /sys/fs/cgroup/mdr-cache bash -c "while :; do cat $mnt/clean > /dev/null; sleep 0.5; done" &
# Cache-only reclaims, one after another, whenever a daemon with the
# policies answers (the restoring one listens elsewhere).
(while :; do
    MDCTL_SOCKET=$sock "$MDCTL" reclaim /mdr-cache --cache-only --bytes 48M --wait > /dev/null 2>&1 || sleep 0.2
done) &
loop_pid=$!
sleep 2
knobs > /tmp/knobs.orig
sed 's/^/       /' /tmp/knobs.orig

start() { # CONFIG_ROOT SOCKET
    "$MDRECLAIMD" --config-root "$1" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
        --control-socket "$2" --log-level info 2>> "$log" &
    daemon_pid=$!
}
answers() { MDCTL_SOCKET=$1 "$MDCTL" status > /dev/null 2>&1; }
has_all() { [ "$(kinds)" = "$all_kinds" ]; }
restored() { knobs > /tmp/knobs.now && cmp -s /tmp/knobs.orig /tmp/knobs.now && [ "$(records)" -eq 0 ]; }

echo "==== $kills rounds: SIGKILL at a random moment, then a start that restores"
declare -A seen=()
passed_rounds=0 all_at_kill=0
t0=$(now)
for round in $(seq "$kills"); do
    start "$conf" "$sock"
    wait_for 20 has_all
    sleep "0.$(printf '%03d' $((RANDOM % 500)))"
    at_kill=$(kinds)
    n_rec=$(records)
    kill -KILL "$daemon_pid"; wait "$daemon_pid" 2> /dev/null
    for k in $at_kill; do seen[$k]=$(( ${seen[$k]:-0} + 1 )); done
    [ "$at_kill" = "$all_kinds" ] && all_at_kill=$((all_at_kill + 1))
    start "$bare" /tmp/bare.sock
    ok=1
    wait_for 30 answers /tmp/bare.sock || { ok=0; note "round $round: the restoring daemon did not answer"; }
    # A write the kernel makes wait (nr_requests drains the queue first) may
    # still be on its way when the socket answers: up to 10 s for the knobs.
    wait_for 10 restored
    knobs > /tmp/knobs.now
    left=$(records)
    kill -TERM "$daemon_pid"; wait "$daemon_pid" 2> /dev/null
    if ! cmp -s /tmp/knobs.orig /tmp/knobs.now; then
        ok=0; diff /tmp/knobs.orig /tmp/knobs.now | grep '^>' | sed "s/^/       round $round: /"
    fi
    [ "$left" -eq 0 ] || { ok=0; note "round $round: $left ledger records left"; }
    [ "$ok" = 1 ] && passed_rounds=$((passed_rounds + 1))
    note "round $round: killed holding $n_rec records ($at_kill); restored: $([ "$ok" = 1 ] && echo yes || echo NO)"
done
note "$kills rounds in $(since "$t0") s"
kill "$loop_pid" 2> /dev/null
for c in "${cgs[@]}"; do echo 1 > "/sys/fs/cgroup/$c/cgroup.kill"; done
swapoff $mnt/swapfile 2> /dev/null
check_cmp "rounds whose restart put every knob back and left no record" "$passed_rounds" -eq "$kills"
for k in $all_kinds; do note "kills with $k in force: ${seen[$k]:-0} of $kills"; done
check_cmp "kills with every kind in force" "$all_at_kill" -ge $((kills / 2))
check_cmp "kills with an io.max cap in force" "${seen[io.max]:-0}" -eq "$kills"
check_cmp "kills with a memory.high budget in force" "${seen[budget]:-0}" -eq "$kills"
check_cmp "kills with an allocation throttle in force" "${seen[alloc]:-0}" -eq "$kills"
check_cmp "kills with a shallow queue in force" "${seen[nr_requests]:-0}" -eq "$kills"
if [ "$swap_hold" = yes ]; then
    check_cmp "kills with a swap hold in force" "${seen[swap]:-0}" -ge 1
else
    check_cmp "no swap hold where memory.reclaim takes swappiness=" "${seen[swap]:-0}" -eq 0
fi
grep -c 'restore-after-restart\|left by a previous run' "$log" | sed 's/^/       restores said in the log: /'
grep -iE 'error|cannot|refuses' "$log" | sort | uniq -c | sort -rn | head -n 5 | cut -c 1-200 | sed 's/^/       log: /'
finish
