# What the real-service benchmarks (bench-pg.sh, bench-sqlite.sh) share:
# sourced after lib.sh, not run. A service beside a bulk writer on one
# test filesystem, in the cases alone / kernel / static-72 / mdreclaimd,
# with the writer starting first or second, and their table.
#
# The scenario sets, before bench_setup:
#   bench_name     short name (artifacts: bench-NAME-FS-CASE-daemon.log)
#   bench_prefix   its knobs are MDR_<prefix>_X, else MDR_WP_<prefix>_X
#                  (vmtest passes on only MDR_WP_* names)
#   svc_label      the service in headings ("the database")
#   svc_unit       its rate's column head, 8 characters at most ("tps")
#   svc_ops        what it counts ("transactions")
# and defines the hooks:
#   svc_run NAME      one run of $secs in $svccg, foreground
#   svc_ok NAME       succeeds when that run gave figures
#   svc_summary NAME  prints "RATE P50 P99 MAX WORST-1S COUNT" of the run
#   svc_settle        between cases, before the caches are dropped
#   svc_prime         after they are dropped
#   svc_warm          a short run the daemon sees before its case
#
# The writer, in /mdr-writer, is the knob WRITER (default cp):
#   cp     a 1.5 GiB sparse file on the guest's tmpfs copied with
#          --sparse=never --reflink=never: every byte is written, reading
#          it costs no memory nor disk
#   tar    tar -C TREE -cf - . | tar -C DST -xf -
#   rsync  rsync -a --whole-file TREE/ DST/
# where TREE is TREE_FILES (default 300) files of 4 MiB of written (not
# sparse) data on a tmpfs of its own: 1.2 GiB of the guest's memory, so
# those two need vmtest --mem 2560.
#
# SHORT=yes is the suite's short form (scenarios/service.sh): runs of 10 s
# (SECS), the writer first, the cases kernel and mdreclaimd only, and
# short_checks.

bench_knob() { local v="MDR_${bench_prefix}_$1" w="MDR_WP_${bench_prefix}_$1"; echo "${!v:-${!w:-$2}}"; }

conf=/tmp/mdr-conf
state=/tmp/mdr-state
tree=/tmp/mdr-tree
bps=${MDR_WRITE_BPS:-16777216}
cap72=$((bps * 72 / 100))

# bench_setup CGROUP: the knobs every case reads, the writer's source, the
# service's cgroup ($svccg) and the writer's ($wcg), and the daemon's
# configuration, where only the service has a policy.
bench_setup() {
    svc_cgname=$1
    short=$(bench_knob SHORT no)
    case $short in yes|no) ;; *) fatal "MDR_${bench_prefix}_SHORT must be yes or no (got $short)" ;; esac
    order=$(bench_knob ORDER writer-first)
    secs=$(bench_knob SECS 24)
    if [ "$short" = yes ]; then
        order=writer-first
        secs=$(bench_knob SECS 10)
    fi
    writer_kind=$(bench_knob WRITER cp)
    case $order in writer-first|db-first|both) ;;
    *) fatal "MDR_${bench_prefix}_ORDER must be writer-first, db-first or both (got $order)" ;; esac
    writer_prepare
    svccg=$(new_cgroup "$svc_cgname") || fatal "cannot create the service's cgroup"
    wcg=$(new_cgroup mdr-writer) || fatal "cannot create the writer's cgroup"
    check "io.max exists for the writer" test -e "$wcg/io.max"
    # The daemon as write-point.sh runs it (its tick and rescan), shipped
    # defaults otherwise.
    mkdir -p "$conf/etc/mdreclaim/policies.d" "$state"
    printf '[Daemon]\nInterval=500ms\nRescanInterval=2s\n[WritePoint]\nCapHoldTime=5s\n' \
        > "$conf/etc/mdreclaim/mdreclaimd.conf"
    printf '[Policy]\nMatch=/%s\nProtect=yes\n' "$svc_cgname" > "$conf/etc/mdreclaim/policies.d/$bench_name.conf"
}

