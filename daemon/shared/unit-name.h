/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's names in cgroup paths: a cgroup is a unit's when its last
 * component ends in .service, .scope or .slice. Pure string work, shared by
 * the cgroup table (which unit a cgroup is) and the policy store (which
 * policy names are unit names).
 */
#pragma once

/* The unit the cgroup at `path` is (a pointer into path), or NULL. */
const char *cgroup_path_unit(const char *path);
