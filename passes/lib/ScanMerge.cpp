//===- ScanMerge.cpp - fuse independent scans with the same trip count ----===//
//
// Theano's `ScanMerge`: two scans in the same block that run the same number
// of steps, in the same direction, without `until`, and where neither
// depends on the other, become one scan whose body runs both bodies. Their
// shared inputs can then be merged by scan-merge-inouts.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANMERGE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

bool sameSteps(ScanOp a, ScanOp b) {
  if (a.getNSteps() == b.getNSteps())
    return true;
  std::optional<int64_t> sa = a.getStaticNumSteps(), sb = b.getStaticNumSteps();
  return sa && sb && *sa == *sb;
}

/// The ops strictly between `first` and `second` (same block) that use the
/// results of `first`, directly or through each other.
SetVector<Operation *> dependentsBetween(ScanOp first, ScanOp second) {
  SetVector<Operation *> dependents;
  DenseSet<Value> tainted(first->getResults().begin(),
                          first->getResults().end());
  for (Operation *op = first->getNextNode(); op != second.getOperation();
       op = op->getNextNode()) {
    bool uses = false;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        uses |= tainted.contains(operand);
    });
    if (!uses)
      continue;
    dependents.insert(op);
    tainted.insert(op->getResults().begin(), op->getResults().end());
  }
  return dependents;
}

/// Whether `second` can be merged into `first` at `second`'s position.
bool canMerge(ScanOp first, ScanOp second,
              SetVector<Operation *> &toMoveAfter) {
  if (first.getUntil() || second.getUntil() ||
      first.getGoBackwards() != second.getGoBackwards() ||
      !sameSteps(first, second) || !isMemoryEffectFree(first) ||
      !isMemoryEffectFree(second))
    return false;
  toMoveAfter = dependentsBetween(first, second);
  // `second` must not read anything computed from `first` (that would be a
  // cycle in the merged scan), and the ops that follow `first` move after
  // the merged scan, so they must be free to reorder.
  for (Value operand : second->getOperands()) {
    if (operand.getDefiningOp() == first.getOperation())
      return false;
    if (Operation *def = operand.getDefiningOp(); def && toMoveAfter.contains(def))
      return false;
  }
  return llvm::all_of(toMoveAfter,
                      [](Operation *op) { return isMemoryEffectFree(op); });
}

/// `second`'s items appended to `first`'s, with `second`'s body ops moved
/// in front of `first`'s yield. The merged scan replaces both.
ScanOp merge(ScanOp first, ScanOp second, RewriterBase &rewriter) {
  ScanArgs merged(first), other(second);
  llvm::append_range(merged.sequences, other.sequences);
  llvm::append_range(merged.mitmots, other.mitmots);
  llvm::append_range(merged.mitsots, other.mitsots);
  llvm::append_range(merged.sitsots, other.sitsots);
  llvm::append_range(merged.nitsots, other.nitsots);
  llvm::append_range(merged.nonSequences, other.nonSequences);

  Block &firstBody = first.getBodyBlock(), &secondBody = second.getBodyBlock();
  firstBody.getOperations().splice(firstBody.getTerminator()->getIterator(),
                                   secondBody.getOperations(),
                                   secondBody.begin(),
                                   secondBody.getTerminator()->getIterator());
  ScanOp result = merged.rebuild(rewriter, second);
  rewriter.eraseOp(second);
  return result;
}

struct ScanMergePass : scan::impl::ScanMergeBase<ScanMergePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      while (mergeOnePair(block, rewriter))
        ++numMerged;
  }

  /// Merges the first mergeable pair of scans of `block`.
  bool mergeOnePair(Block *block, IRRewriter &rewriter) {
    SmallVector<ScanOp> scans(block->getOps<ScanOp>());
    for (unsigned i = 0; i < scans.size(); ++i)
      for (unsigned j = i + 1; j < scans.size(); ++j) {
        SetVector<Operation *> toMoveAfter;
        if (!canMerge(scans[i], scans[j], toMoveAfter))
          continue;
        ScanOp merged = merge(scans[i], scans[j], rewriter);
        Operation *after = merged;
        for (Operation *op : toMoveAfter) {
          op->moveAfter(after);
          after = op;
        }
        return true;
      }
    return false;
  }
};

} // namespace
