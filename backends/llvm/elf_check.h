/* Structural check of an artifact's host object before LLVM's linker sees it.
 *
 * RuntimeDyld trusts its input: a section index out of range, a relocation of a type it does not
 * implement or an offset past its section aborts or corrupts the process. An artifact is code,
 * like a shared library, and nothing here makes a malicious one safe; the check makes a damaged
 * or hand-edited object a clean error (GR_ERR_INVALID) instead of a crash.
 *
 * Accepted: what compile mode (llvm_host.c) emits for x86-64 with PIC and the default code
 * model: a little-endian ELF64 relocatable object for EM_X86_64 whose header, section table,
 * section contents, string tables, symbol table and RELA tables lie within the buffer; every
 * section, symbol and relocation naming a real section / symbol; relocation types limited to
 * the ones that emitter produces (PC32, PLT32, 64 and the GOTPCREL family), each patching bytes
 * inside its section; no compressed, TLS or ifunc content. */
#ifndef GRAFT_BACKENDS_LLVM_ELF_CHECK_H
#define GRAFT_BACKENDS_LLVM_ELF_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

gr_status gr_elf_check(const uint8_t *obj, size_t len, gr_diag *diag);

#endif
