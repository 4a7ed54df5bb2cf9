/* graft opt / graft trace: run passes over a module, trace a frontend layer through them. */
#ifndef GRAFT_TOOLS_CMD_OPT_H
#define GRAFT_TOOLS_CMD_OPT_H

/* graft opt INPUT [--passes a,b,c] [--opt-level N] [--disable NAME]... [--config KEY=VALUE]...
 *     [--dump-ir DIR] [--time-passes] [--no-spans] [--var-map] [--input-shape N=D]... [-o OUT]
 * Without --passes the default pipeline runs. Lost layers (frontend layers that no longer
 * appear in any span) are listed on stderr. --var-map seeds each function's var_map attribute
 * (every var maps to itself) before the passes, so the output records where each var went. */
int cmd_opt(int argc, char **argv);
/* graft trace INPUT --layer NAME [same pipeline options as opt]: prints, after the pipeline,
 * every expression whose span names that layer (function, var, value, span). */
int cmd_trace(int argc, char **argv);

#endif
