#!/bin/bash
# vm-fs: ext4 xfs btrfs
# Dirty page accounting per cgroup on each filesystem: a dd raises the
# writer's file_dirty, and targeted writeback (sync_file_range, syncfs)
# brings it down again. Background writeback is held off, so what we see is
# what the writer left, not what the flusher happened to do.
. "$(dirname "$0")/lib.sh"

sysctl -q -w vm.dirty_background_ratio=80 vm.dirty_ratio=90 \
    vm.dirty_expire_centisecs=360000 vm.dirty_writeback_centisecs=0
size_mib=64
# A dd of 64 MiB leaves 61-64 MiB dirty on ext4 and xfs; half is the bar.

# dirty_plus_writeback CGROUP_DIR -> bytes
dirty_wb() { echo $(( $(memstat "$1" file_dirty) + $(memstat "$1" file_writeback) )); }

# io_written CGROUP_DIR -> bytes the cgroup has written to any device (io.stat)
io_written() {
    awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub(/^wbytes=/, "", $i); s += $i } }
         END { print s + 0 }' "$1/io.stat"
}

# settle CGROUP_DIR: wait up to 20 s for file_dirty + file_writeback to drain
# below 1 MiB (completions are asynchronous after a SYNC_FILE_RANGE_WRITE).
settle() {
    local i
    for i in $(seq 200); do
        [ "$(dirty_wb "$1")" -lt 1048576 ] && return 0
        sleep 0.1
    done
}

for fs in $MDR_FS; do
    mnt=/mnt/$fs
    # btrfs commits its transaction every 30 s by default, and a commit that
    # falls during the dd writes part of it back: seen once as 43 of 64 MiB.
    [ "$fs" = btrfs ] && mount -o remount,commit=3600 "$mnt"
    cg=$(new_cgroup "mdr-dirty-$fs") || fatal "cannot create a cgroup"
    echo 256M > "$cg/memory.high"

    # 1. dd, then sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER) on its file.
    # Every page the dd dirtied is charged to the writer: still dirty, under
    # writeback, or already written by the writer's own io (io.stat). btrfs
    # writes part of a dd back by itself, commit interval or not: 0 to 36 of
    # 64 MiB were seen gone from file_dirty a second after the dd.
    t=$(now)
    in_cgroup "$cg" dd if=/dev/zero of="$mnt/a" bs=1M count=$size_mib status=none
    note "$fs: dd took $(since "$t")s"
    sleep 1     # /proc/vmstat folds the per-cpu counts once a second
    d=$(memstat "$cg" file_dirty)
    wb=$(memstat "$cg" file_writeback)
    root_d=$(awk '$1 == "nr_dirty" { print $2 * 4096 }' /proc/vmstat)
    written=$(io_written "$cg")
    note "$fs: after a ${size_mib} MiB dd: file_dirty $(mib "$d") MiB, file_writeback $(mib "$wb") MiB, written by the writer $(mib "$written") MiB"
    check_cmp "$fs: the dd's pages are charged to the writer (MiB dirty + writeback + written)" \
        "$(mib $((d + wb + written)))" -ge $((size_mib * 9 / 10))
    [ "$fs" = btrfs ] ||
        check_cmp "$fs: dd raised the writer's file_dirty (MiB)" "$(mib "$d")" -ge $((size_mib / 2))
    check_cmp "$fs: the global dirty count covers it (MiB, /proc/vmstat nr_dirty)" "$(mib "$root_d")" -ge "$(mib "$d")"
    t=$(now)
    python3 "$MDR_VMDIR/helpers/sync-range" --wait "$mnt/a"
    note "$fs: sync_file_range took $(since "$t")s"
    settle "$cg"
    d=$(memstat "$cg" file_dirty)
    check_cmp "$fs: sync_file_range brought file_dirty + file_writeback down (KiB)" $(( $(dirty_wb "$cg") / 1024 )) -lt 1024

    # 2. the same with syncfs (sync -f), as the daemon does per filesystem.
    in_cgroup "$cg" dd if=/dev/zero of="$mnt/b" bs=1M count=$size_mib status=none
    d=$(memstat "$cg" file_dirty)
    check_cmp "$fs: a second dd raised file_dirty again (MiB)" "$(mib "$d")" -ge $((size_mib / 2))
    t=$(now)
    sync -f "$mnt/b"
    note "$fs: syncfs took $(since "$t")s"
    settle "$cg"
    check_cmp "$fs: syncfs brought file_dirty + file_writeback down (KiB)" $(( $(dirty_wb "$cg") / 1024 )) -lt 1024

    rm -f "$mnt/a" "$mnt/b"
    rmdir "$cg"
done
[ -n "$MDR_FS" ] || fatal "no filesystem given (--fs)"
finish
