//===- RowBlockFusion.cpp - Producers and consumers of a scan's rows ------===//

#include "Scan/RowBlockFusion.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::scan;

/// A linalg op on tensors with one result whose loops map plainly onto its
/// operands' dimensions (projected permutations), without `linalg.index`:
/// slicing an operand dimension is slicing one loop.
static bool hasPlainLoops(linalg::LinalgOp op) {
  return op.hasPureTensorSemantics() && op->getNumResults() == 1 &&
         !op.hasIndexSemantics() &&
         llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
           return map.isProjectedPermutation();
         });
}

/// The parallel loop computing dimension `dim` of `op`'s result, if any.
static std::optional<unsigned> parallelLoopOfResultDim(linalg::LinalgOp op,
                                                       unsigned dim) {
  AffineMap map = op.getIndexingMapMatchingResult(op->getResult(0));
  auto expr = dyn_cast<AffineDimExpr>(map.getResult(dim));
  if (!expr ||
      op.getIteratorTypesArray()[expr.getPosition()] !=
          utils::IteratorType::parallel)
    return std::nullopt;
  return expr.getPosition();
}

/// The dimension of `operand` that loop `loop` indexes, if any.
static std::optional<unsigned> operandDimOfLoop(linalg::LinalgOp op,
                                                OpOperand &operand,
                                                unsigned loop) {
  if (!isa<RankedTensorType>(operand.get().getType()))
    return std::nullopt;
  return op.getMatchingIndexingMap(&operand).getResultPosition(
      getAffineDimExpr(loop, op->getContext()));
}

/// `tensor.dim` and `tensor.rank` read only the shape, which the value's
/// producer knows without computing it.
static bool isShapeQuery(Operation *op) {
  return isa<tensor::DimOp, tensor::RankOp>(op);
}

/// Whether every user of `v` but its shape queries is `user`.
static bool onlyReadBy(Value v, Operation *user) {
  return llvm::all_of(v.getUsers(), [&](Operation *other) {
    return other == user || isShapeQuery(other);
  });
}

/// Makes the shape queries of `v`, the result of a destination-passing op,
/// read its destination instead (as canonicalization would).
static void queryDestination(RewriterBase &rewriter, OpResult v) {
  auto dps = cast<DestinationStyleOpInterface>(v.getOwner());
  Value init = dps.getTiedOpOperand(v)->get();
  OpBuilder::InsertionGuard guard(rewriter);
  for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
    if (!isShapeQuery(user))
      continue;
    rewriter.setInsertionPoint(user);
    if (auto dim = dyn_cast<tensor::DimOp>(user))
      rewriter.replaceOp(dim, tensor::DimOp::create(rewriter, dim.getLoc(),
                                                    init, dim.getIndex()));
    else
      rewriter.replaceOp(user, tensor::RankOp::create(rewriter,
                                                      user->getLoc(), init));
  }
}

bool mlir::scan::isRowTileableProducer(Value v, Operation *scan) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getBlock() != scan->getBlock() || !hasPlainLoops(op) ||
      !parallelLoopOfResultDim(op, 0))
    return false;
  return onlyReadBy(v, scan);
}

static Value sliceAlong(OpBuilder &b, Location loc, Value v, unsigned dim,
                        OpFoldResult offset, OpFoldResult size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = offset;
  sizes[dim] = size;
  return extractSliceOrEmpty(b, loc, v, offsets, sizes, strides);
}

