#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The actions of the daemon's events are one vocabulary: every action name
the daemon's sources give an event (an `.action = "..."`, the first name an
event helper takes, the names a function that picks an action returns, the
point's action names in plan.c) is in EVENT_ACTIONS (shared/event-log.h),
which `mdctl events --action` checks names against; and each of those is
in mdctl(1)."""

import os
import re
import sys

root = os.environ.get("SOURCE_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
NAME = r'"([a-z]+(?:-[a-z]+)*)"'

with open(os.path.join(root, "daemon/shared/event-log.h")) as f:
    header = f.read()
listed = re.search(r"#define EVENT_ACTIONS\s*\\\n(.*?)\n\n", header, re.S)
if not listed:
    sys.exit("check-event-actions: no EVENT_ACTIONS in daemon/shared/event-log.h")
vocabulary = set(re.findall(NAME, listed.group(1)))

patterns = [
    rf"\.action = {NAME}",
    rf"\w+_event\([^,()]+, {NAME}",                 # actuator_throttle_event(a, "drain-cap", ...)
    rf"reclaim_event\([^,()]+, [^,()]+, {NAME}",
    rf"restore_if_ours\([^,()]+, [^,()]+, {NAME}",
    rf"\[PA_\w+\] = {NAME}",                        # plan.c: point_action_to_string()
]
found = {}
for top, _, files in os.walk(os.path.join(root, "daemon")):
    for name in files:
        if not name.endswith(".c"):
            continue
        path = os.path.join(top, name)
        with open(path) as f:
            text = f.read()
        for p in patterns:
            for m in re.finditer(p, text):
                found.setdefault(m.group(1), os.path.relpath(path, root))
        # A function that picks an action ("..._action(") returns its names, or picks one of two.
        for body in re.findall(r"\w*_action\([^;{]*\)\s*\{(.*?)\n\}", text, re.S):
            for m in re.finditer(rf"return [^;]*?{NAME}(?: : {NAME})?;", body):
                for g in m.groups():
                    if g:
                        found.setdefault(g, os.path.relpath(path, root))
        for m in re.finditer(rf"\? {NAME} : {NAME}, e,", text):
            for g in m.groups():
                found.setdefault(g, os.path.relpath(path, root))

failures = [f"{path}: action '{a}' is not in EVENT_ACTIONS" for a, path in sorted(found.items())
            if a not in vocabulary]
if len(found) < 20:
    failures.append(f"only {len(found)} actions found in the sources: the patterns no longer match")
with open(os.path.join(root, "docs/man/mdctl.1.scd")) as f:
    man = f.read()
failures += [f"docs/man/mdctl.1.scd: --action does not name '{a}'" for a in sorted(vocabulary)
             if f"*{a}*" not in man]
for line in failures:
    print(line)
print(f"check-event-actions: {len(vocabulary)} actions listed, {len(found)} found in the sources, "
      f"{len(failures)} problem(s)")
sys.exit(1 if failures else 0)
