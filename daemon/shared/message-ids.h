/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every MESSAGE_ID the daemon's structured events carry, in one place, so
 * that a journal query (journalctl MESSAGE_ID=...) and the documentation
 * can be checked against one list: each has exactly one entry in the journal
 * catalog, systemd/mdreclaim.catalog (tests/unit/check-catalog.py).
 */
#pragma once

#define MESSAGE_POLICY_ATTACHED "5d0c3f1b7e2a4c8d9b6f0a1e2d3c4b5a"   /* a cgroup came under a policy */
#define MESSAGE_PRESSURE        "a3e4f1c25b6d47e8910f2c3d4e5f6a7b"   /* a PSI trigger fired */
#define MESSAGE_WRITE_POINT     "c7d2e9f04b1a4e6f8d3c2b1a09f8e7d6"   /* the write point decided or wrote back */
#define MESSAGE_THROTTLE        "e1f2a3b4c5d64e7f8091a2b3c4d5e6f7"   /* a throttle was set, lifted or taken over */
#define MESSAGE_RECLAIM         "b4c5d6e7f8094a1b2c3d4e5f60718293"   /* the allocation point reclaimed or would */
#define MESSAGE_POLICY_CHANGED  "8b1e2f0c4d7a4e6b9c3d5a7f1e0b2c4d"   /* a policy was set or unset through the API */
#define MESSAGE_RELEASE         "4f6a2d8e1c9b47d3a5e0f7b2c8d1e6a9"   /* an operator released a cgroup, or a release ended */
