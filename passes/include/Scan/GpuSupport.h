//===- GpuSupport.h - What the scan GPU passes share -----------*- C++ -*-===//
//
// The GPU lowering (scan-to-nvvm) runs four passes on bufferized functions:
// scan-gpu-device-memory moves every buffer to device memory,
// scan-gpu-form-kernels wraps the work that touches it in gpu.launch ops,
// scan-gpu-map-kernels maps that work onto blocks and threads, and
// scan-gpu-async puts the host's GPU calls on one stream. This header holds
// the facts they agree on.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_GPUSUPPORT_H
#define SCAN_GPUSUPPORT_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir {
namespace scan {

/// How the work inside a gpu.launch made by scan-gpu-form-kernels is mapped
/// onto threads (the discardable attribute `scan.kernel` of the launch):
///   * `serial`: one thread runs the ops as they are;
///   * `grid`: the body is one `scf.parallel`; each of its iterations is one
///     thread of a 1-D grid of blocks;
///   * `block`: one block runs a time loop; the `scf.parallel` loops inside
///     are shared by its threads, with `gpu.barrier` between them, and the
///     other writes are made by thread 0.
enum class KernelKind { Serial, Grid, Block };

inline constexpr llvm::StringLiteral kKernelKindAttr = "scan.kernel";

llvm::StringRef stringifyKernelKind(KernelKind kind);
std::optional<KernelKind> getKernelKind(gpu::LaunchOp launch);
void setKernelKind(gpu::LaunchOp launch, KernelKind kind);

/// Host functions that device code may call, all of them error reporters
/// `(iN...) -> ()` whose first call wins. A call inside a kernel is recorded
/// in a device word and made by the host after the kernels ran
/// (scan-gpu-form-kernels). This is the one place that names them: point it
/// at whatever the CPU lowering calls to report a failed run-time check.
llvm::ArrayRef<llvm::StringLiteral> deviceReportedCallees();

/// Most arguments of a device-reported call.
inline constexpr unsigned kMaxReportedArguments = 4;

/// A call to one of deviceReportedCallees() with at most
/// kMaxReportedArguments integer/index operands and no results.
bool isDeviceReportedCall(Operation *op);

/// The values whose memory `memref` may view: allocation results, function
/// arguments, globals, or values the tracing cannot see through. Traces view
/// ops (subview, cast, reshape, extract_strided_metadata...) and the results
/// and iteration arguments of scf.if / scf.for / scf.while.
void collectMemoryRoots(Value memref, llvm::SmallVectorImpl<Value> &roots);

/// True when every root of `memref` is the result of a gpu.alloc.
bool isDeviceMemory(Value memref);

/// True when `op` itself (not its regions) reads or writes device memory.
bool accessesDeviceMemory(Operation *op);

/// The (Read/Write) memory effects of `op` and everything nested in it:
/// `std::nullopt` when some op's effects are unknown.
struct ReadWrite {
  bool reads = false;
  bool writes = false; // includes allocation and freeing
};
std::optional<ReadWrite> getReadWrite(Operation *op);

} // namespace scan
} // namespace mlir

#endif // SCAN_GPUSUPPORT_H
