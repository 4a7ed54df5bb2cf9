/* graft diff / graft trace --backend / graft explore (tools/cmd_inspect.c) and the explorer
 * page writer (tools/explore_html.c). */
#ifndef GRAFT_TOOLS_CMD_INSPECT_H
#define GRAFT_TOOLS_CMD_INSPECT_H

#include <jansson.h>
#include <stdbool.h>

int cmd_diff(int argc, char **argv);
int cmd_explore(int argc, char **argv);
/* graft trace with --backend: the layer through partitioning to what runs it. */
int cmd_trace_backend(int argc, char **argv);

/* Writes the self-contained explorer page of a model document (inspect/inspect.h) to path: the
 * graph laid out by Graphviz's dot (libgvc) as inline SVG, the document as inline JSON, the
 * page's script and style inline. False (message printed) when it cannot. */
bool explore_write_html(json_t *doc, const char *path);

#endif
