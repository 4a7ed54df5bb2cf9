/* Backend plugins (include/graft/backend_plugin.h) behind the backend contract
 * (byoc/backend.h): a plugin library loaded from a file becomes a registered byoc_backend
 * whose patterns come from its pattern text, whose checks call its C checks through a view of
 * the match, and whose codegen writes each region as a JSON graph (backends/json) run by an
 * engine that hands the plugin a view of that graph. Its runtime modules are JSON-runtime
 * modules of kind "plugin:<name>", stored in artifacts with the plugin's version. */
#ifndef GRAFT_BACKENDS_PLUGIN_H
#define GRAFT_BACKENDS_PLUGIN_H

#include <stdbool.h>
#include <dlpack/dlpack.h>

#include "byoc/backend.h"
#include "include/graft/backend_plugin.h"

/* The runtime kind prefix of plugin modules: "plugin:xnnpack". */
#define BYOC_PLUGIN_KIND_PREFIX "plugin:"

/* Loads the plugin library at `path` and registers its backend (*out, may be NULL). Loading
 * the same plugin name again returns the registered one. Errors name the file: not a shared
 * library, no graft_backend_plugin, another ABI major (or a newer minor), a name taken by a
 * built-in backend, a pattern file that does not read. */
gr_status byoc_plugin_load(const char *path, const byoc_backend **out, gr_diag *diag);

/* The plugin behind b, NULL for a built-in backend. */
const graft_plugin *byoc_plugin_of(const byoc_backend *b);

/* The plugin's major version number ("1.2.3" -> 1; -1 when it does not start with one). */
int byoc_plugin_version_major(const char *version);

/* dtype conversions of the public API. */
graft_dtype byoc_plugin_dtype(DLDataType t);
bool byoc_plugin_dl_dtype(graft_dtype t, DLDataType *out);

#endif
