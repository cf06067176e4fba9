#!/bin/bash
# The bed itself: a cgroup2 hierarchy with the memory and io controllers,
# per-cgroup PSI and memory.reclaim, as the daemon needs them.
. "$(dirname "$0")/lib.sh"

root=/sys/fs/cgroup
check "cgroup2 is mounted at $root" grep -q "^cgroup2 $root cgroup2 " /proc/mounts
ctl=$(cat $root/cgroup.controllers)
note "controllers: $ctl"
for c in memory io; do
    check "$c controller available" grep -qw "$c" $root/cgroup.controllers
    check "$c controller enabled for children" grep -qw "$c" $root/cgroup.subtree_control
done
check "system-wide PSI: /proc/pressure/memory" test -r /proc/pressure/memory
check "system-wide PSI: /proc/pressure/io" test -r /proc/pressure/io

cg=$(new_cgroup mdr-cgroup2) || fatal "cannot create a cgroup"
for f in memory.current memory.stat memory.pressure io.pressure memory.reclaim \
         memory.high memory.max memory.low memory.min memory.events io.stat io.max; do
    check "child cgroup has $f" test -e "$cg/$f"
done
for k in file file_dirty file_writeback slab_reclaimable; do
    check "memory.stat has $k" test -n "$(memstat "$cg" "$k")"
done
check "memory.pressure has some and full lines" \
    bash -c "grep -q '^some avg10=' $cg/memory.pressure && grep -q '^full avg10=' $cg/memory.pressure"

# memory.reclaim on an empty cgroup: nothing to free, so EAGAIN.
err=$( (echo 1M > "$cg/memory.reclaim") 2>&1 )
case "$err" in
    *"Resource temporarily unavailable"*) pass "memory.reclaim on an empty cgroup answers EAGAIN" ;;
    *) fail "memory.reclaim on an empty cgroup answers EAGAIN (got: ${err:-success})" ;;
esac

# Charge some page cache to the cgroup, then reclaim it.
in_cgroup "$cg" dd if=/dev/zero of=/tmp/mdr-cg2 bs=1M count=32 status=none
before=$(memstat "$cg" file)
check_cmp "a 32 MiB tmpfs file is charged to the cgroup (file, MiB)" "$(mib "$before")" -ge 30
rm -f /tmp/mdr-cg2
after=$(memstat "$cg" file)
check_cmp "removing it uncharges it (file, MiB)" "$(mib "$after")" -lt 2

rmdir "$cg"
finish
