//===- ScanLowerI1Access.cpp - i1 memref loads/stores to LLVM -----------===//
//
// LLVM 22.1's MemRefToLLVM load/store lowerings assert that the integer
// element is at least 8 bits wide. Boolean buffers are common here
// (comparisons in scan bodies, deallocation helpers), so i1 loads and stores
// are lowered before convert-to-llvm runs, with the upstream address helper.
//
//===----------------------------------------------------------------------===//

#include "Scan/AccessLowering.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERI1ACCESS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

bool accessesI1(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getType().isInteger(1);
  auto store = dyn_cast<memref::StoreOp>(op);
  return store && store.getValueToStore().getType().isInteger(1);
}

struct ScanLowerI1AccessPass
    : scan::impl::ScanLowerI1AccessBase<ScanLowerI1AccessPass> {
  void runOnOperation() override {
    // No flags: the address is computed as the upstream lowering did before
    // it added `inbounds|nuw` (see scan-lower-signed-stride-access).
    if (failed(scan::lowerMemRefAccesses(getOperation(), accessesI1,
                                         LLVM::GEPNoWrapFlags::none)))
      signalPassFailure();
  }
};

} // namespace
