#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# vm-write-bps: 16777216
# Every actuator of mdreclaimd under its unit as shipped (issue 38): the
# sandbox (ProtectSystem=strict, ProtectKernelTunables=, ProtectHome=,
# PrivateTmp=, the capability set) must let each one through, and a stop
# must put each knob back.
#  - targeted writeback (mdctl writeback --wait, the kernel's flusher held
#    off) of a writer's files in /home, in /tmp and in a service's own
#    PrivateTmp=yes /tmp: files found, dirty data drained (/home and /tmp
#    are bind mounts of the ext4 disk here: tmpfs has no writeback);
#  - memory.reclaim (mdctl reclaim --wait frees the unit's cache), and
#    memory.swap.max held at 0 for a cache-only one (swap on), then put back;
#  - a writer under DirtyLimit= gets a memory.high budget, and beside a
#    Protect=yes victim an io.max cap (GuardRate=);
#  - ManageQueueDepth=yes: the unit's ProtectKernelTunables=yes keeps /sys
#    read-only, so the shallow queue is refused, said once for both knobs
#    with its cause and the drop-in that lifts it, and nothing else changes;
#    with that drop-in (systemd/queue-depth.conf, ReadWritePaths=/sys/devices)
#    the disk's nr_requests is made 4 and max_sectors_kb 32;
#  - systemctl stop, each time: every memory.high, io.max, memory.swap.max,
#    nr_requests and max_sectors_kb as before, both ledgers empty.
# Standalone, with the unit meson configured (systemd-prepare installs it):
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl tests/vm/vmtest unit-actuators
# vm-package runs it against the installed package (scenarios/package.sh).
. "$(dirname "$0")/lib.sh"
for tool in jq systemd-run mdctl; do
    command -v "$tool" > /dev/null || fatal "$tool is needed in the guest"
done
[ -e /etc/systemd/system/mdreclaimd.service ] || [ -e /lib/systemd/system/mdreclaimd.service ] ||
    fatal "no mdreclaimd.service installed (MDRECLAIMD, or the package)"

section() { printf '\n--- %s  (at %s s of uptime)\n' "$*" "$(now)"; }
svc=mdreclaimd.service
slice=/sys/fs/cgroup/system.slice
mnt=/mnt/ext4
disk=$(basename "$(findmnt -no SOURCE "$mnt")")
queue=/sys/block/$disk/queue
devno=$(cat "/sys/block/$disk/dev")
journal() { journalctl -q -o cat -u "$svc" --no-pager --since "@$t_begin"; }
t_begin=$(date +%s)
was_active=$(systemctl is-active "$svc")
units=(mdr-act-home mdr-act-tmp mdr-act-ptmp mdr-act-cache mdr-act-writer mdr-act-victim)

# ---- knobs as they were before the daemon touched them
knobs() {
    local u f v
    printf 'nr_requests %s\nmax_sectors_kb %s\n' "$(< $queue/nr_requests)" "$(< $queue/max_sectors_kb)"
    for u in "${units[@]}"; do
        [ -d "$slice/$u.service" ] || continue
        for f in memory.high memory.swap.max io.max; do
            v=; read -r -d '' v < "$slice/$u.service/$f" 2> /dev/null
            printf '%s/%s %s\n' "$u" "$f" "${v//$'\n'/ }"
        done
    done
}

section "the ext4 disk at /home and /tmp, swap on, the daemon's settings"
mkdir -p $mnt/home/mdr $mnt/tmp && chmod 1777 $mnt/tmp
# What the scenario runs from the tree, copied first: a tree under /tmp (a
# clone there) is hidden once the disk is bound over /tmp.
cp "$MDR_VMDIR/helpers/victim" $mnt/victim-helper && cp "$MDR_SRCDIR/systemd/queue-depth.conf" $mnt/queue-depth.conf ||
    fatal "cannot copy the victim helper and the drop-in"
mount --bind $mnt/home /home && mount --bind $mnt/tmp /tmp || fatal "cannot bind the disk to /home and /tmp"
fallocate -l 64M $mnt/swapfile && chmod 600 $mnt/swapfile && mkswap $mnt/swapfile > /dev/null &&
    swapon $mnt/swapfile || fatal "cannot turn swap on"
