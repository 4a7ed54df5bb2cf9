/* graft partition / graft backends. */
#ifndef GRAFT_TOOLS_CMD_PARTITION_H
#define GRAFT_TOOLS_CMD_PARTITION_H

/* graft partition INPUT [--backend NAME]... [--patterns FILE.relax]
 *     [--stop-after fuse|merge|codegen] [--report text|json] [--input-shape N=D]... [-o OUT.relax]
 * Without --backend the json backend is used. The report goes to stdout and the module to -o
 * (or to stdout when no report is asked for). */
int cmd_partition(int argc, char **argv);
/* graft backends: every registered backend, its patterns in priority order and its codegen. */
int cmd_backends(int argc, char **argv);

#endif
