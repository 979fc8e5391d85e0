//===- ScanMergeInouts.cpp - merge identical scan inputs and outputs ------===//
//
// Theano's `scan_merge_inouts`: after scan-merge, or in hand-written scans,
// the same outer value often comes in twice (one sequence per merged scan)
// and the same row is often stacked twice. Identical inputs share one block
// argument; outputs that yield the same value from the same initial rows
// share one result.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANMERGEINOUTS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// Drops every item of `items` that `same` finds equal to an earlier kept
/// item, after `merge(kept, dropped)` redirected the dropped one's uses.
/// (`merge` may update the items in place, e.g. their yields: the kept ones
/// are copied out only at the end.)
template <typename Item, typename Same, typename Merge>
unsigned dedupe(SmallVectorImpl<Item> &items, Same same, Merge merge) {
  SmallVector<unsigned> kept;
  SmallVector<bool> dropped(items.size(), false);
  for (unsigned i = 0; i < items.size(); ++i) {
    auto *twin = llvm::find_if(kept, [&](unsigned k) { return same(items[k], items[i]); });
    if (twin == kept.end()) {
      kept.push_back(i);
      continue;
    }
    merge(items[*twin], items[i]);
    dropped[i] = true;
  }
  SmallVector<Item> survivors;
  for (unsigned k : kept)
    survivors.push_back(items[k]);
  items.assign(survivors.begin(), survivors.end());
  return items.size() < dropped.size() ? dropped.size() - items.size() : 0;
}

struct ScanMergeInoutsPass
    : scan::impl::ScanMergeInoutsBase<ScanMergeInoutsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans)
      mergeInouts(op, rewriter);
  }

  void mergeInouts(ScanOp op, IRRewriter &rewriter) {
    ScanArgs args(op);
    // (Through args: a dropped item's block argument may be yielded.)
    auto redirect = [&](ArrayRef<Value> from, ArrayRef<Value> to) {
      for (auto [f, t] : llvm::zip(from, to))
        args.replaceAllUsesWith(rewriter, f, t);
    };

    // Inputs: the same outer value read at the same taps.
    unsigned inputs = dedupe(
        args.sequences,
        [](auto &a, auto &b) { return a.outer == b.outer && a.taps == b.taps; },
        [&](auto &keep, auto &drop) { redirect(drop.inner, keep.inner); });
    inputs += dedupe(
        args.nonSequences,
        [](auto &a, auto &b) { return a.outer == b.outer; },
        [&](auto &keep, auto &drop) {
          args.replaceAllUsesWith(rewriter, drop.inner, keep.inner);
        });

    // With shared inputs, the body may compute the same rows twice. CSE
    // replaces (and erases) yielded values: read the yields again from the
    // terminator (only inputs were dropped so far, the outputs still match
    // the op's).
    if (inputs > 0) {
      DominanceInfo dominance;
      eliminateCommonSubExpressions(rewriter, dominance, op);
      auto yields = op.getBodyBlock().getTerminator()->getOperands().begin();
      for (ScanArgs::MitMot &m : args.mitmots)
        for (Value &y : m.yields)
          y = *yields++;
      for (auto *states : {&args.mitsots, &args.sitsots})
        for (ScanArgs::State &s : *states)
          s.yield = *yields++;
      for (ScanArgs::NitSot &n : args.nitsots)
        n.yield = *yields++;
      if (args.untilCondition)
        args.untilCondition = *yields++;
    }

    // Outputs yielding the same value: nitsots; states that also start from
    // the same rows hold the same values at every step.
    unsigned outputs = dedupe(
        args.nitsots,
        [](auto &a, auto &b) {
          return a.yield == b.yield && a.resultType == b.resultType &&
                 a.keep == b.keep;
        },
        [&](auto &keep, auto &drop) {
          rewriter.replaceAllUsesWith(drop.result, keep.result);
        });
    for (SmallVectorImpl<ScanArgs::State> *states :
         {&args.mitsots, &args.sitsots})
      outputs += dedupe(
          *states,
          [](auto &a, auto &b) {
            return a.outer == b.outer && a.taps == b.taps &&
                   a.yield == b.yield && a.resultType == b.resultType &&
                   a.keep == b.keep;
          },
          [&](auto &keep, auto &drop) {
            redirect(drop.inner, keep.inner);
            rewriter.replaceAllUsesWith(drop.result, keep.result);
          });

    if (inputs + outputs == 0)
      return;
    numMergedInputs += inputs;
    numMergedOutputs += outputs;
    args.rebuild(rewriter);
  }
};

} // namespace