# writer_prepare: what the writer reads, made on the guest's memory.
writer_prepare() {
    local files t0
    case $writer_kind in
    cp)
        truncate -s 1536M /tmp/mdr-src || fatal "cannot make the writer's source file" ;;
    tar|rsync)
        [ "$writer_kind" = tar ] || command -v rsync > /dev/null ||
            fatal "rsync is not installed on the host (apt-get install -y rsync)"
        files=$(bench_knob TREE_FILES 300)
        [[ $files =~ ^[0-9]+$ ]] || fatal "MDR_${bench_prefix}_TREE_FILES must be a number (got $files)"
        local need=$((files * 4 + 1024)) have
        have=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
        [ "$have" -ge "$need" ] ||
            fatal "the tree of $files x 4 MiB needs $need MiB free, the guest has $have (vmtest --mem 2560)"
        t0=$(now)
        mkdir -p "$tree" && mount -t tmpfs -o "size=$((files * 4 + 16))m" mdr-tree "$tree" ||
            fatal "cannot mount the writer's tree"
        python3 - "$tree" "$files" <<'EOT' || fatal "cannot make the writer's tree"
import sys
top, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    chunk = (b"mdr-tree %06d " % i) * 4096   # 64 KiB, never zeros
    with open(f"{top}/f{i:04d}", "wb") as f:
        for _ in range(64):
            f.write(chunk)
EOT
        note "the writer's tree: $files files of 4 MiB on a tmpfs, made in $(since "$t0") s" ;;
    *)
        fatal "MDR_${bench_prefix}_WRITER must be cp, tar or rsync (got $writer_kind)" ;;
    esac
}

# writer_cleanup: the source, once every filesystem is done.
writer_cleanup() {
    rm -f /tmp/mdr-src
    ! mountpoint -q "$tree" || umount "$tree"
}

# bench_fs FS: the filesystem the cases run on ($fs, $mnt, $dev, $devno),
# no case run yet
bench_fs() {
    fs=$1
    mnt=/mnt/$fs
    dev=$(findmnt -no SOURCE "$mnt")
    devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
    cases=
}

daemon_pid=
start_daemon() {
    "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
        --log-level info 2>> /tmp/daemon.log &
    daemon_pid=$!
    sleep 2
}
stop_daemon() { # SIGNAL
    kill "-$1" "$daemon_pid" 2> /dev/null
    wait "$daemon_pid" 2> /dev/null
    daemon_pid=
}

sectors_written() { awk '{ print $7 }' "/sys/dev/block/$devno/stat"; }
# cg_wbytes CGROUP: what the cgroup has written to the test device (io.stat)
cg_wbytes() {
    awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) print substr($i, 8) }' "$1/io.stat" |
        grep . || echo 0
}
wbps_now() { awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=/) print substr($i, 6) }' "$wcg/io.max"; }
rate() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { printf "%.2f", (b - a) / 1048576 / t }'; }

# settle: what a case left is written and dropped, the service settled
# (its hook), so that each case starts alike.
settle() {
    rm -rf "$mnt/bulk"
    sync
    svc_settle
    sync
    echo 3 > /proc/sys/vm/drop_caches
    svc_prime
}

# writer SECS: the writer in its cgroup for at most SECS (timeout stops
# the whole pipeline: its process group)
writer() {
    case $writer_kind in
    cp)
        in_cgroup "$wcg" timeout "$1" cp --sparse=never --reflink=never /tmp/mdr-src "$mnt/bulk" ;;
    tar)
        mkdir -p "$mnt/bulk"
        in_cgroup "$wcg" timeout "$1" bash -c 'tar -C "$1" -cf - . | tar -C "$2" -xf -' tar "$tree" "$mnt/bulk" ;;
    rsync)
        in_cgroup "$wcg" timeout "$1" rsync -a --whole-file "$tree/" "$mnt/bulk/" ;;
    esac
}

# writer_mib: what the writer wrote (into the page cache, not all of it on
# the disk yet), in MiB
writer_mib() { du -sm --apparent-size "$mnt/bulk" 2> /dev/null | cut -f1; }

# writer_alone NAME: the writer alone for the length of a case
writer_alone() {
    local s0 t0
    settle
    s0=$(sectors_written)
    t0=$(now)
    writer "$secs"
    rate $((s0 * 512)) $(($(sectors_written) * 512)) "$(since "$t0")" > "/tmp/wrate-$1"
    note "$1: the writer alone completed $(cat "/tmp/wrate-$1") MiB/s; it wrote $(writer_mib) MiB"
}

