//===- ScanSaveMem.cpp - keep only the rows of a scan output that are read -===//
//
// Theano's `ScanSaveMem`: when every user of a stacked output reads rows a
// fixed distance from its end (`result[-1]`, `result[n-2:]`), the scan only
// needs to keep the last `k` rows. The output gets `keep = k` (a ring buffer
// after lowering, O(k) memory instead of O(n_steps)) and the users read the
// `k`-row result at the same distance from its end.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANSAVEMEM
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// One read of a stacked result: rows [rows - fromEnd, rows - fromEnd + size).
struct TailRead {
  Operation *user;   // tensor.extract or tensor.extract_slice
  int64_t fromEnd;   // c: the first row read is rows - c
  int64_t size;      // rows read
};

/// Whether `v` is the number of rows of `result`: `tensor.dim %result, 0`,
/// or the scan's n_steps (without `until`).
bool isRowCount(Value v, Value result, ScanOp op) {
  if (v == op.getNSteps() && !op.getUntil())
    return true;
  auto dim = v.getDefiningOp<tensor::DimOp>();
  std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
  return dim && dim.getSource() == result && index && *index == 0;
}

/// `c` if `index` is `rows - c` (c >= 1) for the rows of `result`.
std::optional<int64_t> distanceFromEnd(Value index, Value result, ScanOp op) {
  auto resultType = cast<RankedTensorType>(result.getType());
  APInt constant;
  if (matchPattern(index, m_ConstantInt(&constant))) {
    if (resultType.isDynamicDim(0))
      return std::nullopt;
    int64_t c = resultType.getDimSize(0) - constant.getSExtValue();
    return c >= 1 && constant.getSExtValue() >= 0 ? std::optional(c) : std::nullopt;
  }
  Operation *def = index.getDefiningOp();
  APInt c;
  if (auto sub = dyn_cast_or_null<arith::SubIOp>(def))
    if (isRowCount(sub.getLhs(), result, op) &&
        matchPattern(sub.getRhs(), m_ConstantInt(&c)) && c.getSExtValue() >= 1)
      return c.getSExtValue();
  if (auto add = dyn_cast_or_null<arith::AddIOp>(def))
    for (auto [rows, delta] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())})
      if (isRowCount(rows, result, op) && matchPattern(delta, m_ConstantInt(&c)) &&
          c.getSExtValue() <= -1)
        return -c.getSExtValue();
  return std::nullopt;
}

/// Whether the users of `dim` (the row count of `result`) are `arith.subi` /
/// `arith.addi` ops whose results are only ever the leading index of a read
/// of `result` (`tensor.extract` index 0, `tensor.extract_slice` offset 0):
/// the places the rewrite replaces. Used anywhere else (another index, a
/// size, outside the reads), the row count would be lost.
bool onlyLeadingRowIndex(tensor::DimOp dim, Value result) {
  return llvm::all_of(dim->getUsers(), [&](Operation *u) {
    if (!isa<arith::SubIOp, arith::AddIOp>(u))
      return false;
    Value index = u->getResult(0);
    return llvm::all_of(index.getUses(), [&](OpOperand &use) {
      Operation *reader = use.getOwner();
      if (auto extract = dyn_cast<tensor::ExtractOp>(reader))
        return extract.getTensor() == result &&
               use.getOperandNumber() == 1; // operands: tensor, indices...
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(reader))
        return slice.getSource() == result &&
               slice.getOffsets().size() >= 1 &&
               slice.getMixedOffsets()[0] == OpFoldResult(index) &&
               llvm::count(slice->getOperands(), index) == 1;
      return false;
    });
  });
}

