/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's state as D-Bus properties of org.mdreclaim.Manager1, as
 * systemd's own daemons publish theirs: read with Get/GetAll (busctl
 * get-property), and a PropertiesChanged to every subscriber when one of
 * them changes (docs/control-api.md, Properties).
 */
#pragma once

#include <systemd/sd-bus.h>

typedef struct Api Api;

int api_prop_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error);
int api_prop_started(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error);
/* The properties that change: their value drawn from the manager's state each time. */
int api_prop_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                   sd_bus_message *reply, void *userdata, sd_bus_error *error);

/* The vtable's entries (api.c). */
#define API_PROPERTIES                                                                                             \
        SD_BUS_PROPERTY("Version", "s", api_prop_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),                         \
        SD_BUS_PROPERTY("StartedRealtimeUSec", "t", api_prop_started, 0, SD_BUS_VTABLE_PROPERTY_CONST),             \
        SD_BUS_PROPERTY("Policies", "as", api_prop_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),                  \
        SD_BUS_PROPERTY("ProtectedUnits", "as", api_prop_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),            \
        SD_BUS_PROPERTY("ThrottlesHeld", "u", api_prop_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),              \
        SD_BUS_PROPERTY("ThrottledUnits", "as", api_prop_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),            \
        SD_BUS_PROPERTY("ReleasedUnits", "as", api_prop_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

/* The check for changes: on a timer, and at once after api_props_touch(). */
int api_props_init(Api *a);
void api_props_done(Api *a);
/* Something may have changed (an event, the throttles): compared, and announced, in this loop iteration. */
void api_props_touch(Api *a);
