/* graft conformance, a test harness kept out of the CLI's core: runs the ONNX backend test data
 * (libonnx-testdata) through the importer and the reference executor, one forked child per
 * test, and reports pass / fail / unsupported / crash / timeout / skipped per test and per
 * directory (text table and JSON). */
#ifndef GRAFT_TOOLS_CONFORMANCE_CONFORMANCE_H
#define GRAFT_TOOLS_CONFORMANCE_CONFORMANCE_H

/* graft conformance [DIR...] [--json OUT] [--filter SUBSTR] [--jobs N] [--timeout SEC] [-v]
 *                   [--no-fork]
 * DIRs default to libonnx-testdata's node, pytorch-converted, pytorch-operator and simple.
 * --no-fork runs the tests in-process, one after another (for debuggers and leak checkers;
 * a crash then ends the run). Takes the arguments after "conformance". Exit status 0 when no test failed, crashed or timed
 * out, 1 otherwise, 2 on a usage error. */
int cmd_conformance(int argc, char **argv);

#endif
