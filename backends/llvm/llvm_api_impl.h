/* LLVM-C, loaded when host code is first compiled or linked.
 *
 * libLLVM is ~45 MB of relocated code and data in every process that links it; most models
 * (every region offloaded) never compile or link host code. So graft does not link it: the
 * functions llvm_host.c calls are looked up once (dlopen + dlsym) into gr_llvm, and a process
 * that never needs host code never maps the library.
 *
 *     if ((st = gr_llvm_load(diag))) return st;
 *     LLVMContextRef c = gr_llvm.LLVMContextCreate();
 */
#ifndef GRAFT_BACKENDS_LLVM_LLVM_API_IMPL_H
#define GRAFT_BACKENDS_LLVM_LLVM_API_IMPL_H

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <stdbool.h>

#include "base/status.h"

/* Every LLVM-C function llvm_host.c calls (X(name)). */
#define GR_LLVM_FUNCTIONS(X) \
    X(LLVMAddAttributeAtIndex) X(LLVMAddFunction) X(LLVMAddIncoming) X(LLVMAppendBasicBlockInContext) \
    X(LLVMBuildAShr) X(LLVMBuildAdd) X(LLVMBuildAlloca) X(LLVMBuildAnd) X(LLVMBuildBitCast) X(LLVMBuildBr) \
    X(LLVMBuildCall2) X(LLVMBuildCondBr) X(LLVMBuildFAdd) X(LLVMBuildFCmp) X(LLVMBuildFDiv) X(LLVMBuildFMul) \
    X(LLVMBuildFNeg) X(LLVMBuildFPExt) X(LLVMBuildFPToSI) X(LLVMBuildFPTrunc) X(LLVMBuildFRem) X(LLVMBuildFSub) \
    X(LLVMBuildICmp) X(LLVMBuildInBoundsGEP2) X(LLVMBuildLoad2) X(LLVMBuildMul) X(LLVMBuildOr) X(LLVMBuildPhi) \
    X(LLVMBuildRetVoid) X(LLVMBuildSelect) X(LLVMBuildShl) X(LLVMBuildStore) X(LLVMBuildSub) X(LLVMBuildXor) \
    X(LLVMConstInt) X(LLVMConstReal) X(LLVMConsumeError) X(LLVMContextCreate) X(LLVMContextDispose) \
    X(LLVMCopyStringRepOfTargetData) X(LLVMCreateBuilderInContext) X(LLVMCreateEnumAttribute) \
    X(LLVMCreateMemoryBufferWithMemoryRangeCopy) X(LLVMCreatePassBuilderOptions) X(LLVMCreateTargetDataLayout) \
    X(LLVMCreateTargetMachine) X(LLVMDisposeBuilder) X(LLVMDisposeErrorMessage) X(LLVMDisposeMemoryBuffer) \
    X(LLVMDisposeMessage) X(LLVMDisposeModule) X(LLVMDisposePassBuilderOptions) X(LLVMDisposeTargetData) \
    X(LLVMDisposeTargetMachine) X(LLVMDoubleTypeInContext) X(LLVMFloatTypeInContext) X(LLVMFunctionType) \
    X(LLVMGetBufferSize) X(LLVMGetBufferStart) X(LLVMGetDefaultTargetTriple) X(LLVMGetEnumAttributeKindForName) \
    X(LLVMGetErrorMessage) X(LLVMGetFirstFunction) X(LLVMGetHostCPUFeatures) X(LLVMGetHostCPUName) \
    X(LLVMGetInsertBlock) X(LLVMGetMDKindIDInContext) X(LLVMGetNamedFunction) X(LLVMGetParam) \
    X(LLVMGetTargetFromTriple) X(LLVMInt1TypeInContext) X(LLVMInt32TypeInContext) X(LLVMInt64TypeInContext) \
    X(LLVMMDNodeInContext2) X(LLVMMDStringInContext2) X(LLVMMetadataAsValue) X(LLVMMetadataReplaceAllUsesWith) \
    X(LLVMModuleCreateWithNameInContext) X(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess) \
    X(LLVMOrcCreateLLJIT) X(LLVMOrcCreateLLJITBuilder) X(LLVMOrcDisposeLLJIT) X(LLVMOrcJITDylibAddGenerator) \
    X(LLVMOrcJITTargetMachineBuilderDetectHost) X(LLVMOrcLLJITAddObjectFile) \
    X(LLVMOrcLLJITBuilderSetJITTargetMachineBuilder) X(LLVMOrcLLJITGetGlobalPrefix) \
    X(LLVMOrcLLJITGetMainJITDylib) X(LLVMOrcLLJITLookup) X(LLVMPointerType) X(LLVMPositionBuilderAtEnd) \
    X(LLVMRunPasses) X(LLVMSetDataLayout) X(LLVMSetLinkage) X(LLVMSetMetadata) X(LLVMSetTarget) \
    X(LLVMTargetMachineEmitToMemoryBuffer) X(LLVMTemporaryMDNode) X(LLVMValueAsMetadata) \
    X(LLVMVoidTypeInContext)

#define GR_LLVM_MEMBER(f) __typeof__(f) *f;
typedef struct gr_llvm_api {
    GR_LLVM_FUNCTIONS(GR_LLVM_MEMBER)
} gr_llvm_api;
#undef GR_LLVM_MEMBER

/* Filled by gr_llvm_load; read-only after. */
extern gr_llvm_api gr_llvm;

/* Loads libLLVM and its native target once per process (thread-safe). GR_ERR_UNSUPPORTED with
 * the library's name and dlerror's reason when it cannot be loaded. */
gr_status gr_llvm_load(gr_diag *diag);

#endif
