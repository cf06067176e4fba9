#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# What the daemon learns outlives a reboot of the machine, not only a restart
# of the daemon (issue 38). Run by tests/vm/reboot, which boots the guest
# twice on the same disks; the persistent directory (--persistent-dir, the
# unit's StateDirectory= /var/lib/mdreclaim) lies on the ext4 disk, the
# ledger (--state-dir) in the guest's /tmp, which each boot gets empty, as
# /run is.
#  1st boot: a writer under a policy saturates the 16 MiB/s disk until the
#    daemon has learnt its write capacity; a SIGTERM (what a shutdown sends)
#    saves the capacity and the sample history there; sync.
#  2nd boot: both files are as the first boot left them; a daemon started
#    on them reads them back (its log says so), `mdctl history /` has the
#    first boot's samples, and the writer's first cap beside a protected
#    victim is a tenth (GuardRate=10%) of the capacity learnt at the first
#    boot, from the first write, before this boot could learn anything.
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl tests/vm/reboot persist
. "$(dirname "$0")/lib.sh"
need_daemon
[ -x "${MDCTL:-}" ] || fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
mnt=/mnt/ext4
keep=$mnt/var-lib-mdreclaim
mark=$mnt/persist.first-boot
conf=/tmp/mdr-persist-conf
state=/tmp/mdr-persist-state
log=/tmp/persist-daemon.log
export MDCTL_SOCKET=$state/control
mkdir -p "$conf/etc/mdreclaim/policies.d" "$state" "$keep"
cat > "$conf/etc/mdreclaim/mdreclaimd.conf" <<'EOT'
[Daemon]
Interval=250ms
RescanInterval=1s
[WritePoint]
GuardRate=10%
EOT
printf '[Policy]\nMatch=/mdr-writer\nMode=enforce\nPriority=10\n' > "$conf/etc/mdreclaim/policies.d/writer.conf"
devno=$(cat "/sys/class/block/$(basename "$(findmnt -no SOURCE "$mnt")")/dev")
start_daemon() {
    "$MDRECLAIMD" --config-root "$conf" --cgroup-root /sys/fs/cgroup --state-dir "$state" \
        --persistent-dir "$keep" --control-socket "$MDCTL_SOCKET" --log-level debug 2> "$log" &
    daemon_pid=$!
    wait_for 30 socket_up || fatal "the daemon does not answer"
}
mdctl() { "$MDCTL" "$@"; }
capacity() { awk -v d="$devno" '$1 == d { print $2 }' "$keep/devices" 2> /dev/null; }

if [ ! -e "$mark" ]; then
    echo "==== first boot: learn the disk ($devno), then shut down"
    wcg=$(new_cgroup mdr-writer)
    start_daemon
    t0=$(now)
    in_cgroup "$wcg" dd if=/dev/zero of=$mnt/bulk bs=1M count=2048 oflag=direct status=none &
    dd_pid=$!
    # The capacity is saved every minute and at stop: ask for it by stopping,
    # once the estimate has had time to be set (about 4.5 s into the flood,
    # the first sample of a daemon a second after its start).
    for _ in $(seq 6); do
        sleep 12
        hist=$(mdctl --json history / | jq '.samples | length')
        kill -TERM "$daemon_pid"; wait "$daemon_pid"
        [ -n "$(capacity)" ] && break
        start_daemon
    done
    kill "$dd_pid" 2> /dev/null; wait "$dd_pid" 2> /dev/null
    check "the disk's capacity was learnt ($(capacity) bytes/s after $(since "$t0") s)" test -n "$(capacity)"
    check "the sample history is saved in $keep" test -s "$keep/history"
    check_cmp "samples of the host in it" "${hist:-0}" -gt 0
    note "$(ls -l "$keep" | tail -n +2 | awk '{ print $5, $9 }' | tr '\n' ' ')"
    (cd "$keep" && sha256sum devices history) > "$mark.tmp" && date +%s%N | cut -c 1-16 >> "$mark.tmp" &&
        mv "$mark.tmp" "$mark"
    sync
    finish
fi

echo "==== second boot: what the first left"
check "the capacities file is as the first boot left it" bash -c "cd $keep && head -n 2 $mark | sha256sum -c --quiet"
first_end=$(tail -n 1 "$mark")
cap=$(capacity)
note "capacity of $devno: $cap bytes/s"
check "no ledger: /run's stand-in is empty" test -z "$(ls -A "$state" 2> /dev/null | grep -v control)"
start_daemon
check "the daemon read the capacities back (its log)" grep -q "device capacities read from $keep/devices" "$log"
check "and the history" grep -q "Sample history read from $keep" "$log"
old=$(mdctl --json history / | jq --argjson t "$first_end" '[.samples[] | select(.realtime_usec <= $t)] | length')
check_cmp "samples of the host from the first boot in mdctl history /" "${old:-0}" -gt 0

# The first write after the reboot is capped at once from the capacity read
# back (GuardRate=10% of it), before the daemon could learn anything.
printf '[Policy]\nMatch=/mdr-victim\nMode=enforce\nProtect=yes\nPriority=90\n' > "$conf/etc/mdreclaim/policies.d/victim.conf"
mdctl reload > /dev/null
wcg=$(new_cgroup mdr-writer) vcg=$(new_cgroup mdr-victim)
in_cgroup "$vcg" python3 "$MDR_VMDIR/helpers/victim" $mnt/victim 120 > /dev/null &
in_cgroup "$wcg" dd if=/dev/zero of=$mnt/bulk2 bs=1M count=2048 status=none &
wbps() { awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=[0-9]/) print substr($i, 6) }' "$wcg/io.max"; }
capped() { [ -n "$(wbps)" ]; }
check "the writer is capped" wait_for 60 capped
# The first cap the daemon wrote (a stall may step it down before a poll).
w=$(grep -m 1 -o "mdr-writer: io.max $devno wbps max -> [0-9]*" "$log" | awk '{ print $NF }')
note "its first cap: ${w:-none} bytes/s; a tenth of the capacity: $(( cap / 10 ))"
check_cmp "the first cap is a tenth of the first boot's capacity (within 1 %)" \
    "$(( (${w:-0} > cap / 10 ? ${w:-0} - cap / 10 : cap / 10 - ${w:-0}) * 100 / (cap / 10 + 1) ))" -le 1
kill -TERM "$daemon_pid"; wait "$daemon_pid"
finish
