#!/bin/bash
# vm-fs: ext4
# Bench (not in the suite): a metadata-warm bystander beside a metadata storm,
# in a place short of memory, so that the storm's slab can take the
# bystander's dentries and inodes when nothing else stops it. Both cgroups
# are children of /mdr-host, whose memory.max is the bystander's own usage
# (warm) plus MDR_AP_BY_HEADROOM_MIB (40): the storm, uncapped, outgrows that
# headroom twice, and the kernel's reclaim at the parent's limit then shrinks
# both children; capped by MetadataCacheMax= (MDR_AP_BY_CAP_MIB, 12M) it fits.
#  - the bystander (Protect=yes) walks its tree of MDR_AP_BY_FILES (50 000)
#    empty files (find with a stat of each), pausing MDR_AP_BY_PAUSE seconds
#    (3) between walks: its run time depends on its dentries and inodes
#    staying cached, and between two walks they are not in use (a tree walked
#    without a pause keeps every dentry referenced, and the kernel's reclaim
#    then takes the storm's own first: seen in the first form of this bench);
#  - the storm (tests/vm/helpers/storm, MDR_AP_BY_STORM_FILES, 80 000) runs at
#    the lowest CPU priority (nice 19, cpu.weight 1 when the cpu controller is
#    there) so that it takes the bystander as little CPU as it can; with
#    MDR_AP_BY_STORM_CPU=P it is also held to P % of one CPU (cpu.max), and so
#    is the "cpu" load: under TCG a guest's priorities do not keep a busy vCPU
#    from slowing the other one, and the walk then measures the host's CPU
#    more than its own cache (the uncapped runs in docs/lab/allocation-point-runs.md);
#  - runs, in MDR_AP_BY_ORDER (cpu kernel daemon kernel daemon): "cpu" is a
#    load that makes no new dentries (stat of the same 1000 files, as long as
#    a storm, same priority): what the bystander loses to CPU alone; "kernel"
#    the storm with the kernel alone; "daemon" the storm with mdreclaimd and
#    MetadataCacheMax= on it; "free" the storm with the kernel alone and
#    /mdr-host's memory.max lifted for the run, so that no cache is at stake:
#    what the storm costs the bystander by everything but memory (its CPU,
#    its journal and writeback, the locks it takes).
# Before each run the caches are dropped and the bystander's tree walked warm
# again (the first of these walks, from a cold cache, is shown: what losing
# the cache costs). The run's own baseline is six walks alone with the same
# pauses: three before the load, three after it (the load gone, its tree
# removed, the bystander's walked warm again), so that a host whose speed
# drifts during the run moves both sides. Figures: the walk's mean and worst
# during the run against that mean alone (the issue's bar: within 10 %), the
# bystander's slab and memory stall and its lowest slab during the run, the
# storm's rate, slab, memory.current and CPU (its cgroup's, which holds the
# kernel's reclaim at the parent's limit when the storm's own charge waits on
# it), the parent's memory.events max, and mdreclaimd's CPU (its worker's
# memory.reclaim writes included).
# No check is asserted but that each run took place: the figures are the point.
#   MDRECLAIMD=... tests/vm/vmtest --timeout 1300 bench-alloc-bystander
. "$(dirname "$0")/lib.sh"
need_daemon

by_files=${MDR_AP_BY_FILES:-50000}
storm_files=${MDR_AP_BY_STORM_FILES:-80000}
pause=${MDR_AP_BY_PAUSE:-3}
cap_mib=${MDR_AP_BY_CAP_MIB:-12}
headroom_mib=${MDR_AP_BY_HEADROOM_MIB:-40}
storm_cpu=${MDR_AP_BY_STORM_CPU:-}
case $storm_cpu in
''|[1-9]|[1-9][0-9]|100) ;;
*) fatal "MDR_AP_BY_STORM_CPU=$storm_cpu: a percent of one CPU, 1 to 100" ;;
esac
order=${MDR_AP_BY_ORDER:-cpu kernel daemon kernel daemon}
read -ra kinds <<< "$order"    # words, never globs
[ "${#kinds[@]}" -gt 0 ] || fatal "MDR_AP_BY_ORDER is empty: name at least one run (cpu, kernel, daemon, free)"
for kind in "${kinds[@]}"; do
    case $kind in cpu|kernel|daemon|free) ;; *) fatal "MDR_AP_BY_ORDER: '$kind' is not a run (cpu, kernel, daemon, free)" ;; esac
done
mnt=/mnt/ext4
conf=/tmp/mdr-conf
state=/tmp/mdr-state
log=/tmp/daemon.log
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=500ms\nRescanInterval=1s\n' > "$conf/etc/mdreclaim/mdreclaimd.conf"