Value mlir::scan::tileAlong(RewriterBase &b, Location loc, Value v,
                            unsigned dim, OpFoldResult offset,
                            OpFoldResult size, bool recompute) {
  // A tile of an empty tensor is an empty tensor of the tile's sizes, however
  // many ops use the whole one (a producer's fill and its generic's `outs`
  // often share it): a slice of it would bufferize to a view of an
  // allocation of all the rows (W5's 8 MiB `x U + b` at H = 1024, where the
  // blocks need 64 rows).
  if (auto empty = v.getDefiningOp<tensor::EmptyOp>()) {
    SmallVector<OpFoldResult> sizes = empty.getMixedSizes();
    sizes[dim] = size;
    return tensor::EmptyOp::create(b, loc, sizes,
                                   empty.getType().getElementType());
  }
  Operation *def = v.getDefiningOp();
  if (def && (recompute || llvm::count_if(v.getUsers(), [](Operation *user) {
                             return !isShapeQuery(user);
                           }) == 1)) {
    auto op = v.getDefiningOp<linalg::LinalgOp>();
    std::optional<unsigned> loop;
    if (op && hasPlainLoops(op))
      loop = parallelLoopOfResultDim(op, dim);
    if (loop) {
      // (the op is recomputed by blocks: nothing may need it whole)
      queryDestination(b, cast<OpResult>(v));
      SmallVector<Value> operands;
      for (OpOperand &operand : op->getOpOperands()) {
        std::optional<unsigned> d = operandDimOfLoop(op, operand, *loop);
        operands.push_back(d ? tileAlong(b, loc, operand.get(), *d, offset,
                                         size)
                             : operand.get());
      }
      Value init = operands[op.getDpsInits().getBeginOperandIndex()];
      return clone(b, op.getOperation(), TypeRange{init.getType()}, operands)
          ->getResult(0);
    }
  }
  return sliceAlong(b, loc, v, dim, offset, size);
}

/// Whether `op`'s body is `yield(out + x)` with `out` read nowhere else: the
/// result is the init plus a sum, so the sum can be split into parts.
static bool accumulatesBySum(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  Value out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getValues()[0].getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) || !out.hasOneUse() ||
      *out.getUsers().begin() != add)
    return false;
  return true;
}

/// Whether `op`, after a scan, may run before it: it reads and writes no
/// memory, cannot trap, and can only go out of bounds in the ways the row
/// sums guard at run time (a slice out of its source: `sliceInBounds`; a
/// generic whose operands disagree: `guardExtents`).
static bool isHoistable(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>())
    return true;
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
          arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op)) {
    APInt divisor;
    return matchPattern(op->getOperand(1), m_ConstantInt(&divisor)) &&
           divisor.isStrictlyPositive();
  }
  if (isa<arith::ArithDialect>(op->getDialect()))
    return op->getNumRegions() == 0 && isMemoryEffectFree(op);
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    return index && type && *index >= 0 && *index < type.getRank();
  }
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    // (only a cast that forgets sizes: one that claims them could be wrong)
    auto from = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto to = dyn_cast<RankedTensorType>(cast.getType());
    if (!from || !to)
      return false;
    for (int64_t d = 0; d < to.getRank(); ++d)
      if (!to.isDynamicDim(d) && from.isDynamicDim(d))
        return false;
    return true;
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    if (slice.getType().getRank() != slice.getSourceType().getRank())
      return false;
    return llvm::all_of(slice.getMixedStrides(), [](OpFoldResult stride) {
      std::optional<int64_t> s = getConstantIntValue(stride);
      return s && (*s == 1 || *s == -1);
    });
  }
  if (isa<tensor::EmptyOp, linalg::FillOp>(op))
    return true;
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (!hasPlainLoops(cast<linalg::LinalgOp>(op)))
      return false;
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(generic.getRegion(), captured);
    return captured.empty() &&
           llvm::all_of(generic.getRegion().front(), [](Operation &inner) {
             return isMemoryEffectFree(&inner) && inner.getNumRegions() == 0;
           });
  }
  return false;
}

/// Whether every loop of `op` gets one extent from `operands` (its operands,
/// or the ones it will run with), `skip` aside: an i1.
static Value extentsAgree(OpBuilder &b, Location loc, linalg::LinalgOp op,
                          ValueRange operands, std::optional<unsigned> skip) {
  SmallVector<Value> extent(op.getNumLoops());
  Value agree = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (auto [operand, value] : llvm::zip(op->getOpOperands(), operands)) {
    if (!isa<RankedTensorType>(value.getType()))
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [d, expr] : llvm::enumerate(map.getResults())) {
      unsigned loop = cast<AffineDimExpr>(expr).getPosition();
      if (skip && loop == *skip)
        continue;
      Value size = tensor::DimOp::create(b, loc, value, d);
      if (!extent[loop]) {
        extent[loop] = size;
        continue;
      }
      agree = arith::AndIOp::create(
          b, loc, agree,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                extent[loop], size));
    }
  }
  return agree;
}

