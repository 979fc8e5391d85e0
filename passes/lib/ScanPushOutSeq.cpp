//===- ScanPushOutSeq.cpp - compute sequence-only work for all rows -------===//
//
// Theano's `PushOutSeqScan`: body work that depends only on sequences (and
// non-sequences or constants) does not depend on the loop. It runs once,
// before the scan, on all the rows at once (`U·x_t` for every t becomes one
// matmul-shaped op), and its result becomes a new sequence.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RowBatching.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANPUSHOUTSEQ
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// Whether every value `op` uses is among `known` or a destination made in
/// the body by `tensor.empty` / `linalg.fill` (re-created with rows by the
/// batcher).
bool usesOnly(Operation *op, const DenseSet<Value> &known) {
  llvm::SetVector<Value> used(op->operand_begin(), op->operand_end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  for (Value v : used) {
    if (known.contains(v))
      continue;
    bool destination = dps && llvm::any_of(dps.getDpsInits(),
                                           [&](Value init) { return init == v; });
    if (destination && (v.getDefiningOp<linalg::FillOp>() ||
                        v.getDefiningOp<tensor::EmptyOp>()))
      continue;
    return false;
  }
  return true;
}

/// The run-time length check of the original sequences, with their own
/// numbers: the new sequences are clamped slices, whose check would report
/// the clamped lengths. (The first error recorded wins.)
void checkSequenceLengths(ScanOp op, ScanArgs &args, RewriterBase &rewriter) {
  for (auto [i, s] : llvm::enumerate(args.sequences))
    emitSequenceLengthCheck(rewriter, op, args.nSteps, s.outer, s.taps, i);
}

/// Replaces the results of the nitsots that yield a sequence's tap as it is
/// by the rows of that sequence the loop reads: PyTensor's push_out_seq
/// does the same when nothing is left to compute in the loop, and after a
/// push-out a map's step (`lambda c, p: c * x ** p`) is often just that.
/// The slices go after the scan, after a check of n_steps (the scan, once
/// without outputs, is erased as dead; `scan-remove-unused` checks the
/// lengths of the sequences it drops), and `scan-remove-unused` drops the
/// nitsots. Not with `until` (fewer rows), `go_backwards` (reversed rows)
/// or `keep`. Returns how many results were replaced.
unsigned forwardSequenceNitSots(ScanOp op, RewriterBase &rewriter) {
  ScanArgs args(op);
  if (args.untilCondition || args.goBackwards)
    return 0;
  DenseMap<Value, std::pair<Value, int64_t>> rowsOfTap;
  for (ScanArgs::Sequence &s : args.sequences) {
    int64_t lo = std::min<int64_t>(0, s.taps.front());
    for (auto [k, inner] : llvm::zip(s.taps, s.inner))
      rowsOfTap[inner] = {s.outer, k - lo};
  }
  unsigned replaced = 0;
  Location loc = op.getLoc();
  rewriter.setInsertionPointAfter(op);
  Value zero, noSteps; // made for the first dynamic row size
  for (ScanArgs::NitSot &n : args.nitsots) {
    auto it = rowsOfTap.find(n.yield);
    if (n.keep || n.result.use_empty() || it == rowsOfTap.end())
      continue;
    auto [sequence, offset] = it->second;
    auto type = cast<RankedTensorType>(sequence.getType());
    // A static sequence with no row at the tap's offset: only zero steps
    // can run, and a static offset past the end fails the slice verifier.
    if (!type.isDynamicDim(0) && offset >= type.getDimSize(0))
      continue;
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, sequence);
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    offsets[0] = rewriter.getIndexAttr(offset);
    sizes[0] = getAsOpFoldResult(args.nSteps);
    // A row's dynamic sizes are those of the first step's row: 0 when no
    // step runs (see convert-scan-to-scf).
    for (int64_t d = 1; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      if (!noSteps) {
        zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
        noSteps = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::eq, args.nSteps, zero);
      }
      sizes[d] = arith::SelectOp::create(rewriter, loc, noSteps, zero,
                                         getValueOrCreateConstantIndexOp(
                                             rewriter, loc, sizes[d]))
                     .getResult();
    }
    // A scan left without outputs is erased as dead, with its checks.
    if (replaced == 0)
      emitStepCountCheck(rewriter, op, args.nSteps);
    Value rows =
        extractSliceOrEmpty(rewriter, loc, sequence, offsets, sizes, strides);
    if (rows.getType() != n.result.getType())
      rows = tensor::CastOp::create(rewriter, loc, n.result.getType(), rows);
    rewriter.replaceAllUsesWith(n.result, rows);
    ++replaced;
  }
  return replaced;
}