psi() { # FILE some|full: microseconds stalled
    awk -v k="$2" '$1 == k { for (i = 2; i <= NF; i++) if ($i ~ /^total=/) print substr($i, 7) }' "$1"
}
events_max() { awk '$1 == "max" { print $2 }' "$1/memory.events"; }
cpu_s() { awk '$1 == "usage_usec" { printf "%.1f", $2 / 1e6 }' "$1/cpu.stat"; }
# a process's CPU (user + system, its threads' included) in seconds
proc_cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"; }

cat > /tmp/walk.sh <<'EOT'
t=$(awk '{ print $1 }' /proc/uptime)
find "$1" -type f -size +1 | wc -l > /dev/null
awk -v t="$t" '{ printf "%.2f\n", $1 - t }' /proc/uptime
EOT
# the load that makes no new dentries: stat of the same files until told to stop
cat > /tmp/statloop.py <<'EOT'
import os, sys, time
top, stop = sys.argv[1], sys.argv[2]
names = [os.path.join(top, n) for n in os.listdir(top)]
n = 0
t0 = time.monotonic()
while not os.path.exists(stop):
    for p in names:
        os.stat(p)
    n += len(names)
took = time.monotonic() - t0
print("stat %d times in %.1f s (%.0f/s)" % (n, took, n / took))
EOT

host=$(new_cgroup mdr-host) || fatal "cannot create /mdr-host"
echo "+memory" > "$host/cgroup.subtree_control" || fatal "no memory controller under /mdr-host"
cpu_ctl=no
echo "+cpu" > "$host/cgroup.subtree_control" 2> /dev/null && cpu_ctl=yes
[ -n "$storm_cpu" ] && [ "$cpu_ctl" = no ] && fatal "MDR_AP_BY_STORM_CPU needs the cpu controller, not enabled under /mdr-host"
by=$host/by
mkdir -p "$by"
echo "== guest: $(uname -r), MemTotal $(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo) MiB, bystander $by_files files, pause ${pause}s, storm $storm_files files, cap ${cap_mib}M, headroom ${headroom_mib}M, cpu controller under /mdr-host: $cpu_ctl, storm's CPU: ${storm_cpu:-uncapped}${storm_cpu:+ %}, order: $order"

t=$(now)
in_cgroup "$by" python3 "$MDR_VMDIR/helpers/storm" "$mnt/by" "$by_files" > /dev/null
note "bystander's tree created in $(since "$t") s; inodes free on $mnt: $(df --output=iavail "$mnt" | tail -n 1)"
mkdir -p "$mnt/still"
for i in $(seq 1000); do : > "$mnt/still/$i"; done
walk_by() { in_cgroup "$by" bash /tmp/walk.sh "$mnt/by"; }
# three walks alone with the walker's pauses, as "a,b,c"
walks_alone() {
    local a b c
    sleep "$pause"; a=$(walk_by); sleep "$pause"; b=$(walk_by); sleep "$pause"; c=$(walk_by)
    echo "$a,$b,$c"
}

# warm: caches dropped, the bystander's tree walked until its slab is back
warm() {
    rm -rf "$mnt"/storm-*    # the test disk has too few inodes for several storms
    sync; echo 3 > /proc/sys/vm/drop_caches
    # a "free" run lifted the limit: back once the caches are gone
    [ -z "${limit:-}" ] || echo "$limit" > "$host/memory.max" || fatal "cannot set /mdr-host's memory.max"
    cold_walk=$(walk_by); walk_by > /dev/null
}
warm
base=$(cat "$host/memory.current")
limit=$(( base + headroom_mib * 1048576 ))
echo "$limit" > "$host/memory.max"
note "/mdr-host: $(mib "$base") MiB in use warm (bystander slab $(mib "$(memstat "$by" slab_reclaimable)") MiB, file $(mib "$(memstat "$by" file)") MiB); memory.max $(mib "$limit") MiB"

