//===- ScanReassociateAdds.cpp - group step-independent terms of sums -----===//
//
// `tanh(W·h + U·x + b)` parses as `(W·h + U·x) + b`: the bias is added to a
// value that depends on the recurrent state, so no push-out rewrite can move
// it. Regrouping the sum as `W·h + (U·x + b)` makes `U·x + b` sequence-only
// work that scan-push-out-seq computes for all steps before the loop.
// The same sum inside one elementwise `linalg.generic` (the graph builder
// fuses `tanh(a + b + c)` into one loop) is split: `b + c` becomes a generic
// of its own, which the push-outs can then move.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANREASSOCIATEADDS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// How often a body value changes: the same in every step, once per step
/// from sequences only, or through the recurrence.
enum class Variance { Invariant = 0, PerSequenceRow = 1, Recurrent = 2 };

class VarianceAnalysis {
public:
  explicit VarianceAnalysis(ScanOp op) {
    ScanArgs args(op);
    for (ScanArgs::NonSequence &n : args.nonSequences)
      of[n.inner] = Variance::Invariant;
    for (ScanArgs::Sequence &s : args.sequences)
      for (Value v : s.inner)
        of[v] = Variance::PerSequenceRow;
    for (Operation &bodyOp : op.getBodyBlock().without_terminator()) {
      Variance v = Variance::Invariant;
      if (!isMemoryEffectFree(&bodyOp))
        v = Variance::Recurrent;
      llvm::SetVector<Value> used(bodyOp.operand_begin(), bodyOp.operand_end());
      getUsedValuesDefinedAbove(bodyOp.getRegions(), used);
      for (Value u : used)
        v = std::max(v, get(u));
      for (Value r : bodyOp.getResults())
        of[r] = v;
    }
  }

  /// Block arguments of states (and anything unknown) are recurrent.
  Variance get(Value v) const {
    auto it = of.find(v);
    return it == of.end() ? Variance::Recurrent : it->second;
  }

private:
  DenseMap<Value, Variance> of;
};

/// Whether regrouping keeps the op's meaning: an integer add with overflow
/// flags (nsw/nuw) is not associative (s + t may overflow where neither
/// original sum did, which the flags make poison).
bool regroupable(Operation *op) {
  if (auto addi = dyn_cast<arith::AddIOp>(op))
    return addi.getOverflowFlags() == arith::IntegerOverflowFlags::none;
  return true;
}

/// Regroups `(r + s) + t` into `r + (s + t)` when `r` is recurrent and `s`,
/// `t` are not, for one associative op kind `OpTy`.
template <typename OpTy>
bool regroup(OpTy op, const VarianceAnalysis &variance, RewriterBase &rewriter) {
  if (!regroupable(op))
    return false;
  for (unsigned side = 0; side < 2; ++side) {
    Value inner = op->getOperand(side), t = op->getOperand(1 - side);
    auto sum = inner.template getDefiningOp<OpTy>();
    if (!sum || !sum->hasOneUse() || sum->getAttrs() != op->getAttrs() ||
        !regroupable(sum) ||
        variance.get(t) == Variance::Recurrent)
      continue;
    for (unsigned j = 0; j < 2; ++j) {
      Value r = sum->getOperand(j), s = sum->getOperand(1 - j);
      if (variance.get(r) != Variance::Recurrent ||
          variance.get(s) == Variance::Recurrent)
        continue;
      rewriter.setInsertionPoint(op);
      auto grouped = OpTy::create(rewriter, op.getLoc(), s, t);
      grouped->setAttrs(op->getAttrs());
      rewriter.modifyOpInPlace(op, [&] {
        op->setOperand(0, r);
        op->setOperand(1, grouped);
      });
      rewriter.eraseOp(sum);
      return true;
    }
  }
  return false;
}

/// Whether `generic` is an elementwise loop whose sums can be split: all
/// loops parallel, one result written through the identity map, the init's
/// values unused, inputs read through projected permutations.
bool splittable(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isIdentity() ||
      generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)))
    return false;
  return llvm::all_of(generic.getIndexingMapsArray(), [](AffineMap map) {
    return map.isProjectedPermutation();
  });
}

/// Replaces `generic` (whose loops its result's identity map covers) by the
/// same loop without the inputs its body no longer reads.
void dropUnusedInputs(linalg::GenericOp generic, RewriterBase &rewriter) {
  Block &body = *generic.getBlock();
  unsigned numInputs = generic.getNumDpsInputs();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : generic.getDpsInputOperands()) {
    if (body.getArgument(in->getOperandNumber()).use_empty())
      continue;
    inputs.push_back(in->get());
    maps.push_back(generic.getMatchingIndexingMap(in));
  }
  if (inputs.size() == numInputs)
    return;
  for (OpOperand &init : generic.getDpsInitsMutable())
    maps.push_back(generic.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(generic);
  auto pruned = linalg::GenericOp::create(
      rewriter, generic.getLoc(), generic.getResultTypes(), inputs,
      generic.getDpsInits(), maps, generic.getIteratorTypesArray());
  pruned->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(generic.getRegion(), pruned.getRegion(),
                              pruned.getRegion().end());
  Block &moved = pruned.getRegion().front();
  for (int i = numInputs - 1; i >= 0; --i)
    if (moved.getArgument(i).use_empty())
      moved.eraseArgument(i);
  rewriter.replaceOp(generic, pruned.getResults());
}

