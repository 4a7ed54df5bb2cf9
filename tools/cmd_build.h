/* graft build (a deployable .graft artifact) and running one (`graft run MODEL.graft`). */
#ifndef GRAFT_TOOLS_CMD_BUILD_H
#define GRAFT_TOOLS_CMD_BUILD_H

/* graft build INPUT [--input-shape NAME=DIMS]... [--backend NAME]... [--no-opt] -o MODEL.graft
 * Runs the default pass pipeline (unless --no-opt), partitions for the backends, builds the
 * artifact (deploy/graft_model.h) and prints the plan summary (host kernels, arena vs
 * intermediates, object size, build and load time). */
int cmd_build(int argc, char **argv);

/* graft run MODEL.graft [--input NAME=FILE.npy|random]... [--output-dir DIR] [--repeat N]
 *                       [--profile] [--profile-json FILE]
 * cmd_run calls this (same argv as cmd_run) when its input ends in ".graft". --profile prints
 * time per region (host kernel / extern / reference op) with its frontend layers; --profile-json
 * writes a Chrome trace (ONNX Runtime's profiler format: an array of "X" events). */
int cmd_run_artifact(int argc, char **argv);

#endif
