#!/bin/bash
# vm-fs: ext4
# vm-write-bps: 16777216
# The short form of the real-service benchmarks in the suite (issue 35): a
# database (SQLite in WAL mode, synchronous=FULL: bench-sqlite.sh) whose
# commit loop starts 2 s after `cp` of a big file to the same filesystem,
# on a disk qemu holds to 16 MiB/s; the kernel alone, then mdreclaimd with
# one line of configuration, [Policy] Match=/mdr-sqlite Protect=yes, the
# device's capacity learnt beforehand (cp alone with the daemon, as
# bench-sqlite does; a daemon that has never seen the disk saturated has no
# guard until it has, and one such run's worst commit was 7 s: the
# write point's docs, "What it cannot do"). It checks
# that the daemon finds and caps the unconfigured writer, that the
# database's worst commit stays under 2 s and its commit rate at three
# times the kernel alone's or more, and that the writer keeps 40 % of the
# device's rate or more (bench-service-lib.sh, short_checks). About 100 s. The long form, with the
# static cap beside them: bench-sqlite, bench-pg (docs/write-point.md).
MDR_SVC_SHORT=yes
export MDR_SVC_SHORT
exec bash "$(dirname "$0")/bench-sqlite.sh"
