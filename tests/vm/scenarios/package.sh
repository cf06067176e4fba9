#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# vm-write-bps: 16777216
# The Debian package end to end, under systemd, with the unit as shipped:
# `apt-get install` of the .deb built from this tree (MDRECLAIM_DEB, made by
# tests/vm/build-deb) brings mdreclaimd.service up active; mdctl talks to it;
# a policy set with mdctl survives `systemctl restart`; `systemctl reload`
# applies an edited policy file. The hardened sandbox keeps the daemon's
# features working: a PressureTarget= policy arms a PSI trigger, every
# actuator applies and is put back (scenarios/unit-actuators.sh: writeback
# in /home, /tmp and a PrivateTmp= /tmp among them; in trixie's root only),
# and a protected victim beside a bulk writer gets the writer's io.max
# capped. The README's main job (scenarios/demo.sh) runs against the
# installed package, as `tools/main-job --package` runs it (in the host's
# root only). `apt-get purge`, run while that cap is
# in place, removes everything and leaves every cgroup's memory.high and
# io.max as they were before the install.
#   tests/vm/build-deb -- tests/vm/vmtest package     (meson test vm-package)
. "$(dirname "$0")/lib.sh"

# MDR_DEB: vmtest's MDRECLAIM_DEB, through job.env and run-scenario.
if [ -z "$MDR_DEB" ] || [ ! -f "$MDR_DEB" ]; then
    fatal "MDRECLAIM_DEB is not set to a built .deb (got '$MDR_DEB'); run it through tests/vm/build-deb"
fi
for tool in jq apt-get systemd-run; do
    command -v "$tool" > /dev/null || fatal "$tool is needed in the guest"
done

section() { printf '\n--- %s  (at %s s of uptime)\n' "$*" "$(now)"; }
mdctl() { /usr/bin/mdctl "$@"; }
svc=mdreclaimd.service
slice=/sys/fs/cgroup/system.slice

# The armed PSI triggers, from the daemon's sd_notify STATUS=.
psi_count() { systemctl show -P StatusText "$svc" | sed -n 's/.*, \([0-9]*\) PSI triggers.*/\1/p'; }
main_pid() { systemctl show -P MainPID "$svc"; }
journal() { journalctl -q -o cat -u "$svc" --no-pager; }
# Every cgroup's memory.high and io.max, one line each. (Checks call shell
# functions rather than `bash -c`: under TCG each process costs ~0.3-1.5 s.)
throttles() {
    local f v
    find /sys/fs/cgroup -mindepth 1 -type f \( -name memory.high -o -name io.max \) 2> /dev/null | sort \
        | while read -r f; do
            v=; read -r -d '' v < "$f" 2> /dev/null
            printf '%s %s\n' "$f" "${v//$'\n'/ }"
        done
}
installed() { dpkg -s mdreclaim > /dev/null 2>&1; }
not() { ! "$@"; }

section "before the install"
# guest/run-scenario has made dpkg and apt quick and offline (dpkg's
# database on a tmpfs, apt without sources) and taken the host's container
# quirks away. systemd-prepare installs the daemon's unit in /etc only when
# MDRECLAIMD is set, which would shadow the package's.
note "dpkg's database: $(findmnt -no FSTYPE /var/lib/dpkg) ($(ls /var/lib/dpkg/info | wc -l) files in info/)"
if [ -e /etc/systemd/system/$svc ]; then
    rm -f /etc/systemd/system/$svc
    systemctl daemon-reload
fi
check "mdreclaim is not installed yet" not installed
throttles > /tmp/throttles.before
note "$(wc -l < /tmp/throttles.before) memory.high/io.max files recorded"
# Settings for a test that must not take long: faster ticks and rescans. A
# cap is held for 10 minutes once the stall is gone, so that it is still in
# place when the purge comes (the units beside it are frozen by then). The
# drop-in directory is the package's too: purge must remove it.
mkdir -p /etc/mdreclaim/mdreclaimd.conf.d
cat > /etc/mdreclaim/mdreclaimd.conf.d/vm-test.conf <<'EOT'
[Daemon]
Interval=500ms
RescanInterval=1s
[WritePoint]
IOPressureLimit=10%
CapHoldTime=10min
EOT

section "apt-get install $(basename "$MDR_DEB")"
t0=$(now)
check "apt-get install succeeds" apt_install_deb
note "install took $(since "$t0") s"
check "the service is active" test "$(systemctl is-active $svc)" = active
check "and enabled" test "$(systemctl is-enabled $svc)" = enabled
# trixie's systemd names it by its merged-/usr path
unit_path=$(systemctl show -P FragmentPath $svc)
check "from the package's unit in /lib/systemd/system ($unit_path)" \
    test "${unit_path#/usr}" = /lib/systemd/system/$svc
