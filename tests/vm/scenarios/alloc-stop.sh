#!/bin/bash
# vm-fs: ext4 btrfs
# vm-write-bps: 16777216
# How long mdreclaimd takes to end after SIGTERM while its worker is inside
# the kernel, and whether every throttle comes back. A cgroup (the
# operator's memory.high 900M and memory.swap.max 300M) holds 200 MiB of anon and reads 300 MiB of clean cache while dd writes
# 3000 MiB to the 16 MiB/s disk under DirtyLimit=32M (the write point lowers
# its memory.high through the worker; the kernel reclaims for it, swapping
# the anon out to a swap file on the same disk). Then a 2G reclaim is asked
# (mdctl reclaim --bytes 2G: memory.reclaim, swapping out) and a cache-only
# one behind it (memory.swap.max held at 0 while it is queued), SIGTERM
# as soon as the worker is seen inside a write to a cgroup file. Printed
# per run: that file, the time from SIGTERM to the process's end, when
# memory.high and memory.swap.max were the operator's again, and their
# values after; and the worker thread's kernel stack at SIGTERM, with what
# it waited on (wchan) every 250 ms until it was gone.
# As "alloc-stop" (the VM suite) one run; as "bench-alloc-stop" (the same
# script) three, or the runs MDR_AP_STOP_RUNS names ("1 2 3"), each of the
# kind MDR_AP_STOP_KIND: queued (the default), reclaim, cacheonly or high;
# MDR_AP_STOP_ANON_MIB is the cgroup's anon (200):
#   MDRECLAIMD=... MDCTL=... tests/vm/vmtest --timeout 600 bench-alloc-stop
# Checked in every run: the daemon ends within 2 s of SIGTERM, memory.high
# and memory.swap.max are the operator's, the ledger is empty. First, once:
# a swap file in a btrfs subvolume (whose files show an anonymous device) is
# placed on the btrfs disk, so that its congestion would be seen too.
. "$(dirname "$0")/lib.sh"
need_daemon
if [ -z "${MDCTL:-}" ] || [ ! -x "$MDCTL" ]; then
    fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
fi
mdctl() { "$MDCTL" "$@"; }
mnt=/mnt/ext4
conf=/tmp/mdr-conf
state=/tmp/mdr-state
log=/tmp/daemon.log
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=500ms\nRescanInterval=1s\nColdSampleInterval=500ms\n' > "$conf/etc/mdreclaim/mdreclaimd.conf"
printf '[Policy]\nMatch=/mdr-stop\nMode=enforce\nDirtyLimit=32M\n' > "$conf/etc/mdreclaim/policies.d/stop.conf"

echo "==== a swap file on btrfs"
btrfs subvolume create /mnt/btrfs/sv > /dev/null || fatal "cannot create a btrfs subvolume"
bswap=/mnt/btrfs/sv/swapfile
truncate -s 0 "$bswap" && chattr +C "$bswap" && fallocate -l 64M "$bswap" && chmod 600 "$bswap" &&
    mkswap "$bswap" > /dev/null && swapon "$bswap" || fatal "cannot turn swap on on btrfs"
