#!/bin/bash
# vm-fs: ext4
# Bench (not in the suite): swap on in the guest (a swap file on the test
# disk), and what a cache-only reclaim swaps out on a kernel whose
# memory.reclaim takes no swappiness= (6.1). A cgroup holds both anonymous
# memory and clean cache (its memory.swap.max set to 300M by "the operator"),
# then is reclaimed, cache only, in one of two ways, alternated (ABAB):
#  - hold on: `mdctl reclaim CGROUP --cache-only --wait`: the daemon asks for
#    the clean cache and reclaimable slab and holds memory.swap.max at 0 while
#    its worker is in memory.reclaim;
#  - hold off: the same size written to memory.reclaim by hand, as the daemon
#    did before the hold (the request bounded by the clean cache alone).
# pswpout deltas from /proc/vmstat, in pages; memory.swap.max sampled every
# 50 ms during the reclaim, and after it (it must be exactly 300M again).
#   MDRECLAIMD=... MDCTL=... tests/vm/vmtest --timeout 600 bench-alloc-swap
. "$(dirname "$0")/lib.sh"
need_daemon
[ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ] || fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
mdctl() { "$MDCTL" "$@"; }

mnt=/mnt/ext4
conf=/tmp/mdr-conf
state=/tmp/mdr-state
log=/tmp/daemon.log
runs=${MDR_SWAP_RUNS:-2}
swap_orig=314572800     # 300M, as an operator's MemorySwapMax=300M would leave it
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
# Every cgroup sampled each tick: these have no policy, and a one-shot request is sized from the last sample.
printf '[Daemon]\nInterval=500ms\nRescanInterval=1s\nColdSampleInterval=500ms\n' > "$conf/etc/mdreclaim/mdreclaimd.conf"

fallocate -l 384M "$mnt/swapfile" && chmod 600 "$mnt/swapfile" && mkswap "$mnt/swapfile" > /dev/null &&
    swapon "$mnt/swapfile" || fatal "cannot turn swap on"
note "swap: $(awk '$1 == "SwapTotal:" { print int($2 / 1024) }' /proc/meminfo) MiB, swappiness $(cat /proc/sys/vm/swappiness), kernel $(uname -r)"
mkdir -p "$mnt/cache"
for i in 1 2 3 4; do fallocate -l 48M "$mnt/cache/f$i"; done
vm() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

"$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" --log-level info 2> "$log" &
daemon=$!
wait_for 30 socket_up || fatal "the daemon's control socket does not answer"

# one_run N HOLD(on|off): fill, reclaim cache only, report
one_run() {
    local n=$1 hold=$2 cg name asked p0 f0 a0 s0 f1 a1 p1 alloc sampler t0 secs seen after
    name=mdr-swap-$hold-$n
    cg=$(new_cgroup "$name") || fatal "cannot create the cgroup"
    echo "$swap_orig" > "$cg/memory.swap.max" || fatal "cannot set memory.swap.max"
    in_cgroup "$cg" python3 -c 'import time; b = bytearray(b"\x01" * (160 << 20)); time.sleep(600)' &
    alloc=$!
    sleep 5
    sync; echo 3 > /proc/sys/vm/drop_caches
    in_cgroup "$cg" cat "$mnt"/cache/f1 "$mnt"/cache/f2 "$mnt"/cache/f3 "$mnt"/cache/f4 > /dev/null
    sleep 2     # two of the daemon's ticks: it has sampled the cache
    f0=$(memstat "$cg" file) a0=$(memstat "$cg" anon) s0=$(memstat "$cg" slab_reclaimable)
    p0=$(vm pswpout)
    (while :; do cat "$cg/memory.swap.max"; sleep 0.05; done) > /tmp/swapmax.$name 2> /dev/null &
    sampler=$!
    t0=$(now)
    if [ "$hold" = on ]; then
        mdctl reclaim "/$name" --cache-only --wait --timeout 120s | sed 's/^/       mdctl: /'
        asked=$(grep -o "/$name: reclaim [0-9]* bytes of [0-9]*" "$log" | tail -n 1 | awk '{ print $6 }')
    else
        asked=$((f0 + s0))
        echo "$asked" > "$cg/memory.reclaim" 2> /dev/null
    fi
    secs=$(since "$t0")
    p1=$(vm pswpout)
    sleep 0.2
    kill "$sampler"; wait "$sampler" 2> /dev/null
    f1=$(memstat "$cg" file) a1=$(memstat "$cg" anon)
    seen=$(sort -u "/tmp/swapmax.$name" | tr '\n' ' ')
    after=$(cat "$cg/memory.swap.max")
    echo "RESULT run=$n hold=$hold asked_mib=$(( ${asked:-0} / 1048576 )) file_mib=$(mib "$f0")->$(mib "$f1") anon_mib=$(mib "$a0")->$(mib "$a1") swap_mib=$(( $(cat "$cg/memory.swap.current") / 1048576 )) pswpout_delta=$((p1 - p0)) secs=$secs swap_max_seen=[ ${seen}] swap_max_after=$after"
    if [ "$hold" = on ]; then
        check_cmp "run $n, hold on: nothing swapped out (pswpout delta)" "$((p1 - p0))" -eq 0
        check_cmp "run $n, hold on: the cache went (file MiB after, of $(mib "$f0"))" "$(mib "$f1")" -le $(( $(mib "$f0") / 10 ))
        check "run $n, hold on: memory.swap.max was 0 during the reclaim" grep -qx 0 "/tmp/swapmax.$name"
        check "run $n, hold on: memory.swap.max is exactly the operator's again ($after)" test "$after" = "$swap_orig"
    else
        note "run $n, hold off: pswpout delta $((p1 - p0)) pages"
    fi
    kill "$alloc"; wait "$alloc" 2> /dev/null
    echo 1 > "$cg/cgroup.kill" 2> /dev/null
}
for n in $(seq "$runs"); do
    one_run "$n" on
    one_run "$n" off
done
grep -E 'hold-swap|restore-swap-max|swap\.max|swappiness' "$log" | head -n 8 | sed 's/^/       daemon: /'
kill -TERM "$daemon"; wait "$daemon"
check "the ledger holds nothing after the stop" bash -c "! grep -q mdr-swap $state/throttles 2> /dev/null"
swapoff "$mnt/swapfile"
finish
