#!/bin/bash
# vm-fs: ext4 xfs btrfs
# Bench (not in the suite): the metadata storm under MetadataCacheMax= on each
# filesystem given, kernel alone and with mdreclaimd, same boot. Figures for
# docs/allocation-point.md (every run in docs/lab/allocation-point-runs.md):
#  - the storm cgroup's slab_reclaimable, sampled every 0.5 s: its mean over
#    the second half of the storm against the cap (the band is +-10 %), its
#    peak, and the range of that second half;
#  - the storm's rate (files/s) with the daemon against the kernel alone;
#  - a metadata-warm bystander (Protect=yes) that walks its own tree of small
#    files (find with a stat of each) in a loop through the storm: its walk
#    time alone and during the storm, and its memory stall over the storm;
#  - what the daemon asked and what the kernel freed (its reclaim events, with
#    the yield it learnt), and where the kernel charged the storm's memory:
#    the cgroup's slab and file pages against the host's SReclaimable and
#    Cached (on btrfs the btree pages are page cache of the btree inode).
# No check is asserted but that each run took place: the figures are the point.
#   MDRECLAIMD=... tests/vm/vmtest --timeout 2400 bench-alloc-storm
# Knobs: MDR_AP_STORM_FILES (storm size, 50000), MDR_AP_STORM_MAX_MIB (cap, 32),
# MDR_AP_STORM_BY_FILES (bystander's tree, 10000), MDR_AP_STORM_ORDER (kd: kernel alone
# first, dk: the daemon first, d: the daemon alone, when the time is short;
# s is a run with senpai, oomd's plugin, pointed at the storm's cgroup instead:
# MDR_AP_STORM_ORDER=kds, say; skipped without /usr/bin/oomd or MDR_AP_OOMD;
# oomd is no dependency of the project), MDR_AP_STORM_PIN=1 (the bystander's
# walks on CPU 1, the storm and the reclaimer on CPU 0: the walk's time
# without the CPU the storm takes from it on a 2-vCPU guest).
. "$(dirname "$0")/lib.sh"
need_daemon

files=${MDR_AP_STORM_FILES:-50000}
cap_mib=${MDR_AP_STORM_MAX_MIB:-32}
by_files=${MDR_AP_STORM_BY_FILES:-10000}
order=${MDR_AP_STORM_ORDER:-kd}
oomd_bin=${MDR_AP_OOMD:-/usr/bin/oomd}
pin_by=() pin_storm=() pin_walker=:
[ -n "${MDR_AP_STORM_PIN:-}" ] && pin_by=(taskset -c 1) pin_storm=(taskset -c 0) pin_walker="taskset -c -p 1"
conf=/tmp/mdr-conf
state=/tmp/mdr-state
log=/tmp/daemon.log
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
printf '[Daemon]\nInterval=500ms\nRescanInterval=1s\n' > "$conf/etc/mdreclaim/mdreclaimd.conf"

psi_some() { awk '$1 == "some" { for (i = 2; i <= NF; i++) if ($i ~ /^total=/) print substr($i, 7) }' "$1"; }
meminfo_kib() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }


# walk DIR: seconds to stat every file of the tree
cat > /tmp/walk.sh <<'EOT'
t=$(awk '{ print $1 }' /proc/uptime)
find "$1" -type f -size +1 | wc -l > /dev/null
awk -v t="$t" '{ printf "%.2f\n", $1 - t }' /proc/uptime
EOT
walk() { bash /tmp/walk.sh "$1"; }

echo "== guest: $(uname -r), MemTotal $(( $(meminfo_kib MemTotal) / 1024 )) MiB, storm $files files, cap ${cap_mib}M, order $order${MDR_AP_STORM_PIN:+, bystander pinned to CPU 1, storm and reclaimer to CPU 0}"

