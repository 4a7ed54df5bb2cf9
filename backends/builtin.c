/* The built-in backends, in the order the registry lists them (as QBE's tlist[]): the one file
 * that knows every backend folder, so it sits above them all. byoc/registry.c reads this list
 * (it cannot include the backends below which it sits); a program may register more. */
#include "byoc/byoc.h"
#include "backends/dnnl/dnnl_codegen.h"
#include "backends/json/json_codegen.h"

const byoc_backend *const byoc_builtin_backends[] = {&byoc_json_backend, &byoc_dnnl_backend, NULL};
