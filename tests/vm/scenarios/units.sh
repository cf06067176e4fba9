#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# The systemd side of the bed, as the daemon will use it: a unit's cgroup has
# the memory and io files, `systemctl set-property --runtime` writes
# memory.high and io.max (MemoryHigh=, IOWriteBandwidthMax=), and
# `mdreclaimd --sample-once` names the unit that owns each cgroup.
. "$(dirname "$0")/lib.sh"
need_daemon

unit=mdr-units.service
cg=/sys/fs/cgroup/system.slice/$unit
systemd-run --quiet --unit=$unit sleep 600
check "the unit's cgroup exists at $cg" test -d "$cg"
for f in memory.stat memory.pressure io.pressure memory.reclaim io.max; do
    check "the unit's cgroup has $f" test -e "$cg/$f"
done
check "system.slice delegates io to its children (DefaultIOAccounting=yes)" \
    grep -qw io /sys/fs/cgroup/system.slice/cgroup.subtree_control

systemctl set-property --runtime $unit MemoryHigh=64M
check_cmp "MemoryHigh=64M lands in memory.high" "$(cat "$cg/memory.high")" -eq 67108864

dev=$(findmnt -no SOURCE /mnt/ext4)
majmin=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
systemctl set-property --runtime $unit "IOWriteBandwidthMax=$dev 4194304"
note "io.max: $(cat "$cg/io.max")"
check "IOWriteBandwidthMax=$dev 4194304 lands in io.max ($majmin wbps=4194304)" \
    grep -q "^$majmin .*wbps=4194304" "$cg/io.max"
# A gotcha for whoever writes these: bandwidth suffixes are SI (K = 1000),
# unlike MemoryHigh='s (K = 1024).
systemctl set-property --runtime $unit "IOWriteBandwidthMax=$dev 4M"
check "IOWriteBandwidthMax=4M means 4000000 bytes/s, not 4 MiB/s" \
    grep -q "^$majmin .*wbps=4000000" "$cg/io.max"

"$MDRECLAIMD" --sample-once --json > /tmp/units.json
check_cmp "--sample-once exits 0" "$?" -eq 0
got=$(jq -r --arg p "/system.slice/$unit" '.cgroups[] | select(.path == $p) | .unit' /tmp/units.json)
check "the daemon names the unit of /system.slice/$unit (got '$got')" test "$got" = "$unit"
got=$(jq -r '.cgroups[] | select(.path == "/system.slice") | .unit' /tmp/units.json)
check "and of /system.slice (got '$got')" test "$got" = system.slice

systemctl stop $unit 2>/dev/null
check "stopping the unit removes its cgroup" test ! -d "$cg"
finish