void mlir::scan::guardExtents(RewriterBase &rewriter, linalg::GenericOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value agree = extentsAgree(rewriter, loc, cast<linalg::LinalgOp>(*op),
                             op->getOperands(), std::nullopt);
  auto ifAgree = scf::IfOp::create(rewriter, loc, op->getResultTypes(), agree,
                                   /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(ifAgree.thenBlock());
  Operation *computed = rewriter.clone(*op);
  scf::YieldOp::create(rewriter, loc, computed->getResults());
  rewriter.setInsertionPointToStart(ifAgree.elseBlock());
  scf::YieldOp::create(rewriter, loc, ValueRange(op.getDpsInits()));
  rewriter.replaceOp(op, ifAgree.getResults());
}

/// Whether rows [offset, offset + size) lie in `have` rows: an i1.
static Value rangeInBounds(OpBuilder &b, Location loc, Value offset,
                           Value size, Value have) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto require = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    inside = arith::AndIOp::create(
        b, loc, inside, arith::CmpIOp::create(b, loc, predicate, lhs, rhs));
  };
  require(arith::CmpIPredicate::sge, offset, zero);
  require(arith::CmpIPredicate::sge, size, zero);
  require(arith::CmpIPredicate::sle, offset, have);
  require(arith::CmpIPredicate::sle, size,
          arith::SubIOp::create(b, loc, have, offset));
  return inside;
}

Value mlir::scan::sliceInBounds(OpBuilder &b, Location loc,
                                tensor::ExtractSliceOp slice) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto require = [&](Value condition) {
    ok = arith::AndIOp::create(b, loc, ok, condition);
  };
  auto cmp = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, loc, predicate, lhs, rhs).getResult();
  };
  for (int64_t d = 0; d < slice.getSourceType().getRank(); ++d) {
    Value offset =
        getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[d]);
    Value size =
        getValueOrCreateConstantIndexOp(b, loc, slice.getMixedSizes()[d]);
    Value have = tensor::DimOp::create(b, loc, slice.getSource(), d);
    Value empty = cmp(arith::CmpIPredicate::eq, size, zero);
    Value inside;
    if (getConstantIntValue(slice.getMixedStrides()[d]) == 1) {
      inside = rangeInBounds(b, loc, offset, size, have);
    } else {
      // rows offset, offset - 1, ..., offset - size + 1
      inside = arith::AndIOp::create(
          b, loc,
          arith::AndIOp::create(b, loc,
                                cmp(arith::CmpIPredicate::slt, offset, have),
                                cmp(arith::CmpIPredicate::sge, size, zero)),
          cmp(arith::CmpIPredicate::slt,
              arith::SubIOp::create(
                  b, loc, size, arith::ConstantIndexOp::create(b, loc, 1)),
              arith::AddIOp::create(
                  b, loc, offset, arith::ConstantIndexOp::create(b, loc, 1))));
    }
    require(arith::OrIOp::create(
        b, loc, arith::AndIOp::create(b, loc, empty,
                                      cmp(arith::CmpIPredicate::sge, size, zero)),
        inside));
  }
  return ok;
}

/// The row loop of a row-sum consumer reading the slice as operand `operand`.
static std::optional<unsigned> rowSumLoop(linalg::GenericOp op,
                                          OpOperand &operand) {
  auto linalgOp = cast<linalg::LinalgOp>(op.getOperation());
  if (!hasPlainLoops(linalgOp) || op.getNumDpsInits() != 1 ||
      !op.isDpsInput(&operand) || !accumulatesBySum(op))
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (map.getNumResults() == 0)
    return std::nullopt;
  auto expr = dyn_cast<AffineDimExpr>(map.getResult(0));
  if (!expr ||
      op.getIteratorTypesArray()[expr.getPosition()] !=
          utils::IteratorType::reduction ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0))
          .getResultPosition(expr))
    return std::nullopt;
  return expr.getPosition();
}

