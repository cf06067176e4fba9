#!/bin/bash
# PSI triggers, the daemon's wake-up: armed on a cgroup's memory.pressure,
# silent while the cgroup idles, fired when a memory hog inside it stalls on
# its memory.high.
. "$(dirname "$0")/lib.sh"
trigger=$MDR_VMDIR/helpers/psi-trigger
want="some 150000 1000000"   # 150 ms of stall within 1 s

cg=$(new_cgroup mdr-psi) || fatal "cannot create a cgroup"
check "per-cgroup memory.pressure exists" test -e "$cg/memory.pressure"

# Idle: no event within 3 s.
out=$(python3 "$trigger" "$cg/memory.pressure" "$want" 3)
rc=$?
note "$out"
check_cmp "an idle cgroup's trigger stays silent (exit code)" "$rc" -eq 1

# A hog of 160 MiB anonymous memory under memory.high=48M with no swap: the
# kernel throttles it at the high boundary, and that stall is memory pressure.
echo 48M > "$cg/memory.high"
rm -f /tmp/psi-armed
python3 "$trigger" "$cg/memory.pressure" "$want" 60 /tmp/psi-armed > /tmp/psi-out &
poller=$!
for _ in $(seq 100); do [ -e /tmp/psi-armed ] && break; sleep 0.1; done
check "trigger armed" test -e /tmp/psi-armed
in_cgroup "$cg" timeout 90 stress-ng --vm 1 --vm-bytes 160M --vm-keep --timeout 70s --quiet &
hog=$!
wait "$poller"
rc=$?
note "$(cat /tmp/psi-out)"
check_cmp "the trigger fires under the hog (exit code)" "$rc" -eq 0
kill "$hog" 2>/dev/null
for pid in $(cat "$cg/cgroup.procs"); do kill -KILL "$pid" 2>/dev/null; done
wait "$hog" 2>/dev/null

total=$(sed -n 's/^some .*total=\([0-9]*\)$/\1/p' "$cg/memory.pressure")
note "memory.pressure: $(head -n 1 "$cg/memory.pressure")"
check_cmp "the cgroup's memory.pressure some total grew (us)" "${total:-0}" -gt 150000
high_events=$(awk '$1 == "high" { print $2 }' "$cg/memory.events")
check_cmp "memory.events counts high events" "${high_events:-0}" -gt 0

for _ in $(seq 50); do [ -z "$(cat "$cg/cgroup.procs")" ] && break; sleep 0.1; done
rmdir "$cg"
finish
