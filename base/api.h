/* GR_API marks the functions libgraft.so exports. The library is built with
 * -fvisibility=hidden, so everything else (every layer's internal helpers, the oneDNN and JSON
 * engines, the codegens) stays inside it. The public API is the set of declarations that carry
 * GR_API: compile (ir/ctx.h, ir/text/parser.h, ir/text/printer.h, frontend/onnx/onnx_import.h,
 * ir/transform/transform.h, runtime/kernels/const_eval.h, byoc/byoc.h, byoc/backend.h's
 * options), the CLI's commands for bindings with JSON results (deploy/toolkit.h), build and run
 * an artifact (deploy/graft_model.h) and the types around them (base/status.h, ir/sinfo.h,
 * base/tensor.h, runtime/value.h, runtime/npy.h).
 * scripts/check_exports.sh, run by `make test`, reads the GR_API declarations from the headers
 * and checks that `nm -D --defined-only libgraft.so` lists exactly those. */
#ifndef GRAFT_BASE_API_H
#define GRAFT_BASE_API_H

#if defined(__GNUC__) || defined(__clang__)
#define GR_API __attribute__((visibility("default")))
#else
#define GR_API
#endif

#endif