struct ScanPushOutSeqPass
    : scan::impl::ScanPushOutSeqBase<ScanPushOutSeqPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans) {
      std::optional<ScanOp> rebuilt = pushOut(op, rewriter);
      numForwarded += forwardSequenceNitSots(rebuilt.value_or(op), rewriter);
    }
  }

  /// The scan that replaces `op` when work was pushed out.
  std::optional<ScanOp> pushOut(ScanOp op, IRRewriter &rewriter) {
    if (op.getNumSequences() == 0)
      return std::nullopt;
    Block &body = op.getBodyBlock();
    Location loc = op.getLoc();

    ScanArgs args(op);

    // Values known outside: per-step-constant ones (invariant) and the
    // sequence taps; the candidates are batchable pure ops over them that
    // use at least one tap.
    DenseSet<Value> known, fromSequence;
    for (ScanArgs::NonSequence &n : args.nonSequences)
      known.insert(n.inner);
    for (ScanArgs::Sequence &s : args.sequences)
      for (Value tap : s.inner) {
        known.insert(tap);
        fromSequence.insert(tap);
      }
    SmallVector<Operation *> candidates;
    // A check left in the loop (scan-push-out-non-seq hoists the invariant
    // ones) may guard the ops after it: those stay (see reliesOnChecks).
    bool checkSeen = false;
    for (Operation &bodyOp : body.without_terminator()) {
      if (bodyOp.hasTrait<OpTrait::ConstantLike>()) {
        known.insert(bodyOp.getResults().begin(), bodyOp.getResults().end());
        continue;
      }
      checkSeen |= isa<CheckOp>(bodyOp);
      if (!RowBatcher::canBatch(&bodyOp) || !isPure(&bodyOp) ||
          !usesOnly(&bodyOp, known) ||
          (checkSeen && reliesOnChecks(&bodyOp)))
        continue;
      llvm::SetVector<Value> used(bodyOp.operand_begin(), bodyOp.operand_end());
      getUsedValuesDefinedAbove(bodyOp.getRegions(), used);
      if (!llvm::any_of(used, [&](Value v) { return fromSequence.contains(v); }))
        continue;
      candidates.push_back(&bodyOp);
      for (Value r : bodyOp.getResults()) {
        known.insert(r);
        fromSequence.insert(r);
      }
    }
    if (candidates.empty())
      return std::nullopt;
    // No rows to batch: with the constant n_steps 0, or a tap that starts at
    // or past the end of a sequence of static length (possible only when no
    // step can run), the slices below would get a static offset that the
    // tensor.extract_slice verifier rejects ("offset 0 is out-of-bounds").
    APInt constantSteps;
    if (matchPattern(args.nSteps, m_ConstantInt(&constantSteps)) &&
        constantSteps.isZero())
      return std::nullopt;
    for (ScanArgs::Sequence &s : args.sequences) {
      auto type = cast<RankedTensorType>(s.outer.getType());
      int64_t lo = std::min<int64_t>(0, s.taps.front());
      if (!type.isDynamicDim(0) && s.taps.back() - lo >= type.getDimSize(0))
        return std::nullopt;
    }
    // All rows the loop will read, for every tap: rows = max(0, min(n,
    // rows available after the tap's offset)); a too-short sequence keeps
    // failing the scan's own run-time check.
    // Everything is created before the scan, after `before`: if a candidate
    // cannot be batched after all, it is all erased and the IR is unchanged.
    Operation *before = op->getPrevNode();
    auto rollBack = [&] {
      while (op->getPrevNode() != before)
        rewriter.eraseOp(op->getPrevNode());
    };
    rewriter.setInsertionPoint(op);
    Value rows = args.nSteps;
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    struct TapSlice { Value sequence; int64_t offset; };
    SmallVector<std::pair<Value, TapSlice>> taps;
    for (ScanArgs::Sequence &s : args.sequences) {
      int64_t lo = std::min<int64_t>(0, s.taps.front());
      for (auto [k, inner] : llvm::zip(s.taps, s.inner)) {
        Value len = tensor::DimOp::create(rewriter, loc, s.outer, 0);
        Value available = arith::SubIOp::create(
            rewriter, loc, len,
            arith::ConstantIndexOp::create(rewriter, loc, k - lo));
        rows = arith::MinSIOp::create(rewriter, loc, rows, available);
        taps.push_back({inner, {s.outer, k - lo}});
      }
    }
    rows = arith::MaxSIOp::create(rewriter, loc, rows, zero);

    RowBatcher batcher(rewriter, loc, rows);
    for (ScanArgs::NonSequence &n : args.nonSequences)
      batcher.mapInvariant(n.inner, n.outer);
    for (Operation &bodyOp : body.without_terminator())
      if (bodyOp.hasTrait<OpTrait::ConstantLike>())
        batcher.mapInvariant(bodyOp.getResult(0), rewriter.clone(bodyOp)->getResult(0));
    for (auto [inner, tap] : taps) {
      // Rows [offset, offset + rows), counted from the end with go_backwards.
      auto type = cast<RankedTensorType>(tap.sequence.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, tap.sequence);
      SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
      sizes[0] = rows;
      if (args.goBackwards) {
        Value len = tensor::DimOp::create(rewriter, loc, tap.sequence, 0);
        Value end = arith::SubIOp::create(
            rewriter, loc, len,
            arith::ConstantIndexOp::create(rewriter, loc, tap.offset));
        offsets[0] = arith::SubIOp::create(rewriter, loc, end, rows).getResult();
      } else {
        offsets[0] = rewriter.getIndexAttr(tap.offset);
      }
      batcher.mapBatched(inner,
                         extractSliceOrEmpty(rewriter, loc, tap.sequence,
                                             offsets, sizes, strides));
    }
    for (Operation *c : candidates)
      if (failed(batcher.batch(c))) {
        rollBack();
        return std::nullopt;
      }
    checkSequenceLengths(op, args, rewriter);

    // Candidate results still needed in the body become sequences. (Only
    // live users count: rebuild erases dead ops, and with them a candidate
    // only they used, which must then not be replaced afterwards.)
    DenseSet<Operation *> pushed(candidates.begin(), candidates.end());
    DenseSet<Operation *> live = liveBodyOps(op);
    SmallVector<std::pair<Value, unsigned>> replaced;
    for (Operation *c : candidates)
      for (Value r : c->getResults())
        if (hasLiveUserOutside(r, body, live, [&](Operation *u) {
              return pushed.contains(u);
            })) {
          replaced.push_back({r, (unsigned)args.sequences.size()});
          args.sequences.push_back({batcher.lookupBatched(r), {0}, {Value()}});
        }
    ScanOp newOp = args.rebuild(rewriter);
    for (auto [oldValue, index] : replaced)
      rewriter.replaceAllUsesWith(oldValue, args.sequences[index].inner[0]);
    SmallVector<Operation *> bodyOps;
    for (Operation &bodyOp : newOp.getBodyBlock().without_terminator())
      bodyOps.push_back(&bodyOp);
    for (Operation *bodyOp : llvm::reverse(bodyOps))
      if (bodyOp->use_empty() && isMemoryEffectFree(bodyOp))
        rewriter.eraseOp(bodyOp);
    numPushedOut += candidates.size();
    return newOp;
  }
};

} // namespace