/// The tail reads of every user of `result`, or nullopt if some user reads
/// anything else (the whole output, a row counted from the start, ...).
/// `tensor.dim` users of a non-leading dimension go to `otherDims`; the row
/// count, where it has users other than the reads' indices, to `rowCounts`
/// (n_steps without `until`, the number of steps taken with it).
std::optional<SmallVector<TailRead>>
tailReads(Value result, ScanOp op, SmallVectorImpl<tensor::DimOp> &otherDims,
          SmallVectorImpl<tensor::DimOp> &rowCounts) {
  SmallVector<TailRead> reads;
  for (Operation *user : result.getUsers()) {
    if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
      std::optional<int64_t> c =
          distanceFromEnd(extract.getIndices()[0], result, op);
      if (!c)
        return std::nullopt;
      reads.push_back({user, *c, 1});
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
      if (slice.getSource() != result)
        return std::nullopt;
      std::optional<int64_t> size = getConstantIntValue(slice.getMixedSizes()[0]);
      std::optional<int64_t> stride =
          getConstantIntValue(slice.getMixedStrides()[0]);
      OpFoldResult offset = slice.getMixedOffsets()[0];
      std::optional<int64_t> c;
      if (auto v = dyn_cast<Value>(offset))
        c = distanceFromEnd(v, result, op);
      else if (auto cst = getConstantIntValue(offset)) {
        auto type = cast<RankedTensorType>(result.getType());
        if (!type.isDynamicDim(0) && *cst >= 0)
          c = type.getDimSize(0) - *cst;
      }
      if (!size || !stride || *stride != 1 || !c || *size > *c)
        return std::nullopt;
      reads.push_back({user, *c, *size});
      continue;
    }
    // `tensor.dim %result, 0` only feeding the leading index of the reads
    // above is fine (the reads are rewritten, the dim dies); the size of
    // another dimension is the same for the kept rows (`otherDims`, moved to
    // the new result). Anything else is a use of the whole output.
    if (auto dim = dyn_cast<tensor::DimOp>(user)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      if (index && *index >= 1) {
        otherDims.push_back(dim);
        continue;
      }
      if (index && *index == 0 && op.getUntil() &&
          onlyLeadingRowIndex(dim, result))
        continue; // dies with the reads
      if (index && *index == 0) {
        // Used anywhere (a bounds check of the read, a size...): it becomes
        // the number of steps taken, which it always equals.
        rowCounts.push_back(dim);
        continue;
      }
    }
    return std::nullopt;
  }
  if (reads.empty())
    return std::nullopt;
  return reads;
}

/// Adds to `args` a sitsot that counts the steps taken: init 0, keep 1. Its
/// yield is a placeholder in the body until finishStepCounter.
void addStepCounter(ScanOp op, ScanArgs &args, IRRewriter &rewriter) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  rewriter.setInsertionPointToStart(&op.getBodyBlock());
  Value placeholder =
      ub::PoisonOp::create(rewriter, loc, rewriter.getIndexType());
  Type resultType = RankedTensorType::get({1}, rewriter.getIndexType());
  args.sitsots.push_back(
      {zero, {-1}, {Value()}, placeholder, Value(), resultType, /*keep=*/1});
}

/// Makes the counter's step `count + 1` and returns the number of steps
/// taken (its kept row) after `op`.
Value finishStepCounter(ScanOp op, ScanArgs::State &counter,
                        IRRewriter &rewriter) {
  Location loc = op.getLoc();
  Operation *placeholder = counter.yield.getDefiningOp();
  rewriter.setInsertionPoint(op.getYieldOp());
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value next = arith::AddIOp::create(rewriter, loc, counter.inner[0], one);
  rewriter.replaceOp(placeholder, next);
  counter.yield = next;
  rewriter.setInsertionPointAfter(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  return tensor::ExtractOp::create(rewriter, loc, counter.result, zero);
}

/// Before `read` (rewritten to the kept rows), the check that it was in
/// bounds of the whole output: its first row, `rows - c`, is a row. Where
/// the output has fewer than `c` rows the kept rows still have `c` (the init
/// rows of a state, or rows no step wrote), and the rewritten read would
/// return them where the program read out of bounds. The message is the one
/// scan-runtime-verification gives the read itself.
void assertInBounds(OpBuilder &b, const TailRead &read, Value rows) {
  if (read.size == 0)
    return; // an empty slice reads nothing, wherever it starts
  Location loc = read.user->getLoc();
  Value c = arith::ConstantIndexOp::create(b, loc, read.fromEnd);
  Value ok =
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, rows, c);
  if (std::optional<int64_t> known = getConstantIntValue(ok); known && *known)
    return;
  StringRef what = isa<tensor::ExtractOp>(read.user)
                       ? "out-of-bounds access"
                       : "slice out of bounds along dimension 0 (offset, size, "
                         "stride against the size of the dimension)";
  cf::AssertOp::create(b, loc, ok, locatedMessage(read.user, what));
}

