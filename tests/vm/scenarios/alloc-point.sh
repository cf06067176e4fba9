#!/bin/bash
# vm-fs: ext4
# The allocation point on a real kernel. Four cases, each with the daemon
# started on a configuration of its own:
#
#  1. cold cache: a cgroup reads a large file set once, then loops over a
#     small hot set; PressureTarget= on it. The daemon must give back at least
#     90 % of the cold cache, from that cgroup only, while the hot loop's stall
#     over the run stays at or under the target.
#  2. metadata storm: a cgroup creates many empty files; MetadataCacheMax= on
#     it. Its slab_reclaimable over the storm's second half (sampled every
#     0.5 s) must average at most 10 % over the cap and at most 40 % under
#     it (the issue's band is +-10 %; below it a batch the kernel frees
#     whole, said when it happens), and end under cap + 10 %;
#     a neighbour's slab (its own small storm, no cap) must be left alone.
#  3. global pressure: a Priority=10 cache hog, then a Priority=90 allocator.
#     Kernel alone, then the daemon, same boot: the allocator's stall side by
#     side with the ratio. Asserted: the daemon shrank the hog, never the
#     allocator nor the Protect=yes bystander. The ratio is printed only.
#  4. allocation throttle: an allocator with AllocationThrottle=yes under host
#     pressure gets memory.high near its usage; after the pressure its
#     memory.high is back exactly to what the operator had set. A kill -9 of
#     the daemon mid-throttle, then a start: nothing left behind.
#
# Throughout, a Protect=yes bystander holds some cache: no reclaim of it, ever.
# The swappiness= probe of memory.reclaim is shown (6.1: EINVAL, size only;
# 6.12: taken, EAGAIN on the empty cgroup), and the daemon must conclude the same.
#
# As "alloc-point" (the VM suite) the sizes are small and what is asserted
# must hold every time. As "bench-alloc-point" (the same script) the sizes
# are larger and case 3 is repeated; figures are printed for docs/:
#   MDRECLAIMD=build/daemon/mdreclaimd tests/vm/vmtest --timeout 900 bench-alloc-point
# The bench has one more case, run only when asked (MDR_AP_CASES=p): the
# cold cache with the kernel alone, mdreclaimd and senpai side by side (see
# "p." below):
#   MDR_AP_CASES=p MDRECLAIMD=... tests/vm/vmtest --timeout 700 bench-alloc-point
. "$(dirname "$0")/lib.sh"
need_daemon

case $MDR_SCENARIO_NAME in
bench-*) bench=1 cold_mib=600 hot_mib=16 storm_files=60000 nb_files=15000 meta_max_mib=24 global_reps=3 ;;
*) bench=0 cold_mib=256 hot_mib=16 storm_files=50000 nb_files=5000 meta_max_mib=32 global_reps=1 ;;
esac
# MDR_AP_CASES: which cases run (default all: 1234); for a wrapper script
# that sets it and execs this one, when only one case is of interest
cases=${MDR_AP_CASES:-1234}
want_case() { [[ $cases == *$1* ]]; }
mnt=/mnt/ext4
conf=/tmp/mdr-conf
state=/tmp/mdr-state
log=/tmp/daemon.log
target_pct=5
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
: > "$log"; : > /tmp/daemon-all.log

