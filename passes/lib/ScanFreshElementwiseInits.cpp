//===- ScanFreshElementwiseInits.cpp - tensor.empty destinations ----------===//
//
// An elementwise linalg op that reuses one of its inputs as destination
// forces one-shot-bufferize to copy that input (a read-only sequence row, a
// state row) before writing it. A fresh `tensor.empty` destination can
// instead become the scan's output row through eliminate-empty-tensors.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANFRESHELEMENTWISEINITS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// A destination worth writing in place: an intermediate that only this op
/// uses, computed by a destination-style op (its buffer is a temporary or,
/// after eliminate-empty-tensors, the output row itself), or an empty tensor.
bool reusable(Value init, Operation *user) {
  Operation *def = init.getDefiningOp();
  if (!def)
    return false;
  if (isa<tensor::EmptyOp>(def))
    return true;
  return isa<DestinationStyleOpInterface>(def) &&
         llvm::all_of(init.getUsers(), [&](Operation *u) { return u == user; });
}

struct ScanFreshElementwiseInitsPass
    : scan::impl::ScanFreshElementwiseInitsBase<ScanFreshElementwiseInitsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics() ||
          op.getNumParallelLoops() != op.getNumLoops())
        return;
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (op.payloadUsesValueFromOperand(&init) || reusable(init.get(), op))
          continue;
        rewriter.setInsertionPoint(op);
        auto type = cast<RankedTensorType>(init.get().getType());
        Value empty = tensor::EmptyOp::create(
            rewriter, op.getLoc(),
            tensor::getMixedSizes(rewriter, op.getLoc(), init.get()),
            type.getElementType());
        rewriter.modifyOpInPlace(op, [&] { init.set(empty); });
        ++numReplaced;
      }
    });
  }
};

} // namespace