# learn_device: the writer alone, with the kernel and with mdreclaimd,
# which learns the device's capacity there (nothing runs in the service's
# cgroup yet); the capacity is kept in /tmp/devices-learnt.
learn_device() {
    echo "== $writer_kind alone: kernel, then mdreclaimd (it learns the device)"
    writer_alone writer-kernel
    rm -f "$state/devices"
    : > /tmp/daemon.log
    start_daemon
    writer_alone writer-mdreclaimd
    stop_daemon TERM
    note "device capacities the daemon learnt: $(grep -v '^#' "$state/devices" 2> /dev/null | tr '\n' ' ')"
    cp "$state/devices" /tmp/devices-learnt 2> /dev/null
    check "the daemon learnt the device's capacity" grep -q . /tmp/devices-learnt
    check "the writer was not capped while nobody protected ran" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
}

# watch_first_cap: in the background, when the writer's first cap came,
# counted from its start (t0), into /tmp/firstcap-$name; "-" when none
# came. io.max is read with builtins every 0.2 s (a fork may take half a
# second in a busy guest), so it is 0.0 for a cap set before the writer.
watch_first_cap() {
    (local line up
     while kill -0 "$wpid" 2> /dev/null; do
         while read -r line; do
             if [[ $line == "$devno "*wbps=[0-9]* ]]; then
                 read -r up _ < /proc/uptime
                 awk -v a="$t0" -v b="$up" 'BEGIN { printf "%.1f\n", b - a }'
                 exit
             fi
         done < "$wcg/io.max"
         sleep 0.2
     done
     echo -) > "/tmp/firstcap-$name" &
    fcpid=$!
}

# run_case NAME ORDER: one run of the service; ORDER none: alone,
# writer-first: the writer starts, the service's run 2 s later, the writer
# stops with it; db-first: the service's run starts, the writer 2 s later
# until its end. The writer's rate is over its own run: what the device
# completed (the service's own writes included, as write-point.sh's
# run_case counts), and the writer cgroup's io.stat beside it.
run_case() {
    local name=$1 ord=$2 s0 s1 w0 t0 wpid='' bpid mid fcpid wmib
    settle
    # The writer's cap halfway through, as io.max says, and what the daemon
    # (when it runs) says of the writer then.
    (sleep $((secs / 2)); wbps_now > "/tmp/wbps-mid-$name"
     if [ -n "$daemon_pid" ] && [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ]; then
         "$MDCTL" show /mdr-writer 2>&1 | head -n 30 > "/tmp/show-mid-$name"
     fi) &
    mid=$!
    case $ord in
    none)
        svc_run "$name" ;;
    writer-first)
        s0=$(sectors_written) w0=$(cg_wbytes "$wcg") t0=$(now)
        writer $((secs + 2)) &
        wpid=$!
        watch_first_cap
        sleep 2
        svc_run "$name" &
        bpid=$! ;;
    db-first)
        svc_run "$name" &
        bpid=$!
        sleep 2
        s0=$(sectors_written) w0=$(cg_wbytes "$wcg") t0=$(now)
        writer $((secs - 2)) &
        wpid=$!
        watch_first_cap ;;
    esac
    if [ -n "$wpid" ]; then
        wait "$wpid"
        s1=$(sectors_written)
        wmib=$(writer_mib)
        echo "$(rate $((s0 * 512)) $((s1 * 512)) "$(since "$t0")") $(rate "$w0" "$(cg_wbytes "$wcg")" "$(since "$t0")")" \
            > "/tmp/wrate-$name"
        wait "$bpid" "$fcpid"
    fi
    wait "$mid"
    check "$name: the service's run gave figures" svc_ok "$name"
    svc_summary "$name" > "/tmp/sum-$name"
    read -r tps p50 p99 max w1 n < "/tmp/sum-$name"
    note "$name: $n $svc_ops, $svc_unit $tps (worst second $w1), latency p50 $p50 p99 $p99 max $max ms"
    [ -z "$wpid" ] || note "$name: the device completed $(cut -d' ' -f1 "/tmp/wrate-$name") MiB/s over the" \
        "writer's run, the writer's own $(cut -d' ' -f2 "/tmp/wrate-$name") (io.stat, at dispatch);" \
        "it wrote $wmib MiB; its io.max mid-run: $(grep . "/tmp/wbps-mid-$name" || echo none), first capped $(cat "/tmp/firstcap-$name") s after its start" \
        "(it started at ${t0} s of uptime)"
    cases="$cases $name"
}

