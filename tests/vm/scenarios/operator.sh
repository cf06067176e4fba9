#!/bin/bash
# vm-mode: systemd
# vm-fs: ext4
# vm-write-bps: 16777216
# The operator's view on a real kernel (issue 16), mdreclaimd as a service on
# a disk qemu holds to 16 MiB/s:
#  - a dd writer under DirtyLimit=8M in Mode=enforce gets a memory.high, shown
#    with its reason by mdctl throttles, list, show and top (no terminal);
#  - loosening DirtyLimit= raises that memory.high within a tick or two;
#  - mdctl release --for lifts it and no point sets it again until the
#    release ends, although the writer stays over its limit; then it is back;
#  - beside a protected victim, writers get an io.max cap and a memory.high:
#    switching a writer's policy to Mode=observe lifts both at once;
#  - systemctl status (the daemon's STATUS=) names the protected victim and
#    the capped writer, and mdctl explain answers for both sides;
#  - stopping a capped writer's unit with dirty data pending: the daemon lifts
#    its cap, or raises it to the drain rate (nine tenths of the disk) where
#    it knows the disk's rate, as systemd says the unit is stopping (or,
#    failing that, as the cgroup empties), before systemd removes the cgroup
#    (a lift-cap or drain-cap event, no cgroup-gone for a cap under the drain
#    rate, no throttle set after it), so the writer's file deletes and syncs
#    in under 2 s, or near the device's rate what it already had under
#    writeback (the guard's cap left on the removed cgroup held that to its
#    tenth of the disk: 15-40 s).
# Each 1 s bound is checked twice: on the daemon's event for the write and on
# the file as the scenario sees it, both from the command's answer.
# In the suite as vm-operator (67-90 s of guest time). Before lifts went ahead
# of the worker's queue, they took 0.4-5.7 s (memory.high waited behind
# reclaims and lowering writes); since, in four runs: events 23-411 ms before
# the answer (the daemon acts before mdctl returns; up to 289 ms after it for
# a policy change), files seen 7-322 ms after it. The stopped writer's cgroup
# was removed 27-296 ms after the lift: a close race (one run of seven, under
# load, lost it before the unit watch, and ci25 lost it once in five with the
# drain: noted as a lost race, below); the lift at "deactivating" is a second
# signal beside cgroup.events, but systemd sends it on the bus as it kills, so
# it comes no earlier: it came first in seven runs on a busy host, second in
# a quiet CI run. Heard on systemd's own socket since (no broker to wake),
# it came first in 9 of 18 stops of a probe under four CPU hogs, all lifted
# before the rmdir; both can still come after it (ci43), said as a lost race.
# Run it by hand:
#   MDRECLAIMD=build/daemon/mdreclaimd MDCTL=build/cli/mdctl tests/vm/vmtest operator
. "$(dirname "$0")/lib.sh"
need_daemon
if [ -z "${MDCTL:-}" ] || [ ! -x "$MDCTL" ]; then
    fatal "MDCTL is not set to a built mdctl (got '${MDCTL:-}')"
fi
command -v jq > /dev/null || fatal "jq is needed in the guest"

section() { printf '\n--- %s\n' "$*"; }
mdctl() { "$MDCTL" "$@"; }
mnt=/mnt/ext4
devno=$(cat "/sys/class/block/$(basename "$(findmnt -no SOURCE "$mnt")")/dev")
victim=$MDR_VMDIR/helpers/victim
t_start=$(now)

