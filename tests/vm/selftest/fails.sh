#!/bin/bash
# A scenario that fails one check: vmtest must exit non-zero.
. "$MDR_VMDIR/scenarios/lib.sh"
check "a check that passes" true
check "a check that fails on purpose" false
finish
