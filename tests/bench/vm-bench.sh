#!/bin/bash
# The observation benchmark against real cgroups on Debian's 6.1 kernel, run
# as a VM scenario (it is no test: it always passes unless the benchmark fails):
#
#   MDRECLAIMD=build/daemon/mdreclaimd tests/vm/vmtest --mem 8192 --timeout 2700 tests/bench/vm-bench.sh
#
# bench-observer is taken from the build tree MDRECLAIMD lies in, which the
# guest must see whole: not under /tmp (of a build under /tmp the guest sees
# only the daemon's directory). It creates 1,000 and then 10,000 cgroups below
# /sys/fs/cgroup/mdreclaim-bench, measures the whole tree, and removes them. Under TCG absolute times are TCG times;
# the memory figures and the comparisons are what to read (docs/performance.md).
set -u
build=$(dirname "$(dirname "${MDRECLAIMD:?MDRECLAIMD must point into a build tree}")")
bench=$build/tests/bench/bench-observer
[ -x "$bench" ] || { echo "no $bench: build it first (ninja -C $build)"; exit 1; }

echo "guest: $(uname -r), nproc $(nproc), $(grep MemTotal /proc/meminfo | tr -s ' ')"
rc=0
"$bench" --cgroup-root /sys/fs/cgroup --create 1000 --ticks 50 --rescans 5 || rc=1
"$bench" --cgroup-root /sys/fs/cgroup --create 10000 --ticks 5 --rescans 2 || rc=1
exit $rc
