#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# vm-write-bps: 16777216
# The README's main job: mdreclaimd runs as a systemd service while a bulk
# writer (dd) shares a 16 MiB/s disk with a victim that makes small
# synchronous writes, and we print what the daemon saw. With mdctl built, the
# operator's side too: one policy set with mdctl (the victim protected; the
# writer has none), the kernel alone and a static io.max at 72 % beside it, the
# daemon's view (mdctl status, list) and what it did (mdctl events).
# The daemon and mdctl come from the build tree (MDRECLAIMD, MDCTL), or from
# the Debian package when vmtest hands one in (MDR_DEB: tools/main-job
# --package): the demo installs it with apt first, unless it is installed
# already (the package scenario runs this demo after its own install).
. "$(dirname "$0")/lib.sh"

from="the build tree"
if [ -n "${MDR_DEB:-}" ]; then
    from="the package $(basename "$MDR_DEB")"
    if ! dpkg -s mdreclaim > /dev/null 2>&1; then
        printf '\n--- installing %s\n' "$(basename "$MDR_DEB")"
        check "apt-get install succeeds" apt_install_deb
    fi
    MDRECLAIMD=/usr/sbin/mdreclaimd
    MDCTL=/usr/bin/mdctl
fi
need_daemon

victim=$MDR_VMDIR/helpers/victim
alone_s=8
kernel_s=16
static_s=16
busy_s=24
# The victim is a service that runs before the writer comes and begins its
# burst this long after it (a database between two bursts of commits), in
# every phase beside the writer.
lead_s=3

section() { printf '\n--- %s\n' "$*"; }
# What the disk completed (sectors written, /sys/block/vda/stat), for each phase's write rate.
disk_written() { awk '{ print $7 }' /sys/block/vda/stat; }
mark() { echo "$(disk_written) $(now)" > "/tmp/mark-$1"; }
disk_rate() { # PHASE: MiB/s the disk completed since mark PHASE
    awk -v s="$(disk_written)" -v t="$(now)" '{ printf "%.1f", (s - $1) * 512 / 1048576 / (t - $2) }' "/tmp/mark-$1"
}
unit_state() { systemctl show -P ActiveState "$1"; }
sample() { "$MDRECLAIMD" --sample-once --json; }

cat <<EOT
mdreclaim demo: Debian's $(uname -r) kernel under qemu, systemd $(systemctl --version | awk 'NR == 1 { print $2 }') as PID 1,
a 4 GiB ext4 disk throttled to 16 MiB/s, $(( $(awk '/MemTotal/ { print $2 }' /proc/meminfo) / 1024 )) MiB of memory;
mdreclaimd and mdctl from $from.
  mdr-victim.service  rewrites 4 KiB of a 1 MiB file and fdatasyncs it, over and over
  mdr-writer.service  dd, writing as fast as the page cache lets it
EOT

# Metrics for node_exporter's textfile collector, where Debian's reads them
# (the shipped unit may write there): a scrape of it during the run below.
textfile_dir=/var/lib/prometheus/node-exporter
if [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ]; then
    mkdir -p /etc/mdreclaim/mdreclaimd.conf.d "$textfile_dir"
    printf '[Metrics]\nTextfileDirectory=%s\nTextfileInterval=2s\n' "$textfile_dir" \
        > /etc/mdreclaim/mdreclaimd.conf.d/demo-metrics.conf
fi

section "starting mdreclaimd.service"
# Already running (the package scenario started it): restarted, so that it reads
# the drop-in above and the unit makes the directory it names writable (a
# ReadWritePaths= that did not exist at the start stays read-only).
if [ "$(unit_state mdreclaimd.service)" = active ]; then
    systemctl restart mdreclaimd.service
else
    systemctl start mdreclaimd.service
fi
check "mdreclaimd.service is active" test "$(unit_state mdreclaimd.service)" = active
systemctl status --no-pager --lines=0 mdreclaimd.service | sed -n '1,4p'