bdisk=$(for b in /sys/block/*; do [ "$(cat "$b/serial" 2> /dev/null)" = mdr-btrfs ] && cat "$b/dev"; done)
"$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" --log-level info 2> "$log" &
pid=$!
wait_for 30 grep -q 'Swap is on\|no disk found' "$log"
kill -TERM "$pid"; wait "$pid"
note "the file's device: $(stat -c '%Hd:%Ld' "$bswap"), the disk's: $bdisk; $(grep -h 'Swap is on\|no disk found' "$log")"
check "a swap file on btrfs is placed on its disk ($bdisk)" grep -q "Swap is on disk $bdisk:" "$log"
swapoff "$bswap"

fallocate -l 256M "$mnt/swapfile" && chmod 600 "$mnt/swapfile" && mkswap "$mnt/swapfile" > /dev/null &&
    swapon "$mnt/swapfile" || fatal "cannot turn swap on"
fallocate -l 300M "$mnt/clean"
high_orig=943718400 swap_orig=314572800
# write_tid PID: the thread of PID inside a write(2) to a cgroup file now, or nothing
write_tid() {
    local t sc fd
    for t in /proc/"$1"/task/*; do
        read -r sc fd _ < "$t/syscall" 2> /dev/null || continue
        [ "$sc" = 1 ] || continue
        case $(readlink "/proc/$1/fd/$((fd))" 2> /dev/null) in
        /sys/fs/cgroup/*) echo "${t##*/}"; return 0 ;;
        esac
    done
    return 1
}
# stack_line FILE: a kernel stack on one line, innermost first, without offsets
stack_line() {
    sed 's/^\[<[0-9a-f]*>\] //; s/+0x[0-9a-f]*\/0x[0-9a-f]*$//' "$1" 2> /dev/null | head -n 14 | paste -sd ' ' -
}
one() { # N KIND(queued|reclaim|cacheonly|high)
    local cg pid t0 t1 writer holder poller exit_ms in_write= before tid stack0= sampler=
    echo "==== run $1: $2"
    cg=$(new_cgroup mdr-stop) || fatal "no cgroup"
    echo "$high_orig" > "$cg/memory.high"; echo "$swap_orig" > "$cg/memory.swap.max"
    : > "$log"
    "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" --log-level debug 2> "$log" &
    pid=$!
    wait_for 30 socket_up || fatal "no socket"
    in_cgroup "$cg" python3 -c 'import sys, time; b = bytearray(b"\x01" * (int(sys.argv[1]) << 20)); time.sleep(600)' "${MDR_AP_STOP_ANON_MIB:-200}" &
    holder=$!
    in_cgroup "$cg" cat "$mnt/clean" > /dev/null
    in_cgroup "$cg" dd if=/dev/zero of="$mnt/big$1" bs=1M count=3000 2> /dev/null &
    writer=$!
    sleep 6
    note "cgroup: current $(mib "$(cat "$cg/memory.current")") MiB, file $(mib "$(memstat "$cg" file)"), dirty $(mib "$(memstat "$cg" file_dirty)"), writeback $(mib "$(memstat "$cg" file_writeback)"), high $(cat "$cg/memory.high"), swap.max $(cat "$cg/memory.swap.max")"
    case $2 in
    reclaim) mdctl reclaim /mdr-stop --bytes 2G > /dev/null ;;
    cacheonly) mdctl reclaim /mdr-stop --cache-only > /dev/null; mdctl reclaim /mdr-stop --bytes 2G > /dev/null ;;
    queued) mdctl reclaim /mdr-stop --bytes 2G; mdctl reclaim /mdr-stop --cache-only ;;
    high) ;;
    esac
    # SIGTERM as soon as the worker is seen inside a write to a cgroup file (15 s at most, 5 s in
    # the suite: while the swap disk is congested the daemon keeps out of such writes)
    for _ in $(seq "$catch_polls"); do in_write=$(cgroup_write_of "$pid") && break; sleep 0.05; done
    before="high $(cat "$cg/memory.high"), swap.max $(cat "$cg/memory.swap.max")"
    t0=$(date +%s%N)
    # when both are the operator's again, in ms after SIGTERM (read with cat under TCG: coarse)
    (while [ "$(cat "$cg/memory.high")" != "$high_orig" ] || [ "$(cat "$cg/memory.swap.max")" != "$swap_orig" ]; do
        sleep 0.02; done; echo $(( ($(date +%s%N) - t0) / 1000000 ))) > /tmp/restored &
    poller=$!
    tid=$(write_tid "$pid") && stack0=$(stack_line "/proc/$pid/task/$tid/stack")
    kill -TERM "$pid"
    if [ -n "$tid" ]; then
        (while [ -e "/proc/$pid/task/$tid" ]; do
            cat "/proc/$pid/task/$tid/wchan" 2> /dev/null; echo; sleep 0.25; done) > /tmp/wchan &
        sampler=$!
    fi
    note "worker at SIGTERM: ${in_write:-not inside a cgroup file write}; $before"
    wait "$pid"
    t1=$(date +%s%N)
    sleep 0.5; kill "$poller" 2> /dev/null; wait "$poller" 2> /dev/null
    exit_ms=$(( (t1 - t0) / 1000000 ))
    if [ -n "$sampler" ]; then
        kill "$sampler" 2> /dev/null; wait "$sampler" 2> /dev/null
        note "worker's stack at SIGTERM: ${stack0:-not read}"
        note "its wchan every 250 ms after: $(grep -v '^$' /tmp/wchan | uniq -c |
            awk '{ printf "%s%s x%d", s, $2, $1; s = ", " } END { if (!NR) printf "none read (out at once)" }')"
        rm -f /tmp/wchan
    fi
    echo "RESULT run=$1 kind=$2 in_write=${in_write:-none} exit_ms=$exit_ms restored_ms=$(cat /tmp/restored) high_after=$(cat "$cg/memory.high") swap_after=$(cat "$cg/memory.swap.max")"
    check_cmp "run $1: the daemon ended within 2 s of SIGTERM (ms)" "$exit_ms" -le 2000
    check "run $1: memory.high and memory.swap.max are the operator's" \
        test "$(cat "$cg/memory.high") $(cat "$cg/memory.swap.max")" = "$high_orig $swap_orig"
    check "run $1: nothing left in the ledger" bash -c "! grep -q mdr-stop $state/throttles 2> /dev/null"
    grep -E 'SIGTERM|abandon|restore-on-stop|reclaim .* bytes|did not return|swap|congested|cache only|asked' "$log" | grep -v 'reclaims may swap again' | tail -n 12 | cut -c1-200 | sed 's/^/       daemon: /'
    kill "$writer" "$holder" 2> /dev/null; wait "$writer" "$holder" 2> /dev/null
    echo 1 > "$cg/cgroup.kill"; sleep 1
    rm -f "$mnt/big$1"
}
case $MDR_SCENARIO_NAME in
bench-*) runs=${MDR_AP_STOP_RUNS:-1 2 3} catch_polls=300 ;;
*) runs=${MDR_AP_STOP_RUNS:-1} catch_polls=100 ;;
esac
for n in $runs; do one "$n" "${MDR_AP_STOP_KIND:-queued}"; done
swapoff "$mnt/swapfile"
finish
