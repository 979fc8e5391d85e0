//===- ScanGpuKernelBounds.cpp - occupancy hints for outlined kernels -----===//
//
// A kernel that is launched as one block (a block kernel running a whole time
// loop, or a serial kernel) is the only block of its launch: ptxas may give
// it all the registers a thread can have. Without being told, ptxas for sm_90
// limits W5's (f64, H=128) block kernel to 32 registers and spills.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUKERNELBOUNDS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

struct ScanGpuKernelBoundsPass
    : scan::impl::ScanGpuKernelBoundsBase<ScanGpuKernelBoundsPass> {
  void runOnOperation() override {
    getOperation()->walk([](gpu::GPUFuncOp func) {
      DenseI32ArrayAttr grid = func.getKnownGridSizeAttr();
      if (!func.isKernel() || !grid ||
          llvm::any_of(grid.asArrayRef(), [](int32_t n) { return n != 1; }))
        return;
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    IntegerAttr::get(IntegerType::get(func.getContext(), 32),
                                     1));
    });
  }
};

} // namespace