# The operator's side, through mdctl when it is built: one line, the victim
# protected; the writer has no policy, and pays all the same. The daemon's
# view before the run.
have_mdctl=0
if [ -n "${MDCTL:-}" ] && [ -x "$MDCTL" ]; then
    have_mdctl=1
    section "the one policy, set with mdctl: the victim is protected"
    wait_socket() { for _ in $(seq 60); do "$MDCTL" status > /dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }
    check "mdctl reaches the daemon" wait_socket
    check "mdctl policy set mdr-victim.service Protect=yes" "$MDCTL" policy set mdr-victim.service Protect=yes
    "$MDCTL" policy list
    "$MDCTL" status
fi

# The comparisons run with the daemon up but told to leave writers under no
# policy alone (CapWritersWithoutPolicy=no, a drop-in and a reload): it still
# watches, and learns the disk's capacity meanwhile, as it would on a host
# it has run on for a while.
hands_off() { # on|off
    if [ "$1" = on ]; then
        printf '[WritePoint]\nCapWritersWithoutPolicy=no\n' > /etc/mdreclaim/mdreclaimd.conf.d/demo-hands-off.conf
    else
        rm -f /etc/mdreclaim/mdreclaimd.conf.d/demo-hands-off.conf
    fi
    systemctl reload mdreclaimd.service
    sleep 1
}
wait_gone() { [ ! -d "/sys/fs/cgroup/system.slice/$1" ]; }
# contend PHASE SECS LABEL [systemd-run options of the writer]: the victim's
# service starts, the writer right after it, and the victim's burst of SECS
# seconds $lead_s s later; its line goes to /tmp/PHASE.txt.
start_contention() {
    local phase=$1 secs=$2 label=$3
    shift 3
    mark "$phase"
    date +%s > "/tmp/began-$phase"
    systemd-run --quiet --unit=mdr-victim -p StandardOutput="file:/tmp/$phase.txt" \
        sh -c "sleep $lead_s; exec python3 $victim /mnt/ext4/victim $secs '$label'"
    systemd-run --quiet --unit=mdr-writer "$@" dd if=/dev/zero of=/mnt/ext4/bulk bs=1M count=900 status=none
}
# end_contention PHASE: once the victim is done, the writer stopped and its file removed (its dirty
# pages go with it, unwritten).
end_contention() {
    wait_for $((busy_s + 60)) wait_gone mdr-victim.service
    disk_rate "$1" > "/tmp/$1.rate"
    cat "/tmp/$1.txt"
    systemctl stop mdr-writer.service
    rm -f /mnt/ext4/bulk
    wait_for 30 wait_gone mdr-writer.service
    sync
}

section "the victim alone for ${alone_s}s"
date +%s > /tmp/began-alone
systemd-run --quiet --wait --pipe --unit=mdr-victim-alone \
    python3 "$victim" /mnt/ext4/victim "$alone_s" "victim alone        " | tee /tmp/alone.txt

# The same pair with the kernel alone, then with a static io.max on the writer
# at 72 % of the disk set by hand before it starts (what an operator who knows
# the disk would set), for comparison.
if [ "$have_mdctl" = 1 ]; then
    hands_off on
    section "the victim beside the writer for ${kernel_s}s, the kernel alone (the writer started first)"
    start_contention kernel "$kernel_s" "victim, kernel alone"
    end_contention kernel
    section "the same, a static io.max on the writer at 72 % of the disk (IOWriteBandwidthMax=)"
    start_contention static "$static_s" "victim, static cap  " -p "IOWriteBandwidthMax=/dev/vda $((16777216 * 72 / 100))"
    end_contention static
    hands_off off
fi

section "the victim beside the writer for ${busy_s}s, mdreclaimd enforcing; what the daemon samples (--sample-once --json) every few seconds"
start_contention busy "$busy_s" "victim beside writer"
echo "(dirty, writeback: the writer's memory.stat file_dirty, file_writeback; io stall: how long"
echo " the victim's tasks waited on I/O since the first sample, from its io.pressure 'some' total)"
printf '%6s  %18s %11s  %22s\n' "t" "mdr-writer: dirty" "writeback" "mdr-victim: io stall"
# Whether the textfile node_exporter would read holds the writer's cap (prints it).
cat > /tmp/scrape.py <<'EOT'
import sys
from prometheus_client.parser import text_string_to_metric_families
try:
    text = open(sys.argv[1]).read()