check "running /usr/sbin/mdreclaimd" \
    grep -q '^ExecStart={ path=/usr/sbin/mdreclaimd ' <(systemctl show -p ExecStart $svc)
check "mdctl status answers" wait_for 30 socket_up
mdctl status
check "mdctl's man page is installed" test -f /usr/share/man/man1/mdctl.1.gz
check "the Prometheus alerting rules and the Grafana dashboard are installed" \
    test -s /usr/share/mdreclaim/mdreclaim-alerts.rules.yml -a -s /usr/share/mdreclaim/mdreclaim-dashboard.json
pid=$(main_pid)
note "MainPID $pid: $(grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/$pid/status | tr '\t\n' '  ')"
check "it runs with NoNewPrivileges and a seccomp filter" \
    bash -c "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$pid/status && grep -q '^Seccomp:[[:space:]]*2' /proc/$pid/status"

section "a PressureTarget= policy set with mdctl arms a PSI trigger"
systemd-run --quiet --unit=mdr-idle.service sleep 3600
base=$(psi_count)
note "PSI triggers before the policy: $base"
check "root sets the policy" mdctl policy set mdr-idle.service PressureTarget=5% Mode=enforce
cat /etc/mdreclaim/policies.d/mdr-idle.service.conf
more_psi() { [ "$(psi_count)" -gt "$base" ]; }
check "one more PSI trigger is armed (on the unit's memory.pressure)" wait_for 30 more_psi
note "StatusText: $(systemctl show -P StatusText $svc)"

section "systemctl restart mdreclaimd"
systemctl restart $svc
check "the service is active again" test "$(systemctl is-active $svc)" = active
check "the control socket answers again" wait_for 30 socket_up
check "the policy is still loaded" \
    test "$(mdctl --json policy show mdr-idle.service | jq -r .settings.PressureTarget)" != null
check "and governs the unit" test "$(mdctl --json show mdr-idle.service | jq -r .policy)" = mdr-idle.service
started=$(journal | grep 'PSI triggers, tick every' | tail -n 1)
note "journal: $started"
check_cmp "the restarted daemon armed PSI triggers (journal)" \
    "$(sed -n 's/.*, \([0-9]*\) PSI triggers.*/\1/p' <<< "$started")" -gt 0
check "and the policy's trigger again (StatusText)" wait_for 30 more_psi
check "no PSI window was refused (CAP_SYS_RESOURCE is kept)" bash -c "! journalctl -q -o cat -u $svc | grep -q 'refused a'"

section "systemctl reload applies an edited policy file"
before=$(mdctl --json policy show mdr-idle.service | jq -r .settings.PressureTarget)
reloads=$(journal | grep -c 'Configuration reloaded')
sed -i 's/^PressureTarget=.*/PressureTarget=7%/' /etc/mdreclaim/policies.d/mdr-idle.service.conf
pid=$(main_pid)
check "systemctl reload succeeds" systemctl reload $svc
changed() { [ "$(mdctl --json policy show mdr-idle.service | jq -r .settings.PressureTarget)" != "$before" ]; }
check "mdctl policy show has the edited value" wait_for 30 changed
note "PressureTarget: $before -> $(mdctl --json policy show mdr-idle.service | jq -r .settings.PressureTarget)"
logged() { [ "$(journal | grep -c 'Configuration reloaded')" -gt "$reloads" ]; }
check "the journal says so" wait_for 10 logged
journal | grep 'Configuration reloaded' | tail -n 1 | sed 's/^/       journal: /'
check "the same process (a reload, not a restart)" test "$(main_pid)" = "$pid"

# Each userspace runs one of the two long parts below, for tools/test's time:
# the actuators under the packaged unit in a root of another release
# (vmtest's MDRECLAIM_VM_ROOT: vm-trixie-package, systemd 257, Debian's
# stable), the README's demo in the host's (vm-package, systemd 252). The
# unit file is the same in both packages; the write cap below runs in both.
guest_root=$(sed -n 's/^MDR_GUEST_ROOT=//p' /mdr/results/job.env)
other_root=false
[ -n "$guest_root" ] && [ "$guest_root" != "''" ] && other_root=true
release=$(. /etc/os-release && echo "$PRETTY_NAME")

section "every actuator under the packaged unit (scenarios/unit-actuators.sh)"
# memory.high, io.max, memory.reclaim, memory.swap.max, the shallow queue
# (refused under the unit alone, said once; applied with the shipped
# drop-in), `mdctl writeback --wait` of files in /home, /tmp and a
# PrivateTmp=yes /tmp; each stop puts every knob back. It leaves the daemon
# running as it found it. About 65 s.
if ! $other_root && [ "${MDR_PKG_ACTUATORS:-}" != yes ]; then
    note "left out in $release, the host's root: vm-trixie-package runs it (MDR_PKG_ACTUATORS=yes runs it here)"
