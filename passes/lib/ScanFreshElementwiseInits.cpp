//===- ScanFreshElementwiseInits.cpp - tensor.empty destinations ----------===//
//
// An elementwise linalg op that reuses one of its inputs as destination
// forces one-shot-bufferize to copy that input (a read-only sequence row, a
// state row) before writing it. A fresh `tensor.empty` destination can
// instead become the scan's output row through eliminate-empty-tensors.
// Conversely, an elementwise op with a fresh destination that reads a
// temporary only it uses (`tanh(h·W + u)`: the matvec's result) writes into
// that temporary instead, so that the temporary's own producer can write the
// output row (no buffer per step for the matvec).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANFRESHELEMENTWISEINITS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `v` is, through `tensor.cast`s (canonicalization casts a dynamic
/// row to a step's static sizes), a buffer row the lowering hands the step
/// to update in place: a state row its step reads only to compute the new
/// one, a MITMOT row its reader overwrites (convert-scan-to-scf,
/// ScanLowering::rowUpdatedInPlace), as a writable `to_tensor`.
bool isRowUpdatedInPlace(Value v) {
  while (auto cast = v.getDefiningOp<tensor::CastOp>())
    v = cast.getSource();
  auto toTensor = v.getDefiningOp<bufferization::ToTensorOp>();
  return toTensor && toTensor.getWritable();
}

/// A destination worth writing in place: an intermediate that only this op
/// uses, computed by a destination-style op (its buffer is a temporary or,
/// after eliminate-empty-tensors, the output row itself), an empty tensor,
/// or a row updated in place.
bool reusable(Value init, Operation *user) {
  Operation *def = init.getDefiningOp();
  if (!def)
    return false;
  if (isa<tensor::EmptyOp>(def) || isRowUpdatedInPlace(init))
    return true;
  return isa<DestinationStyleOpInterface>(def) &&
         llvm::all_of(init.getUsers(), [&](Operation *u) { return u == user; });
}

/// Gives every destination-style op its own copy of a shared
/// `tensor.empty` (or `linalg.fill` of one) destination. Shared, one of them
/// would be turned into an output row by eliminate-empty-tensors and the
/// others would write the same row.
} // namespace

void mlir::scan::privatizeDestinations(Operation *root,
                                       RewriterBase &rewriter) {
  SmallVector<DestinationStyleOpInterface> users;
  root->walk([&](DestinationStyleOpInterface dps) {
    if (dps.hasPureTensorSemantics())
      users.push_back(dps);
  });
  for (DestinationStyleOpInterface dps : users)
    for (OpOperand &init : dps.getDpsInitsMutable()) {
      Value shared = init.get();
      unsigned destinationUsers = llvm::count_if(shared.getUses(), [](OpOperand &use) {
        auto user = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
        return user && user.isDpsInit(&use);
      });
      if (destinationUsers < 2)
        continue;
      auto fill = shared.getDefiningOp<linalg::FillOp>();
      auto empty = fill ? fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()
                        : shared.getDefiningOp<tensor::EmptyOp>();
      if (!empty)
        continue;
      rewriter.setInsertionPoint(dps);
      IRMapping mapping;
      Value fresh = rewriter.clone(*empty, mapping)->getResult(0);
      if (fill)
        fresh = rewriter.clone(*fill, mapping)->getResult(0);
      rewriter.modifyOpInPlace(dps, [&] { init.set(fresh); });
    }
}

namespace {

struct ScanFreshElementwiseInitsPass
    : scan::impl::ScanFreshElementwiseInitsBase<ScanFreshElementwiseInitsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    scan::privatizeDestinations(getOperation(), rewriter);
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
    getOperation().walk([&](linalg::GenericOp op) { reuseTemporary(op); });
  }

  /// Makes a temporary input of `op` its destination (see the file comment)
  /// when `op` is elementwise, does not read its destination, which is a
  /// `tensor.empty`, and the input has the destination's type and indexing
  /// map and is computed by a destination-style op for `op` alone.
  void reuseTemporary(linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumParallelLoops() != op.getNumLoops())
      return;
    OpOperand *init = op.getDpsInitOperand(0);
    if (op.payloadUsesValueFromOperand(init) ||
        !init->get().getDefiningOp<tensor::EmptyOp>())
      return;
    // Not when `op` also reads a row updated in place: that row is where
    // its result goes (the step's new state), and the temporary's producer
    // would write it there before `op` reads the old state.
    if (llvm::any_of(op.getDpsInputOperands(), [](OpOperand *input) {
          return isRowUpdatedInPlace(input->get());
        }))
      return;
    AffineMap initMap = op.getMatchingIndexingMap(init);
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value v = input->get();
      if (v.getType() != init->get().getType() ||
          op.getMatchingIndexingMap(input) != initMap || !reusable(v, op) ||
          isa<tensor::EmptyOp>(v.getDefiningOp()))
        continue;
      IRRewriter rewriter(op);
      rewriter.modifyOpInPlace(op, [&] { init->set(v); });
      ++numReused;
      return;
    }
  }
};

} // namespace
