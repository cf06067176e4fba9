#!/bin/bash
# The whole daemon on a fixture tree of N cgroups (issue 39's probe, as a
# benchmark: it prints figures, it is no test). Every cgroup has a 50-line
# memory.stat in Linux 6.1's order, both pressure files and an io.stat; the
# root has a cgroup.stat. 100 cgroups are governed (Mode=observe), the tick is
# 1 s, the rest of the configuration is the defaults.
#
#   tests/bench/daemon-fixture.sh BUILD_DIR [N...]      (default N: 1000 10000)
#
# Per N: the daemon's start (to the control socket's first answer), its CPU
# over 60 s idle and over 60 s with a cgroup made or removed every 5 s, over
# 20 s of `mdctl show` of names that are nowhere (as fast as one client goes),
# RSS and PSS, `mdctl --json list` (wall time), how long the last round of
# slow samples took (ColdSampleBudget= stretches it), and how long a cgroup made
# takes to be counted (mkdir to `mdctl status`; mdctl's start included).
#
# MDR_BENCH_TICK=100ms sets Interval= (default 1s); MDR_BENCH_HISTORY_FULL=1
# then waits, after the rest, until [History] Samples= (an hour of ticks) and
# as many again have passed since the start, and prints RSS and PSS again:
# what the daemon holds once its history has filled (at a 100 ms tick, about
# 14 minutes instead of two hours).
set -eu
build=${1:?usage: daemon-fixture.sh BUILD_DIR [N...]}; shift
daemon_bin=$build/daemon/mdreclaimd
mdctl_bin=$build/cli/mdctl
sizes=${*:-1000 10000}
hz=$(getconf CLK_TCK)
work=$(mktemp -d "${TMPDIR:-/tmp}/mdr-daemon-bench.XXXXXX")
trap 'kill "$daemon" 2> /dev/null; rm -rf "$work"' EXIT
daemon=

stat_file() {
    local k
    for k in anon file kernel kernel_stack pagetables sec_pagetables percpu sock vmalloc shmem zswap zswapped \
             file_mapped file_dirty file_writeback swapcached anon_thp file_thp shmem_thp inactive_anon \
             active_anon inactive_file active_file unevictable slab_reclaimable slab_unreclaimable slab \
             workingset_refault_anon workingset_refault_file workingset_activate_anon workingset_activate_file \
             workingset_restore_anon workingset_restore_file workingset_nodereclaim pgscan pgsteal \
             pgscan_kswapd pgscan_direct pgsteal_kswapd pgsteal_direct pgfault pgmajfault pgrefill \
             pgactivate pgdeactivate pglazyfree pglazyfreed thp_fault_alloc thp_collapse_alloc; do
        echo "$k $(( RANDOM * 4096 ))"
    done
}
# make_cgroup DIR: a cgroup's files, as the kernel shows them; made aside and moved into place, as
# cgroupfs makes a cgroup whole at its mkdir. The root's cgroup.stat counts it, as the kernel's does (a
# count the events do not explain makes the daemon walk the tree: their safety net).
descendants() { # ROOT DELTA
    local n
    n=$(awk '$1 == "nr_descendants" { print $2 }' "$1/cgroup.stat")
    printf 'nr_descendants %d\nnr_dying_descendants 0\n' "$(( n + $2 ))" > "$1/cgroup.stat"
}
make_cgroup() {
    rm -rf "$work/stage"
    cp -r "$work/template" "$work/stage"
    mv "$work/stage" "$1"
    descendants "$(dirname "$1")" 1
}
remove_cgroup() {
    rm -rf "$1"
    descendants "$(dirname "$1")" -1
}
mkdir -p "$work/template"
stat_file > "$work/template/memory.stat"
for f in memory.pressure io.pressure; do
    printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=567\n' \
        > "$work/template/$f"
done
echo "8:0 rbytes=1048576 wbytes=2097152 rios=10 wios=20 dbytes=0 dios=0" > "$work/template/io.stat"
echo 104857600 > "$work/template/memory.current"
for f in memory.high memory.max; do echo max > "$work/template/$f"; done
for f in memory.low memory.min; do echo 0 > "$work/template/$f"; done
printf 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n' > "$work/template/memory.events"
printf 'populated 1\nfrozen 0\n' > "$work/template/cgroup.events"
: > "$work/template/cgroup.procs"
echo "memory io" > "$work/template/cgroup.controllers"