/// In the body of `generic` (see `splittable`), regroups `(r + s) + t` where
/// `r` depends on a recurrent input and `s`, `t` are block arguments of
/// inputs that are not recurrent: `s + t` becomes a new generic before
/// `generic`, whose result is a new input of it. Returns whether it did.
template <typename OpTy>
bool splitSum(linalg::GenericOp generic, const VarianceAnalysis &variance,
              RewriterBase &rewriter) {
  Block &body = *generic.getBlock();
  unsigned numInputs = generic.getNumDpsInputs();
  // The input operand a body value reads, if it is an input's argument.
  auto inputOf = [&](Value v) -> OpOperand * {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &body || arg.getArgNumber() >= numInputs)
      return nullptr;
    return generic.getDpsInputOperand(arg.getArgNumber());
  };
  auto recurrent = [&](Value v) {
    // A body value: recurrent if anything it is computed from is.
    SmallVector<Value> work{v};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value next = work.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      if (OpOperand *in = inputOf(next)) {
        if (variance.get(in->get()) == Variance::Recurrent)
          return true;
        continue;
      }
      Operation *def = next.getDefiningOp();
      if (!def || def->getBlock() != &body) {
        // (a value of the scan body, or the init's argument)
        if (variance.get(next) == Variance::Recurrent)
          return true;
        continue;
      }
      work.append(def->operand_begin(), def->operand_end());
    }
    return false;
  };
  for (Operation &bodyOp : body.without_terminator()) {
    auto op = dyn_cast<OpTy>(&bodyOp);
    if (!op || !regroupable(op))
      continue;
    for (unsigned side = 0; side < 2; ++side) {
      Value inner = op->getOperand(side), t = op->getOperand(1 - side);
      auto sum = inner.template getDefiningOp<OpTy>();
      OpOperand *tInput = inputOf(t);
      if (!sum || !sum->hasOneUse() || sum->getAttrs() != op->getAttrs() ||
          !regroupable(sum) || !tInput ||
          variance.get(tInput->get()) == Variance::Recurrent)
        continue;
      for (unsigned j = 0; j < 2; ++j) {
        Value r = sum->getOperand(j), s = sum->getOperand(1 - j);
        OpOperand *sInput = inputOf(s);
        if (!sInput || variance.get(sInput->get()) == Variance::Recurrent ||
            !recurrent(r))
          continue;
        Location loc = generic.getLoc();
        rewriter.setInsertionPoint(generic);
        Value init = generic.getDpsInitOperand(0)->get();
        Value empty = tensor::EmptyOp::create(
            rewriter, loc, tensor::getMixedSizes(rewriter, loc, init),
            s.getType());
        AffineMap identity = generic.getMatchingIndexingMap(
            generic.getDpsInitOperand(0));
        SmallVector<AffineMap> maps{generic.getMatchingIndexingMap(sInput),
                                    generic.getMatchingIndexingMap(tInput),
                                    identity};
        auto grouped = linalg::GenericOp::create(
            rewriter, loc, TypeRange{empty.getType()},
            ValueRange{sInput->get(), tInput->get()}, ValueRange{empty}, maps,
            generic.getIteratorTypesArray(),
            [&](OpBuilder &b, Location l, ValueRange args) {
              auto add = OpTy::create(b, l, args[0], args[1]);
              add->setAttrs(op->getAttrs());
              linalg::YieldOp::create(b, l, add->getResult(0));
            });
        // The generic with one more input, the grouped sum.
        SmallVector<Value> inputs(generic.getDpsInputs());
        inputs.push_back(grouped.getResult(0));
        SmallVector<AffineMap> newMaps;
        for (OpOperand *in : generic.getDpsInputOperands())
          newMaps.push_back(generic.getMatchingIndexingMap(in));
        newMaps.push_back(identity);
        newMaps.push_back(identity);
        auto replacement = linalg::GenericOp::create(
            rewriter, loc, generic.getResultTypes(), inputs,
            generic.getDpsInits(), newMaps, generic.getIteratorTypesArray());
        replacement->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
        rewriter.inlineRegionBefore(generic.getRegion(),
                                    replacement.getRegion(),
                                    replacement.getRegion().end());
        Block &moved = replacement.getRegion().front();
        BlockArgument st = moved.insertArgument(
            numInputs, getElementTypeOrSelf(s.getType()), loc);
        rewriter.modifyOpInPlace(op, [&] {
          op->setOperand(0, r);
          op->setOperand(1, st);
        });
        rewriter.eraseOp(sum);
        rewriter.replaceOp(generic, replacement.getResults());
        dropUnusedInputs(replacement, rewriter);
        return true;
      }
    }
  }
  return false;
}

struct ScanReassociateAddsPass
    : scan::impl::ScanReassociateAddsBase<ScanReassociateAddsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation()->walk([&](ScanOp op) {
      bool changed = true;
      while (changed) {
        changed = false;
        VarianceAnalysis variance(op);
        for (Operation &bodyOp : op.getBodyBlock().without_terminator()) {
          if (auto add = dyn_cast<arith::AddFOp>(&bodyOp))
            changed = regroup(add, variance, rewriter);
          else if (auto addi = dyn_cast<arith::AddIOp>(&bodyOp))
            changed = regroup(addi, variance, rewriter);
          else if (auto generic = dyn_cast<linalg::GenericOp>(&bodyOp))
            changed = splittable(generic) &&
                      (splitSum<arith::AddFOp>(generic, variance, rewriter) ||
                       splitSum<arith::AddIOp>(generic, variance, rewriter));
          if (changed) {
            ++numRegrouped;
            break; // the analysis is stale: start over
          }
        }
      }
    });
  }
};

} // namespace
