# Shared helpers for VM scenarios: sourced, not run.
#   . "$(dirname "$0")/lib.sh"
# Checks count into "N passed, N failed"; finish prints that line and exits
# non-zero when anything failed.

mdr_passed=0
mdr_failed=0

pass() { mdr_passed=$((mdr_passed + 1)); echo "ok   - $*"; }
fail() { mdr_failed=$((mdr_failed + 1)); echo "FAIL - $*"; }
note() { echo "       $*"; }

# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
    local what=$1; shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

# check_cmp DESCRIPTION A OP B: integer comparison, shown with its values.
check_cmp() {
    local what=$1 a=$2 op=$3 b=$4
    if [ -n "$a" ] && [ -n "$b" ] && [ "$a" "$op" "$b" ]; then
        pass "$what ($a $op $b)"
    else
        fail "$what (wanted $a $op $b)"
    fi
}

# Stops the scenario where it stands: what follows cannot run.
fatal() { fail "$*"; finish; }

finish() {
    echo "$mdr_passed passed, $mdr_failed failed"
    [ "$mdr_failed" -eq 0 ] && [ "$mdr_passed" -gt 0 ]
    exit
}

# memstat CGROUP_DIR KEY: one memory.stat field, in bytes.
memstat() { awk -v k="$2" '$1 == k { print $2 }' "$1/memory.stat"; }

mib() { echo $(( $1 / 1048576 )); }
# half2_band SAMPLES CAP_MIB: of a run's "SECONDS BYTES" samples, the mean of
# its second half in time against the cap (the band of MetadataCacheMax=),
# that half's range, the run's peak, and how many samples the half holds
half2_band() {
    awk -v cap="$2" 'function m(x) { return x / 1048576 }
        { t[NR] = $1; s[NR] = $2; if ($2 > peak) peak = $2 } END {
        half = t[NR] / 2; n = 0; sum = 0; lo = -1; hi = 0
        for (i = 1; i <= NR; i++) if (t[i] >= half) { n++; sum += s[i]; if (lo < 0 || s[i] < lo) lo = s[i]; if (s[i] > hi) hi = s[i] }
        mean = n ? sum / n : 0
        printf "half2_mean_mib=%.1f vs_cap_pct=%+.1f half2_min_mib=%.1f half2_max_mib=%.1f peak_mib=%.1f samples=%d\n",
            m(mean), 100 * (m(mean) - cap) / cap, m(lo < 0 ? 0 : lo), m(hi), m(peak), n }' "$1"
}

# new_cgroup NAME: a fresh child of the root, path printed.
new_cgroup() {
    local cg=/sys/fs/cgroup/$1
    [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
    mkdir -p "$cg" && echo "$cg"
}

# in_cgroup CGROUP_DIR COMMAND...: runs the command with its process in that cgroup.
in_cgroup() {
    local cg=$1; shift
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' mdr-in-cgroup "$cg" "$@"
}

# need_daemon: the binary under test, or a skip of what needs it.
need_daemon() {
    if [ -z "${MDRECLAIMD:-}" ] || [ ! -x "$MDRECLAIMD" ]; then
        fatal "MDRECLAIMD is not set to a built mdreclaimd (got '${MDRECLAIMD:-}')"
    fi
}

# now / since T: seconds of uptime, for timings shown in notes.
# wait_for SECONDS COMMAND...: polls every 0.25 s until the command succeeds.
wait_for() {
    local n=$(( $1 * 4 )); shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.25
        n=$((n - 1))
    done
    return 1
}
# Whether the daemon's control socket answers (mdctl as the scenario runs it).
socket_up() { mdctl status > /dev/null 2>&1; }
now() { awk '{ print $1 }' /proc/uptime; }
since() { awk -v t="$1" '{ printf "%.1f", $1 - t }' /proc/uptime; }

# apt_install_deb: installs the .deb vmtest handed in (MDR_DEB), as an
# operator would, with apt (quick and offline here: guest/run-scenario).
apt_install_deb() {
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$MDR_DEB"
}

# cgroup_write_of PID: the cgroup file (memory.reclaim, memory.high, ...) one
# of the process's threads is inside a write(2) to now, or nothing.
cgroup_write_of() {
    local t sc fd f
    for t in /proc/"$1"/task/*; do
        read -r sc fd _ < "$t/syscall" 2> /dev/null || continue
        [ "$sc" = 1 ] || continue
        f=$(readlink "/proc/$1/fd/$((fd))" 2> /dev/null)
        case $f in /sys/fs/cgroup/*) echo "${f##*/}"; return 0 ;; esac
    done
    return 1
}