mkdir -p /etc/mdreclaim/mdreclaimd.conf.d
cat > /etc/mdreclaim/mdreclaimd.conf.d/zz-actuators.conf <<'EOT'
[Daemon]
Interval=500ms
RescanInterval=1s
[WritePoint]
ManageQueueDepth=yes
GuardRate=10%
CapHoldTime=10min
EOT
note "$disk ($devno): nr_requests $(< $queue/nr_requests), max_sectors_kb $(< $queue/max_sectors_kb)"
systemctl restart "$svc"
check "mdreclaimd.service is active" test "$(systemctl is-active $svc)" = active
check "its control socket answers" wait_for 60 socket_up
grep -E '^(ProtectKernelTunables|ProtectHome|PrivateTmp|ProtectSystem)=' \
    "$(systemctl show -P FragmentPath $svc)" | tr '\n' ' ' | sed 's/^/       unit: /; s/$/\n/'

section "targeted writeback: files in /home, /tmp and a PrivateTmp=yes /tmp"
saved=$(sysctl -n vm.dirty_background_ratio vm.dirty_ratio vm.dirty_expire_centisecs vm.dirty_writeback_centisecs | tr '\n' ' ')
sysctl -q -w vm.dirty_background_ratio=80 vm.dirty_ratio=90 \
    vm.dirty_expire_centisecs=360000 vm.dirty_writeback_centisecs=0
# Each writer keeps its file open (fd 3 of the sleep): the daemon finds it
# through /proc/PID/fd, never by its path.
writer() { # UNIT FILE [systemd-run options]
    local u=$1 f=$2; shift 2
    systemd-run --quiet --unit="$u.service" "$@" bash -c \
        "exec 3> $f; head -c 24M /dev/zero >&3; exec sleep 3600"
}
writer mdr-act-home /home/mdr/act-file
writer mdr-act-tmp /tmp/mdr-act-file
writer mdr-act-ptmp /tmp/act-file -p PrivateTmp=yes
dirty_of() { local c=$slice/$1.service; echo $(( $(memstat "$c" file_dirty) + $(memstat "$c" file_writeback) )); }
dirty_over() { [ "$(dirty_of "$1")" -ge $(( $2 << 20 )) ]; }
drained() { [ "$(dirty_of "$1")" -lt $((2 << 20)) ]; }
for u in mdr-act-home mdr-act-tmp mdr-act-ptmp; do
    check "$u has over 20 MiB dirty" wait_for 60 dirty_over "$u" 20
done
ptmp=$(find /tmp -path '/tmp/systemd-private-*mdr-act-ptmp.service*/tmp/act-file' 2> /dev/null | head -n 1)
check "mdr-act-ptmp's file is in its private /tmp ($ptmp)" test -n "$ptmp"
sees() { mdctl show "$1" > /dev/null 2>&1; }
for u in mdr-act-home mdr-act-tmp mdr-act-ptmp; do
    check "$u is seen by the daemon" wait_for 30 sees $u.service
    before=$(dirty_of $u)
    out=$(mdctl --json writeback "$u.service" --wait 2>&1)
    files=$(jq -r '[.. | objects | .files? | numbers] | first // 0' <<< "$out" 2> /dev/null)
    check_cmp "$u: mdctl writeback --wait found its file" "${files:-0}" -ge 1
    check "$u: its dirty data is written back (under 2 MiB left within 30 s)" wait_for 30 drained $u
    note "$u: $(mib "$before") MiB dirty+writeback before, $(mib "$(dirty_of $u)") MiB after"
    [ "${files:-0}" -ge 1 ] || note "mdctl: $(tr '\n' ' ' <<< "$out" | cut -c 1-300)"
done
systemctl stop mdr-act-home.service mdr-act-tmp.service mdr-act-ptmp.service
read -r a b c d <<< "$saved"
sysctl -q -w vm.dirty_background_ratio="$a" vm.dirty_ratio="$b" \
    vm.dirty_expire_centisecs="$c" vm.dirty_writeback_centisecs="$d"

