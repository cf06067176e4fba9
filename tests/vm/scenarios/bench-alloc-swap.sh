#!/bin/bash
# vm-fs: ext4
# Bench (not in the suite): swap on in the guest (a swap file on the test
# disk), and what a cache-only request of memory.reclaim swaps out on a kernel
# without swappiness= (6.1): a cgroup holding both anonymous memory and clean
# cache is asked, as the daemon asks there, for no more than its clean cache
# (the bound on), then, refilled, for its cache and anon together (the bound
# off). pswpout deltas from /proc/vmstat, in pages.
#   MDRECLAIMD=... tests/vm/vmtest --timeout 600 bench-alloc-swap
. "$(dirname "$0")/lib.sh"

mnt=/mnt/ext4
fallocate -l 384M "$mnt/swapfile" && chmod 600 "$mnt/swapfile" && mkswap "$mnt/swapfile" > /dev/null &&
    swapon "$mnt/swapfile" || fatal "cannot turn swap on"
note "swap: $(awk '$1 == "SwapTotal:" { print int($2 / 1024) }' /proc/meminfo) MiB, swappiness $(cat /proc/sys/vm/swappiness)"
mkdir -p "$mnt/cache"
for i in 1 2 3 4; do fallocate -l 48M "$mnt/cache/f$i"; done
vm() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

# one_run LABEL BOUND(on|off): fill, ask, report
one_run() {
    local cg asked p0 f0 a0 f1 a1 p1 alloc
    cg=$(new_cgroup "mdr-swap-$2") || fatal "cannot create the cgroup"
    in_cgroup "$cg" python3 -c 'import time; b = bytearray(b"\x01" * (160 << 20)); time.sleep(600)' &
    alloc=$!
    sleep 5
    in_cgroup "$cg" cat "$mnt"/cache/f1 "$mnt"/cache/f2 "$mnt"/cache/f3 "$mnt"/cache/f4 > /dev/null
    f0=$(memstat "$cg" file) a0=$(memstat "$cg" anon)
    if [ "$2" = on ]; then asked=$f0; else asked=$((f0 + a0)); fi
    p0=$(vm pswpout)
    echo "$asked" > "$cg/memory.reclaim" 2> /dev/null
    p1=$(vm pswpout)
    f1=$(memstat "$cg" file) a1=$(memstat "$cg" anon)
    echo "RESULT bound=$2 asked_mib=$((asked / 1048576)) file_mib=$((f0 / 1048576))->$((f1 / 1048576)) anon_mib=$((a0 / 1048576))->$((a1 / 1048576)) swap_mib=$(( $(cat "$cg/memory.swap.current") / 1048576 )) pswpout_delta=$((p1 - p0))"
    pass "$1 ran"
    kill "$alloc"; wait "$alloc" 2> /dev/null
    echo 1 > "$cg/cgroup.kill" 2> /dev/null
}
one_run "bound on: the clean cache asked" on
one_run "bound off: cache and anon asked" off
one_run "bound on again" on
swapoff "$mnt/swapfile"
finish