cg_of() { echo "/sys/fs/cgroup/system.slice/$1"; }
# The timed checks read files and the clock with bash's builtins alone: in a
# TCG guest whose vCPUs the writer keeps busy, starting a process (cat, sed,
# date) took up to 0.6 s, which the first runs counted as the daemon's.
# read_high UNIT: memory.high into H ('' if the cgroup is gone).
read_high() { H=; read -r H < "/sys/fs/cgroup/system.slice/$1/memory.high" || H=; } 2> /dev/null
high_of() { read_high "$1"; echo "$H"; }
# read_wbps UNIT: the wbps of the test disk's io.max line into W ('' if none).
read_wbps() {
    local dev rest
    W=
    while read -r dev rest; do
        [ "$dev" = "$devno" ] || continue
        rest=" $rest "; rest=${rest##* wbps=}; W=${rest%% *}
        [ "$W" = max ] && W=
    done < "/sys/fs/cgroup/system.slice/$1/io.max"
} 2> /dev/null
wbps_of() { read_wbps "$1"; echo "$W"; }
dirty_of() { echo $(( $(memstat "$(cg_of "$1")" file_dirty) + $(memstat "$(cg_of "$1")" file_writeback) )); }
has_high() { read_high "$1"; [ -n "$H" ] && [ "$H" != max ]; }
has_cap() { read_wbps "$1"; [ -n "$W" ]; }
gone() { [ ! -d "$(cg_of "$1")" ]; }
usec() { echo "${EPOCHREALTIME/./}"; }
ms_since() { local n=${EPOCHREALTIME/./}; echo $(( (n - $1) / 1000 )); }
# A 20 ms pause without starting sleep(1): a read that times out on a FIFO
# nobody writes.
mkfifo /tmp/pause.fifo && exec {pause_fd}<> /tmp/pause.fifo
pause() { read -r -t 0.02 -u "$pause_fd" _ || :; }
# within MS COMMAND...: polls every 20 ms until the command succeeds, at most MS
# (what a tick's timing needs; wait_for polls every 250 ms)
within() {
    local end=$(( ${EPOCHREALTIME/./} + $1 * 1000 )); shift
    until "$@"; do
        [ "${EPOCHREALTIME/./}" -lt "$end" ] || return 1
        pause
    done
}
# event_ms FILE FILTER T: ms from T (usec) to the first event in FILE that
# passes FILTER ('' if none): when the daemon says it wrote the file
event_ms() { jq -r -s --argjson t "$3" "map(select($2)) | first | select(.) | (.realtime_usec - \$t) / 1000 | floor" "$1"; }
# throttles_of UNIT: how many entries mdctl throttles --json has for the unit (releases included)
throttles_of() { mdctl --json throttles | jq --arg u "$1" '[.throttles[] | select(.unit == $u)] | length'; }
# events_of UNIT ACTION: the events of that action on the unit's cgroup (by path: an
# event on a cgroup that is gone may name no unit), one JSON object a line
events_of() { mdctl --json events --unit "/system.slice/$1" --action "$2" | jq -c '.events[]'; }
# any_of FILE FILTER: whether one of the events in FILE (one a line) passes FILTER
any_of() { jq -e -s "any(.[]; $2)" "$1" > /dev/null; }

section "mdreclaimd.service, ticking every 500 ms"
mkdir -p /etc/mdreclaim/mdreclaimd.conf.d
# GuardRate=10%: a protected victim's writers are capped at a tenth of the disk,
# so that a cap left behind would be plain in the time its file takes to go.
cat > /etc/mdreclaim/mdreclaimd.conf.d/operator.conf <<EOT
[Daemon]
Interval=500ms
RescanInterval=1s
[WritePoint]
GuardRate=10%
EOT
systemctl start mdreclaimd.service
check "the control socket answers" wait_for 60 socket_up

# ---- a dirty budget: DirtyLimit= in Mode=enforce ----
w=mdr-dirty.service
section "$w: dd under DirtyLimit=8M DirtyBackground=4M, Mode=enforce"
check "policy set" mdctl policy set "$w" DirtyLimit=8M DirtyBackground=4M Mode=enforce
systemd-run --quiet --unit="$w" dd if=/dev/zero of="$mnt/dirty" bs=1M count=3500 status=none
t0=$(now)
check "the daemon sets the writer's memory.high" wait_for 30 has_high "$w"
note "memory.high $(high_of "$w") after $(since "$t0") s, the writer's dirty+writeback $(mib "$(dirty_of "$w")") MiB"

# Every view, read back at one moment; the throttle must be in all of them.
views() {
    mdctl --json throttles > /tmp/thr.json
    high_then=$(high_of "$w")
    mdctl throttles > /tmp/throttles.txt
    mdctl list > /tmp/list.txt
    mdctl show "$w" > /tmp/show.txt
    mdctl top -n 1 > /tmp/top.txt
    in_json && in_throttles && in_list && in_show && in_top
}
in_json() { jq -e --arg u "$w" --arg v "$high_then" 'any(.throttles[]; .unit == $u and .knob == "memory.high"
                and (.value | tostring) == $v and (.reason | test("over DirtyLimit")) and .points == ["write"])' \
                /tmp/thr.json > /dev/null; }
in_throttles() { grep -E "^$w +high [0-9.]+[KMG] +max +write " /tmp/throttles.txt > /dev/null; }
in_list() { grep -E "^/system.slice/$w .* high [0-9.]+[KMG] " /tmp/list.txt > /dev/null; }
in_show() { grep -E '^ +Throttle: memory.high=[0-9.]+[KMG] \(was max\)' /tmp/show.txt > /dev/null &&
            grep -E '^ +Why: over DirtyLimit: dirty\+writeback [0-9.]+[KMG]? over 8\.0M$' /tmp/show.txt > /dev/null &&
            grep -E '^ +Lifts: when dirty\+writeback falls under DirtyBackground' /tmp/show.txt > /dev/null; }
in_top() { grep -E "/system.slice/$w .* high [0-9.]+[KMG] " /tmp/top.txt > /dev/null; }
wait_for 15 views
in_json || { echo "memory.high $high_then; mdctl throttles --json:"; cat /tmp/thr.json; echo; }
check "mdctl throttles --json: memory.high as in the file, set by the write point, over DirtyLimit" in_json
check "mdctl throttles: the unit, high, was max, write" in_throttles
check "mdctl list: THROTTLED high" in_list
check "mdctl show: the throttle, why (over DirtyLimit, 8.0M) and what lifts it" in_show
check "mdctl top (no terminal, -n 1): THROTTLED high" in_top
grep -E "CGROUP|$w" /tmp/throttles.txt
grep -E 'Throttle|Since|Why|Lifts' /tmp/show.txt
grep -E "CGROUP|$w" /tmp/top.txt | cut -c 1-150

section "$w: a looser DirtyLimit="
# The budget goes while the writer is under DirtyBackground (a moment, every
# few seconds) and comes back over DirtyLimit: it must be loosened while in
# force, so a command that came while it had lapsed (no recompute event), or
# whose raise a lapse overtook before the file was read, is tried again with
# a looser limit still. What the daemon wrote is its event's AFTER: a read of
# the file before the command may catch a step of a lowering still on its
# way down (worker.c), above the value it steps to.
# The file is watched for 3 s after the command (every value it takes, and
# when), without a command of ours in between; the event is read after.
watch_high() {
    local end=$(( ${EPOCHREALTIME/./} + 3000000 )) last=
    : > /tmp/highs.txt
    while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
        read_high "$w"
        [ "$H" = "$last" ] || { echo "$(ms_since "$t0") $H" >> /tmp/highs.txt; last=$H; }
        pause
    done
}
took= ev_ms= before= want=
for lim in 16 24 32 40; do
    within 10000 has_high "$w"
    t_run=${EPOCHREALTIME/./}
    mdctl policy set "$w" DirtyLimit=${lim}M > /dev/null
    t0=${EPOCHREALTIME/./}
    watch_high
    recompute="(.reason | test(\"DirtyLimit changed from [0-9]+ to $((lim << 20)) \")) and .realtime_usec >= $t_run"
    events_of "$w" dirty-budget > /tmp/budget.json
    ev_ms=$(event_ms /tmp/budget.json "$recompute" "$t0")
    before=$(jq -r -s "map(select($recompute)) | first | .before // empty" /tmp/budget.json)
    want=$(jq -r -s "map(select($recompute)) | first | .after // empty" /tmp/budget.json)
    took=$(awk -v v="$want" 'v != "" && $2 == v { print $1; exit }' /tmp/highs.txt)
    note "DirtyLimit=${lim}M: the daemon's event at ${ev_ms:-none} ms (memory.high ${before:-?} -> ${want:-?}), in the file at ${took:-never} ms after policy set returned (it ran $(( (t0 - t_run) / 1000 )) ms); the file's values: $(tr '\n' ' ' < /tmp/highs.txt | cut -c 1-160)"
    [ -z "$ev_ms" ] || [ -z "$took" ] || break
done
raised() { [ -n "$want" ] && [ "$want" != max ] && [ -n "$before" ] && [ "$before" != max ] && [ "$want" -gt "$before" ]; }
check "memory.high is raised (the daemon's event)" raised
check "... recomputed for the new limit (dirty-budget event)" test -n "$ev_ms"
check_cmp "... written within two ticks (1 s) of the policy change (ms, the daemon's event)" "$ev_ms" -le 1000
[ -n "$took" ] || jq -r '.message' /tmp/budget.json | tail -n 4 | cut -c 1-220
check "... the file took the value the daemon wrote ($want)" test -n "$took"
# The file may lag the event: a raise to a value still under the cgroup's
# usage goes through the worker (the kernel reclaims to it in the writer's
# context), in the throttle lane. When one thread ran every job the raise
# waited there behind the job before it (the writer's writebacks, most
# likely): seen in the file 1.9 and 2.9 s after the command in two runs of
# four (2026-12-05), against 145-313 ms in the others.
check_cmp "... seen in the file within 1.5 s (ms; two ticks and the throttle lane)" "$took" -le 1500

section "$w: mdctl release --for 15s"
# The budget must be in force when the release comes, or there is nothing
# to lift (the DirtyLimit section above ends 3 s after its command, time
# enough for the budget to lapse, as it does every few seconds: once the
# release found it lapsed, "0 throttles lifted", and no event came).
within 10000 has_high "$w"
t_run=${EPOCHREALTIME/./}
check "release" mdctl release "$w" --for 15s
t0=${EPOCHREALTIME/./}
lifted() { read_high "$w"; [ "$H" = max ]; }
within 5000 lifted
lift_ms=$(ms_since "$t0")
events_of "$w" restore-memory-high > /tmp/lift.json
ev_ms=$(event_ms /tmp/lift.json "(.reason | test(\"released by\")) and .realtime_usec >= $t_run" "$t0")
note "memory.high lifted: the daemon's event at ${ev_ms:-none} ms, seen in the file ${lift_ms} ms after mdctl release returned (it ran $(( (t0 - t_run) / 1000 )) ms)"
check_cmp "the release lifts memory.high at once: the daemon's event within two ticks (1 s) of its answer (ms)" "$ev_ms" -le 1000
check_cmp "... seen in the file within two ticks (ms)" "$lift_ms" -le 1000
mdctl throttles --no-legend | grep "$w"
shows_release() { mdctl throttles --no-legend | grep -Eq "^$w +released to "; }
check "mdctl throttles shows the release" shows_release
# Every quarter second until the release ends: memory.high stays max, while
# the writer is over its DirtyLimit (what would throttle it again).
held=0 broke=0 peak=0
while [ $(( ${EPOCHREALTIME/./} - t_run )) -lt 14800000 ]; do
    if lifted; then held=$((held + 1)); else broke=$((broke + 1)); fi
    d=$(dirty_of "$w")
    [ "$d" -gt "$peak" ] && peak=$d
    sleep 0.25
done
note "memory.high max in $held samples, set in $broke, over 14.8 s; dirty+writeback up to $(mib "$peak") MiB"
# A guest too slow to sample (mdctl itself took seconds on a loaded host) proves nothing.
check_cmp "sampled while released (samples)" "$held" -ge 8
check_cmp "memory.high stays max for the time given (samples where it was set)" "$broke" -eq 0
check_cmp "while the writer is over its DirtyLimit=16M (dirty+writeback MiB)" "$(mib "$peak")" -gt 16
said_held() { journalctl -u mdreclaimd.service -b --no-pager | grep -q "released by .* the write point's throttles wait until then"; }
check "the daemon said it held the write point back" said_held
check "the throttle is back once the release ended" wait_for 15 has_high "$w"
back_ms=$(ms_since "$t_run")
note "back ${back_ms} ms after the release"
check_cmp "... not before its 15 s (ms)" "$back_ms" -ge 15000
ended() { events_of "$w" release-ended | grep -q .; }
check "a release-ended event" ended

systemctl stop "$w"
rm -f "$mnt/dirty"
sync -f "$mnt"

# ---- io.max caps beside a protected victim ----
v=mdr-victim.service
section "$v protected; writers beside it capped"
check "policy set the victim" mdctl policy set "$v" Protect=yes Priority=90 Mode=enforce
check "policy set the writers" mdctl policy set mdr-writer Match='mdr-*-writer.service' Priority=10 WriteRateMin=1M Mode=enforce
systemd-run --quiet --unit="$v" python3 "$victim" "$mnt/victim" 120 victim
both() { has_cap "$1" && has_high "$1"; }

o=mdr-observed-writer.service
systemd-run --quiet --unit="$o" dd if=/dev/zero of="$mnt/observed" bs=1M count=3500 status=none
t0=$(now)
check "$o: capped (io.max wbps) with a memory.high" wait_for 40 both "$o"
note "$o: io.max wbps=$(wbps_of "$o"), memory.high $(high_of "$o") after $(since "$t0") s"
check_cmp "mdctl throttles --json has both" "$(throttles_of "$o")" -eq 2
t_run=${EPOCHREALTIME/./}
mdctl policy set mdr-writer Mode=observe > /dev/null
t0=${EPOCHREALTIME/./}
no_cap() { ! has_cap "$o"; }
no_high() { ! has_high "$o"; }
within 10000 no_cap
cap_ms=$(ms_since "$t0")
within 10000 no_high
high_ms=$(ms_since "$t0")
events_of "$o" lift-cap,restore-memory-high > /tmp/observe.json
cap_ev=$(event_ms /tmp/observe.json ".knob == \"io.max wbps\" and .realtime_usec >= $t_run" "$t0")
high_ev=$(event_ms /tmp/observe.json ".knob == \"memory.high\" and .realtime_usec >= $t_run" "$t0")
note "$o: io.max lifted (event ${cap_ev:-none} ms, file ${cap_ms} ms), memory.high lifted (event ${high_ev:-none} ms, file ${high_ms} ms) after policy set returned (it ran $(( (t0 - t_run) / 1000 )) ms)"
journalctl -u mdreclaimd.service -b --no-pager -o short-monotonic | grep "$o" | tail -n 8 | cut -c 1-220
check "Mode=observe lifts the cap" no_cap
check_cmp "... the daemon's event within two ticks (1 s) (ms)" "$cap_ev" -le 1000
check_cmp "... seen in the file within two ticks (ms)" "$cap_ms" -le 1000
check "Mode=observe lifts the memory.high" no_high
check_cmp "... the daemon's event within two ticks (1 s) (ms)" "$high_ev" -le 1000
check_cmp "... seen in the file within two ticks (ms)" "$high_ms" -le 1000
check_cmp "mdctl throttles --json has none left for it" "$(throttles_of "$o")" -eq 0
systemctl stop "$o"
rm -f "$mnt/observed"
sync -f "$mnt"

c=mdr-capped-writer.service
mdctl policy set mdr-writer Mode=enforce > /dev/null
systemd-run --quiet --unit="$c" dd if=/dev/zero of="$mnt/capped" bs=1M count=3500 status=none
t0=$(now)
check "$c: capped (io.max wbps) with a memory.high" wait_for 40 both "$c"
# Dirty data builds up behind the cap.
pending() { [ "$(dirty_of "$c")" -ge $((8 << 20)) ]; }
wait_for 10 pending
cap=$(wbps_of "$c") dirty=$(dirty_of "$c")
note "$c: io.max wbps=$cap, memory.high $(high_of "$c"), dirty+writeback $(mib "$dirty") MiB after $(since "$t0") s"
check_cmp "dirty data pending at the stop (MiB)" "$(mib "$dirty")" -ge 8

# ---- what the service manager and mdctl explain say of it (issue 37) ----
section "systemctl status and mdctl explain: $v protected, $c capped for it"
# STATUS= names the protected service and the capped writer, and is sent when that changes.
status_line() { systemctl show -P StatusText mdreclaimd.service; }
status_names() { status_line | grep -q "protecting $v; 1 writer capped on [^ ]* ($c)"; }
check "systemctl status names the protected service and the capped writer" wait_for 10 status_names
systemctl status mdreclaimd.service --no-pager -l | grep -E "^ +Status:" | cut -c 1-220
explained() { mdctl explain "$1" > "/tmp/explain-$1.txt" && grep -q -- "$2" "/tmp/explain-$1.txt"; }
check "mdctl explain $v: protected, $c capped for it on the test disk" \
    explained "$v" "^  - $c at [0-9.]* MiB/s on [a-z0-9]* ($devno)$"
cat "/tmp/explain-$v.txt"
check "mdctl explain $c: capped for $v" explained "$c" "^  - for $v at [0-9.]* MiB/s on [a-z0-9]* ($devno), because "
cat "/tmp/explain-$c.txt"
# And the other side of "why not": a cgroup beside them that does not write to the disk.
check "mdctl explain of a cgroup that is not capped says why" explained init.scope "^/init.scope (init.scope): not capped$"
cat /tmp/explain-init.scope.txt

section "$c: systemctl stop with the cap on"
t_stop=${EPOCHREALTIME/./}
systemctl stop --no-block "$c"
while ! gone "$c" && [ $(( ${EPOCHREALTIME/./} - t_stop )) -lt 20000000 ]; do pause; done
removed_ms=$(ms_since "$t_stop")
check "systemd removed its cgroup" gone "$c"
# Lifted, or raised to the drain rate (nine tenths of the disk as the daemon
# measured it) where the daemon knows the disk's rate: what the writer left
# is written nearly at the disk's pace, not all at once beside the victim.
drain_min=$(( 16777216 * 3 / 4 ))
lifted_for_stop() {
    any_of /tmp/lift.json "(.reason | test(\"its unit is stopping|no process left\")) and
        ((.action == \"lift-cap\" and .after == \"max\") or
         (.action == \"drain-cap\" and .after != \"max\" and (.after | tonumber) >= $drain_min))"
}
# Which word came first (systemd's "deactivating" on the bus, or cgroup.events
# emptying) is systemd's and the scheduler's choice, not the daemon's: noted above.
# Both come as the writer dies, and systemd removes the cgroup as soon as it is
# empty: under load the daemon can hear of the stop only after the rmdir (ci25:
# 528 ms after the command, the cgroup gone at 583 ms as this loop saw it). Its
# own word then says so: it acted, and the kernel answered ENOENT (ENODEV when
# the rmdir came between its open and its write). That is the
# race lost, told apart from a daemon that did nothing, and from one that heard
# late: it must still have acted within 1 s of the command, as every other
# bound here. Nothing the daemon can do reaches a removed cgroup's io.max.
failed_ms() {
    journalctl -u mdreclaimd.service -b --no-pager -o json --since "@$(( t_stop / 1000000 ))" |
        jq -r --arg c "$c" --argjson t "$t_stop" \
            'select((.MESSAGE | type) == "string" and (.MESSAGE | test($c + ": cannot (raise io.max to drain, lifted instead|lift io.max): (No such file or directory|No such device)"))) |
             ((.__REALTIME_TIMESTAMP | tonumber) - $t) / 1000 | floor' | head -n 1
}
# Or the stop's word and the emptying both reached it after the rmdir: its
# first word on the cgroup is then that it is gone, heard through the
# cgroup.events watch (ci43: 354 ms after the command, the rmdir seen at
# 400 ms; both words come as the writer dies, so a starved guest can run the
# daemon after systemd's removal). A cgroup-gone found at a tick instead is
# a daemon whose watches did not work: not a race, a failure. Its event,
# from its own clock.
gone_ms() {
    events_of "$c" cgroup-gone |
        jq -r --argjson t "$t_stop" 'select(.realtime_usec > $t and (.message | test("heard through its cgroup.events watch"))) |
            ((.realtime_usec - $t) / 1000) | floor' | head -n 1
}
race_ms() { local ms; ms=$(failed_ms); [ -n "$ms" ] || ms=$(gone_ms); echo "$ms"; }
lost_race() { [ -n "$(race_ms)" ]; }
# The daemon's word on the stop may reach the journal and its event log a
# moment after the cgroup is gone: up to 3 s for either.
stop_heard() {
    events_of "$c" lift-cap,drain-cap > /tmp/lift.json
    lifted_for_stop || lost_race
}
within 3000 stop_heard
events_of "$c" lift-cap,drain-cap > /tmp/lift.json
events_of "$c" cgroup-gone > /tmp/gone.json
events_of "$c" cap-writes,dirty-budget > /tmp/set.json
jq -r '.message' /tmp/lift.json
lift_ms=$(jq -r --argjson t "$t_stop" 'select(.reason | test("its unit is stopping|no process left")) | (.realtime_usec - $t) / 1000 | floor' /tmp/lift.json | head -n 1)
why=$(jq -r 'select(.reason | test("its unit is stopping|no process left")) | .reason' /tmp/lift.json | head -n 1)
note "cap lifted ${lift_ms:-never} ms after the stop (${why:-no reason}); the cgroup gone after ${removed_ms} ms"
cat /tmp/gone.json
no_cap_gone() {
    ! jq -e -s "any(.[]; .knob == \"io.max wbps\" and .value != \"max\" and (.value | tonumber) < $drain_min)" \
        /tmp/gone.json > /dev/null
}
race=won
if ! lifted_for_stop && lost_race; then
    race=lost
    if [ -n "$(failed_ms)" ]; then
        note "RACE LOST: the daemon acted on the stop $(race_ms) ms after it, when systemd had removed the cgroup (gone at ${removed_ms} ms as this loop saw it): its io.max write found no file, the cap went with the cgroup"
    else
        note "RACE LOST: the daemon's first word after the stop was the cgroup gone, $(race_ms) ms after it (gone at ${removed_ms} ms as this loop saw it): systemd removed it before the daemon ran, the cap went with it"
    fi
    check_cmp "the daemon acted on the unit's stop, or saw its cgroup gone, within 1 s (ms)" "$(race_ms)" -le 1000
    # A race lost, not a watch missing: systemd's word had a way in.
    watch_up() {
        journalctl -u mdreclaimd.service -b --no-pager -o json --until "@$(( t_stop / 1000000 ))" |
            jq -r 'select((.MESSAGE | type) == "string") | .MESSAGE' |
            grep -E "Watching systemd's units|went away" | tail -n 1 | grep -q "Watching systemd's units"
    }
    check "the unit watch was connected at the stop" watch_up
else
    check "the daemon lifted the cap as the unit stopped (lift-cap to max, or drain-cap to >= 3/4 of the disk)" lifted_for_stop
    check "no io.max cap under the drain rate went with the cgroup (cgroup-gone)" no_cap_gone
fi
# From the lift on: a step the tick took between the command and systemd's
# stop is no fault (the daemon could not know yet).
t_lift=$(jq -r 'select(.reason | test("its unit is stopping|no process left")) | .realtime_usec' /tmp/lift.json | head -n 1)
# The race lost, the daemon's word is its failed write: from then on.
[ -n "$t_lift" ] || [ "$race" != lost ] || t_lift=$(( t_stop + $(race_ms) * 1000 ))
late=$(jq -s --argjson t "${t_lift:-$t_stop}" 'map(select(.realtime_usec > $t)) | length' /tmp/set.json)
jq -r --argjson t "${t_lift:-$t_stop}" 'select(.realtime_usec > $t) | .message' /tmp/set.json
check_cmp "no throttle set on it once lifted for the stop (cap-writes, dirty-budget events)" "$late" -eq 0
# What systemd and the daemon did, in order (the guest's monotonic clock).
journalctl -b --no-pager -o short-monotonic --since "@$(( t_stop / 1000000 - 1 ))" |
    grep -E "$c|mdreclaimd\[" | grep -v 'io stall over' | head -n 12 | cut -c 1-200
# A draining cap's record goes at the first tick that finds the cgroup gone.
none_left() { [ "$(throttles_of "$c")" -eq 0 ]; }
wait_for 3 none_left
check_cmp "the ledger has nothing left of it" "$(throttles_of "$c")" -eq 0
# rm waits for the file's pages already under writeback: those the flusher
# queued on the device, at the drain rate (nine tenths of the disk) or the
# disk's own. The bound is 2 s, or 1 s plus what that writeback needs at
# three quarters of the disk's 16 MiB/s when the device queue holds more
# (2.0 s was seen with 123 MiB pending, the cap lifted); the cap at the
# guard's tenth of the disk, left behind on the removed cgroup, took 15-40 s.
wb_kib=$(awk '/^Writeback:/ { print $2 }' /proc/meminfo)
bound_ms=$(( 1000 + wb_kib * 1000 / (16384 * 3 / 4) ))
[ "$bound_ms" -ge 2000 ] || bound_ms=2000
t0=${EPOCHREALTIME/./}
rm -f "$mnt/capped"
sync -f "$mnt"
rm_ms=$(ms_since "$t0")
note "rm + sync -f of its file: ${rm_ms} ms, $(( wb_kib / 1024 )) MiB under writeback on the host before it"
if [ "$race" = lost ]; then
    # systemd removed the cgroup before the daemon's lift reached it: the cap
    # stays on the removed cgroup's writeback, which no write can reach any
    # more (the kernel's, not the daemon's; 15-40 s seen). Said, not checked:
    # the race is the one noted above.
    note "not checked, the race lost: ${rm_ms} ms against the ${bound_ms} ms bound of a lifted cap"
else
    check_cmp "its file deletes and syncs near the device's rate: in under 2 s, or 1 s plus its writeback at 12 MiB/s (ms)" "$rm_ms" -lt "$bound_ms"
fi

systemctl stop "$v"
journalctl -u mdreclaimd.service -b --no-pager | grep -iE "system bus|systemd's units" | cut -c 1-200
section "the daemon's events for these units"
mdctl events --no-legend | grep -E 'mdr-' | grep -vE 'attach-policy|policy-change' | tail -n 16 | cut -c 1-200
check "mdreclaimd.service was not restarted" test "$(systemctl show -P NRestarts mdreclaimd.service)" = 0
note "the scenario took $(since "$t_start") s of guest time"
finish