# daemon_case_report NAME: what mdctl and the daemon's log said of the
# daemon case just run, after the daemon stopped.
daemon_case_report() {
    local name=$1
    check "$name: a clean stop restored the writer's io.max" test "$(wbps_now)" = "" -o "$(wbps_now)" = max
    echo "       the daemon's write-point actions in the case (first 12):"
    grep -E 'ACTION=(cap-writes|drain-cap|lift-cap|restore-on-stop)' /tmp/daemon.log | head -n 12 |
        sed 's/ KNOB=.*//; s/^<[0-9]>/       daemon: /'
    grep -c 'ACTION=cap-writes' /tmp/daemon.log | sed 's/^/       cap changes in the case: /'
    grep -E '^<[0-3]>' /tmp/daemon.log | head -n 5 | sed 's/^/       daemon error: /'
    [ -z "${MDR_ARTIFACTS:-}" ] ||
        { mkdir -p "$MDR_ARTIFACTS" && cp /tmp/daemon.log "$MDR_ARTIFACTS/bench-$bench_name-$fs-$name-daemon.log"; }
}

# daemon_case NAME ORDER: beside the writer with the daemon running and
# only the service configured.
daemon_case() {
    local name=$1 ord=$2
    echo "== beside $writer_kind with $name, $svc_label alone configured" \
        "(Match=/$svc_cgname, Protect=yes; $ord)"
    cp /tmp/devices-learnt "$state/devices" 2> /dev/null
    note "device capacities the daemon starts from: $(grep -v '^#' "$state/devices" 2> /dev/null | tr '\n' ' ')"
    : > /tmp/daemon.log
    start_daemon
    # The daemon sees the service at work on its own before anyone
    # contends (its baseline), as a service there before the writer.
    svc_warm
    run_case "$name" "$ord"
    [ -s "/tmp/show-mid-$name" ] && grep -E '^ *(Policy|Throttle|Why):' "/tmp/show-mid-$name" |
        sed 's/^ */       mdctl show \/mdr-writer (mid-run): /'
    stop_daemon TERM
    daemon_case_report "$name"
}

# writer_cases: kernel, static-72 and mdreclaimd (and mdreclaimd-b with
# MDR_WP_DAEMON_B, another build of the daemon, an absolute path in MDRECLAIMD's directory),
# in each order asked; case names get -writer or -db when both orders run.
writer_cases() {
    local ords=$order ord sfx
    [ "$order" = both ] && ords="writer-first db-first"
    for ord in $ords; do
        sfx=
        [ "$order" = both ] && sfx=-${ord%%-*}
        echo "== beside $writer_kind, the kernel alone ($ord)"
        run_case "kernel$sfx" "$ord"

        if [ "$short" = no ]; then
            echo "== beside $writer_kind held by a static io.max at 72 % of the device ($cap72 B/s, $ord)"
            echo "$devno wbps=$cap72" > "$wcg/io.max"
            run_case "static-72$sfx" "$ord"
            echo "$devno wbps=max" > "$wcg/io.max"
        fi

        daemon_case "mdreclaimd$sfx" "$ord"
        if [ -n "${MDR_WP_DAEMON_B:-}" ]; then
            [ -x "$MDR_WP_DAEMON_B" ] || fatal "MDR_WP_DAEMON_B=$MDR_WP_DAEMON_B: no such program in the guest (give an absolute path in MDRECLAIMD's directory)"
            MDRECLAIMD=$MDR_WP_DAEMON_B daemon_case "mdreclaimd-b$sfx" "$ord"
        fi
    done
}

