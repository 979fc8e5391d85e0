//===- ScanRemoveUnused.cpp - drop unused scan inputs, outputs and taps ---===//
//
// Theano's `remove_constants_and_unused_inputs_scan`: constant non-sequences
// move into the body, and whatever the body or the users never read goes:
// non-sequences, sequence taps, mitsot taps, and outputs whose results are
// unused (a state also needs its own block arguments to be unused).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANREMOVEUNUSED
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// The taps whose block arguments the body reads, with those arguments.
std::pair<SmallVector<int64_t>, SmallVector<Value>>
usedTaps(ArrayRef<int64_t> taps, ArrayRef<Value> inner) {
  std::pair<SmallVector<int64_t>, SmallVector<Value>> used;
  for (auto [tap, arg] : llvm::zip(taps, inner)) {
    if (arg.use_empty())
      continue;
    used.first.push_back(tap);
    used.second.push_back(arg);
  }
  return used;
}

/// The values of a scan body that the kept outputs need: a backward slice
/// from the yields of outputs whose results are used, the mitmot yields and
/// the `until` condition, closed under "a state whose block arguments are
/// needed is kept, so its yield is needed too".
class BodyLiveness {
public:
  explicit BodyLiveness(ScanArgs &args) {
    // Ops with side effects run whether or not an output is used: what they
    // read is needed (a state only they read must not be dropped).
    for (Operation &bodyOp : args.op.getBodyBlock().without_terminator())
      if (!isMemoryEffectFree(&bodyOp))
        markOperandsLive(&bodyOp);
    for (ScanArgs::MitMot &m : args.mitmots)
      for (Value y : m.yields)
        markLive(y);
    if (args.untilCondition)
      markLive(args.untilCondition);
    for (ScanArgs::NitSot &n : args.nitsots)
      if (!n.result.use_empty())
        markLive(n.yield);
    bool grew = true;
    while (grew) {
      grew = false;
      for (auto *states : {&args.mitsots, &args.sitsots})
        for (ScanArgs::State &s : *states)
          if (!live.contains(s.yield) && isNeeded(s)) {
            markLive(s.yield);
            grew = true;
          }
    }
  }

  /// A state is needed if its result is used or the body needs its values.
  bool isNeeded(ScanArgs::State &s) {
    return !s.result.use_empty() ||
           llvm::any_of(s.inner, [&](Value v) { return live.contains(v); });
  }

private:
  void markLive(Value root) {
    SmallVector<Value> worklist{root};
    drain(worklist);
  }

  /// The operands of `op` and of everything nested in it.
  void markOperandsLive(Operation *op) {
    SmallVector<Value> worklist;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        worklist.push_back(operand);
    });
    drain(worklist);
  }

  void drain(SmallVector<Value> &worklist) {
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (!live.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      // Operands of the op and of everything nested in it.
      def->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          worklist.push_back(operand);
      });
    }
  }

  DenseSet<Value> live;
};

/// Rows `[offset, offset + rows(value) - drop)` of a stacked value: what a
/// sequence or mitsot init becomes when leading taps are dropped.
Value dropLeadingRows(RewriterBase &rewriter, Location loc, Value value,
                      int64_t drop, bool fromEnd) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, value);
  SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
  if (std::optional<int64_t> staticRows = getConstantIntValue(sizes[0])) {
    sizes[0] = rewriter.getIndexAttr(std::max<int64_t>(*staticRows - drop, 0));
  } else {
    // Clamped at 0: a too-short sequence still reaches the scan's own
    // run-time length check instead of an invalid slice.
    Value rows = cast<Value>(sizes[0]);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value remaining = arith::SubIOp::create(
        rewriter, loc, rows, arith::ConstantIndexOp::create(rewriter, loc, drop));
    sizes[0] = arith::MaxSIOp::create(rewriter, loc, remaining, zero).getResult();
  }
  if (!fromEnd)
    offsets[0] = rewriter.getIndexAttr(drop);
  return extractSliceOrEmpty(rewriter, loc, value, offsets, sizes, strides);
}

