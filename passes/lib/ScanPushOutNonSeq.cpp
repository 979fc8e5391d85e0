//===- ScanPushOutNonSeq.cpp - hoist loop-invariant work out of scans -----===//
//
// Theano's `PushOutNonSeqScan`: body work that depends only on
// non-sequences (and constants) is the same in every step. It is computed
// once before the scan and passed in as a new non-sequence. The sizes of a
// row (a sequence tap, a state) are the same in every step too, and so is a
// run-time check (`scan.check`) of such values: it runs once, before the
// loop, when the loop runs at least one step.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
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

/// Replaces each `tensor.dim` of a row (a block argument of a sequence,
/// mitmot, mitsot or sitsot) by a new non-sequence: the dimension of the
/// stacked outer value (or of the sitsot init). Rows have the same sizes in
/// every step: a sequence's rows by construction, a state's because every
/// row stored must have the init's sizes (the lowering checks yields of
/// dynamic size, RowSizeMismatch). Returns the rebuilt scan, or `op`.
ScanOp hoistRowDims(ScanOp op, IRRewriter &rewriter, unsigned &count) {
  ScanArgs args(op);
  // Row block argument -> (outer value, offset of its dimensions).
  DenseMap<Value, std::pair<Value, int64_t>> rows;
  for (ScanArgs::Sequence &s : args.sequences)
    for (Value v : s.inner)
      rows[v] = {s.outer, 1};
  for (ScanArgs::MitMot &m : args.mitmots)
    for (Value v : m.inner)
      rows[v] = {m.outer, 1};
  for (ScanArgs::State &m : args.mitsots)
    for (Value v : m.inner)
      rows[v] = {m.outer, 1};
  for (ScanArgs::State &s : args.sitsots)
    for (Value v : s.inner)
      rows[v] = {s.outer, 0};
  SmallVector<std::pair<tensor::DimOp, unsigned>> dims;
  for (Operation &bodyOp : op.getBodyBlock().without_terminator()) {
    auto dim = dyn_cast<tensor::DimOp>(&bodyOp);
    auto it = dim ? rows.find(dim.getSource()) : rows.end();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (it == rows.end() || !index)
      continue;
    auto [outer, offset] = it->second;
    auto type = cast<RankedTensorType>(outer.getType());
    if (*index < 0 || *index + offset >= type.getRank())
      continue; // (out of range: undefined, left alone)
    rewriter.setInsertionPoint(op);
    Value outerDim =
        tensor::DimOp::create(rewriter, dim.getLoc(), outer, *index + offset);
    dims.push_back({dim, (unsigned)args.nonSequences.size()});
    args.nonSequences.push_back({outerDim, Value()});
  }
  if (dims.empty())
    return op;
  ScanOp newOp = args.rebuild(rewriter);
  for (auto [dim, index] : dims)
    rewriter.replaceOp(dim, args.nonSequences[index].inner);
  count += dims.size();
  return newOp;
}