except OSError:
    sys.exit(1)
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        if s.name == "mdreclaim_throttle_write_limit_bytes_per_second" \
                and s.labels.get("unit") == "mdr-writer.service":
            print(f"io.max {s.labels.get('device')} wbps={s.value:.0f} set by the {s.labels.get('point')} point")
            sys.exit(0)
sys.exit(1)
EOT
scraped=
max_dirty=0
seen_writer=0
seen_victim=0
v0=
t0=$(now)
# Until the victim's cgroup goes away (no systemctl in the loop: under TCG each
# call costs seconds).
while [ -d /sys/fs/cgroup/system.slice/mdr-victim.service ]; do
    sample > /tmp/s.json || break
    # One jq for both units: "dirty writeback|victim's io some total".
    IFS='|' read -r w v < <(jq -r '[(.cgroups[] | select(.unit == "mdr-writer.service")
                                      | "\(.file_dirty) \(.file_writeback)"),
                                     "|",
                                     (.cgroups[] | select(.unit == "mdr-victim.service")
                                      | .io_pressure.some.total)] | map(tostring) | join("")' /tmp/s.json)
    if [ -n "$w" ]; then
        seen_writer=1
        read -r d wb <<< "$w"
        [ $((d + wb)) -gt "$max_dirty" ] && max_dirty=$((d + wb))
    else
        d=0 wb=0
    fi
    [ -n "$v" ] && [ "$v" != null ] || break    # the victim has just finished
    seen_victim=1
    v0=${v0:-$v}
    stall="$(( (v - v0) / 1000 )) ms"
    printf '%5ss  %14s MiB %7s MiB  %22s\n' "$(since "$t0")" "$(mib "$d")" "$(mib "$wb")" "$stall"
    sleep 2
done
disk_rate busy > /tmp/busy.rate
# The scrape, once the victim is done (python's start takes seconds under TCG;
# the cap outlives the victim by CapHoldTime, 10 s): what node_exporter would read.
cp "$textfile_dir/mdreclaim.prom" /tmp/scraped.prom 2> /dev/null &&
    scraped=$(python3 /tmp/scrape.py /tmp/scraped.prom) || scraped=
cat /tmp/busy.txt
rate() { sed -n 's/.* = \([0-9.]*\) ops\/s.*/\1/p' "$1"; }
p99() { sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' "$1"; }
worst() { sed -n 's/.*worst \([0-9.]*\) ms.*/\1/p' "$1"; }
# The victim alone, beside the writer with the kernel alone, and with mdreclaimd.
three_way() {
    local label f a
    a=$(rate /tmp/alone.txt)
    printf '\n%-33s %7s %6s %8s %9s %7s\n' "the victim (fdatasync of 4 KiB)" "ops/s" "kept" "p99 ms" "worst ms" "disk"
    for f in alone kernel static busy; do
        [ -n "$(rate "/tmp/$f.txt")" ] || continue
        case $f in
        alone) label="alone" ;;
        kernel) label="beside the writer, kernel alone" ;;
        static) label="... static io.max at 72 %" ;;
        busy) label="beside the writer, mdreclaimd" ;;
        esac
        awk -v l="$label" -v r="$(rate "/tmp/$f.txt")" -v a="$a" -v p="$(p99 "/tmp/$f.txt")" \
            -v w="$(worst "/tmp/$f.txt")" -v d="$(cat "/tmp/$f.rate" 2>/dev/null)" 'BEGIN {
            printf "%-33s %7.1f %5.0f%% %8.1f %9.0f %7s\n", l, r, 100 * r / a, p, w, d == "" ? "" : d " MiB/s" }'
    done
    echo "(kept: ops/s against the victim alone; disk: what the disk completed meanwhile, the writer nearly all of it)"
}
if [ -n "$(rate /tmp/alone.txt)" ] && [ -n "$(rate /tmp/busy.txt)" ]; then
    three_way
fi

if [ "$have_mdctl" = 1 ]; then
    section "mdctl list --sort dirty while the writer still runs"
    "$MDCTL" list --sort dirty | grep -E 'CGROUP|mdr-|mdreclaimd'
fi

