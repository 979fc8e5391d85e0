//===- ScanReassociateAdds.cpp - group step-independent terms of sums -----===//
//
// `tanh(W·h + U·x + b)` parses as `(W·h + U·x) + b`: the bias is added to a
// value that depends on the recurrent state, so no push-out rewrite can move
// it. Regrouping the sum as `W·h + (U·x + b)` makes `U·x + b` sequence-only
// work that scan-push-out-seq computes for all steps before the loop.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
