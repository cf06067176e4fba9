#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""tools/check-layers fails on what it is there to catch, in a copy of the
tree: an include that climbs (by name, and by a relative path, the hole an
include path alone leaves), a call that climbs (an object that uses a name of
serving in an object of the kernel's), a circle between two files of one
layer, and a matrix it cannot read; and it passes the tree as it is.

Arguments: the kernel's and serving's static libraries."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check-layers")
LIBKERNEL, LIBSERVING = sys.argv[1:3] if len(sys.argv) >= 3 else (None, None)


class CheckLayers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check-layers-")
        shutil.copytree(os.path.join(ROOT, "daemon"), os.path.join(self.tmp, "daemon"))
        os.makedirs(os.path.join(self.tmp, "docs"))
        shutil.copy(os.path.join(ROOT, "docs", "architecture.md"), os.path.join(self.tmp, "docs"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_check(self, *libs):
        args = [sys.executable, CHECK, "--source", self.tmp]
        for lib in libs:
            args += ["--lib", lib]
        return subprocess.run(args, capture_output=True, text=True)

    def add_line(self, rel, line, after="#include"):
        """Puts `line` after the first line of daemon/`rel` that starts with `after`."""
        path = os.path.join(self.tmp, "daemon", rel)
        with open(path) as f:
            lines = f.read().split("\n")
        at = next(i for i, l in enumerate(lines) if l.startswith(after))
        lines.insert(at + 1, line)
        with open(path, "w") as f:
            f.write("\n".join(lines))

    def test_tree_passes(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_relative_include_that_climbs_fails(self):
        self.add_line("kernel/procs.c", '#include "../serving/promtext.h"')
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("daemon/kernel/procs.c", r.stdout)
        self.assertIn("promtext.h of serving", r.stdout)

    def test_angled_relative_include_fails(self):
        self.add_line("sampling/observer.c", "#include <../core/manager.h>")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("manager.h of core", r.stdout)

    def test_include_by_name_that_climbs_fails(self):
        self.add_line("deciding/alloc-point.h", '#include "observer.h"')
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("deciding includes sampling/observer.h of sampling", r.stdout)

    def test_circle_between_two_files_fails(self):
        # Two headers of one layer that include each other.
        self.add_line("shared/nearest.h", '#include "json-out.h"', after="#pragma once")
        self.add_line("shared/json-out.h", '#include "nearest.h"', after="#pragma once")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("circle: daemon/shared/json-out <-> daemon/shared/nearest", r.stdout)

    def test_unreadable_matrix_is_an_error(self):
        path = os.path.join(self.tmp, "docs", "architecture.md")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("| sampling | kernel, shared |", "| sampling | kernal, shared |"))
        r = self.run_check()
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("kernal", r.stderr)

    @unittest.skipUnless(LIBKERNEL and shutil.which("cc") and shutil.which("ar"), "needs the libraries, cc and ar")
    def test_call_that_climbs_fails(self):
        src = os.path.join(self.tmp, "climb.c")
        with open(src, "w") as f:
            f.write("void prom_sample(void);\nvoid procs_climb(void);\nvoid procs_climb(void) { prom_sample(); }\n")
        obj = os.path.join(self.tmp, "procs-climb.c.o")
        subprocess.run(["cc", "-c", "-o", obj, src], check=True)
        lib = os.path.join(self.tmp, "libmdr-kernel-climb.a")
        subprocess.run(["ar", "qc", lib, obj], check=True)
        with open(os.path.join(self.tmp, "daemon", "kernel", "procs-climb.c"), "w") as f:
            f.write("/* stands for the object added to the library */\n")
        good = self.run_check("kernel=" + LIBKERNEL, "serving=" + LIBSERVING)
        self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
        bad = self.run_check("kernel=" + LIBKERNEL, "kernel=" + lib, "serving=" + LIBSERVING)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("kernel calls prom_sample() of serving", bad.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