void mlir::scan::foldShapeQueries(RewriterBase &rewriter, Value rows) {
  OpBuilder::InsertionGuard guard(rewriter);
  auto foldRanks = [&](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    for (Operation *user : llvm::make_early_inc_range(v.getUsers()))
      if (auto rank = dyn_cast<tensor::RankOp>(user)) {
        rewriter.setInsertionPoint(rank);
        rewriter.replaceOp(rank, arith::ConstantIndexOp::create(
                                     rewriter, rank.getLoc(), type.getRank()));
      }
  };
  foldRanks(rows);
  for (Operation *user : llvm::make_early_inc_range(rows.getUsers())) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || slice.getType().getRank() != slice.getSourceType().getRank())
      continue;
    foldRanks(slice);
    SmallVector<linalg::GenericOp> readers;
    for (Operation *sliceUser : llvm::make_early_inc_range(slice->getUsers())) {
      if (auto dim = dyn_cast<tensor::DimOp>(sliceUser)) {
        std::optional<int64_t> d = dim.getConstantIndex();
        if (d && *d >= 0 && *d < slice.getType().getRank()) {
          rewriter.setInsertionPoint(dim);
          rewriter.replaceOp(dim, getValueOrCreateConstantIndexOp(
                                      rewriter, dim.getLoc(),
                                      slice.getMixedSizes()[*d]));
        }
      } else if (auto generic = dyn_cast<linalg::GenericOp>(sliceUser)) {
        readers.push_back(generic);
      }
    }
    // The sizes of what the readers compute (and of what computes into
    // their results after them) are those of their destinations.
    while (!readers.empty()) {
      linalg::GenericOp reader = readers.pop_back_val();
      if (reader->getNumResults() != 1)
        continue;
      OpResult result = reader->getResult(0);
      queryDestination(rewriter, result);
      for (Operation *user : result.getUsers())
        if (auto next = dyn_cast<linalg::GenericOp>(user);
            next && next.getNumDpsInits() == 1 &&
            next.getDpsInits()[0] == result)
          readers.push_back(next);
    }
  }
}