echo "# machine: $(uname -sr) $(uname -m), nproc $(nproc); tree under $work ($(stat -f -c %T "$work"))"
for n in $sizes; do
    root=$work/cg-$n
    rm -rf "$root"
    mkdir -p "$root/gov" "$work/proc/pressure" "$work/sys" "$work/conf-$n/etc/mdreclaim/policies.d" "$work/run-$n"
    cp /proc/meminfo /proc/vmstat "$work/proc/"
    cp /proc/pressure/memory /proc/pressure/io "$work/proc/pressure/" 2> /dev/null ||
        printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' |
        tee "$work/proc/pressure/memory" > "$work/proc/pressure/io"
    cp "$work/template/"* "$root/"
    cp "$work/template/"* "$root/gov/"
    for ((i = 0; i < 100 && i < n; i++)); do cp -r "$work/template" "$root/gov/g$i"; done
    for ((i = 100; i < n; i++)); do cp -r "$work/template" "$root/c$i"; done
    printf 'nr_descendants %d\nnr_dying_descendants 0\n' "$(( n + 1 ))" > "$root/cgroup.stat"
    tick=${MDR_BENCH_TICK:-1s}
    printf '[Daemon]\nInterval=%s\n' "$tick" > "$work/conf-$n/etc/mdreclaim/mdreclaimd.conf"
    printf '[Policy]\nMatch=/gov/*\nMode=observe\n' > "$work/conf-$n/etc/mdreclaim/policies.d/gov.conf"
    sock=$work/run-$n/control
    mdctl() { "$mdctl_bin" --socket "$sock" "$@"; }
    t0=$(date +%s%N)
    t0_start=$t0
    "$daemon_bin" --cgroup-root "$root" --proc-root "$work/proc" --sys-root "$work/sys" --config-root "$work/conf-$n" \
        --state-dir "$work/run-$n" --control-socket "$sock" 2> "$work/daemon-$n.log" &
    daemon=$!
    until mdctl status > /dev/null 2>&1; do sleep 0.05; done
    echo "$n cgroups: start $(( ($(date +%s%N) - t0) / 1000000 )) ms to the first answer"
    sleep "${MDR_BENCH_SETTLE:-35}"
    cpu() { awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }
    window() {
        local a b; a=$(cpu); sleep "$1"; b=$(cpu)
        echo "  cpu $2: $(awk -v d=$(( b - a )) -v hz="$hz" -v s="$1" 'BEGIN { printf "%.2f", d * 100 / hz / s }') % of a core"
    }
    window "${MDR_BENCH_WINDOW:-60}" idle
    ( for i in $(seq 1 6); do make_cgroup "$root/churn$i"; sleep 5; remove_cgroup "$root/churn$i"; sleep 5; done ) &
    window "${MDR_BENCH_WINDOW:-60}" "with a cgroup made or removed every 5 s"
    wait $!
    ( end=$(( $(date +%s) + 20 )); while [ "$(date +%s)" -lt "$end" ]; do
        mdctl show "nosuch-$RANDOM.service" > /dev/null 2>&1 || :; done ) &
    window 20 "under mdctl show nosuch in a loop"
    wait $!
    memory() {
        echo "  memory$1: RSS $(awk '$1 == "VmRSS:" { print $2 }' "/proc/$daemon/status") KiB," \
             "PSS $(awk '$1 == "Pss:" { print $2 }' "/proc/$daemon/smaps_rollup") KiB," \
             "of it anonymous $(awk '$1 == "Pss_Anon:" { print $2 }' "/proc/$daemon/smaps_rollup") KiB"
    }
    memory ""
    t0=$(date +%s%N); mdctl --json list > /dev/null
    echo "  mdctl --json list: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    t0=$(date +%s%N); mdctl --json status > /dev/null
    echo "  mdctl --json status alone: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    echo "  slow samples: the last round over the cold cgroups:" \
         "$(mdctl --json status | jq -r 'if .cold_round_usec > 0 then "took \(.cold_round_usec / 1e6 | floor) s"
                                          else "none done yet" end')" \
         "($(mdctl --json status | jq .cold_samples_deferred) samples put off by ColdSampleBudget=)"
    for i in 1 2 3; do
        before=$(mdctl --json status | jq .cgroups)
        t0=$(date +%s%N)
        make_cgroup "$root/new$i"
        while [ "$(mdctl --json status | jq .cgroups)" -le "$before" ]; do :; done
        echo "  new cgroup counted: $(( ($(date +%s%N) - t0) / 1000000 )) ms after its mkdir"
        sleep 1
    done
    if [ "${MDR_BENCH_HISTORY_FULL:-0}" = 1 ]; then
        # Two spans of the history (3600 ticks each) from the start, in ms of the tick.
        tick_ms=$(awk -v t="$tick" 'BEGIN { v = t + 0; if (t ~ /ms$/) print v; else if (t ~ /min$/) print v * 60000; else if (t ~ /h$/) print v * 3600000;
                                           else print v * 1000 }')
        left=$(( (7200 * tick_ms - ($(date +%s%N) - t0_start) / 1000000) / 1000 ))
        echo "  waiting ${left} s for two spans of the history ($tick ticks)"
        [ "$left" -le 0 ] || sleep "$left"
        echo "  history: $(mdctl --json history / | jq '.samples | length') samples of the host"
        memory " after 7200 ticks"
    fi
    kill -TERM "$daemon"; wait "$daemon" || :
    daemon=
    rm -rf "$root"
done