struct ScanPushOutNonSeqPass
    : scan::impl::ScanPushOutNonSeqBase<ScanPushOutNonSeqPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans) {
      unsigned rowDims = 0;
      pushOut(hoistRowDims(op, rewriter, rowDims), rewriter);
      numRowDims += rowDims;
    }
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
    // Checks are hoisted in body order, as long as nothing with effects of
    // its own precedes them in the loop (which would change which error a
    // call reports). An op that may rely on a check that precedes it is
    // hoisted under the guard of the hoisted checks (see below).
    // A check hoisted by an earlier run still guards what follows it in
    // the body (an index it bounds), though it is no longer there to see.
    SmallVector<Operation *> invariantOps;
    SetVector<Operation *> hoistedChecks;
    DenseSet<Operation *> afterCheck;
    bool blocked = false, checkSeen = hasHoistedChecks(op, args.nSteps);
    auto allInvariant = [&](Operation *bodyOp) {
      llvm::SetVector<Value> used(bodyOp->operand_begin(), bodyOp->operand_end());
      getUsedValuesDefinedAbove(bodyOp->getRegions(), used);
      return llvm::all_of(used, [&](Value v) { return invariant.contains(v); });
    };
    for (Operation &bodyOp : body.without_terminator()) {
      if (auto check = dyn_cast<CheckOp>(&bodyOp)) {
        checkSeen = true;
        if (!blocked && allInvariant(check))
          hoistedChecks.insert(check);
        else
          blocked = true;
        continue;
      }
      // (A pure op without results computes nothing: canonicalize's job.)
      if (!isPure(&bodyOp) || bodyOp.getNumResults() == 0) {
        blocked |= !isMemoryEffectFree(&bodyOp);
        continue;
      }
      if (!allInvariant(&bodyOp))
        continue;
      if (checkSeen && reliesOnChecks(&bodyOp)) {
        // Only behind checks that all run before the loop, and only where
        // the guard can give its results a value when no step runs.
        if (blocked || !guardable(&bodyOp))
          continue;
        afterCheck.insert(&bodyOp);
      }
      invariantOps.push_back(&bodyOp);
      llvm::SetVector<Value> used(bodyOp.operand_begin(), bodyOp.operand_end());
      getUsedValuesDefinedAbove(bodyOp.getRegions(), used);
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
    if (hoisted.empty() && hoistedChecks.empty())
      return;

    // Clone the hoisted checks, the hoisted ops and the invariant ops they
    // need, in order, before the scan.
    SetVector<Operation *> needed;
    SmallVector<Operation *> worklist(hoisted.begin(), hoisted.end());
    worklist.append(hoistedChecks.begin(), hoistedChecks.end());
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
    // A hoisted check runs when the loop would have run it: when there is
    // a first step (n_steps > 0). So does an op that may rely on it.
    Value runs;
    auto stepsRun = [&]() {
      if (!runs) {
        Value zero = arith::ConstantIndexOp::create(rewriter, op.getLoc(), 0);
        runs = arith::CmpIOp::create(rewriter, op.getLoc(),
                                     arith::CmpIPredicate::sgt, args.nSteps,
                                     zero);
      }
      return runs;
    };
    for (Operation &bodyOp : body.without_terminator()) {
      if (!needed.contains(&bodyOp))
        continue;
      if (auto check = dyn_cast<CheckOp>(&bodyOp)) {
        Value guarded = arith::AndIOp::create(
            rewriter, check.getLoc(), stepsRun(),
            mapping.lookupOrDefault(check.getCondition()));
        auto clone = cast<CheckOp>(rewriter.clone(bodyOp, mapping));
        rewriter.modifyOpInPlace(
            clone, [&] { clone.getConditionMutable().assign(guarded); });
        continue;
      }
      if (afterCheck.contains(&bodyOp)) {
        cloneGuarded(&bodyOp, stepsRun(), mapping, rewriter);
        continue;
      }
      rewriter.clone(bodyOp, mapping);
    }
    // (Erased now: what only they used is dead, not a new non-sequence.)
    for (Operation *check : hoistedChecks) {
      needed.remove(check);
      rewriter.eraseOp(check);
    }

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
    numChecks += hoistedChecks.size();
  }

  /// Whether checks of `op`'s loop were hoisted before it by an earlier
  /// run: a `scan.check` before the scan whose condition is guarded by this
  /// loop's `n_steps > 0` (what `pushOut` emits).
  static bool hasHoistedChecks(ScanOp op, Value nSteps) {
    auto isStepsRun = [&](Value v) {
      auto cmp = v.getDefiningOp<arith::CmpIOp>();
      return cmp && cmp.getPredicate() == arith::CmpIPredicate::sgt &&
             cmp.getLhs() == nSteps && matchPattern(cmp.getRhs(), m_Zero());
    };
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
      auto check = dyn_cast<CheckOp>(prev);
      if (!check)
        continue;
      Value cond = check.getCondition();
      if (isStepsRun(cond))
        return true;
      if (auto andOp = cond.getDefiningOp<arith::AndIOp>())
        if (isStepsRun(andOp.getLhs()) || isStepsRun(andOp.getRhs()))
          return true;
    }
    return false;
  }

  /// Whether `op` can run under a guard: the guard's other branch yields,
  /// for each result, the destination of a destination-style op, an empty
  /// tensor (for views such as `extract_slice` and reshapes), or a zero
  /// scalar. These values are never read: no step runs.
  static bool guardable(Operation *op) {
    return llvm::all_of(op->getResultTypes(), [](Type t) {
      return isa<RankedTensorType>(t) || t.isIntOrIndexOrFloat();
    });
  }

  /// An empty tensor of `result`'s type with the `reified` sizes of its op
  /// (null: 0 for the dynamic ones, as no step reads the value).
  static Value emptyLike(OpResult result,
                         const ReifiedRankedShapedTypeDims *reified,
                         IRRewriter &rewriter) {
    Location loc = result.getLoc();
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      dynamicSizes.push_back(
          reified ? getValueOrCreateConstantIndexOp(
                        rewriter, loc, (*reified)[result.getResultNumber()][d])
                  : arith::ConstantIndexOp::create(rewriter, loc, 0));
    }
    return tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                   type.getElementType(), dynamicSizes);
  }

  /// Clones `op` (operands through `mapping`) into `scf.if %runs`, whose
  /// else branch yields the values `guardable` describes; maps the results.
  static void cloneGuarded(Operation *op, Value runs, IRMapping &mapping,
                           IRRewriter &rewriter) {
    Location loc = op->getLoc();
    auto ifOp = scf::IfOp::create(rewriter, loc, op->getResultTypes(), runs,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    Operation *clone = rewriter.clone(*op, mapping);
    scf::YieldOp::create(rewriter, loc, clone->getResults());
    rewriter.setInsertionPointToStart(ifOp.elseBlock());
    SmallVector<Value> others;
    auto dps = dyn_cast<DestinationStyleOpInterface>(clone);
    if (dps && dps.getNumDpsInits() == clone->getNumResults() &&
        dps.hasPureTensorSemantics()) {
      for (OpOperand &init : dps.getDpsInitsMutable())
        others.push_back(init.get());
    } else {
      // The sizes of a view or another tensor op's results, where it can tell.
      ReifiedRankedShapedTypeDims sizes;
      bool reified =
          llvm::any_of(clone->getResultTypes(),
                       llvm::IsaPred<RankedTensorType>) &&
          isa<ReifyRankedShapedTypeOpInterface>(clone) &&
          succeeded(reifyResultShapes(rewriter, clone, sizes));
      for (OpResult result : clone->getResults())
        others.push_back(
            isa<RankedTensorType>(result.getType())
                ? emptyLike(result, reified ? &sizes : nullptr, rewriter)
                : arith::ConstantOp::create(
                      rewriter, loc,
                      cast<TypedAttr>(rewriter.getZeroAttr(result.getType()))));
    }
    scf::YieldOp::create(rewriter, loc, others);
    for (auto [from, to] : llvm::zip(op->getResults(), ifOp.getResults()))
      mapping.map(from, to);
  }
};

} // namespace