struct ScanSaveMemPass : scan::impl::ScanSaveMemBase<ScanSaveMemPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<ScanOp> scans = collectScans(getOperation());
    for (ScanOp op : scans)
      saveMem(op, rewriter);
  }

  /// Sets `keep` on `resultType`'s item; returns the planned reads.
  void saveMem(ScanOp op, IRRewriter &rewriter) {
    ScanArgs args(op);
    struct Planned {
      Value *result;
      SmallVector<TailRead> reads;
      SmallVector<tensor::DimOp> otherDims;
      SmallVector<tensor::DimOp> rowCounts;
      int64_t keep;
    };
    SmallVector<Planned> planned;
    auto plan = [&](Value &result, Type &resultType, int64_t &keep) {
      if (keep != 0)
        return;
      SmallVector<tensor::DimOp> otherDims, rowCounts;
      std::optional<SmallVector<TailRead>> reads =
          tailReads(result, op, otherDims, rowCounts);
      if (!reads)
        return;
      int64_t k = 0;
      for (TailRead &read : *reads)
        k = std::max(k, read.fromEnd);
      auto type = cast<RankedTensorType>(resultType);
      if (!type.isDynamicDim(0) && type.getDimSize(0) <= k)
        return; // nothing to save
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = k;
      resultType = RankedTensorType::get(shape, type.getElementType(),
                                         type.getEncoding());
      keep = k;
      planned.push_back({&result, std::move(*reads), std::move(otherDims),
                         std::move(rowCounts), k});
    };
    for (ScanArgs::State &s : args.mitsots)
      plan(s.result, s.resultType, s.keep);
    for (ScanArgs::State &s : args.sitsots)
      plan(s.result, s.resultType, s.keep);
    for (ScanArgs::NitSot &n : args.nitsots)
      plan(n.result, n.resultType, n.keep);
    if (planned.empty())
      return;

    // With `until`, the row count a kept output no longer has is the number
    // of steps taken: a step counter (an index sitsot, keep [1]) keeps it,
    // for the users of the row count and the reads' bounds checks.
    bool needsCounter = static_cast<bool>(op.getUntil());
    if (needsCounter)
      addStepCounter(op, args, rewriter);

    // The users move to the new results first: rebuild replaces the old
    // results, whose types changed, only where they are still used.
    SmallVector<std::pair<Value, Planned *>> oldResults;
    for (Planned &p : planned) {
      oldResults.push_back({*p.result, &p});
      *p.result = Value();
    }
    ScanOp newOp = args.rebuild(rewriter);
    Value stepsRun = newOp.getNSteps();
    if (needsCounter)
      stepsRun = finishStepCounter(newOp, args.sitsots.back(), rewriter);
    for (auto [oldResult, p] : oldResults) {
      Value kept = *p->result;
      for (tensor::DimOp dim : p->rowCounts)
        rewriter.replaceOp(dim, stepsRun);
      for (tensor::DimOp dim : p->otherDims)
        rewriter.modifyOpInPlace(
            dim, [&] { dim.getSourceMutable().assign(kept); });
      for (TailRead &read : p->reads) {
        rewriter.setInsertionPoint(read.user);
        assertInBounds(rewriter, read, stepsRun);
        Location loc = read.user->getLoc();
        Value row = arith::ConstantIndexOp::create(rewriter, loc,
                                                   p->keep - read.fromEnd);
        if (auto extract = dyn_cast<tensor::ExtractOp>(read.user)) {
          SmallVector<Value> indices(extract.getIndices());
          indices[0] = row;
          rewriter.replaceOpWithNewOp<tensor::ExtractOp>(extract, kept,
                                                         indices);
          continue;
        }
        auto slice = cast<tensor::ExtractSliceOp>(read.user);
        SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
        offsets[0] = row;
        rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
            slice, slice.getType(), kept, offsets, slice.getMixedSizes(),
            slice.getMixedStrides());
      }
      ++numKept;
    }
  }
};

} // namespace