struct ScanRemoveUnusedPass
    : scan::impl::ScanRemoveUnusedBase<ScanRemoveUnusedPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    // Dropping an output can leave inputs unused: repeat to a fixed point.
    for (ScanOp op : scans)
      while (std::optional<ScanOp> next = simplify(op, rewriter))
        op = *next;
  }

  /// The rebuilt scan if anything was dropped.
  std::optional<ScanOp> simplify(ScanOp op, IRRewriter &rewriter) {
    ScanArgs args(op);
    Location loc = op.getLoc();
    bool changed = false;

    // Constant non-sequences are cloned into the body.
    rewriter.setInsertionPointToStart(&op.getBodyBlock());
    for (ScanArgs::NonSequence &n : args.nonSequences) {
      Operation *def = n.outer.getDefiningOp();
      if (!def || !def->hasTrait<OpTrait::ConstantLike>() || n.inner.use_empty())
        continue;
      Operation *clone = rewriter.clone(*def);
      // (Through args: the non-sequence may be yielded as it is.)
      args.replaceAllUsesWith(
          rewriter, n.inner,
          clone->getResult(cast<OpResult>(n.outer).getResultNumber()));
      ++numInlinedConstants;
    }
    size_t before = args.nonSequences.size();
    llvm::erase_if(args.nonSequences, [](auto &n) { return n.inner.use_empty(); });
    numRemovedInputs += before - args.nonSequences.size();
    changed |= before != args.nonSequences.size();

    // Outputs nobody reads. A state also goes when no kept output needs its
    // values (a recurrence that only feeds itself is dead); its block
    // arguments are then only used by dead ops, which are erased first.
    BodyLiveness liveness(args);
    before = args.nitsots.size();
    llvm::erase_if(args.nitsots, [](auto &n) { return n.result.use_empty(); });
    numRemovedOutputs += before - args.nitsots.size();
    changed |= before != args.nitsots.size();
    rewriter.setInsertionPoint(op);
    for (SmallVectorImpl<ScanArgs::State> *states : {&args.mitsots, &args.sitsots}) {
      before = states->size();
      unsigned index = 0;
      llvm::erase_if(*states, [&](ScanArgs::State &s) {
        bool dead = !liveness.isNeeded(s);
        // A dropped mitsot's init keeps its run-time row count check.
        if (dead && states == &args.mitsots)
          emitMitSotInitCheck(rewriter, op, args.nSteps, s.outer,
                              -s.taps.front(), index);
        ++index;
        return dead;
      });
      numRemovedOutputs += before - states->size();
      changed |= before != states->size();
    }


    // Sequence taps nobody reads. Dropping the lowest tap moves the window
    // (tap k reads row t + k - min(0, taps)): slice the sequence to match.
    // A sequence dropped or read at fewer taps keeps its original run-time
    // length check: a too-short sequence stays an error.
    rewriter.setInsertionPoint(op);
    for (auto [index, s] : llvm::enumerate(args.sequences)) {
      int64_t oldLo = std::min<int64_t>(0, s.taps.front());
      auto [taps, inner] = usedTaps(s.taps, s.inner);
      if (taps.size() == s.taps.size())
        continue;
      emitSequenceLengthCheck(rewriter, op, args.nSteps, s.outer, s.taps,
                              index);
      numRemovedTaps += s.taps.size() - taps.size();
      changed = true;
      s.taps = taps;
      s.inner = inner;
      if (taps.empty())
        continue;
      int64_t shift = std::min<int64_t>(0, taps.front()) - oldLo;
      if (shift > 0)
        s.outer = dropLeadingRows(rewriter, loc, s.outer, shift,
                                  /*fromEnd=*/args.goBackwards);
    }
    before = args.sequences.size();
    llvm::erase_if(args.sequences, [](auto &s) { return s.taps.empty(); });
    numRemovedInputs += before - args.sequences.size();

    // Mitsot taps nobody reads; the init loses the rows of dropped low taps.
    for (ScanArgs::State &s : args.mitsots) {
      auto [taps, inner] = usedTaps(s.taps, s.inner);
      // A mitsot needs at least one tap. With `keep`, the init rows are part
      // of the kept rows, so its lowest tap (its number of init rows) stays.
      if (taps.empty() || taps.size() == s.taps.size() ||
          (s.keep > 0 && taps.front() != s.taps.front()))
        continue;
      numRemovedTaps += s.taps.size() - taps.size();
      changed = true;
      int64_t shift = s.taps.front() - taps.front(); // <= 0
      if (shift != 0)
        s.outer = dropLeadingRows(rewriter, loc, s.outer, -shift,
                                  /*fromEnd=*/false);
      s.taps = taps;
      s.inner = inner;
    }

    if (!changed)
      return std::nullopt;
    return args.rebuild(rewriter);
  }
};

} // namespace