# ---- helpers
psi_total() { # FILE some|full: microseconds stalled, monotonic
    awk -v k="$2" '$1 == k { for (i = 2; i <= NF; i++) if ($i ~ /^total=/) print substr($i, 7) }' "$1"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", 100 * a / b; else print "0.00" }'; }
memavail_mib() { awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo; }
reclaimed_from() { # CGROUP_PATH: bytes the daemon's reclaim events say it freed there
    grep -o "$1: reclaim [0-9]* bytes" "$log" | awk '{ s += $3 } END { print s + 0 }'
}
reclaims_of() { grep -c "$1: reclaim [0-9]* bytes" "$log"; }
new_log() { cat "$log" >> /tmp/daemon-all.log 2>/dev/null; : > "$log"; }

daemon_pid=
start_daemon() {
    "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
        --log-level info 2>> "$log" &
    daemon_pid=$!
    sleep 2
}
stop_daemon() { # SIGNAL
    [ -n "$daemon_pid" ] || return 0
    kill "-$1" "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
    daemon_pid=
}
daemon_conf() { # [Daemon]/[AllocationPoint] lines after the common ones
    { printf '[Daemon]\nInterval=500ms\nRescanInterval=1s\n'; cat; } > "$conf/etc/mdreclaim/mdreclaimd.conf"
}
policy() { # NAME LINES...: policies.d/NAME.conf
    local name=$1; shift
    { echo '[Policy]'; printf '%s\n' "$@"; } > "$conf/etc/mdreclaim/policies.d/$name.conf"
}
no_policies() { rm -f "$conf"/etc/mdreclaim/policies.d/*.conf; }
# plot_case NAME CGROUP...: as bench-alloc-point with MDR_ARTIFACTS, the
# case drawn from the daemon's history (mdctl plot --view memory) while it
# still runs, as alloc-point-NAME.png
plot_case() {
    local name=$1; shift
    [ "$bench" = 1 ] && [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ] && [ -n "${MDR_ARTIFACTS:-}" ] &&
        command -v gnuplot > /dev/null || return 0
    "$MDCTL" plot "$@" --view memory -o "$MDR_ARTIFACTS/alloc-point-$name.png" > /dev/null &&
        note "plot of this case: alloc-point-$name.png"
}

# fileset DIR COUNT MIB: COUNT files of MIB/COUNT each, allocated but never
# written (reads fill the page cache with zeroes without disk reads: cheap
# under TCG, and the cache is as clean and reclaimable as any).
fileset() {
    mkdir -p "$1"
    for i in $(seq "$2"); do fallocate -l "$(( $3 * 1048576 / $2 ))" "$1/f$i"; done
}
readall() { cat "$1"/* > /dev/null; }

cat > /tmp/alloc.py <<'EOT'
# alloc MIB HOLD_SECONDS PROGRESS_FILE [MAX_MIB_PER_S]: anonymous memory, 8 MiB
# at a time, touched; at most MAX_MIB_PER_S when given
import sys, time
mib, hold, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
pace = 8 / float(sys.argv[4]) if len(sys.argv) > 4 else 0
chunks, lat = [], []
t0 = time.monotonic()
with open(out, "w", buffering=1) as f:
    for i in range(mib // 8):
        t = time.monotonic()
        chunks.append(b"\x01" * (8 << 20))
        lat.append(time.monotonic() - t)
        if pace > 0:
            time.sleep(max(0, pace - (time.monotonic() - t)))
        f.write("%.3f %d\n" % (time.monotonic() - t0, (i + 1) * 8))
el = time.monotonic() - t0
print("allocated %d MiB in %.2f s (%.1f MiB/s), worst 8 MiB step %.0f ms" % (mib, el, mib / el, max(lat) * 1000))
sys.stdout.flush()
time.sleep(hold)
EOT

# ---- the bystander: Protect=yes, some cache, never to be reclaimed by the daemon
bcg=$(new_cgroup mdr-bystander) || fatal "cannot create the bystander's cgroup"
fileset "$mnt/by" 4 32
in_cgroup "$bcg" cat "$mnt"/by/f1 "$mnt"/by/f2 "$mnt"/by/f3 "$mnt"/by/f4 > /dev/null
by_file0=$(memstat "$bcg" file)
note "bystander holds $(mib "$by_file0") MiB of cache"
bystander_policy() { policy bystander 'Match=/mdr-bystander' 'Mode=enforce' 'Protect=yes' 'Priority=50'; }

# MDR_AP_LRU_GEN=y|n: MGLRU on or off for the run (/sys/kernel/mm/lru_gen/enabled;
# Debian's 6.12 boots with it on, Debian 12's 6.1 has it built in and off); both go in docs/
lru_gen=/sys/kernel/mm/lru_gen/enabled
if [ -n "${MDR_AP_LRU_GEN:-}" ]; then
    [ -w "$lru_gen" ] && echo "$MDR_AP_LRU_GEN" > "$lru_gen" || note "cannot set MGLRU to $MDR_AP_LRU_GEN on this kernel"
fi
echo "== MGLRU: $(cat "$lru_gen" 2>/dev/null || echo "not built in")"
echo "== guest: $(uname -r), MemTotal $(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo) MiB, MemAvailable $(memavail_mib) MiB, swap $(awk '$1 == "SwapTotal:" { print int($2 / 1024) }' /proc/meminfo) MiB"
echo "== probe: memory.reclaim with swappiness= on this kernel (by hand, then what the daemon concludes)"
pcg=$(new_cgroup mdr-probe)
if echo "1M swappiness=0" > "$pcg/memory.reclaim" 2> /tmp/probe.err; then probe=accepted
else probe=$(sed 's/.*: //' /tmp/probe.err); fi
# EAGAIN: the argument was taken, there was nothing to reclaim (an empty cgroup)
case $probe in accepted|*"temporarily unavailable"*) probe_says="takes swappiness=" ;; *) probe_says="takes a size only" ;; esac
note "echo '1M swappiness=0' > memory.reclaim: $probe (memory.reclaim $probe_says)"
rmdir "$pcg"

########################################################################
echo
want_case 1 && {
echo "==== 1. cold cache, PressureTarget=$target_pct%"
ccg=$(new_cgroup mdr-cold) || fatal "cannot create mdr-cold"
fileset "$mnt/cold" 32 "$cold_mib"
mkdir -p "$mnt/hot"
for i in 1 2 3 4; do dd if=/dev/urandom of="$mnt/hot/f$i" bs=1M count=$((hot_mib / 4)) status=none; done
sync; echo 3 > /proc/sys/vm/drop_caches
in_cgroup "$ccg" bash -c "cat $mnt/cold/* $mnt/hot/* > /dev/null"
# the hot loop, until told to stop; counts its passes
cat > /tmp/hotloop.sh <<EOT
n=0; while [ ! -e /tmp/hot.stop ]; do cat $mnt/hot/* > /dev/null; n=\$((n + 1)); done; echo \$n > /tmp/hot.passes
EOT
rm -f /tmp/hot.stop
in_cgroup "$ccg" bash /tmp/hotloop.sh &
hot_pid=$!
sleep 1
file0=$(memstat "$ccg" file)
ref0=$(memstat "$ccg" workingset_refault_file)
ms0=$(psi_total "$ccg/memory.pressure" some); is0=$(psi_total "$ccg/io.pressure" some)
t0=$(now)
note "before: mdr-cold file cache $(mib "$file0") MiB (cold $cold_mib + hot $hot_mib)"

no_policies; bystander_policy
daemon_conf <<EOT
EOT
policy cold 'Match=/mdr-cold' 'Mode=enforce' "PressureTarget=$target_pct%" 'ReclaimStepMax=32M'
new_log
start_daemon
want=$(( file0 - cold_mib * 1048576 * 90 / 100 ))
limit=$([ "$bench" = 1 ] && echo 120 || echo 60)
for _ in $(seq $((limit * 2))); do
    [ "$(memstat "$ccg" file)" -le "$want" ] && break
    sleep 0.5
done
took=$(since "$t0")
sleep 3    # the hot loop goes on a while after the cold cache is gone
touch /tmp/hot.stop; wait "$hot_pid"
hot_res=$(fincore -b -n -o RES "$mnt"/hot/* 2>/dev/null | awk '{ s += $1 } END { print int(s / 1048576) }')
el=$(since "$t0")
file1=$(memstat "$ccg" file)
ref1=$(memstat "$ccg" workingset_refault_file)
ms1=$(psi_total "$ccg/memory.pressure" some); is1=$(psi_total "$ccg/io.pressure" some)
el_us=$(awk -v e="$el" 'BEGIN { printf "%d", e * 1000000 }')
stall_mem=$(pct $((ms1 - ms0)) "$el_us"); stall_io=$(pct $((is1 - is0)) "$el_us")
plot_case cold /mdr-cold
stop_daemon TERM
freed=$(( file0 - file1 ))
grep -m1 'takes a size only\|takes swappiness=\|hold memory.swap.max' "$log" | sed 's/^/       daemon: /'
printf '       %-34s %s\n' "file cache before / after" "$(mib "$file0") MiB / $(mib "$file1") MiB" \
    "cache freed (memory.stat)" "$(mib "$freed") MiB = $(pct "$freed" $((cold_mib * 1048576)))% of the cold set, in ${took}s" \
    "freed per the daemon's events" "$(mib "$(reclaimed_from /mdr-cold)") MiB in $(reclaims_of /mdr-cold) reclaims" \
    "hot loop stall over ${el}s (some)" "memory $stall_mem%, io $stall_io% (target $target_pct%)" \
    "hot loop passes" "$(cat /tmp/hot.passes)" \
    "file refaults in mdr-cold" "$(( (ref1 - ref0) / 4096 )) pages" \
    "hot set resident at the end" "${hot_res:-?} of $hot_mib MiB (fincore)"
check_cmp "the daemon freed >= 90 % of the cold cache (MiB)" "$(mib "$freed")" -ge $((cold_mib * 90 / 100))
check_cmp "reclaim events name /mdr-cold" "$(reclaims_of /mdr-cold)" -gt 0
check "the hot loop's memory stall stayed at or under the target" \
    awk -v s="$stall_mem" -v t="$target_pct" 'BEGIN { exit !(s <= t) }'
check "the hot loop's io stall stayed at or under the target" \
    awk -v s="$stall_io" -v t="$target_pct" 'BEGIN { exit !(s <= t) }'
check "the daemon's probe concluded as the one by hand: memory.reclaim $probe_says" \
    grep -q "memory.reclaim here $probe_says" "$log"
rm -rf "$mnt/cold" "$mnt/hot"
}

########################################################################
# p. the peer, side by side (bench only, asked for: MDR_AP_CASES=p): the cold
# cache of case 1 (cold set read once, the real-data hot set in a loop), each
# run in a fresh cgroup, reclaimed by nothing (the kernel alone), by
# mdreclaimd (as in case 1) or by senpai (oomd's plugin: it lowers
# memory.high while the cgroup's memory stall is under its target), for at
# most MDR_AP_PEER_WINDOW seconds (50) or until 90 % of the cold set is gone;
# then, the reclaimer still running, a newcomer in a cgroup of its own
# allocates 55 % of MemTotal. Then SIGTERM to the reclaimer: what it left
# behind in memory.high. Figures only; oomd is not a dependency of the
# project: without /usr/bin/oomd (or MDR_AP_OOMD) the senpai runs are skipped.
# senpai's arguments: the target is case 1's (5 % of its 1 s tick: 50 ms),
# probing every tick by at most 10 % (its default, 1 % every 7 ticks, would
# take the 600 MiB cold set in some 40 minutes), no floor of its own
# (limit_min_bytes=0: mdreclaimd is given none either).
echo
want_case p && [ "$bench" = 1 ] && {
echo "==== p. cold cache side by side: the kernel alone, mdreclaimd, senpai (oomd)"
oomd_bin=${MDR_AP_OOMD:-/usr/bin/oomd}
peer_window=${MDR_AP_PEER_WINDOW:-50}
peer_order=${MDR_AP_PEER_ORDER:-kernel mdreclaimd senpai mdreclaimd senpai}
new_mib=$(( $(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo) * 55 / 100 ))
fileset "$mnt/cold" 32 "$cold_mib"
mkdir -p "$mnt/hot"
for i in 1 2 3 4; do dd if=/dev/urandom of="$mnt/hot/f$i" bs=1M count=$((hot_mib / 4)) status=none; done
sync
cat > /tmp/hotloop.sh <<EOT
n=0; while [ ! -e /tmp/hot.stop ]; do cat $mnt/hot/* > /dev/null; n=\$((n + 1)); done; echo \$n > /tmp/hot.passes
EOT
: > /tmp/peer.results
if [ -x "$oomd_bin" ]; then note "peer: $("$oomd_bin" --version 2>&1 | head -n 1)"
else note "peer: no oomd at $oomd_bin: the senpai runs are skipped (install Debian's oomd on the host to have them)"; fi

# peer_run KIND N: one run; a RESULT line and a column of /tmp/peer.results
peer_run() {
    local kind=$1 n=$2 ccg ncg pid='' high_term file0 file1 high0 high1 lowest want took t0 el el_us ms0 mf0 is0 ms1 mf1 is1 nm0 nm1 out ts stop_ms hot_res h
    if [ "$kind" = senpai ] && [ ! -x "$oomd_bin" ]; then
        note "run $n senpai: skipped (no $oomd_bin)"; return 0
    fi
    ccg=$(new_cgroup "mdr-cold-$n") || { fail "cannot create mdr-cold-$n"; return 0; }
    ncg=$(new_cgroup "mdr-new-$n") || { fail "cannot create mdr-new-$n"; return 0; }
    sync; echo 3 > /proc/sys/vm/drop_caches
    in_cgroup "$ccg" bash -c "cat $mnt/cold/* $mnt/hot/* > /dev/null"
    rm -f /tmp/hot.stop
    in_cgroup "$ccg" bash /tmp/hotloop.sh &
    local hot_pid=$!
    sleep 1
    file0=$(memstat "$ccg" file) high0=$(cat "$ccg/memory.high")
    ms0=$(psi_total "$ccg/memory.pressure" some) mf0=$(psi_total "$ccg/memory.pressure" full)
    is0=$(psi_total "$ccg/io.pressure" some)
    t0=$(now)
    case $kind in
    mdreclaimd)
        no_policies; bystander_policy
        daemon_conf < /dev/null
        policy cold "Match=/mdr-cold-$n" 'Mode=enforce' "PressureTarget=$target_pct%" 'ReclaimStepMax=32M'
        new_log
        start_daemon
        pid=$daemon_pid ;;
    senpai)
        mkdir -p /tmp/oomd-run
        cat > /tmp/oomd.json <<EOJ
{ "rulesets": [ {
    "name": "senpai on mdr-cold-$n",
    "silence-logs": "engine",
    "detectors": [ [ "always", { "name": "continue", "args": {} } ] ],
    "actions": [ { "name": "senpai", "args": {
        "cgroup": "mdr-cold-$n", "limit_min_bytes": "0", "interval": "0",
        "pressure_ms": "50", "max_probe": "0.1" } } ]
} ] }
EOJ
        "$oomd_bin" --config /tmp/oomd.json --interval 1 --cgroup-fs /sys/fs/cgroup \
            --runtime-dir /tmp/oomd-run > "/tmp/oomd-$n.log" 2>&1 &
        pid=$!
        sleep 2 ;;
    *) sleep 2 ;;
    esac
    want=$(( file0 - cold_mib * 1048576 * 90 / 100 ))
    took="not in ${peer_window}s" lowest=$high0
    while awk -v t="$t0" -v w="$peer_window" '{ exit !($1 - t < w) }' /proc/uptime; do
        h=$(cat "$ccg/memory.high")
        [ "$h" != max ] && { [ "$lowest" = max ] || [ "$h" -lt "$lowest" ]; } && lowest=$h
        [ "$(memstat "$ccg" file)" -le "$want" ] && { took="$(since "$t0")s"; break; }
        sleep 0.5
    done
    file1=$(memstat "$ccg" file)
    nm0=$(psi_total "$ncg/memory.pressure" some)
    out=$(in_cgroup "$ncg" python3 /tmp/alloc.py "$new_mib" 0 /tmp/new.progress)
    nm1=$(psi_total "$ncg/memory.pressure" some)
    touch /tmp/hot.stop; wait "$hot_pid"
    hot_res=$(fincore -b -n -o RES "$mnt"/hot/* 2>/dev/null | awk '{ s += $1 } END { print int(s / 1048576) }')
    el=$(since "$t0")
    ms1=$(psi_total "$ccg/memory.pressure" some) mf1=$(psi_total "$ccg/memory.pressure" full)
    is1=$(psi_total "$ccg/io.pressure" some)
    el_us=$(awk -v e="$el" 'BEGIN { printf "%d", e * 1000000 }')
    stop_ms=- high_term=$(cat "$ccg/memory.high")
    if [ -n "$pid" ]; then
        ts=$(now)
        kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
        stop_ms=$(awk -v t="$ts" '{ printf "%d", ($1 - t) * 1000 }' /proc/uptime)
        daemon_pid=
    fi
    sleep 1
    high1=$(cat "$ccg/memory.high")
    [ "$kind" = senpai ] && grep -v '^\[ConfigTypes' "/tmp/oomd-$n.log" | tail -n 4 | cut -c1-200 | sed 's/^/       oomd: /'
    [ "$kind" = mdreclaimd ] && note "mdreclaimd: $(reclaims_of "/mdr-cold-$n") reclaims, $(mib "$(reclaimed_from "/mdr-cold-$n")") MiB per its events"
    echo "RESULT peer run=$n kind=$kind cache_before_mib=$(mib "$file0") cache_window_end_mib=$(mib "$file1") took=${took// /_} cold_mem_some_ms=$(( (ms1 - ms0) / 1000 )) cold_mem_full_ms=$(( (mf1 - mf0) / 1000 )) cold_io_some_ms=$(( (is1 - is0) / 1000 )) over_s=$el hot_res_mib=${hot_res:-?} new_some_ms=$(( (nm1 - nm0) / 1000 )) new=\"$out\" stop_ms=$stop_ms memory_high_before=$high0 lowest_in_window=$lowest at_sigterm=$high_term after_stop=$high1"
    { echo "run|$n: $kind"
      echo "cold cgroup's file cache before / at the window's end|$(mib "$file0") / $(mib "$file1") MiB"
      echo "90 % of the cold set gone after|$took"
      echo "cold cgroup's memory stall some / full (ms)|$(( (ms1 - ms0) / 1000 )) / $(( (mf1 - mf0) / 1000 )) over ${el}s"
      echo "cold cgroup's memory some, share of the run|$(pct $((ms1 - ms0)) "$el_us") %"
      echo "cold cgroup's io stall some (ms)|$(( (is1 - is0) / 1000 ))"
      echo "hot set resident at the end|${hot_res:-?} of $hot_mib MiB"
      echo "newcomer ($new_mib MiB): run time|$(echo "$out" | sed -n 's/.* in \([0-9.]*\) s .*/\1 s/p')"
      echo "newcomer's memory stall some (ms)|$(( (nm1 - nm0) / 1000 ))"
      echo "SIGTERM to the end (ms)|$stop_ms"
      echo "memory.high before / lowest in the window / at SIGTERM / 1 s after the end|$high0 / $lowest / $high_term / $high1"
    } > "/tmp/peer.col.$n"
    echo "$n" >> /tmp/peer.results
    echo 1 > "$ncg/cgroup.kill" 2>/dev/null
    rmdir "$ncg" 2>/dev/null
    echo 1 > "$ccg/cgroup.kill" 2>/dev/null
    sleep 0.5; rmdir "$ccg" 2>/dev/null
    pass "run $n ($kind) took place"
}