dur_cpu=40
# one_run KIND N
one_run() {
    local kind=$1 n=$2
    local cg=$host/storm-$n before after alone t0 p0 f0 e0 s0 out load pid='' peak=0 s
    local cur_peak=0 by_min c during reclaims=''
    warm
    before=$(walks_alone)
    mkdir -p "$cg"
    if [ "$kind" = free ]; then
        echo max > "$host/memory.max" || fatal "cannot lift /mdr-host's memory.max"
    fi
    [ "$cpu_ctl" = yes ] && echo 1 > "$cg/cpu.weight"
    if [ -n "$storm_cpu" ]; then
        echo "$((storm_cpu * 1000)) 100000" > "$cg/cpu.max" || fatal "cannot set $cg/cpu.max"
    fi
    if [ "$kind" = daemon ]; then
        rm -f "$conf"/etc/mdreclaim/policies.d/*.conf
        printf '[Policy]\nMatch=/mdr-host/storm-%s\nMode=enforce\nMetadataCacheMax=%sM\n' "$n" "$cap_mib" \
            > "$conf/etc/mdreclaim/policies.d/storm.conf"
        printf '[Policy]\nMatch=/mdr-host/by\nMode=enforce\nProtect=yes\n' > "$conf/etc/mdreclaim/policies.d/by.conf"
        : > "$log"
        "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
            --log-level info 2>> "$log" &
        pid=$!
        sleep 2
    fi
    s0=$(memstat "$by" slab_reclaimable) f0=$(psi "$by/memory.pressure" full)
    by_min=$s0
    p0=$(psi "$by/memory.pressure" some) e0=$(events_max "$host")
    : > /tmp/walks
    rm -f /tmp/load.done
    ( echo "$BASHPID" > "$by/cgroup.procs" || exit
      while [ ! -e /tmp/load.done ]; do sleep "$pause"; [ -e /tmp/load.done ] || bash /tmp/walk.sh "$mnt/by" >> /tmp/walks; done ) &
    local walker=$!
    t0=$(now)
    case $kind in
    cpu) in_cgroup "$cg" nice -n 19 python3 /tmp/statloop.py "$mnt/still" /tmp/load.done > /tmp/load.out &
         load=$!
         sleep "$dur_cpu"; touch /tmp/load.done ;;
    *)   in_cgroup "$cg" nice -n 19 python3 "$MDR_VMDIR/helpers/storm" "$mnt/storm-$n" "$storm_files" > /tmp/load.out &
         load=$! ;;
    esac
    while kill -0 "$load" 2> /dev/null; do
        s=$(memstat "$cg" slab_reclaimable); [ "${s:-0}" -gt "$peak" ] && peak=$s
        c=$(cat "$cg/memory.current"); [ "${c:-0}" -gt "$cur_peak" ] && cur_peak=$c
        s=$(memstat "$by" slab_reclaimable); [ "${s:-0}" -lt "$by_min" ] && by_min=$s
        sleep 0.5
    done
    wait "$load"
    local took; took=$(since "$t0")
    touch /tmp/load.done
    wait "$walker"
    out=$(cat /tmp/load.out)
    if [ -z "$out" ]; then
        fail "run $n $kind: the load did not run"
        [ -n "$pid" ] && { kill -TERM "$pid"; wait "$pid" 2> /dev/null; }
        return
    fi
    pass "run $n $kind took place ($out)"
    during="by_slab_mib=$(mib "$s0")->$(mib "$(memstat "$by" slab_reclaimable)") by_slab_min_mib=$(mib "$by_min") by_mem_some_ms=$(( ($(psi "$by/memory.pressure" some) - p0) / 1000 )) by_mem_full_ms=$(( ($(psi "$by/memory.pressure" full) - f0) / 1000 )) storm_slab_peak_mib=$(mib "$peak") storm_slab_end_mib=$(mib "$(memstat "$cg" slab_reclaimable)") storm_current_peak_mib=$(mib "$cur_peak") storm_cpu_s=$(cpu_s "$cg") host_max_events=$(( $(events_max "$host") - e0 ))"
    if [ -n "$pid" ]; then
        local dcpu; dcpu=$(proc_cpu_s "$pid")
        kill -TERM "$pid"; wait "$pid" 2> /dev/null
        reclaims="RESULT run=$n kind=$kind daemon_cpu_s=$dcpu $(grep -o "storm-$n: reclaim [0-9]* bytes of [0-9]* asked" "$log" |
            awk '{ k++; f += $3; a += $6 } END { printf "reclaims=%d freed_mib=%.1f asked_mib=%.2f", k, f / 1048576, a / 1048576 }'
            ) reclaims_of_bystander=$(grep -c '/mdr-host/by: reclaim' "$log")"
    fi
    # the baseline's second half: the load gone, the tree warm again, three more walks alone
    rm -rf "$mnt/storm-$n"
    sync    # the removal's journal and writeback, not during the walks
    walk_by > /dev/null
    after=$(walks_alone)
    alone=$(echo "$before $after" | tr ',' ' ' | awk '{ for (i = 1; i <= NF; i++) s += $i; printf "%.2f", s / NF }')
    echo "RESULT run=$n kind=$kind storm_cpu_pct=${storm_cpu:-max} load_s=$took cold_walk_s=$cold_walk alone_s=$before,$after alone_mean_s=$alone $(
        echo "$before $after" | awk '{ split($1, b, ","); split($2, a, ",")
            printf "alone_before_s=%.2f alone_after_s=%.2f", (b[1] + b[2] + b[3]) / 3, (a[1] + a[2] + a[3]) / 3 }'
        ) $(
        awk -v a="$alone" '{ s += $1; if ($1 > w) w = $1 } END {
            m = NR ? s / NR : 0
            printf "walks=%d walk_mean_s=%.2f walk_worst_s=%.2f vs_alone_pct=%+.1f", NR, m, w, 100 * (m - a) / a }' /tmp/walks
        ) $during"
    note "walks: $(tr '\n' ' ' < /tmp/walks)"
    [ -z "$reclaims" ] || echo "$reclaims"
}

n=0
for kind in "${kinds[@]}"; do
    n=$((n + 1))
    one_run "$kind" "$n"
done
finish