std::optional<RowSumFusion> mlir::scan::analyzeRowSums(ScanOp op,
                                                       unsigned result) {
  RowSumFusion fusion;
  fusion.result = result;
  Value rows = op.getResult(result);
  Block *block = op->getBlock();
  for (OpOperand &use : rows.getUses()) {
    Operation *user = use.getOwner();
    if (auto dim = dyn_cast<tensor::DimOp>(user)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      if (!index || *index < 0 ||
          *index >= cast<RankedTensorType>(rows.getType()).getRank())
        return std::nullopt;
      fusion.dims.push_back(dim);
      continue;
    }
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || slice->getBlock() != block || !slice.hasUnitStride() ||
        slice.getType().getRank() != slice.getSourceType().getRank() ||
        !slice->hasOneUse())
      return std::nullopt;
    OpOperand &read = *slice->getUses().begin();
    auto generic = dyn_cast<linalg::GenericOp>(read.getOwner());
    if (!generic || generic->getBlock() != block)
      return std::nullopt;
    std::optional<unsigned> loop = rowSumLoop(generic, read);
    if (!loop)
      return std::nullopt;
    fusion.consumers.push_back(
        {generic, slice, read.getOperandNumber(), *loop, 0});
  }
  if (fusion.consumers.empty())
    return std::nullopt;

  // Chains: a consumer whose init is another consumer's result adds to the
  // same accumulator; that result must have no other use.
  llvm::DenseMap<Operation *, unsigned> indexOf;
  for (auto [i, c] : llvm::enumerate(fusion.consumers))
    indexOf[c.op] = i;
  auto initOf = [](RowSumConsumer c) {
    return c.op.getDpsInits()[0];
  };
  auto previous = [&](RowSumConsumer c) -> std::optional<unsigned> {
    auto it = indexOf.find(initOf(c).getDefiningOp());
    if (it == indexOf.end())
      return std::nullopt;
    return it->second;
  };
  llvm::DenseMap<unsigned, unsigned> next;
  for (auto [i, c] : llvm::enumerate(fusion.consumers))
    if (std::optional<unsigned> p = previous(c)) {
      if (!fusion.consumers[*p].op->hasOneUse() || next.count(*p))
        return std::nullopt;
      next[*p] = i;
    }
  for (auto [i, c] : llvm::enumerate(fusion.consumers)) {
    if (previous(c))
      continue;
    unsigned acc = fusion.accInits.size();
    fusion.accInits.push_back(initOf(c));
    unsigned last = i;
    fusion.consumers[i].accumulator = acc;
    for (auto it = next.find(last); it != next.end(); it = next.find(last)) {
      last = it->second;
      fusion.consumers[last].accumulator = acc;
    }
    fusion.accResults.push_back(fusion.consumers[last].op->getResult(0));
  }
  // (a cycle of consumers has no first one)
  unsigned chained = 0;
  for (auto [i, c] : llvm::enumerate(fusion.consumers))
    chained += previous(c) ? 1 : 0;
  if (chained + fusion.accInits.size() != fusion.consumers.size())
    return std::nullopt;

  // What the consumers read besides the rows must be computable before the
  // scan: ops after it are moved, if they are free of side effects and read
  // no result of the scan but the nitsot's sizes.
  llvm::SmallPtrSet<Operation *, 8> fused, dims;
  for (const RowSumConsumer &c : fusion.consumers) {
    fused.insert(c.op);
    fused.insert(c.slice);
  }
  for (tensor::DimOp dim : fusion.dims)
    dims.insert(dim);
  llvm::SetVector<Operation *> hoisted;
  // Adds to `into` what computing `values` before the scan moves; false if
  // that cannot be done.
  auto hoist = [&](SmallVector<Value> worklist,
                   llvm::SetVector<Operation *> &into) {
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != block || def->isBeforeInBlock(op) ||
          dims.contains(def) || hoisted.contains(def) || into.contains(def))
        continue;
      if (def == op || fused.contains(def) || !isHoistable(def))
        return false;
      into.insert(def);
      llvm::append_range(worklist, def->getOperands());
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(def->getRegions(), captured);
      llvm::append_range(worklist, captured);
    }
    return true;
  };
  SmallVector<Value> needed;
  for (RowSumConsumer c : fusion.consumers) {
    for (OpOperand &operand : c.op->getOpOperands())
      if (operand.getOperandNumber() != c.sliceOperand &&
          !(c.op.isDpsInit(&operand) && previous(c)))
        needed.push_back(operand.get());
    llvm::append_range(needed, c.slice.getOffsets());
    llvm::append_range(needed, c.slice.getSizes());
  }
  if (!hoist(needed, hoisted))
    return std::nullopt;
  fusion.hoisted.assign(hoisted.begin(), hoisted.end());
  llvm::sort(fusion.hoisted, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return fusion;
}

/// An index value outside `op` equal to `size` inside its body at every
/// step: a constant, a non-sequence, or a size of a non-sequence.
static std::optional<OpFoldResult> invariantSize(OpBuilder &b, ScanOp op,
                                                 Value size) {
  Location loc = op.getLoc();
  APInt constant;
  if (matchPattern(size, m_ConstantInt(&constant)))
    return OpFoldResult(b.getIndexAttr(constant.getSExtValue()));
  if (Value v = outerNonSequence(op, size))
    return OpFoldResult(v);
  if (auto dim = size.getDefiningOp<tensor::DimOp>()) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (Value source = outerNonSequence(op, dim.getSource()); source && index)
      return OpFoldResult(
          tensor::DimOp::create(b, loc, source, *index).getResult());
  }
  return std::nullopt;
}

std::optional<SmallVector<OpFoldResult>>
mlir::scan::invariantRowSizes(OpBuilder &b, ScanOp op, Value yielded) {
  auto type = dyn_cast<RankedTensorType>(yielded.getType());
  if (!type)
    return std::nullopt;
  // The destination the row is computed into determines its sizes.
  Value v = destinationRoot(yielded);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      continue;
    }
    Value size;
    if (auto empty = v.getDefiningOp<tensor::EmptyOp>())
      size = empty.getDynamicSize(d);
    else if (auto alloc = v.getDefiningOp<bufferization::AllocTensorOp>();
             alloc && !alloc.getCopy())
      size = alloc.getDynamicSize(b, d);
    if (!size)
      return std::nullopt;
    std::optional<OpFoldResult> outside = invariantSize(b, op, size);
    if (!outside)
      return std::nullopt;
    sizes.push_back(*outside);
  }
  return sizes;
}

