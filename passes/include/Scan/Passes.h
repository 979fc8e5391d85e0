//===- Passes.h - Scan dialect passes ---------------------------*- C++ -*-===//

#ifndef SCAN_PASSES_H
#define SCAN_PASSES_H

#include "Scan/ScanOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace scan {

#define GEN_PASS_DECL
#include "Scan/Passes.h.inc"

/// Registers the scan passes and the scan pass pipelines (scan-optimize,
/// scan-to-llvm, ...): what scan-opt and `import mlir_scan` call.
void registerScanPassesAndPipelines();

/// Rewrites `arith.xori %x, %x` / `arith.cmpi <p>, %x, %x` on tensors with
/// dynamic sizes into a `linalg.fill` of their value: the LLVM 22.1 folders
/// of those ops abort the process on such types, and every folding pass
/// (canonicalize, conversions) would reach them.
void materializeSelfFolds(ModuleOp module);

/// Rewrites every `arith.xori` / `arith.cmpi` on tensors with dynamic sizes
/// into an elementwise `linalg.generic`, where folding is safe (operands can
/// become one value during a canonicalization, after which the upstream
/// folder aborts).
void genericizeFoldHazards(ModuleOp module);

/// `"<file>:<line>:<col>: <what>"` for the first file location of `op`
/// (`"<op name>: <what>"` without one): the message of a run-time check,
/// which the run-time library reports and Python turns into a ValueError
/// naming the line.
std::string locatedMessage(Operation *op, StringRef what);

/// Reports (a located error) the first op under `root` that uses a tensor
/// or memref type whose static sizes multiply to more than 2**63 - 1
/// elements: no buffer can have them, and the upstream memref code asserts
/// computing their strides (defined in ScanCheckLowerable.cpp; run by
/// scan-check-lowerable and before convert-scan-to-scf lowers anything).
LogicalResult checkStaticSizes(Operation *root);

/// Gives every destination-style op under `root` its own copy of a
/// `tensor.empty` (or `linalg.fill` of one) destination that several ops
/// share (defined in ScanFreshElementwiseInits.cpp).
void privatizeDestinations(Operation *root, RewriterBase &rewriter);

/// The names scan-parallelize-linalg and scan-lower-parallel-calls agree on:
/// `@__mlir_scan_chunk<N>` runs an op's iterations [lo, hi) of one dimension,
/// a call of the declaration `@__mlir_scan_run_chunks<N>` asks for those
/// iterations on every core, and `__mlir_scan_parallel_for` is the run-time
/// library's entry point that runs them (python/runtime/ScanParallel.cpp),
/// in ranges that start at multiples of 16 iterations. A call of
/// `@__mlir_scan_run_parts<N>` asks for parts [lo, hi) of an op split along
/// its reduction, each a whole unit of work, which
/// `__mlir_scan_parallel_parts` runs in ranges of whole parts.
inline constexpr llvm::StringLiteral kChunkFuncPrefix = "__mlir_scan_chunk";
inline constexpr llvm::StringLiteral kParallelStubPrefix =
    "__mlir_scan_run_chunks";
inline constexpr llvm::StringLiteral kParallelForFunc =
    "__mlir_scan_parallel_for";
inline constexpr llvm::StringLiteral kPartsStubPrefix = "__mlir_scan_run_parts";
inline constexpr llvm::StringLiteral kParallelPartsFunc =
    "__mlir_scan_parallel_parts";

/// The LLVM function attribute (a `passthrough` string) that
/// scan-parallelize-linalg gives a chunk function whose static work reaches
/// its `hot-work`: the JIT's quick tier compiles such a function at the
/// optimized level rather than at -O0 (python/capi/ScanJIT.cpp), since at
/// -O0 its loops would be most of a first call.
inline constexpr llvm::StringLiteral kHotChunkAttr = "mlir-scan-hot";

#define GEN_PASS_REGISTRATION
#include "Scan/Passes.h.inc"

} // namespace scan
} // namespace mlir

#endif // SCAN_PASSES_H
