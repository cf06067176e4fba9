#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The journal catalog (systemd/mdreclaim.catalog) against the MESSAGE_IDs the
daemon sends (daemon/shared/message-ids.h) and the man page's list of them
(mdreclaimd(8)): each id has exactly one entry and
each entry an id, with Subject:, Defined-By:, Documentation: pointing at a man
page of ours, and a body; every @FIELD@ it substitutes is a field the daemon
sends; and journalctl, where there is one, builds its database from it."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HEADER = os.path.join(ROOT, "daemon/shared/message-ids.h")
CATALOG = os.path.join(ROOT, "systemd/mdreclaim.catalog")
# The fields every event carries (log.c), beside those its caller adds ("KEY=..." in the sources).
FIXED_FIELDS = {"MESSAGE", "PRIORITY", "CGROUP", "UNIT", "ACTION"}


def message_ids():
    with open(HEADER) as f:
        return re.findall(r'^#define\s+(MESSAGE_\w+)\s+"([^"]*)"', f.read(), re.M)


def catalog_entries():
    """[(id, {header: [values]}, body)] in the file's order."""
    entries = []
    with open(CATALOG) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^-- (\S+)(?: \S+)?$", line)
        if not m:
            continue
        headers, j = {}, i + 1
        while j < len(lines) and lines[j].strip():
            key, _, value = lines[j].partition(":")
            headers.setdefault(key, []).append(value.strip())
            j += 1
        body = []
        while j < len(lines) and not lines[j].startswith("-- "):
            body.append(lines[j])
            j += 1
        entries.append((m.group(1), headers, "\n".join(body).strip()))
    return entries


def fields_sent():
    names = set(FIXED_FIELDS)
    for path in glob.glob(os.path.join(ROOT, "daemon/**/*.c"), recursive=True):
        with open(path) as f:
            names |= set(re.findall(r'"([A-Z][A-Z0-9_]*)=', f.read()))
    return names


class Catalog(unittest.TestCase):
    def test_one_entry_per_message_id(self):
        ids = message_ids()
        self.assertGreaterEqual(len(ids), 7, "message-ids.h read")
        for name, value in ids:
            self.assertRegex(value, r"^[0-9a-f]{32}$", name)
        values = [v for _, v in ids]
        self.assertEqual(len(values), len(set(values)), "an id defined twice in message-ids.h")
        in_catalog = [i for i, _, _ in catalog_entries()]
        for name, value in ids:
            self.assertEqual(in_catalog.count(value), 1, f"{name} ({value}): entries in the catalog")
        self.assertEqual(sorted(set(in_catalog) - set(values)), [], "catalog entries for ids the daemon never sends")

    def test_ids_in_the_man_page(self):
        with open(os.path.join(ROOT, "docs/man/mdreclaimd.8.scd")) as f:
            page = f.read()
        documented = set(re.findall(r"\*([0-9a-f]{32})\*", page))
        self.assertEqual(documented, {v for _, v in message_ids()}, "the ids listed in mdreclaimd(8), LOGGING")

    def test_entries_are_complete(self):
        sent = fields_sent()
        for mid, headers, body in catalog_entries():
            self.assertEqual(len(headers.get("Subject", [])), 1, mid)
            self.assertEqual(headers.get("Defined-By"), ["mdreclaim"], mid)
            docs = headers.get("Documentation", [])
            self.assertTrue(docs, f"{mid}: no Documentation:")
            for doc in docs:
                m = re.match(r"^man:([\w.-]+)\((\d)\)$", doc)
                self.assertTrue(m, f"{mid}: {doc}")
                self.assertTrue(os.path.exists(os.path.join(ROOT, "docs/man", f"{m.group(1)}.{m.group(2)}.scd")),
                                f"{mid}: {doc} is not one of our man pages")
            self.assertGreater(len(body), 100, f"{mid}: what it means and what to do")
            for field in re.findall(r"@([A-Za-z0-9_]+)@", headers["Subject"][0] + "\n" + body):
                self.assertIn(field, sent, f"{mid}: @{field}@ is no field the daemon sends")

    def test_journalctl_reads_it(self):
        journalctl = shutil.which("journalctl")
        if not journalctl:
            self.skipTest("no journalctl")
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "usr/lib/systemd/catalog"))
            shutil.copy(CATALOG, os.path.join(root, "usr/lib/systemd/catalog"))
            r = subprocess.run([journalctl, f"--root={root}", "--update-catalog"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "", "journalctl warned about the catalog")
            r = subprocess.run([journalctl, f"--root={root}", "--list-catalog"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            listed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
            self.assertEqual(listed, {v for _, v in message_ids()})


if __name__ == "__main__":
    sys.exit(unittest.main())