# results_table [PREFIX]: one row per case run, then the writer alone; the
# service's figures from /tmp/PREFIX-CASE (default sum: svc_summary's; a
# scenario with a second service keeps its figures under another prefix).
results_table() {
    local sp=${1:-sum}
    printf '%-18s %8s %8s %8s %9s %8s %7s %18s %7s %7s\n' case "$svc_unit" "p50 ms" "p99 ms" "max ms" "worst 1s" kept \
        "writer MiB/s" "of cap" "cap at"
    local c tps p50 p99 max w1 n a_tps wr wo ws fc sfx
    read -r a_tps _ < "/tmp/$sp-alone"
    for c in $cases; do
        read -r tps p50 p99 max w1 n < "/tmp/$sp-$c"
        wr=- wo='' ws='' fc=-
        if [ -s "/tmp/wrate-$c" ] && [ "${c#alone}" = "$c" ]; then
            read -r wr wo < "/tmp/wrate-$c"
            fc=$(cat "/tmp/firstcap-$c")
            case $c in *-writer) sfx=-writer ;; *-db) sfx=-db ;; *) sfx= ;; esac
            [ -s "/tmp/wrate-static-72$sfx" ] && ws=$(awk -v r="$wr" -v s="$(cut -d' ' -f1 "/tmp/wrate-static-72$sfx")" \
                'BEGIN { if (s > 0) printf "%.0f%%", 100 * r / s }')
        fi
        awk -v c="$c" -v t="$tps" -v a="$a_tps" -v p50="$p50" -v p99="$p99" -v mx="$max" -v w1="$w1" \
            -v wr="$wr" -v wo="$wo" -v ws="${ws:--}" -v fc="$fc" 'BEGIN {
            wcol = wr == "-" ? "-" : sprintf("%.2f [%.2f]", wr, wo)
            printf "%-18s %8.1f %8.1f %8.1f %9.1f %8.1f %6.0f%% %18s %7s %7s\n", c, t, p50, p99, mx, w1, (a > 0 ? 100 * t / a : 0), wcol, ws, (fc == "-" ? "-" : fc " s") }'
    done
    awk -v a="$(cat /tmp/wrate-writer-kernel)" -v b="$(cat /tmp/wrate-writer-mdreclaimd)" -v w="$writer_kind" 'BEGIN {
        printf "%s alone (no service): kernel %.2f MiB/s, with mdreclaimd %.2f MiB/s (%.0f%%); static cap %.2f MiB/s\n",
            w, a, b, (a > 0 ? 100 * b / a : 0), '"$cap72"' / 1048576 }'
}

# short_checks: what the short form asserts, the kernel alone against
# mdreclaimd with only the service protected, the writer first. The bounds
# are wide, for a loaded machine; the kernel alone meets none of the first
# three (its worst transaction beside cp is 7-22 s in the benchmarks, its
# rate 1-10 % of the service's alone, the daemon's 0.2-0.6 s and 40-90 %).
# The writer's rate is its own (io.stat), not the device's, which counts
# the service's writes too. It is weighed against what the device completed
# for the writer alone with the kernel (learn_device's first run), not
# against its io.stat beside the service with the kernel alone: io.stat
# counts at dispatch, and with nothing holding it the writer fills the
# disk's deep queue, so that figure ran to 21 MiB/s on a 15 MiB/s disk (a
# CI run's, which made 8.3 MiB/s look like 39 %). Held to GuardRate and a
# stall's step under it, the writer keeps 55-60 % of the device's rate.
short_checks() {
    local k_rate k_max d_rate d_max a_w d_w cap
    read -r k_rate _ _ k_max _ _ < /tmp/sum-kernel
    read -r d_rate _ _ d_max _ _ < /tmp/sum-mdreclaimd
    read -r a_w < /tmp/wrate-writer-kernel
    read -r _ d_w < /tmp/wrate-mdreclaimd
    cap=$(cat /tmp/firstcap-mdreclaimd 2> /dev/null)
    ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
    check "mdreclaimd capped the writer, unconfigured, for the protected service (first cap ${cap:-?} s after its start)" \
        test -n "$cap" -a "$cap" != -
    check "the service's worst transaction beside mdreclaimd is under 2 s (${d_max:-?} ms; the kernel alone ${k_max:-?} ms)" \
        awk -v m="$d_max" 'BEGIN { exit !(m + 0 > 0 && m + 0 < 2000) }'
    check "its $svc_unit beside mdreclaimd is at least 3 times the kernel alone's ($d_rate against $k_rate)" \
        ge "$d_rate" "$(awk -v k="$k_rate" 'BEGIN { print 3 * k }')"
    check "the writer's own rate beside mdreclaimd is at least 40 % of the device's ($d_w MiB/s, io.stat; alone $a_w MiB/s)" \
        ge "$d_w" "$(awk -v k="$a_w" 'BEGIN { print k * 0.4 }')"
    check "the daemon logged no error" test -z "$(grep -E '^<[0-3]>' /tmp/daemon.log)"
}
