//===- ScanPushOutNonSeq.cpp - hoist loop-invariant work out of scans -----===//
//
// Theano's `PushOutNonSeqScan`: body work that depends only on
// non-sequences (and constants) is the same in every step. It is computed
// once before the scan and passed in as a new non-sequence.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANPUSHOUTNONSEQ
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// Whether `use` is the destination (`outs`) of a destination-style op: such
/// a value is overwritten in every step and must stay a per-step value.
bool isDestinationUse(OpOperand &use) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
  return dps && dps.isDpsInit(&use);
}

struct ScanPushOutNonSeqPass
    : scan::impl::ScanPushOutNonSeqBase<ScanPushOutNonSeqPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans)
      pushOut(op, rewriter);
  }

  void pushOut(ScanOp op, IRRewriter &rewriter) {
    Block &body = op.getBodyBlock();
    ScanArgs args(op);

    // Values that are the same in every step, and those that depend on a
    // non-sequence (the others are constants, cheaper left in place).
    DenseSet<Value> invariant, dependsOnNonSeq;
    for (ScanArgs::NonSequence &n : args.nonSequences) {
      invariant.insert(n.inner);
      dependsOnNonSeq.insert(n.inner);
    }
    SmallVector<Operation *> invariantOps;
    for (Operation &bodyOp : body.without_terminator()) {
      // (A pure op without results computes nothing: canonicalize's job.)
      if (!isPure(&bodyOp) || bodyOp.getNumResults() == 0)
        continue;
      llvm::SetVector<Value> used(bodyOp.operand_begin(), bodyOp.operand_end());
      getUsedValuesDefinedAbove(bodyOp.getRegions(), used);
      if (!llvm::all_of(used, [&](Value v) { return invariant.contains(v); }))
        continue;
      invariantOps.push_back(&bodyOp);
      bool fromNonSeq = llvm::any_of(
          used, [&](Value v) { return dependsOnNonSeq.contains(v); });
      for (Value result : bodyOp.getResults()) {
        invariant.insert(result);
        if (fromNonSeq)
          dependsOnNonSeq.insert(result);
      }
    }

    // Hoist the ops that depend on a non-sequence, unless a result is a
    // destination written in every step.
    SetVector<Operation *> hoisted;
    for (Operation *inv : invariantOps) {
      if (!dependsOnNonSeq.contains(inv->getResult(0)))
        continue;
      bool destination = llvm::any_of(inv->getResults(), [](Value r) {
        return llvm::any_of(r.getUses(), isDestinationUse);
      });
      if (!destination)
        hoisted.insert(inv);
    }
    if (hoisted.empty())
      return;

    // Clone the hoisted ops and the invariant ops they need, in order,
    // before the scan.
    SetVector<Operation *> needed;
    SmallVector<Operation *> worklist(hoisted.begin(), hoisted.end());
    while (!worklist.empty()) {
      Operation *next = worklist.pop_back_val();
      if (!needed.insert(next))
        continue;
      llvm::SetVector<Value> used(next->operand_begin(), next->operand_end());
      getUsedValuesDefinedAbove(next->getRegions(), used);
      for (Value v : used)
        if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &body)
          worklist.push_back(def);
    }
    IRMapping mapping;
    for (ScanArgs::NonSequence &n : args.nonSequences)
      mapping.map(n.inner, n.outer);
    rewriter.setInsertionPoint(op);
    for (Operation &bodyOp : body.without_terminator())
      if (needed.contains(&bodyOp))
        rewriter.clone(bodyOp, mapping);

    // Hoisted results still used in the body become new non-sequences.
    // (Only live users count: rebuild erases dead ops, and with them a
    // hoisted op only they used, which must then not be replaced.)
    DenseSet<Operation *> live = liveBodyOps(op);
    SmallVector<std::pair<Value, unsigned>> replaced;
    for (Operation *h : hoisted)
      for (Value result : h->getResults())
        if (hasLiveUserOutside(result, body, live, [&](Operation *u) {
              return hoisted.contains(u);
            })) {
          replaced.push_back({result, (unsigned)args.nonSequences.size()});
          args.nonSequences.push_back({mapping.lookup(result), Value()});
        }
    ScanOp newOp = args.rebuild(rewriter);
    for (auto [oldValue, index] : replaced)
      rewriter.replaceAllUsesWith(oldValue, args.nonSequences[index].inner);

    // The hoisted ops (and the constants they alone used) are dead now.
    SmallVector<Operation *> bodyOps;
    for (Operation &bodyOp : newOp.getBodyBlock().without_terminator())
      bodyOps.push_back(&bodyOp);
    for (Operation *bodyOp : llvm::reverse(bodyOps))
      if (needed.contains(bodyOp) && bodyOp->use_empty())
        rewriter.eraseOp(bodyOp);
    numHoisted += hoisted.size();
  }
};

} // namespace
