/* Host code through the LLVM-C API (LLVM 14).
 *
 * Compile mode: every fused group of the planned executor (runtime/exec/plan.h) becomes one function
 * `void <group name>(void *const *bufs)` with one loop nest over the output's (collapsed) static
 * shape; inputs broadcast by stride-0 indexing. Groups with symbolic dims take their extents and
 * strides at run time (bufs[nin + 1], runtime/exec/plan.h RT_FUSE_DYN_ARGS). The module is optimized with the new pass
 * manager's "default<O3>" for the host CPU (its name and features, so the loop vectorizer emits
 * AVX2 / AVX-512 code where the host has it), emitted as an ELF object file, and linked in-process
 * by ORC's LLJIT.
 *
 * Link mode (artifacts): the same object file is handed to LLJIT as is. LLJIT then only links
 * (relocations, symbol resolution of libm calls against the process): no IR, no optimization,
 * no code generation at load. The object is tied to the CPU recorded with it (gr_llvm_host_cpu).
 *
 * libLLVM is loaded by the first group compiled or the first object linked (llvm_api_impl.h):
 * a model without host code never maps it, and its host CPU string is then "".
 *
 *     gr_llvm_host *h;  gr_llvm_host_new(&h, &d);
 *     rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d);   // groups compiled + linked
 *     ...; rt_exec_free(x); gr_llvm_host_free(h);
 */
#ifndef GRAFT_BACKENDS_LLVM_LLVM_HOST_H
#define GRAFT_BACKENDS_LLVM_LLVM_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/exec/plan.h"

typedef struct gr_llvm_host gr_llvm_host;

gr_status gr_llvm_host_new(gr_llvm_host **out, gr_diag *diag);
/* Link mode over an object file emitted by compile mode (copied). len 0: no host code. */
gr_status gr_llvm_host_load(const uint8_t *obj, size_t len, gr_llvm_host **out, gr_diag *diag);
void gr_llvm_host_free(gr_llvm_host *h);
/* The lowering to pass to rt_px_new (lives as long as h). */
const rt_host_lowering *gr_llvm_host_lowering(gr_llvm_host *h);
/* After finalize in compile mode: the object file (borrowed; NULL/0 when no group). */
const uint8_t *gr_llvm_host_object(const gr_llvm_host *h, size_t *len);
/* "cpu-name +feature,..." of the host the code is compiled for (static storage of h). */
const char *gr_llvm_host_cpu(const gr_llvm_host *h);
/* Wall time of the last finalize (optimize + emit + link), in ns. */
uint64_t gr_llvm_host_compile_ns(const gr_llvm_host *h);
/* True when the op call has a lowering (float32; clip with scalar bounds). */
bool gr_llvm_can_lower(const ir_call *call);

#endif