else
    bash "$(dirname "$0")/unit-actuators.sh" 2>&1 | sed 's/^/  | /'
    check "every actuator applied and put back under the packaged unit" test "${PIPESTATUS[0]}" -eq 0
    systemctl reset-failed 'mdr-*' 2> /dev/null
fi

section "the README's main job, against the installed package (scenarios/demo.sh)"
# What `tools/main-job --package` shows, with the daemon and mdctl the
# package installed (the demo sees it installed and skips its own install).
# About 90 s.
if $other_root; then
    note "left out in $release's root: vm-package runs it (tests/vm/README.md)"
else
    bash "$(dirname "$0")/demo.sh" 2>&1 | sed 's/^/  | /'
    check "the demo's checks pass" test "${PIPESTATUS[0]}" -eq 0
    systemctl reset-failed 'mdr-*' 2> /dev/null
fi

section "a write cap: a protected victim beside a bulk writer"
dev=$(findmnt -no SOURCE /mnt/ext4)
devno=$(cat "/sys/class/block/${dev#/dev/}/dev")
check "root sets the victim's policy" mdctl policy set mdr-victim.service Protect=yes Mode=enforce Priority=90
check "and the writer's" mdctl policy set mdr-writer.service Mode=enforce Priority=10 WriteRateMin=10%
# The writer rewrites one 512 MiB file over and over: it never fills the
# disk, so it is still writing when the purge is over, however long that takes.
# Files of its own: the demo's may still be under (capped) writeback, which a
# truncation would wait for.
systemd-run --quiet --unit=mdr-writer.service bash -c \
    'while :; do dd if=/dev/zero of=/mnt/ext4/pkg-bulk bs=1M count=512 status=none; done'
wcg=$slice/mdr-writer.service
check "the writer's cgroup has io.max" test -e $wcg/io.max
writer_orig=$(cat $wcg/io.max)
systemd-run --quiet --unit=mdr-victim.service python3 "$MDR_VMDIR/helpers/victim" /mnt/ext4/pkg-victim 1800
wbps_now() { awk -v d="$devno" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbps=/) print substr($i, 6) }' $wcg/io.max; }
capped() { local w; w=$(wbps_now); [ -n "$w" ] && [ "$w" != max ]; }
check "the daemon caps the writer's io.max while the victim stalls" wait_for 120 capped
note "writer's io.max: $(cat $wcg/io.max)"
journal | grep -E 'cap-writes|wbps' | tail -n 3 | sed 's/^/       journal: /'

section "apt-get purge, with the cap in place"
# Frozen, the writer and the victim keep their cgroups (and the cap) and take
# no CPU from the purge (under TCG they would double its time); the cap is
# held (CapHoldTime= above).
check "the writer and the victim are frozen" systemctl freeze mdr-writer.service mdr-victim.service
check "the cap is still in place" capped
t0=$(now)
check "apt-get purge succeeds" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mdreclaim
note "purge took $(since "$t0") s"
check "the package is gone" not installed
check "no unit is left" test "$(systemctl show -P LoadState $svc)" = not-found
check "no unit file" test ! -e /lib/systemd/system/$svc
enabled_links() { compgen -G "/etc/systemd/system/*.wants/$svc" > /dev/null; }
check "no enablement symlink" not enabled_links
check "no daemon is running" not pidof mdreclaimd
check "no /etc/mdreclaim" test ! -e /etc/mdreclaim
check "no /run/mdreclaim" test ! -e /run/mdreclaim
check "no /var/lib/mdreclaim" test ! -e /var/lib/mdreclaim
# The writer and the victim outlive the purge: the restored io.max is read
# from a live cgroup.
check "the writer is still running" test "$(systemctl is-active mdr-writer.service)" = active
note "writer's io.max after the purge: '$(cat $wcg/io.max 2>&1)'"
io_max_restored() { [ -e $wcg/io.max ] && [ "$(< $wcg/io.max)" = "$writer_orig" ]; }
check "the writer's io.max is what it was before the cap" io_max_restored
throttles > /tmp/throttles.after
# Compare the cgroups that exist in both: the units started since (and the
# daemon's own cgroup, gone) are not in both.
common=$(awk 'NR == FNR { before[$1]; next } $1 in before' /tmp/throttles.before /tmp/throttles.after | wc -l)
diffs=$(awk 'NR == FNR { before[$1] = $0; next } ($1 in before) && before[$1] != $0' \
            /tmp/throttles.before /tmp/throttles.after)
check_cmp "memory.high/io.max files present before and after" "$common" -gt 0
check "every one of them is as it was before the install" test -z "$diffs"
[ -z "$diffs" ] || echo "$diffs" | sed 's/^/       changed: /'

# The units and files go with the VM.
finish
