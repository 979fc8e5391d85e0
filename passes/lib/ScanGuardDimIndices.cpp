//===- ScanGuardDimIndices.cpp - dim ops with a negative constant index ---===//
//
// A `tensor.dim` whose index is a negative constant is valid IR, but once
// bufferized the `memref.dim` built from it asserts in upstream code that
// reads the index as an unsigned position. Such an op can only fail at run
// time: this pass makes it do so before bufferization sees it.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGUARDDIMINDICES
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `op` is a tensor.dim or memref.dim with a negative constant index.
bool hasNegativeIndex(Operation *op) {
  std::optional<int64_t> index;
  if (auto dim = dyn_cast<tensor::DimOp>(op))
    index = dim.getConstantIndex();
  else if (auto dim = dyn_cast<memref::DimOp>(op))
    index = dim.getConstantIndex();
  return index && *index < 0;
}

struct ScanGuardDimIndicesPass
    : scan::impl::ScanGuardDimIndicesBase<ScanGuardDimIndicesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> dims;
    getOperation().walk([&](Operation *op) {
      if (hasNegativeIndex(op))
        dims.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : dims) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      Value never = arith::ConstantIntOp::create(rewriter, loc, 0, 1);
      cf::AssertOp::create(rewriter, loc, never,
                           scan::locatedMessage(op, "index is out of bounds"));
      rewriter.replaceOpWithNewOp<arith::ConstantIndexOp>(op, 0);
      ++numGuarded;
    }
  }
};

} // namespace