section "mdreclaimd --sample-once while the writer still runs (this demo's units)"
"$MDRECLAIMD" --sample-once > /tmp/sample.txt
rc=$?
head -n 1 /tmp/sample.txt
grep -E 'mdr-|mdreclaimd' /tmp/sample.txt
systemctl stop mdr-writer.service 2>/dev/null

if [ "$have_mdctl" = 1 ]; then
    section "the last minutes as the daemon recorded them (mdctl history mdr-victim.service, the last 10 s)"
    "$MDCTL" history mdr-victim.service --since 2min | { IFS= read -r header; echo "$header"; tail -n 10; }
    plot_rc=skipped
    if command -v gnuplot > /dev/null; then
        # The writer has no policy, so no sample history: the victim's stall and the host's figures
        # (/: its dirty data and writes, the writer's nearly all), each phase marked from its start.
        phases=()
        for p in "alone:alone" "kernel:kernel alone" "static:static io.max 72 %" "busy:mdreclaimd"; do
            [ -s "/tmp/began-${p%%:*}" ] && phases+=(--mark "@$(cat "/tmp/began-${p%%:*}")=${p#*:}")
        done
        "$MDCTL" plot mdr-victim.service / --since "@$(( $(cat /tmp/began-alone) - 5 ))" "${phases[@]}" \
            -o "$MDR_ARTIFACTS/main-job.png" && plot_rc=0 || plot_rc=$?
        [ "$plot_rc" = 0 ] && echo "(a plot of it: main-job.png, kept by tools/main-job)"
    fi
fi

if [ "$have_mdctl" = 1 ]; then
    section "what the daemon did to this demo's units (mdctl events)"
    "$MDCTL" events --no-legend | grep -E 'mdr-' | tail -n 20
    check "mdctl events lists the policy changes" sh -c "\"$MDCTL\" events | grep -q policy-change"
fi

section "what mdreclaimd logged (journalctl -u mdreclaimd)"
journalctl -u mdreclaimd.service --no-pager -o short-monotonic > /tmp/journal.txt
n=$(wc -l < /tmp/journal.txt)
if [ "$n" -le 24 ]; then
    cat /tmp/journal.txt
else
    head -n 8 /tmp/journal.txt
    echo "    ... ($((n - 20)) more lines) ..."
    tail -n 12 /tmp/journal.txt
fi

section "checks"
check_cmp "--sample-once (cgroup2 found by discovery) exits 0" "$rc" -eq 0
check "the daemon's samples named the writer's unit" test "$seen_writer" = 1
check "the daemon's samples named the victim's unit" test "$seen_victim" = 1
check_cmp "the writer's dirty + writeback seen by the daemon (MiB)" "$(mib "$max_dirty")" -gt 0
check "the victim ran alone" grep -q 'ops/s' /tmp/alone.txt
check "the victim ran beside the writer" grep -q 'ops/s' /tmp/busy.txt
check "mdreclaimd logged to the journal" test -s /tmp/journal.txt
if [ "$have_mdctl" = 1 ]; then
    check "the victim ran beside the writer with the kernel alone" grep -q 'ops/s' /tmp/kernel.txt
    check "a scrape of $textfile_dir/mdreclaim.prom found the writer's cap${scraped:+ ($scraped)}" \
        test -n "$scraped"
    [ "$plot_rc" = skipped ] || check_cmp "mdctl plot drew the run" "$plot_rc" -eq 0
fi
check "mdreclaimd.service is still active" test "$(unit_state mdreclaimd.service)" = active
check_cmp "mdreclaimd.service was not restarted" "$(systemctl show -P NRestarts mdreclaimd.service)" -eq 0

section "in short"
if [ -n "$(rate /tmp/alone.txt)" ] && [ -n "$(rate /tmp/busy.txt)" ]; then
    three_way
fi
if [ "$have_mdctl" = 1 ] && [ "$plot_rc" = 0 ]; then
    echo "The run as the daemon recorded it: main-job.png (the victim's stall, the writer's dirty data and"
    echo "writes, and the cap on one time axis), kept in build/main-job/ by tools/main-job."
fi
# The files stay: the disk goes with the VM, and removing a file waits for
# its writeback, which the daemon's cap may still hold to a crawl (the
# package scenario goes on after this demo, with files of its own).
finish
