#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# The control plane on a real kernel: mdreclaimd runs as a service, mdctl
# status and mdctl top (in tmux, read back with capture-pane) show the real
# cgroups of running units, a policy set with mdctl takes effect (the daemon
# acts on the unit: its metadata cache is shrunk), is refused to an
# unprivileged user, and survives `systemctl restart mdreclaimd`.
. "$(dirname "$0")/lib.sh"
need_daemon
if [ -z "${MDCTL:-}" ] || [ ! -x "$MDCTL" ]; then
    fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
fi
for tool in tmux jq setpriv; do
    command -v "$tool" > /dev/null || fatal "$tool is needed in the guest"
done

section() { printf '\n--- %s\n' "$*"; }
mdctl() { "$MDCTL" "$@"; }
unit=mdr-files.service

slab_of() { mdctl --json show "$unit" | jq -r '.slab_reclaimable // 0'; }
events_of() { mdctl --json events | jq -r --arg u "$unit" --arg a "$1" \
                  '[.events[] | select(.unit == $u and .action == $a)] | length'; }

section "mdreclaimd.service and its control socket"
systemctl start mdreclaimd.service
check "the control socket answers" wait_for 60 socket_up
mdctl status

section "a unit whose dentries and inodes fill its metadata cache"
mkdir -p /mnt/ext4/files
systemd-run --quiet --unit="$unit" python3 -c '
import os, time
for i in range(60000):
    open("/mnt/ext4/files/f%d" % i, "w").close()
os.sync()
time.sleep(3600)'
big() { [ "$(slab_of)" -gt $((16 << 20)) ]; }
check "mdctl show sees the unit's slab_reclaimable grow past 16 MiB" wait_for 120 big
before=$(slab_of)
note "$unit: slab_reclaimable $(mib "$before") MiB"
check "mdctl list --json has the running units" \
    test "$(mdctl --json list | jq '[.cgroups[] | select(.unit == "mdr-files.service" or .unit == "mdreclaimd.service")] | length')" = 2
mdctl list --sort memory --no-legend | head -n 8

section "mdctl top in tmux"
tmux new-session -d -s top -x 160 -y 40 "$MDCTL top --delay 1s --sort memory"
sleep 5
tmux capture-pane -p -t top > /tmp/top.txt
cat /tmp/top.txt
check "top shows its header" grep -q "sorted by memory" /tmp/top.txt
check "top shows the unit's cgroup" grep -q "/system.slice/$unit" /tmp/top.txt
tmux send-keys -t top d
sleep 3
tmux capture-pane -p -t top > /tmp/top.txt
check "d sorts by dirty data" grep -q "sorted by dirty" /tmp/top.txt
tmux send-keys -t top q
gone() { ! tmux has-session -t top 2> /dev/null; }
check "q quits top" wait_for 10 gone

section "a policy set with mdctl"
check "an unprivileged user is refused" \
    bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups $MDCTL policy set $unit MetadataCacheMax=8M 2> /tmp/denied.txt"
check "and told why" grep -q "Access denied" /tmp/denied.txt
check "root sets it" mdctl policy set "$unit" MetadataCacheMax=8M ReclaimStepMax=4M Mode=enforce
cat "/etc/mdreclaim/policies.d/$unit.conf"
reclaimed() { [ "$(events_of reclaim)" -gt 0 ]; }
check "the daemon reclaims the unit's metadata cache" wait_for 120 reclaimed
mdctl events --no-legend | grep "$unit" | tail -n 5
small() { [ "$(slab_of)" -lt "$before" ]; }
check "its slab_reclaimable went down" wait_for 60 small
note "$unit: slab_reclaimable $(mib "$before") MiB -> $(mib "$(slab_of)") MiB"

section "a scrape: mdctl metrics through a Prometheus text format parser"
mdctl metrics > /tmp/metrics.txt
# The families a dashboard of this run would read: the unit's slab, and what the
# allocation point did to it (python3-prometheus-client, from the host's root).
cat > /tmp/scrape.py <<'EOT'
import sys
from prometheus_client.parser import text_string_to_metric_families
unit = sys.argv[1]
got = {}
for fam in text_string_to_metric_families(open("/tmp/metrics.txt").read()):
    for s in fam.samples:
        if s.name == "mdreclaim_cgroup_slab_reclaimable_bytes" and unit in s.labels.get("cgroup", ""):
            got["slab"] = s.value
        if s.name == "mdreclaim_reclaims_total":
            got["reclaims"] = s.value
        if s.name == "mdreclaim_cgroups_governed":
            got["governed"] = s.value
print(" ".join(f"{k}={v:g}" for k, v in sorted(got.items())))
sys.exit(0 if got.get("slab", 0) > 0 and got.get("reclaims", 0) > 0 and got.get("governed", 0) >= 1 else 1)
EOT
check "the exposition parses, with the unit's slab, the reclaims and the governed count" \
    python3 /tmp/scrape.py "$unit"
note "scraped: $(python3 /tmp/scrape.py "$unit" 2>&1 | tail -n 1); $(grep -c '^mdreclaim_' /tmp/metrics.txt) samples"

section "systemctl restart mdreclaimd"
systemctl restart mdreclaimd.service
restarted_usec=$(date +%s%6N)
check "the control socket answers again" wait_for 60 socket_up
check "the policy is still loaded" test "$(mdctl --json policy show "$unit" | jq -r .settings.MetadataCacheMax)" = 8M
check "and governs the unit" test "$(mdctl --json show "$unit" | jq -r .policy)" = "$unit"
# The events of the daemon that stopped come back from the journal (issue 37), each once; the new
# daemon's from its ring.
mdctl --json events --since yesterday > /tmp/events.json
check "the policy change from before the restart, read from the journal" \
    jq -e '[.events[] | select(.source == "journal" and .action == "policy-change")] | length >= 1' /tmp/events.json
check "the new daemon's events not twice (its ring's, not the journal's copies)" \
    jq -e --argjson t "$restarted_usec" '[.events[] | select(.source == "journal" and .realtime_usec > $t)]
        | length == 0' /tmp/events.json
check "the new daemon's own events follow" \
    jq -e '[.events[] | select(.source == null and .action == "attach-policy")] | length >= 1' /tmp/events.json
setpriv --reuid=65534 --regid=65534 --clear-groups "$MDCTL" events > /dev/null 2> /tmp/events-nobody.txt
check "an unprivileged user is told the journal is not readable" grep -q "journal is not readable" \
    /tmp/events-nobody.txt
mdctl policy list
mdctl policy unset "$unit"
check "unset removes the file" test ! -e "/etc/mdreclaim/policies.d/$unit.conf"
systemctl stop "$unit"
finish