Value mlir::scan::accumulateBlock(OpBuilder &b, Location loc,
                                  RowSumConsumer c, Value acc,
                                  Value block, Value blockStart,
                                  Value blockRows, Value valid) {
  auto linalgOp = cast<linalg::LinalgOp>(c.op.getOperation());
  tensor::ExtractSliceOp slice = c.slice;
  Value first =
      getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[0]);
  Value count =
      getValueOrCreateConstantIndexOp(b, loc, slice.getMixedSizes()[0]);
  // The partners bound the rows too (a mismatch fails the consumer's own
  // size check after the loop; nothing is read out of bounds before it).
  for (OpOperand &operand : c.op->getOpOperands()) {
    if (operand.getOperandNumber() == c.sliceOperand)
      continue;
    if (std::optional<unsigned> d = operandDimOfLoop(linalgOp, operand,
                                                     c.rowLoop))
      count = arith::MinSIOp::create(
          b, loc, count, tensor::DimOp::create(b, loc, operand.get(), *d));
  }
  // Rows [lo, hi) of the nitsot are in both the block and the slice.
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value lo = arith::MaxSIOp::create(b, loc, blockStart, first);
  Value hi = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, blockStart, blockRows),
      arith::AddIOp::create(b, loc, first, count));
  Value rows = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, hi, lo), zero);
  Value some =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, rows, zero);
  Value inBlock = arith::SelectOp::create(
      b, loc, some, arith::SubIOp::create(b, loc, lo, blockStart), zero);
  Value inSlice = arith::SelectOp::create(
      b, loc, some, arith::SubIOp::create(b, loc, lo, first), zero);

  SmallVector<Value> operands;
  for (OpOperand &operand : c.op->getOpOperands()) {
    if (operand.getOperandNumber() == c.sliceOperand) {
      SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
      SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
      SmallVector<OpFoldResult> strides = slice.getMixedStrides();
      offsets[0] = inBlock;
      sizes[0] = rows;
      operands.push_back(
          extractSliceOrEmpty(b, loc, block, offsets, sizes, strides));
    } else if (c.op.isDpsInit(&operand)) {
      operands.push_back(acc);
    } else if (std::optional<unsigned> d =
                   operandDimOfLoop(linalgOp, operand, c.rowLoop)) {
      operands.push_back(
          sliceAlong(b, loc, operand.get(), *d, inSlice, rows));
    } else {
      operands.push_back(operand.get());
    }
  }
  // The other loops' extents must agree, the slice's other dimensions lie
  // in the rows, and the moved slices in their sources (the program's own
  // checks say so after the loop when they do not): otherwise this block
  // adds nothing rather than touch memory out of bounds.
  Value consistent =
      arith::AndIOp::create(b, loc, valid,
                            extentsAgree(b, loc, linalgOp, operands, c.rowLoop));
  for (int64_t d = 1; d < slice.getType().getRank(); ++d)
    consistent = arith::AndIOp::create(
        b, loc, consistent,
        rangeInBounds(
            b, loc,
            getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[d]),
            getValueOrCreateConstantIndexOp(b, loc, slice.getMixedSizes()[d]),
            tensor::DimOp::create(b, loc, block, d)));
  auto ifConsistent = scf::IfOp::create(b, loc, TypeRange{acc.getType()},
                                        consistent, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifConsistent.thenBlock());
  Value sum =
      clone(b, c.op.getOperation(), TypeRange{acc.getType()}, operands)
          ->getResult(0);
  scf::YieldOp::create(b, loc, sum);
  b.setInsertionPointToStart(ifConsistent.elseBlock());
  scf::YieldOp::create(b, loc, acc);
  return ifConsistent.getResult(0);
}