# storm_run FS KIND(kernel|daemon) N: one storm, figures printed on one block
storm_run() {
    local fs=$1 kind=$2 n=$3 mnt=/mnt/$1 cg by=/sys/fs/cgroup/mdr-sby t0 sr0 c0 p0 out
    cg=$(new_cgroup "mdr-storm-$kind-$n") || fatal "cannot create the storm's cgroup"
    rm -f "$conf"/etc/mdreclaim/policies.d/*.conf
    if [ "$kind" = senpai ]; then
        [ -x "$oomd_bin" ] || { note "$fs senpai: skipped (no $oomd_bin)"; return; }
        mkdir -p /tmp/oomd-run
        cat > /tmp/oomd.json <<EOJ
{ "rulesets": [ {
    "name": "senpai on mdr-storm-senpai-$n",
    "silence-logs": "engine",
    "detectors": [ [ "always", { "name": "continue", "args": {} } ] ],
    "actions": [ { "name": "senpai", "args": {
        "cgroup": "mdr-storm-senpai-$n", "limit_min_bytes": "0", "interval": "0",
        "pressure_ms": "50", "max_probe": "0.1" } } ]
} ] }
EOJ
        "${pin_storm[@]}" "$oomd_bin" --config /tmp/oomd.json --interval 1 --cgroup-fs /sys/fs/cgroup \
            --runtime-dir /tmp/oomd-run > "/tmp/oomd-$n.log" 2>&1 &
        daemon_pid=$!
        sleep 2
    fi
    if [ "$kind" = daemon ]; then
        printf '[Policy]\nMatch=/mdr-storm-daemon-%s\nMode=enforce\nMetadataCacheMax=%sM\n' "$n" "$cap_mib" \
            > "$conf/etc/mdreclaim/policies.d/storm.conf"
        printf '[Policy]\nMatch=/mdr-sby\nMode=enforce\nProtect=yes\n' > "$conf/etc/mdreclaim/policies.d/by.conf"
        : > "$log"
        "${pin_storm[@]}" "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
            --log-level info 2>> "$log" &
        daemon_pid=$!
        sleep 2
    fi
    sr0=$(meminfo_kib SReclaimable) c0=$(meminfo_kib Cached) p0=$(psi_some "$by/memory.pressure")
    # The bystander's refaults: pages it reads back that were evicted while in
    # its working set ("restore": those count as a memory stall while waited for).
    local rf0 rs0; rf0=$(memstat "$by" workingset_refault_file) rs0=$(memstat "$by" workingset_restore_file)
    local sp0; sp0=$(psi_some "$cg/memory.pressure")
    : > /tmp/walks
    rm -f /tmp/storm.done
    ( echo "$BASHPID" > "$by/cgroup.procs" || exit
      $pin_walker "$BASHPID" > /dev/null || exit
      while [ ! -e /tmp/storm.done ]; do walk "$mnt/walk" >> /tmp/walks; done ) &
    local walker=$!
    t0=$(now)
    in_cgroup "$cg" "${pin_storm[@]}" python3 "$MDR_VMDIR/helpers/storm" "$mnt/storm-$kind-$n" "$files" > /tmp/storm.out &
    local storm=$!
    : > /tmp/samples
    while kill -0 "$storm" 2>/dev/null; do
        echo "$(since "$t0") $(memstat "$cg" slab_reclaimable)" >> /tmp/samples
        sleep 0.5
    done
    wait "$storm"
    touch /tmp/storm.done
    wait "$walker"
    rm -f /tmp/storm.done
    out=$(cat /tmp/storm.out)
    [ -n "$out" ] || { fail "$fs $kind: the storm did not run"; return; }
    pass "$fs $kind: the storm ran ($out)"
    echo "RESULT fs=$fs run=$kind rate=$(echo "$out" | sed 's/.*(\([0-9]*\)\/s)/\1/') cap_mib=$cap_mib $(half2_band /tmp/samples "$cap_mib")"
    echo "RESULT fs=$fs run=$kind by_walks=$(wc -l < /tmp/walks) by_walk_mean_s=$(
        awk '{ s += $1; if ($1 > w) w = $1 } END { printf "%.2f by_walk_worst_s=%.2f", NR ? s / NR : 0, w }' /tmp/walks
        ) by_memory_some_ms=$(( ($(psi_some "$by/memory.pressure") - p0) / 1000 )) by_refault_file=$((
        $(memstat "$by" workingset_refault_file) - rf0 )) by_restore_file=$(( $(memstat "$by" workingset_restore_file) - rs0 ))"
    echo "RESULT fs=$fs run=$kind cg_slab_reclaimable_mib=$(mib "$(memstat "$cg" slab_reclaimable)") cg_slab_unreclaimable_mib=$(mib "$(memstat "$cg" slab_unreclaimable)") cg_file_mib=$(mib "$(memstat "$cg" file)") host_sreclaimable_delta_mib=$(( ($(meminfo_kib SReclaimable) - sr0) / 1024 )) host_cached_delta_mib=$(( ($(meminfo_kib Cached) - c0) / 1024 ))"
    echo "RESULT fs=$fs run=$kind storm_memory_some_ms=$(( ($(psi_some "$cg/memory.pressure") - sp0) / 1000 )) memory_high_at_end=$(cat "$cg/memory.high")"
    if [ "$kind" = senpai ]; then
        kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null
        sleep 1
        echo "RESULT fs=$fs run=$kind memory_high_after_stop=$(cat "$cg/memory.high")"
        grep -v '^\[ConfigTypes' "/tmp/oomd-$n.log" | tail -n 3 | cut -c1-200 | sed 's/^/       oomd: /'
    fi
    if [ "$kind" = daemon ]; then
        kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null
        echo "RESULT fs=$fs run=$kind memory_high_after_stop=$(cat "$cg/memory.high")"
        echo "RESULT fs=$fs run=$kind $(grep -o "mdr-storm-daemon-$n: reclaim [0-9]* bytes of [0-9]* asked" "$log" |
            awk '{ n++; f += $3; a += $6; if ($3 > w) w = $3 } END {
                printf "reclaims=%d freed_mib=%.1f asked_mib=%.2f biggest_free_mib=%.1f", n, f / 1048576, a / 1048576, w / 1048576 }'
            ) last_yield=$(grep -o 'frees [0-9.]*x' "$log" | tail -n 1 | awk '{ print $2 }') reclaims_of_bystander=$(grep -c 'mdr-sby: reclaim' "$log")"
        grep -E "mdr-storm-daemon-$n: reclaim" "$log" | sed -n '1,6p;$p' | cut -c1-260 | sed 's/^/       log: /'
    fi
}

run=0
for fs in $MDR_FS; do
    mnt=/mnt/$fs
    echo "==== $fs"
    bcg=$(new_cgroup mdr-sby) || fatal "cannot create the bystander's cgroup"
    in_cgroup "$bcg" python3 "$MDR_VMDIR/helpers/storm" "$mnt/walk" "$by_files" > /dev/null
    walk_in() { in_cgroup "$bcg" "${pin_by[@]}" bash /tmp/walk.sh "$1"; }
    walk_in "$mnt/walk" > /dev/null
    note "$fs bystander walk alone: $(walk_in "$mnt/walk") s, $(walk_in "$mnt/walk") s, $(walk_in "$mnt/walk") s ($by_files files)"
    kinds=$(echo "$order" | sed 's/./& /g; s/k/kernel/g; s/d/daemon/g; s/s/senpai/g')
    for kind in $kinds; do
        run=$((run + 1))
        storm_run "$fs" "$kind" "$run"
    done
    note "$fs bystander walk after: $(walk_in "$mnt/walk") s"
    sync
    echo 2 > /proc/sys/vm/drop_caches
done
finish
