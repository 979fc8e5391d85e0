//===- ScanOrderLinalgLoops.cpp - vectorizable loop order for linalg ------===//
//
// Scan bodies are small linalg programs run once per step; what matters is
// that the loops they become have a unit-stride innermost loop that LLVM can
// vectorize. The loop order is chosen from the indexing maps alone.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANORDERLINALGLOOPS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

bool isContraction(Operation *op) {
  return isa<linalg::MatmulOp, linalg::MatvecOp, linalg::VecmatOp,
             linalg::DotOp, linalg::BatchMatmulOp>(op);
}

/// The iteration dimension to run innermost: the last (contiguous) dimension
/// of the most operands; ties go to parallel dimensions, then to later ones.
unsigned chooseInnermost(linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  SmallVector<int> score(rank, 0);
  for (AffineMap map : op.getIndexingMapsArray()) {
    if (map.getNumResults() == 0)
      continue;
    if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
      ++score[dim.getPosition()];
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned best = rank - 1;
  auto key = [&](unsigned d) {
    return std::make_tuple(score[d],
                           iterators[d] == utils::IteratorType::parallel, d);
  };
  for (unsigned d = 0; d < rank; ++d)
    if (key(d) > key(best))
      best = d;
  return best;
}

/// Adds `flags` to the body's float ops: `contract` lets LLVM fuse the
/// multiply-add of a contraction into an FMA, `reassoc` lets it vectorize a
/// reduction.
bool addFastMathFlags(linalg::GenericOp op, arith::FastMathFlags extra) {
  bool changed = false;
  op.getBody()->walk([&](arith::ArithFastMathInterface fm) {
    auto flags = fm.getFastMathFlagsAttr().getValue();
    auto wanted = flags | extra;
    if (wanted == flags)
      return;
    fm->setAttr(fm.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(op.getContext(), wanted));
    changed = true;
  });
  return changed;
}

struct ScanOrderLinalgLoopsPass
    : scan::impl::ScanOrderLinalgLoopsBase<ScanOrderLinalgLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> contractions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isContraction(op))
        contractions.push_back(op);
    });
    for (linalg::LinalgOp op : contractions) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }

    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      unsigned rank = op.getNumLoops();
      if (rank == 0 || !op.hasPureBufferSemantics() && !op.hasPureTensorSemantics())
        continue;
      unsigned inner = chooseInnermost(op);
      bool reduction =
          op.getIteratorTypesArray()[inner] == utils::IteratorType::reduction;
      if (inner != rank - 1) {
        SmallVector<unsigned> order;
        for (unsigned d = 0; d < rank; ++d)
          if (d != inner)
            order.push_back(d);
        order.push_back(inner);
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> interchanged =
            linalg::interchangeGenericOp(rewriter, op, order);
        if (failed(interchanged))
          continue;
        op = *interchanged;
        ++numInterchanged;
      }
      bool hasReduction = op.getNumReductionLoops() > 0;
      if (hasReduction)
        addFastMathFlags(op, arith::FastMathFlags::contract);
      if (reduction && addFastMathFlags(op, arith::FastMathFlags::reassoc))
        ++numReassociated;
    }
  }
};

} // namespace