n=0
for kind in $peer_order; do
    n=$((n + 1))
    peer_run "$kind" "$n"
done
# side by side: one column a run
echo "== side by side"
# shellcheck disable=SC2046 # one file a run, no spaces in the names
paste -d '\t' $(sed 's|^|/tmp/peer.col.|' /tmp/peer.results) | awk -F'\t' '{
    printf "| %s |", (split($1, a, "|") > 1 ? a[1] : $1)
    for (i = 1; i <= NF; i++) { split($i, a, "|"); printf " %s |", a[2] }
    printf "\n" }'
rm -rf "$mnt/cold" "$mnt/hot"
}

########################################################################
echo
want_case 2 && {
echo "==== 2. metadata storm, MetadataCacheMax=${meta_max_mib}M"
mcg=$(new_cgroup mdr-meta) || fatal "cannot create mdr-meta"
ncg=$(new_cgroup mdr-meta-nb) || fatal "cannot create mdr-meta-nb"
in_cgroup "$ncg" python3 "$MDR_VMDIR/helpers/storm" "$mnt/nb" "$nb_files" | sed 's/^/       neighbour: /'
nb0=$(memstat "$ncg" slab_reclaimable)
no_policies; bystander_policy
daemon_conf <<EOT
EOT
policy meta 'Match=/mdr-meta' 'Mode=enforce' "MetadataCacheMax=${meta_max_mib}M"
policy meta-nb 'Match=/mdr-meta-nb' 'Mode=enforce' 'Priority=50'
new_log
start_daemon
t0=$(now)
in_cgroup "$mcg" python3 "$MDR_VMDIR/helpers/storm" "$mnt/storm" "$storm_files" > /tmp/storm.out &
storm=$!
peak=0 samples=0 over=0
: > /tmp/storm.samples
while kill -0 "$storm" 2>/dev/null; do
    s=$(memstat "$mcg" slab_reclaimable)
    echo "$(since "$t0") $s" >> /tmp/storm.samples
    [ "$s" -gt "$peak" ] && peak=$s
    samples=$((samples + 1))
    [ "$s" -gt $((meta_max_mib * 1048576 * 110 / 100)) ] && over=$((over + 1))
    sleep 0.5
done
wait "$storm"
sed 's/^/       storm: /' /tmp/storm.out
for _ in $(seq 30); do
    [ "$(memstat "$mcg" slab_reclaimable)" -le $((meta_max_mib * 1048576 * 110 / 100)) ] && break
    sleep 0.5
done
sleep 2
slab1=$(memstat "$mcg" slab_reclaimable)
nb1=$(memstat "$ncg" slab_reclaimable)
plot_case storm /mdr-meta /mdr-meta-nb
stop_daemon TERM
printf '       %-34s %s\n' "storm slab_reclaimable peak / end" "$(mib "$peak") MiB / $(mib "$slab1") MiB (cap $meta_max_mib MiB)" \
    "samples over cap + 10 % in storm" "$over of $samples (every 0.5 s)" \
    "freed per the daemon's events" "$(mib "$(reclaimed_from /mdr-meta)") MiB in $(reclaims_of /mdr-meta) reclaims" \
    "neighbour slab before / after" "$(mib "$nb0") MiB / $(mib "$nb1") MiB"
band=$(half2_band /tmp/storm.samples "$meta_max_mib")
note "storm, second half: $band"
band_pct=$(sed 's/.*vs_cap_pct=\([-+0-9.]*\).*/\1/' <<< "$band")
# The issue's band is +-10 % (the bench's figure). Over it the daemon has
# failed; under it, one memory.reclaim may have met a batch the kernel frees
# whole whatever is asked (a single reclaim freed 22 MiB here in a CI run:
# -32 %, and -14 % in the run before it; -5 % to 0 in the runs before those).
# The suite's short form holds the side that is the daemon's own to +10 %,
# and the batch side to -40 %, which still fails a daemon that empties the
# cache; a miss of the band itself is said.
awk -v p="$band_pct" 'BEGIN { exit !(p < -10) }' && note "under the issue's band of +-10 % in this run: ${band_pct} % (the kernel's batch)"
# Since 6.5 slab freed counts nowhere in a cgroup's reclaim, so a request the
# cgroup's file pages cannot meet walks the kernel down to its last priority,
# shrinking slab at each: on 6.12 one 128 KiB request freed the storm's whole
# 33-35 MiB (three runs of four, MGLRU on or off). A request that freed 4x
# what it asked and a quarter of the cap or more is that batch, not the
# daemon's asking (file pages come back about as asked): then the lower side
# is not the daemon's to hold, and the miss is said with its figure
# (docs/lab/debian-13.md); the upper side is. 8x until ci44 on 6.1: 37 MiB
# freed by 2 requests, mean -42.3 %, not counted as a batch. The requests
# are printed.
grep -o '/mdr-meta: reclaim [0-9]* bytes of [0-9]* asked' "$log" | sed 's/^/       /'
batches=$(grep -o '/mdr-meta: reclaim [0-9]* bytes of [0-9]* asked' "$log" |
    awk -v cap=$((meta_max_mib * 1048576)) '$3 >= 4 * $6 && 4 * $3 >= cap { n++ } END { print n + 0 }')
if [ "$batches" -gt 0 ]; then
    note "MISS of the band's lower side, the kernel's: $batches request(s) freed 4x what they asked and over a quarter of the cap; mean ${band_pct} %"
    check "the storm's slab over its second half at most +10 % of MetadataCacheMax (mean ${band_pct} %; lower side: the kernel's batch)" \
        awk -v p="$band_pct" 'BEGIN { exit !(p <= 10) }'
else
    check "the storm's slab over its second half holds between -40 and +10 % of MetadataCacheMax (mean ${band_pct} %)" \
        awk -v p="$band_pct" 'BEGIN { exit !(p >= -40 && p <= 10) }'
fi
check_cmp "... over the samples of its second half (0.5 s apart)" "$(sed 's/.*samples=\([0-9]*\).*/\1/' <<< "$band")" -ge 4
check_cmp "the storm's slab ends within 10 % of MetadataCacheMax (KiB)" "$((slab1 / 1024))" -le $((meta_max_mib * 1024 * 110 / 100))
check_cmp "reclaim events name /mdr-meta" "$(reclaims_of /mdr-meta)" -gt 0
check_cmp "no reclaim of the neighbour" "$(reclaims_of /mdr-meta-nb)" -eq 0
check_cmp "the neighbour's slab is untouched (KiB, >= 90 % of before)" "$((nb1 / 1024))" -ge $((nb0 / 1024 * 90 / 100))
rm -rf "$mnt/storm" "$mnt/nb"
}

