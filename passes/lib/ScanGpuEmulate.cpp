//===- ScanGpuEmulate.cpp - run the formed kernels on the CPU -------------===//
//
// No GPU is needed to check what the GPU lowering computes: after
// scan-gpu-map-kernels, this pass turns the device program back into host
// code that the CPU pipeline (scan-buffers-to-llvm) compiles and the JIT
// runs. Device memory becomes host memory, copies become memref.copy, and a
// kernel becomes loops over its blocks and threads:
//
//   * serial and grid kernels: every thread, one after the other (they have
//     no barriers, so any order is a valid schedule);
//   * block kernels: one thread of one block (`blockDim.x = 1`). Their code
//     is uniform between barriers (every thread computes the same values,
//     thread 0 makes the serial writes, and the parallel loops stride by
//     `blockDim.x`), so one thread running every iteration in order is the
//     lockstep schedule of the whole block.
//
//===----------------------------------------------------------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUEMULATE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// `type` in the default memory space.
MemRefType hostType(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(),
                         type.getLayout());
}

LogicalResult emulateLaunch(gpu::LaunchOp launch, IRRewriter &rewriter) {
  std::optional<KernelKind> kind = getKernelKind(launch);
  if (!kind)
    return launch.emitError()
           << "scan-gpu-emulate: only the kernels of scan-gpu-form-kernels "
              "can be emulated";
  if (!launch.getAsyncDependencies().empty() || launch.getAsyncToken())
    return launch.emitError() << "scan-gpu-emulate: run before scan-gpu-async";
  Location loc = launch.getLoc();
  rewriter.setInsertionPoint(launch);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  Value threads = *kind == KernelKind::Block ? one : block.x;
  for (Value size : {grid.y, grid.z, block.y, block.z})
    if (getConstantIntValue(size) != 1)
      return launch.emitError() << "scan-gpu-emulate: 1-D launches only";

  // Workgroup memory: one buffer per launch.
  Block &body = launch.getBody().front();
  SmallVector<Value> shared;
  for (BlockArgument attribution : launch.getWorkgroupAttributions())
    shared.push_back(memref::AllocaOp::create(
        rewriter, loc,
        hostType(cast<MemRefType>(attribution.getType()))));

  auto blocks = scf::ForOp::create(rewriter, loc, zero, grid.x, one);
  rewriter.setInsertionPoint(blocks.getBody()->getTerminator());
  auto lanes = scf::ForOp::create(rewriter, loc, zero, threads, one);
  rewriter.setInsertionPoint(lanes.getBody()->getTerminator());

  // The launch's block arguments: ids, then sizes, then attributions.
  SmallVector<Value> values;
  auto dim3 = [&](Value x) {
    values.append({x, zero, zero});
  };
  dim3(blocks.getInductionVar());
  dim3(lanes.getInductionVar());
  values.append({grid.x, one, one});
  values.append({threads, one, one});
  // Cluster ids and sizes are not used by the scan kernels.
  while (values.size() < body.getNumArguments() - shared.size())
    values.push_back(zero);
  values.append(shared.begin(), shared.end());
  Operation *terminator = body.getTerminator();
  rewriter.eraseOp(terminator);
  rewriter.inlineBlockBefore(&body, lanes.getBody()->getTerminator(), values);
  rewriter.eraseOp(launch);
  return success();
}

struct ScanGpuEmulatePass
    : scan::impl::ScanGpuEmulateBase<ScanGpuEmulatePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulateLaunch(launch, rewriter)))
        return signalPassFailure();
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp, gpu::MemsetOp,
              gpu::BarrierOp, gpu::WaitOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        if (alloc.getAsyncToken()) {
          alloc.emitError() << "scan-gpu-emulate: run before scan-gpu-async";
          return signalPassFailure();
        }
        rewriter.replaceOpWithNewOp<memref::AllocOp>(
            op, alloc.getType(), alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), rewriter.getI64IntegerAttr(64));
      } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
        memref::DeallocOp::create(rewriter, loc, dealloc.getMemref());
        rewriter.eraseOp(op);
      } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
        memref::CopyOp::create(rewriter, loc, copy.getSrc(), copy.getDst());
        rewriter.eraseOp(op);
      } else if (auto memset = dyn_cast<gpu::MemsetOp>(op)) {
        linalg::FillOp::create(rewriter, loc, memset.getValue(),
                               memset.getDst());
        rewriter.eraseOp(op);
      } else {
        rewriter.eraseOp(op); // barriers: one thread; waits: nothing runs
      }
    }
  }
};

} // namespace
