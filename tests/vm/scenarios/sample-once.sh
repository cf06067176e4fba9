#!/bin/bash
# vm-fs: ext4
# `mdreclaimd --sample-once --json` against the kernel's own files: what the
# daemon reports for a cgroup is what memory.stat, memory.current and the
# pressure files say, in bytes, for every cgroup in the tree.
. "$(dirname "$0")/lib.sh"
need_daemon

sysctl -q -w vm.dirty_background_ratio=80 vm.dirty_ratio=90 \
    vm.dirty_expire_centisecs=360000 vm.dirty_writeback_centisecs=0
root=/sys/fs/cgroup
cg=$(new_cgroup mdr-sample) || fatal "cannot create a cgroup"
echo "+memory +io" > "$cg/cgroup.subtree_control"
mkdir "$cg/child"
echo 256M > "$cg/child/memory.high"
in_cgroup "$cg/child" dd if=/dev/zero of=/mnt/ext4/sample bs=1M count=32 status=none
sleep 1

kd_before=$(memstat "$cg/child" file_dirty)
"$MDRECLAIMD" --cgroup-root $root --sample-once --json > /tmp/sample.json
rc=$?
kd_after=$(memstat "$cg/child" file_dirty)
check_cmp "--sample-once --json exits 0" "$rc" -eq 0
check "its output is one JSON document" jq -e . /tmp/sample.json >/dev/null

q() { jq -r "$@" /tmp/sample.json; }
check "cgroup_root is $root" test "$(q .cgroup_root)" = $root
n_json=$(q '.cgroups | length')
n_kernel=$(find $root -type d | wc -l)
check_cmp "one entry per cgroup directory" "$n_json" -eq "$n_kernel"
check "the root is reported as /" test "$(q '.cgroups[] | select(.path == "/") | .path')" = /
check "the root's memory_current is null (no such file there)" \
    test "$(q '.cgroups[] | select(.path == "/") | .memory_current')" = null

c='.cgroups[] | select(.path == "/mdr-sample/child")'
check "the nested cgroup is reported as /mdr-sample/child" test -n "$(q "$c | .path")"
check_cmp "its id is the cgroup directory's inode number" "$(q "$c | .id")" -eq "$(stat -c %i "$cg/child")"
check "its unit is null (no service manager here)" test "$(q "$c | .unit")" = null

d=$(q "$c | .file_dirty")
note "file_dirty: kernel $kd_before..$kd_after, daemon $d"
check_cmp "file_dirty is the kernel's, in bytes (>= the smaller reading)" "$d" -ge "$(( kd_before < kd_after ? kd_before : kd_after ))"
check_cmp "file_dirty is the kernel's, in bytes (<= the larger reading)" "$d" -le "$(( kd_before > kd_after ? kd_before : kd_after ))"
check_cmp "file_dirty shows the 32 MiB dd (MiB)" "$(mib "$d")" -ge 24

# Quiet cgroup, so these stand still between the two reads.
for k in file file_writeback slab_reclaimable; do
    check_cmp "$k matches memory.stat" "$(q "$c | .$k")" -eq "$(memstat "$cg/child" "$k")"
done
mc=$(q "$c | .memory_current")
kc=$(cat "$cg/child/memory.current")
check_cmp "memory_current matches memory.current within 1 MiB (bytes of difference)" \
    "$(( mc > kc ? mc - kc : kc - mc ))" -le 1048576
pt=$(q "$c | .memory_pressure.some.total")
kt=$(sed -n 's/^some .*total=\([0-9]*\)$/\1/p' "$cg/child/memory.pressure")
check_cmp "memory_pressure.some.total is not ahead of the kernel's (us)" "$pt" -le "$kt"
check "io_pressure has some and full" test "$(q "$c | .io_pressure.full.total | type")" = number

# Writeback done, the daemon sees it gone.
python3 "$MDR_VMDIR/helpers/sync-range" --wait /mnt/ext4/sample
"$MDRECLAIMD" --cgroup-root $root --sample-once --json > /tmp/sample2.json
d2=$(jq -r "$c | .file_dirty" /tmp/sample2.json)
check_cmp "after sync_file_range the daemon reports file_dirty under 1 MiB (KiB)" "$(( d2 / 1024 ))" -lt 1024

# The text form, as an operator reads it.
"$MDRECLAIMD" --cgroup-root $root --sample-once > /tmp/sample.txt
rc=$?
check_cmp "--sample-once (text) exits 0" "$rc" -eq 0
check "the text form names the cgroup" grep -q "/mdr-sample/child" /tmp/sample.txt
note "text form, the cgroup's lines:"
grep -A3 "/mdr-sample/child" /tmp/sample.txt | sed 's/^/         /'

rm -f /mnt/ext4/sample
rmdir "$cg/child" "$cg"
finish
