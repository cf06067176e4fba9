#!/bin/bash
# A scenario that never ends: vmtest must kill the guest and report it.
echo "selftest: about to hang"
sleep 100000
