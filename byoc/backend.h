/* The backend contract: what a backend of BYOC fills in, one struct per backend, each in its
 * own folder (backends/json/json_backend.c, backends/dnnl/dnnl_codegen.c). backends/builtin.c
 * lists the built-in ones; the registry (byoc/registry.c) starts from that list, and the
 * passes, `graft backends` and the artifact loader find a backend there, by name or by the
 * kind of its runtime modules.
 *
 * A backend has
 *   - a name ("dnnl"), also the Codegen attribute of its regions and the prefix of its
 *     patterns ("dnnl.conv2d_bias_relu") and options ("dnnl.threads");
 *   - an ordered pattern table; each pattern may carry a check, which a pattern file can name
 *     (["check", "dnnl.nn.conv2d"]);
 *   - a codegen: regions -> one runtime module;
 *   - a loader of the runtime modules it wrote (by their kind), for artifacts;
 *   - the options it accepts: name, type, default and help. Option values reach its patterns,
 *     its codegen and its loader as a byoc_options (NULL: every default). */
#ifndef GRAFT_BYOC_BACKEND_H
#define GRAFT_BYOC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/api.h"
#include "ir/expr.h"
#include "patterns/match.h"
#include "runtime/module.h"

/* ---- Options ---- */

typedef enum byoc_opt_type {
    BYOC_OPT_BOOL,                 /* 1 / 0 / true / false */
    BYOC_OPT_INT,                  /* a non-negative decimal integer */
    BYOC_OPT_STR,                  /* any text (the backend checks it where it reads it) */
} byoc_opt_type;

/* "bool", "int", "string": the type as `graft backends` and the bindings name it. */
const char *byoc_opt_type_name(byoc_opt_type t);

/* One option a backend accepts, given as "<backend>.<name>=<value>". */
typedef struct byoc_option {
    const char *name;
    byoc_opt_type type;
    const char *dflt;              /* the default, as it would be written */
    const char *help;              /* one line for `graft backends` */
    const char *choices;           /* BYOC_OPT_STR: the values allowed, "a|b|c"; NULL: any */
} byoc_option;

/* Option values for the registered backends (byoc/options.c), set from "dnnl.threads=2"
 * assignments; a later assignment of the same option wins. */
typedef struct byoc_options byoc_options;
GR_API byoc_options *byoc_options_new(void);
GR_API void byoc_options_free(byoc_options *o);
/* Checks the assignment against the backend's option table: an unknown backend or option, a
 * missing '=' or a value that is not of the option's type is GR_ERR_INVALID naming the option. */
GR_API gr_status byoc_options_set(byoc_options *o, const char *assignment, gr_diag *diag);

struct byoc_backend;
/* The value of option `name` of backend b: the one set, else its default (o may be NULL).
 * name must be in b's table. */
const char *byoc_option_str(const byoc_options *o, const struct byoc_backend *b, const char *name);
int64_t byoc_option_int(const byoc_options *o, const struct byoc_backend *b, const char *name);
bool byoc_option_bool(const byoc_options *o, const struct byoc_backend *b, const char *name);
/* True when the option was set (not left at its default). */
bool byoc_option_given(const byoc_options *o, const struct byoc_backend *b, const char *name);

/* ---- Patterns ---- */

/* One pattern of a backend table: name "<backend>.<pattern>", root pattern, optional check. */
typedef struct byoc_pattern {
    const char *name;
    const pat_t *pattern;
    pat_check_fn check;            /* NULL: accept every match */
    void *check_user;
} byoc_pattern;

/* ---- Codegen and runtime ---- */

/* Function attributes of the partitioned module a codegen reads. */
#define BYOC_ATTR_COMPOSITE "Composite"
#define BYOC_ATTR_CODEGEN "Codegen"
#define BYOC_ATTR_PRIMITIVE "Primitive"
#define BYOC_ATTR_GLOBAL_SYMBOL "global_symbol"

/* A region handed to a codegen: the region function (Codegen attr, global_symbol) and the
 * names of the constants it holds, in order of appearance (`<symbol>_const_<i>`). */
typedef struct byoc_region {
    const char *symbol;
    const ir_func *func;
    uint32_t nconsts;
    const char *const *const_names;
    const ir_const *const *consts;
} byoc_region;

struct rt_tensor;
typedef struct byoc_backend {
    const char *name;              /* "json", "dnnl": also the Codegen attr */
    const char *description;       /* one line for `graft backends` */
    /* Ordered pattern table (earlier wins), built in ctx's arena. */
    gr_status (*get_patterns)(ir_ctx_t *ctx, const byoc_options *opts, const byoc_pattern **out, uint32_t *n,
                              gr_diag *diag);
    /* Compiles regions into one runtime module (a new reference) that defines every region's
     * symbol and is ready to run (constants bound). */
    gr_status (*compile)(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const byoc_options *opts,
                         rt_module **out, gr_diag *diag);
    /* Rebuilds a module of runtime_kind from its serialized blob; consts resolves constant
     * names (may be NULL when the module has none). */
    gr_status (*load)(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *name, void *user),
                      void *user, const byoc_options *opts, rt_module **out, gr_diag *diag);
    const char *runtime_kind;      /* the "kind" of its module blobs ("dnnl_json") */
    const byoc_option *options;    /* the options it accepts */
    uint32_t noptions;
    /* Optional: builds now what the first call of a module from compile would (oneDNN's
     * primitives), so that rejections surface at compile time. RunCodegen calls it after the
     * region constants were handed over (byoc_partition_opts.release_consts). */
    gr_status (*prepare)(rt_module *mod, gr_diag *diag);
    /* A backend loaded from a plugin library (backends/plugin.h): its version and file;
     * NULL for a built-in one. */
    const char *version;
    const char *path;
} byoc_backend;

#endif
