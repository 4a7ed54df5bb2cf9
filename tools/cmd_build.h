/* graft build: a deployable .graft artifact (`graft run MODEL.graft` runs it, tools/cmd_run.c). */
#ifndef GRAFT_TOOLS_CMD_BUILD_H
#define GRAFT_TOOLS_CMD_BUILD_H

/* graft build INPUT [--input-shape NAME=DIMS]... [--backend NAME]... [--no-opt] -o MODEL.graft
 * Runs the default pass pipeline (unless --no-opt), partitions for the backends, builds the
 * artifact (deploy/graft_model.h) and prints the plan summary (host kernels, arena vs
 * intermediates, object size, build and load time). */
int cmd_build(int argc, char **argv);

#endif
