//===- ScanPushOutOutput.cpp - compute output-only work after the scan ----===//
//
// Theano's `PushOutScanOutput` / `PushOutDot1`: a nitsot row computed only
// from rows the scan stacks anyway (the states' and other outputs' rows) and
// from non-sequences does not need the loop. The scan stops producing that
// nitsot and the work runs once after the loop, on all rows (`W_out·h_t` for
// every t becomes one matmul-shaped op on the stacked `h`).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RowBatching.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANPUSHOUTOUTPUT
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

struct ScanPushOutOutputPass
    : scan::impl::ScanPushOutOutputBase<ScanPushOutOutputPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans)
      while (std::optional<ScanOp> next = pushOutOne(op, rewriter))
        op = *next;
  }

  /// Pushes out the work of one nitsot; the rebuilt scan if it did.
  std::optional<ScanOp> pushOutOne(ScanOp op, IRRewriter &rewriter) {
    ScanArgs args(op);
    Block &body = op.getBodyBlock();
    for (unsigned i = 0; i < args.nitsots.size(); ++i) {
      ScanArgs::NitSot &target = args.nitsots[i];
      Operation *def = target.yield.getDefiningOp();
      if (target.keep != 0 || !def || def->getBlock() != &body)
        continue;

      // Rows stacked by the other outputs (all rows kept), by yield value;
      // `firstStacked` (in group order, so the IR is deterministic) gives
      // the number of rows.
      DenseMap<Value, Value> stacked;
      Value firstStacked;
      auto addStacked = [&](Value yield, Value result) {
        stacked.try_emplace(yield, result);
        if (!firstStacked)
          firstStacked = result;
      };
      for (auto *states : {&args.mitsots, &args.sitsots})
        for (ScanArgs::State &s : *states)
          if (s.keep == 0)
            addStacked(s.yield, s.result);
      for (ScanArgs::NitSot &n : args.nitsots)
        if (&n != &target && n.keep == 0)
          addStacked(n.yield, n.result);
      if (stacked.contains(target.yield))
        continue; // a duplicate output: scan-merge-inouts' job

      // The ops the nitsot row needs, in body order, back to stacked rows,
      // non-sequences and constants.
      DenseSet<Value> invariant;
      for (ScanArgs::NonSequence &n : args.nonSequences)
        invariant.insert(n.inner);
      SetVector<Operation *> slice;
      SmallVector<Operation *> worklist{def};
      bool pushable = true;
      while (!worklist.empty() && pushable) {
        Operation *next = worklist.pop_back_val();
        if (slice.contains(next))
          continue;
        if (!RowBatcher::canBatch(next) || !isPure(next)) {
          pushable = false;
          break;
        }
        slice.insert(next);
        llvm::SetVector<Value> used(next->operand_begin(), next->operand_end());
        getUsedValuesDefinedAbove(next->getRegions(), used);
        auto dps = dyn_cast<DestinationStyleOpInterface>(next);
        for (Value v : used) {
          if (stacked.contains(v) || invariant.contains(v))
            continue;
          Operation *vDef = v.getDefiningOp();
          if (vDef && vDef->hasTrait<OpTrait::ConstantLike>())
            continue;
          bool destination =
              dps && llvm::is_contained(dps.getDpsInits(), v) && vDef &&
              isa<linalg::FillOp, tensor::EmptyOp>(vDef);
          if (destination)
            continue;
          if (!vDef || vDef->getBlock() != &body) {
            pushable = false; // a sequence or a state read: needs the loop
            break;
          }
          worklist.push_back(vDef);
        }
      }
      if (!pushable || stacked.empty())
        continue;

      // Batch the slice after the loop, on the stacked rows.
      SmallVector<Operation *> ordered;
      for (Operation &bodyOp : body.without_terminator())
        if (slice.contains(&bodyOp))
          ordered.push_back(&bodyOp);
      // Everything is created between the scan and `after`: if an op
      // cannot be batched after all, it is all erased and the IR unchanged.
      Operation *after = op->getNextNode();
      rewriter.setInsertionPointAfter(op);
      Location loc = op.getLoc();
      // Every output kept whole has the same rows (n_steps, or the steps
      // run with `until`); read them from one that stays.
      Value rows =
          tensor::DimOp::create(rewriter, loc, firstStacked, 0).getResult();
      RowBatcher batcher(rewriter, loc, rows);
      for (auto [yield, result] : stacked)
        batcher.mapBatched(yield, result);
      for (ScanArgs::NonSequence &n : args.nonSequences)
        batcher.mapInvariant(n.inner, n.outer);
      for (Operation &bodyOp : body.without_terminator())
        if (bodyOp.hasTrait<OpTrait::ConstantLike>())
          batcher.mapInvariant(bodyOp.getResult(0),
                               rewriter.clone(bodyOp)->getResult(0));
      bool batched = true;
      for (Operation *o : ordered)
        if (!(batched = succeeded(batcher.batch(o))))
          break;
      if (!batched) {
        while (after->getPrevNode() != op.getOperation())
          rewriter.eraseOp(after->getPrevNode());
        continue;
      }

      Value replacement = batcher.lookupBatched(target.yield);
      if (replacement.getType() != target.result.getType())
        replacement = tensor::CastOp::create(rewriter, loc,
                                             target.result.getType(), replacement);
      rewriter.replaceAllUsesWith(target.result, replacement);
      args.nitsots.erase(args.nitsots.begin() + i);
      ++numPushedOut;
      ScanOp newOp = args.rebuild(rewriter);
      return newOp;
    }
    return std::nullopt;
  }
};

} // namespace
