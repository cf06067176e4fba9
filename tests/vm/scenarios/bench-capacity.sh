#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# What a disk qemu holds to 16 MiB/s shows of its capacity: the device's
# stat and inflight files every 0.25 s while dd writes alone, then beside a
# victim that fdatasyncs, then under a static io.max at 72 %. A benchmark
# of the capacity estimate (daemon/sampling/devstat.c), run by hand:
#
#   MDRECLAIM_VM_ARTIFACTS=DIR tests/vm/vmtest --fs ext4 bench-capacity
#
# leaves DIR/capacity-FS.trace, one line a sample: the guest's uptime, the
# 11+ fields of /sys/dev/block/MAJ:MIN/stat, then inflight's reads and
# writes. tests/bench/devstat-replay replays the estimator over it.
. "$(dirname "$0")/lib.sh"

victim=$MDR_VMDIR/helpers/victim
secs=${MDR_CAP_SECS:-40}
wcg=$(new_cgroup mdr-writer) || fatal "cannot create the writer's cgroup"
vcg=$(new_cgroup mdr-victim) || fatal "cannot create the victim's cgroup"
for fs in $MDR_FS; do
    mnt=/mnt/$fs
    dev=$(findmnt -no SOURCE "$mnt")
    devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
    out=$MDR_ARTIFACTS/capacity-$fs.trace
    echo "# $fs $devno $(uname -r) write-bps ${MDR_WRITE_BPS:-16777216}" > "$out"
    ( while :; do
        echo "$(cut -d' ' -f1 /proc/uptime) $(cat "/sys/dev/block/$devno/stat") $(cat "/sys/dev/block/$devno/inflight")"
        sleep 0.25
      done >> "$out" ) &
    rec=$!
    echo "phase writer-alone $(now)" >> "$out.phases"
    in_cgroup "$wcg" timeout "$secs" dd if=/dev/zero of="$mnt/bulk" bs=1M count=100000 status=none
    sync; sleep 3
    echo "phase writer-victim $(now)" >> "$out.phases"
    in_cgroup "$wcg" timeout "$((secs / 2))" dd if=/dev/zero of="$mnt/bulk" bs=1M count=100000 status=none &
    writer=$!
    in_cgroup "$vcg" python3 "$victim" "$mnt/victim" "$((secs / 2))" "victim" || true
    wait "$writer"
    sync; sleep 3
    echo "phase writer-capped $(now)" >> "$out.phases"
    echo "$devno wbps=$((${MDR_WRITE_BPS:-16777216} * 72 / 100))" > "$wcg/io.max"
    in_cgroup "$wcg" timeout "$((secs / 2))" dd if=/dev/zero of="$mnt/bulk" bs=1M count=100000 status=none
    echo "$devno wbps=max" > "$wcg/io.max"
    sync; sleep 2
    echo "phase end $(now)" >> "$out.phases"
    kill "$rec"; wait "$rec" 2>/dev/null
    rm -f "$mnt/bulk" "$mnt/victim"
    pass "$fs: $(wc -l < "$out") samples in $(basename "$out")"
done
finish
