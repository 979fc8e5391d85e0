//===- ScanCheckLowerable.cpp - reject IR the LLVM 22 lowering aborts on --===//
//
// A few valid inputs make upstream lowering passes of LLVM 22.1 abort on an
// assertion instead of failing. The CPU pipeline runs this check first, so
// such a program gets a located error and the process survives.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCHECKLOWERABLE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// expand-strided-metadata asserts "There must be at most one dynamic size
/// per group" on a memref.expand_shape that expands into several dynamic
/// sizes within one reassociation group.
LogicalResult checkExpandShape(memref::ExpandShapeOp op) {
  MemRefType result = op.getResultType();
  for (auto [group, indices] : llvm::enumerate(op.getReassociationIndices())) {
    unsigned dynamic = llvm::count_if(
        indices, [&](int64_t d) { return result.isDynamicDim(d); });
    if (dynamic > 1)
      return op.emitOpError()
             << "expands reassociation group #" << group << " into "
             << dynamic
             << " dynamic sizes, which the LLVM 22 lowering cannot handle "
                "(expand-strided-metadata aborts); reshape with at most one "
                "dynamic size per group";
  }
  return success();
}

struct ScanCheckLowerablePass
    : scan::impl::ScanCheckLowerableBase<ScanCheckLowerablePass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](memref::ExpandShapeOp op) {
      return failed(checkExpandShape(op)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