section "memory.reclaim, and memory.swap.max held for a cache-only reclaim"
head -c 96M /dev/zero > $mnt/act-clean && sync && echo 1 > /proc/sys/vm/drop_caches
# 64 MiB of anon (swap has room for it) and the file's 96 MiB of clean cache.
systemd-run --quiet --unit=mdr-act-cache.service python3 -c "
import time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
open('$mnt/act-clean', 'rb').read()
time.sleep(3600)"
cache_of() { memstat $slice/mdr-act-cache.service file; }
cached() { [ "$(cache_of)" -ge $((80 << 20)) ]; }
check "mdr-act-cache holds its file's cache" wait_for 60 cached
check "mdr-act-cache is seen by the daemon" wait_for 30 sees mdr-act-cache.service
c0=$(cache_of)
out=$(mdctl --json reclaim mdr-act-cache.service --bytes 32M --wait 2>&1)
freed=$(jq -r '[.. | objects | .bytes_freed? | numbers] | first // 0' <<< "$out" 2> /dev/null)
check_cmp "mdctl reclaim --bytes 32M --wait freed MiB" "$(mib "${freed:-0}")" -ge 16
[ "${freed:-0}" -gt 0 ] || note "mdctl: $(tr '\n' ' ' <<< "$out" | cut -c 1-300)"
note "cache $(mib "$c0") -> $(mib "$(cache_of)") MiB"
swap_orig=$(< $slice/mdr-act-cache.service/memory.swap.max)
out=$(mdctl --json reclaim mdr-act-cache.service --bytes 32M --cache-only --wait 2>&1)
mdctl --json events --unit mdr-act-cache.service | jq -c '.events[] | select(.knob == "memory.swap.max" or
    ((.message // "") | test("swap.max")))' > /tmp/act-swap.json
jq -r '.message' /tmp/act-swap.json | sed 's/^/       event: /' | cut -c 1-200
held() { jq -e -s 'any(.[]; (.after | tostring) == "0")' /tmp/act-swap.json > /dev/null; }
put_back() { jq -e -s --arg o "$swap_orig" 'any(.[]; (.after | tostring) == $o and (.before | tostring) == "0")' \
                 /tmp/act-swap.json > /dev/null; }
# Where memory.reclaim takes swappiness= (6.11 and later: Debian 13's 6.12)
# the daemon asks with swappiness=0 and holds nothing; before, it holds
# memory.swap.max at 0 for the reclaim's length.
if journal | grep -q 'memory.reclaim here takes swappiness='; then
    note "memory.reclaim takes swappiness= here: cache only by swappiness=0, no hold"
    unheld() { ! held; }
    check "the cache-only reclaim held no memory.swap.max (event)" unheld
else
    check "the cache-only reclaim held memory.swap.max at 0 (event)" held
    check "... and put it back to $swap_orig (event)" put_back
fi
check "memory.swap.max is $swap_orig again" test "$(< $slice/mdr-act-cache.service/memory.swap.max)" = "$swap_orig"

section "ManageQueueDepth=yes under the unit as shipped: refused, said once, with its cause"
mdctl policy set mdr-act-victim.service Protect=yes Mode=enforce Priority=90 > /dev/null
mdctl policy set mdr-act-writer.service Mode=enforce Priority=10 DirtyLimit=16M > /dev/null
# Started while the daemon is stopped, so that their knobs are read before it
# sees them.
systemctl stop "$svc"
systemd-run --quiet --unit=mdr-act-writer.service bash -c \
    'while :; do dd if=/dev/zero of=/mnt/ext4/act-bulk bs=1M count=512 status=none; done'
systemd-run --quiet --unit=mdr-act-victim.service python3 $mnt/victim-helper $mnt/act-victim 1800
knobs > /tmp/act-knobs.before
t_begin=$(date +%s)
systemctl start "$svc"
check "the control socket answers again" wait_for 60 socket_up
wcg=$slice/mdr-act-writer.service
high_set() { local v; v=$(< $wcg/memory.high); [ "$v" != max ]; }
wbps_set() { grep -q "^$devno .*wbps=[0-9]" $wcg/io.max; }
nr_set() { [ "$(< $queue/nr_requests)" -le 4 ]; }
ms_set() { [ "$(< $queue/max_sectors_kb)" -le 32 ]; }
ro_said() { journal | grep -q 'read-only to the daemon'; }
check "the writer's memory.high budget is set" wait_for 60 high_set
check "the writer's io.max is capped beside the victim" wait_for 60 wbps_set
check "the shallow queue is refused (journal)" wait_for 30 ro_said
journal | grep 'refuses\|read-only' | fold -s -w 62 | sed '1s/^/       journal: /; 2,$s/^/                /'
check_cmp "said once for both knobs" "$(journal | grep -c 'refuses\|read-only')" -eq 1
check "with its cause: ProtectKernelTunables=yes, and the drop-in that lifts it" \
    bash -c "journalctl -q -o cat -u $svc --since @$t_begin | grep 'read-only' | grep -q 'ProtectKernelTunables=yes.*queue-depth.conf'"
check "nr_requests and max_sectors_kb untouched" test "$(< $queue/nr_requests) $(< $queue/max_sectors_kb)" = \
    "$(sed -n 's/^nr_requests //p; s/^max_sectors_kb //p' /tmp/act-knobs.before | tr '\n' ' ' | sed 's/ $//')"
mdctl throttles | sed 's/^/       /' | cut -c 1-150

ledger_empty() { [ ! -s "$1" ] || [ "$(grep -vc '^#' "$1")" -eq 0 ]; }
# stopped WHAT: the daemon stopped, every knob must be as before it started
stopped() {
    systemctl stop "$svc"
    knobs > /tmp/act-knobs.after
    diffs=$(diff /tmp/act-knobs.before /tmp/act-knobs.after)
    check "$1: every memory.high, memory.swap.max, io.max, nr_requests and max_sectors_kb is back" test -z "$diffs"
    [ -z "$diffs" ] || echo "$diffs" | sed 's/^/       /'
    check "$1: the throttle ledger is empty" ledger_empty /run/mdreclaim/throttles
    check "$1: the queue ledger is empty" ledger_empty /run/mdreclaim/queues
}
section "systemctl stop"
stopped "stopped"

section "with the drop-in queue-depth.conf: the disk's queue made shallow"
dropin=/usr/share/doc/mdreclaim/examples/queue-depth.conf
[ -f $dropin ] || dropin=$mnt/queue-depth.conf
mkdir -p /etc/systemd/system/$svc.d && cp $dropin /etc/systemd/system/$svc.d/ && systemctl daemon-reload
note "$dropin: $(grep -v '^#' $dropin | tr '\n' ' ')"
t_begin=$(date +%s)
systemctl start "$svc"
check "the control socket answers again" wait_for 60 socket_up
check "the disk's nr_requests is made 4" wait_for 30 nr_set
check "and its max_sectors_kb 32" wait_for 10 ms_set
check "the writer's memory.high budget is set" wait_for 60 high_set
check "the writer's io.max is capped" wait_for 60 wbps_set
note "writer: memory.high $(< $wcg/memory.high), io.max '$(< $wcg/io.max)'; $disk: nr_requests $(< $queue/nr_requests), max_sectors_kb $(< $queue/max_sectors_kb)"
check_cmp "nothing refused (journal)" "$(journal | grep -c 'refuses\|read-only')" -eq 0
mdctl throttles | sed 's/^/       /' | cut -c 1-150

section "systemctl stop, with the drop-in"
stopped "stopped with the drop-in"
rm -rf /etc/systemd/system/$svc.d && systemctl daemon-reload

# Leave the machine as found: units, policies, settings, mounts, swap.
systemctl kill --signal=KILL mdr-act-writer.service mdr-act-victim.service 2> /dev/null
systemctl stop "${units[@]/%/.service}" 2> /dev/null
systemctl reset-failed 'mdr-act-*' 2> /dev/null
rm -f /etc/mdreclaim/mdreclaimd.conf.d/zz-actuators.conf \
    /etc/mdreclaim/policies.d/mdr-act-victim.service.conf /etc/mdreclaim/policies.d/mdr-act-writer.service.conf
swapoff $mnt/swapfile
umount /tmp 2> /dev/null || umount -l /tmp
umount /home 2> /dev/null || umount -l /home
rm -f $mnt/swapfile $mnt/act-*
[ "$was_active" = active ] && systemctl start "$svc"
finish
