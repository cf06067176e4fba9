#!/bin/bash
# vm-fs: ext4
# The cold sweep of an idle cgroup (issue 36, a benchmark: not in the suite):
# a cold set read once in a cgroup that then does nothing, the daemon with
# PressureTarget=5%, ReclaimStepMax=32M and Interval= (MDR_AP_INTERVAL, 1s);
# the fraction of the set gone at 5 to 60 s, then SIGTERM, timed.
# MDR_AP_LRU_GEN=y|n: MGLRU on or off for the run.
#   MDRECLAIMD=build/daemon/mdreclaimd tests/vm/vmtest bench-alloc-idle
. "$(dirname "$0")/lib.sh"
need_daemon
mnt=/mnt/ext4 conf=/tmp/mdr-conf state=/tmp/mdr-state log=/tmp/daemon.log
cold_mib=${MDR_AP_COLD_MIB:-600} interval=${MDR_AP_INTERVAL:-1s}
lru_gen=/sys/kernel/mm/lru_gen/enabled
if [ -n "${MDR_AP_LRU_GEN:-}" ]; then
    [ -w "$lru_gen" ] && echo "$MDR_AP_LRU_GEN" > "$lru_gen" || note "cannot set MGLRU to $MDR_AP_LRU_GEN on this kernel"
fi
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=%s\n' "$interval" > "$conf/etc/mdreclaim/mdreclaimd.conf"
printf '[Policy]\nMatch=/mdr-idle\nMode=enforce\nPressureTarget=5%%\nReclaimStepMax=32M\n' > "$conf/etc/mdreclaim/policies.d/idle.conf"
echo "kernel $(uname -r), MGLRU $(cat "$lru_gen" 2>/dev/null || echo none), Interval=$interval, cold $cold_mib MiB"
mkdir -p $mnt/cold; for i in $(seq 32); do fallocate -l $((cold_mib * 1048576 / 32)) $mnt/cold/f$i; done
cg=$(new_cgroup mdr-idle)
in_cgroup $cg bash -c "cat $mnt/cold/* > /dev/null"
f0=$(memstat $cg file)
echo "before: $(mib $f0) MiB"
"$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" --log-level info 2>> "$log" &
dp=$!
t0=$(now)
for t in 5 10 15 20 30 45 60; do
    while awk -v t0="$t0" -v t="$t" '{ exit !($1 - t0 < t) }' /proc/uptime; do sleep 0.2; done
    f=$(memstat $cg file)
    echo "at ${t}s: $(mib $f) MiB left, fraction freed $(awk -v a=$f0 -v b=$f -v c=$cold_mib 'BEGIN { printf "%.2f", (a - b) / (c * 1048576) }')"
done
ts=$(now); kill -TERM $dp; wait $dp; echo "stop took $(since $ts) s"
grep -c "mdr-idle: reclaim" $log | sed 's/^/reclaims: /'
grep "mdr-idle: reclaim" $log | head -5 | cut -c1-200
grep "mdr-idle: reclaim" $log | tail -3 | cut -c1-200
pass done
finish