########################################################################
echo
want_case 3 && {
echo "==== 3. global pressure: a Priority=10 cache hog, a Priority=90 allocator"
hcg=$(new_cgroup mdr-hog) || fatal "cannot create mdr-hog"
acg=$(new_cgroup mdr-alloc) || fatal "cannot create mdr-alloc"
sync; echo 3 > /proc/sys/vm/drop_caches
avail=$(memavail_mib)
hog_mib=$(( avail * 80 / 100 / 32 * 32 ))
alloc_mib=$(( avail * 55 / 100 / 8 * 8 ))
note "MemAvailable $avail MiB: hog $hog_mib MiB of cache, allocator $alloc_mib MiB"
fileset "$mnt/hog" 32 "$hog_mib"
no_policies; bystander_policy
daemon_conf <<EOT
SystemPressureThreshold=1%
EOT
global_policies() { # MODE
    policy hog 'Match=/mdr-hog' "Mode=$1" 'Priority=10'
    policy alloc 'Match=/mdr-alloc' "Mode=$1" 'Priority=90'
}

# global_run LABEL kernel|observe|daemon: the kernel alone, the daemon
# watching only (what observation costs), the daemon acting
global_run() {
    local label=$1 how=$2 s0 f0 sy0 h0 t0
    sync; echo 3 > /proc/sys/vm/drop_caches
    in_cgroup "$bcg" cat "$mnt"/by/* > /dev/null
    in_cgroup "$hcg" bash -c "cat $mnt/hog/* > /dev/null"
    h0=$(memstat "$hcg" file)
    case $how in
    observe) global_policies observe; start_daemon ;;
    daemon) global_policies enforce; start_daemon ;;
    esac
    s0=$(psi_total "$acg/memory.pressure" some); f0=$(psi_total "$acg/memory.pressure" full)
    sy0=$(psi_total /proc/pressure/memory some)
    t0=$(now)
    # Bounded: the kernel alone takes 1-3 s here, the daemon 4-10; one observe run on 6.12 took 172 s
    # (its allocator not stalled on memory), and the suite's time has no room for that.
    in_cgroup "$acg" timeout 90 python3 /tmp/alloc.py "$alloc_mib" 0 /tmp/alloc.progress > "/tmp/g-$label.out" ||
        note "$label: the allocator did not end within 90 s"
    echo "$(since "$t0") $(( $(psi_total "$acg/memory.pressure" some) - s0 )) $(( $(psi_total "$acg/memory.pressure" full) - f0 )) $(( $(psi_total /proc/pressure/memory some) - sy0 )) $(mib "$h0") $(mib "$(memstat "$hcg" file)")" \
        > "/tmp/g-$label.fig"
    [ "$how" != kernel ] && sleep 1 && stop_daemon TERM
    note "$label: $(cat "/tmp/g-$label.out")"
}
new_log
for r in $(seq "$global_reps"); do
    global_run "kernel-$r" kernel
    global_run "observe-$r" observe
    global_run "daemon-$r" daemon
done
printf '       %-10s %8s %14s %14s %16s %18s\n' run "wall s" "alloc some ms" "alloc full ms" "system some ms" "hog cache MiB"
for r in $(seq "$global_reps"); do
    for c in kernel observe daemon; do
        read -r w s f y h0 h1 < "/tmp/g-$c-$r.fig"
        printf '       %-10s %8s %14d %14d %16d %11s -> %s\n' "$c-$r" "$w" $((s / 1000)) $((f / 1000)) $((y / 1000)) "$h0" "$h1"
    done
    read -r wk sk _ yk _ < "/tmp/g-kernel-$r.fig"; read -r wd sd _ yd _ < "/tmp/g-daemon-$r.fig"
    awk -v a="$sk" -v b="$sd" -v c="$yk" -v d="$yd" -v w="$wk" -v x="$wd" -v r="$r" 'BEGIN {
        printf "       ratio %d (daemon / kernel): allocator stall %s, system stall %s, wall %.2f\n", r,
            (a > 0 ? sprintf("%.2f", b / a) : "n/a (kernel 0)"), (c > 0 ? sprintf("%.2f", d / c) : "n/a"), x / w }'
done
check_cmp "under host pressure the daemon shrank the hog" "$(reclaims_of /mdr-hog)" -gt 0
check_cmp "... never the Priority=90 allocator" "$(reclaims_of /mdr-alloc)" -eq 0
grep -m2 ': reclaim [0-9]* bytes of .*host under memory pressure' "$log" | sed 's/^/       daemon: /'
[ -n "${MDR_AP_DEBUG:-}" ] && sed 's/^/       log: /' "$log" | cut -c1-220 | head -n 80
rm -rf "$mnt/hog"
}

########################################################################
echo
want_case 4 && {
echo "==== 4. allocation throttle"
tcg=$(new_cgroup mdr-thr) || fatal "cannot create mdr-thr"
orig=1610612736    # what "the operator" set: 1536M, above the guest's memory
echo "$orig" > "$tcg/memory.high"
orig_read=$(cat "$tcg/memory.high")
no_policies; bystander_policy
# MemAvailable under 45 % of MemTotal is host pressure: the allocator's own
# growth makes it, deterministically, and its exit ends it.
daemon_conf <<EOT
SystemPressureThreshold=50%
[AllocationPoint]
MemAvailableMin=45%
ThrottleHoldTime=3s
EOT
policy thr 'Match=/mdr-thr' 'Mode=enforce' 'AllocationThrottle=yes' 'Priority=50'
total=$(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo)
thr_mib=$(( ($(memavail_mib) - total * 45 / 100 + 160) / 8 * 8 ))
note "allocator: $thr_mib MiB (enough to take MemAvailable under 45 % of $total MiB), killed 8 s after its first throttle (150 s at most)"
high_now() { cat "$tcg/memory.high"; }

# throttle_run SECONDS: the allocator, with memory.high watched every 0.25 s;
# killed (its cgroup emptied) HELD seconds after the first throttle was seen,
# or after SECONDS. How fast it allocates depends on the host's load: the
# pressure comes from how much it has allocated, not from how long it ran.
throttle_run() {
    local t0 lowest=$orig_read v first= held=$2
    sync; echo 3 > /proc/sys/vm/drop_caches
    rm -f /tmp/thr.first
    t0=$(now)
    in_cgroup "$tcg" timeout -s KILL "$1" python3 /tmp/alloc.py "$thr_mib" 2 /tmp/thr.progress 48 > /tmp/thr.out &
    thr_pid=$!
    while kill -0 "$thr_pid" 2>/dev/null; do
        v=$(high_now)
        if [ "$v" != "$orig_read" ] && [ "$v" != max ]; then
            [ -z "$first" ] && first=$(since "$t0") && echo "$first $(tail -n1 /tmp/thr.progress)" > /tmp/thr.first
            [ "$v" -lt "$lowest" ] 2>/dev/null && lowest=$v
        fi
        if [ -n "$first" ] && awk -v a="$(since "$t0")" -v b="$first" -v h="$held" 'BEGIN { exit !(a - b >= h) }'; then
            echo 1 > "$tcg/cgroup.kill"
        fi
        sleep 0.25
    done
    wait "$thr_pid" 2>/dev/null
    echo "$lowest" > /tmp/thr.lowest
}
new_log
start_daemon
throttle_run 150 8
end_t=$(now)
for _ in $(seq 60); do [ "$(high_now)" = "$orig_read" ] && break; sleep 0.25; done
restored_after=$(since "$end_t")
final=$(high_now)
stop_daemon TERM
lowest=$(cat /tmp/thr.lowest)
note "allocator: $(cat /tmp/thr.out 2>/dev/null | head -n1)$( [ -s /tmp/thr.out ] || echo "killed, $(tail -n1 /tmp/thr.progress | cut -d' ' -f2) MiB allocated")"
if [ -s /tmp/thr.first ]; then
    read -r ft fp fm < /tmp/thr.first
    awk -v ft="$ft" -v fm="$fm" -f - /tmp/thr.progress <<'EOT'
{ if ($1 <= ft) { b = $1; bm = $2 } else { a = $1; am = $2 } }
END { printf "       allocation rate: %.1f MiB/s before the throttle (%d MiB in %.1f s), ", (b > 0 ? bm / b : 0), bm, b
      if (a > b) printf "%.1f MiB/s under it (%d MiB in %.1f s)\n", (am - bm) / (a - b), am - bm, a - b
      else print "no 8 MiB step completed under it" }
EOT
fi
grep 'mdr-thr: memory.high' "$log" | head -n 6 | sed 's/^/       daemon: /'
check "the allocator was throttled (memory.high lowered from the operator's value)" \
    test "$lowest" != "$orig_read"
note "lowest memory.high: $lowest; restored ${restored_after}s after the allocator ended"
check "memory.high restored exactly after the pressure ($orig_read)" test "$final" = "$orig_read"

echo "== kill -9 mid-throttle, then start again"
new_log
start_daemon
sync; echo 3 > /proc/sys/vm/drop_caches
in_cgroup "$tcg" timeout -s KILL 60 python3 /tmp/alloc.py "$thr_mib" 60 /tmp/thr.progress 48 > /dev/null &
thr_pid=$!
for _ in $(seq 120); do [ "$(high_now)" != "$orig_read" ] && break; sleep 0.25; done
held=$(high_now)
check "a throttle was in place before the kill ($held)" test "$held" != "$orig_read"
stop_daemon KILL
check "the throttle outlived the killed daemon" test "$(high_now)" = "$held"
check "the ledger recorded it" grep -q mdr-thr "$state/throttles"
echo 1 > "$tcg/cgroup.kill"; wait "$thr_pid" 2>/dev/null
start_daemon
check "the next start restored memory.high exactly ($(high_now))" test "$(high_now)" = "$orig_read"
check "... and said so" grep -q 'restore-after-restart\|left by a previous run' "$log"
stop_daemon TERM
check "nothing left in the ledger" bash -c "! grep -q mdr-thr $state/throttles 2>/dev/null"
}

########################################################################
echo
by_file1=$(memstat "$bcg" file)
note "bystander cache: $(mib "$by_file0") MiB at the start, $(mib "$by_file1") MiB now (the kernel's own reclaim may take it; the daemon may not)"
check_cmp "the daemon never reclaimed from the Protect=yes bystander" \
    "$(new_log; grep -c '/mdr-bystander: reclaim' /tmp/daemon-all.log)" -eq 0
finish
