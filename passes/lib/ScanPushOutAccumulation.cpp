//===- ScanPushOutAccumulation.cpp - sums of outer products as one matmul -===//
//
// PyTensor's push-out of the gradient accumulations of a scan: a sitsot
// matrix `acc` of which only the final value is used (`keep = 1`), updated
// as `acc + outer(a_t, b_t)`, is the sum over the steps of rank-1 products,
// that is `init + A^T B` for the stacked `a_t` (rows of A) and `b_t` (rows
// of B). The scan stacks `a_t` and `b_t` as two nitsot outputs instead, and
// one contraction over the rows after the loop, computed into the init, gives
// the final value. The loop then no longer reads and writes the whole matrix
// every step (`dW += outer(h_{t-1}, delta_t)` of an RNN's gradient).
//
// Recognized updates (`col` has shape [M] or [M, 1], `row` [N] or [1, N]):
//   * `linalg.matmul ins(col, row) outs(acc)`;
//   * an elementwise add (`arith.addf`, or a `linalg.generic` adding two
//     identically indexed inputs) of `acc` and a product that is a
//     `linalg.matmul ins(col, row)` into zeros or a `linalg.generic`
//     multiplying `col` broadcast along rows with `row` broadcast along
//     columns;
//   * one `linalg.generic` computing `acc + col * row` with those maps.
// Integer accumulations are exact; floating-point sums are reassociated.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANPUSHOUTACCUMULATION
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// The two per-step factors of a rank-1 product.
struct OuterFactors {
  Value col; // [M] or [M, 1]
  Value row; // [N] or [1, N]
  /// A unit-stride slice taken of the product (the builder clips operands
  /// to the sizes it checked): the factors are sliced alike.
  tensor::ExtractSliceOp clip;
};

bool hasStaticSize(Value v, unsigned dim, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getDimSize(dim) == size;
}

/// A value whose elements are a product's column factor: [M] or [M, 1].
bool isColumnShaped(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && (type.getRank() == 1 ||
                  (type.getRank() == 2 && hasStaticSize(v, 1, 1)));
}

/// A value whose elements are a product's row factor: [N] or [1, N].
bool isRowShaped(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && (type.getRank() == 1 ||
                  (type.getRank() == 2 && hasStaticSize(v, 0, 1)));
}

/// The map of a 2-loop generic's operand that reads `v` along loop `loop`
/// only: `(d0, d1) -> (d_loop)` for rank 1, with a leading or trailing
/// constant 0 for the unit dimension of rank 2.
bool readsAlong(AffineMap map, Value v, unsigned loop) {
  MLIRContext *ctx = map.getContext();
  AffineExpr d = getAffineDimExpr(loop, ctx), zero = getAffineConstantExpr(0, ctx);
  auto rank = cast<RankedTensorType>(v.getType()).getRank();
  if (map.getNumDims() != 2 || map.getNumSymbols() != 0)
    return false;
  if (rank == 1)
    return map.getResults() == ArrayRef<AffineExpr>{d};
  SmallVector<AffineExpr> expected =
      loop == 0 ? SmallVector<AffineExpr>{d, zero}
                : SmallVector<AffineExpr>{zero, d};
  return map.getResults() == ArrayRef<AffineExpr>(expected);
}

bool isAdd(Operation *op) { return isa_and_present<arith::AddFOp, arith::AddIOp>(op); }
bool isMul(Operation *op) { return isa_and_present<arith::MulFOp, arith::MulIOp>(op); }

/// The input number of `v` when it is an input's block argument of `generic`.
std::optional<unsigned> inputArg(linalg::GenericOp generic, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != generic.getBody() ||
      arg.getArgNumber() >= generic.getNumDpsInputs())
    return std::nullopt;
  return arg.getArgNumber();
}

/// The value `generic` yields, when it is an all-parallel generic with one
/// output over two loops whose output map is the identity.
Value yieldedScalar(linalg::GenericOp generic) {
  if (generic.getNumDpsInits() != 1 || generic.getNumLoops() != 2 ||
      generic.getNumParallelLoops() != 2 ||
      !generic.getIndexingMapsArray().back().isIdentity())
    return {};
  return cast<linalg::YieldOp>(generic.getBody()->getTerminator()).getOperand(0);
}

/// `col` and `row` when `mul` (in `generic`'s body) multiplies the elements
/// of an input read along rows with one read along columns.
std::optional<OuterFactors> matchScalarProduct(linalg::GenericOp generic,
                                               Value mul) {
  Operation *op = mul.getDefiningOp();
  if (!isMul(op) || op->getBlock() != generic.getBody())
    return std::nullopt;
  std::optional<unsigned> x = inputArg(generic, op->getOperand(0));
  std::optional<unsigned> y = inputArg(generic, op->getOperand(1));
  if (!x || !y || *x == *y)
    return std::nullopt;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  Value vx = generic.getDpsInputs()[*x], vy = generic.getDpsInputs()[*y];
  for (auto [c, r, cm, rm] : {std::tuple{vx, vy, maps[*x], maps[*y]},
                              std::tuple{vy, vx, maps[*y], maps[*x]}})
    if (isColumnShaped(c) && isRowShaped(r) && readsAlong(cm, c, 0) &&
        readsAlong(rm, r, 1))
      return OuterFactors{c, r};
  return std::nullopt;
}

/// `linalg.matmul ins(col [M, 1], row [1, N])` with the default maps.
std::optional<OuterFactors> matchMatmulFactors(linalg::MatmulOp matmul) {
  if (matmul.hasUserDefinedMaps() || !matmul.hasPureTensorSemantics())
    return std::nullopt;
  Value a = matmul.getDpsInputs()[0], b = matmul.getDpsInputs()[1];
  if (!hasStaticSize(a, 1, 1) || !hasStaticSize(b, 0, 1))
    return std::nullopt;
  return OuterFactors{a, b};
}

/// Whether `v` is all zeros (a fill of a zero constant).
bool isZeros(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
                  matchPattern(fill.getInputs()[0], m_Zero()));
}

std::optional<OuterFactors> matchProduct(Value product);

/// A unit-stride, rank-preserving slice of a rank-1 product is the product
/// of the factors' slices.
std::optional<OuterFactors> matchClippedProduct(tensor::ExtractSliceOp slice) {
  if (slice.getSourceType().getRank() != 2 ||
      slice.getResultType().getRank() != 2 || !slice.hasUnitStride())
    return std::nullopt;
  std::optional<OuterFactors> factors = matchProduct(slice.getSource());
  if (!factors || factors->clip)
    return std::nullopt;
  factors->clip = slice;
  return factors;
}

/// A rank-1 product: a matmul of a column and a row into zeros, or a
/// generic multiplying them (or a slice of one).
std::optional<OuterFactors> matchProduct(Value product) {
  if (auto slice = product.getDefiningOp<tensor::ExtractSliceOp>())
    return matchClippedProduct(slice);
  if (auto matmul = product.getDefiningOp<linalg::MatmulOp>()) {
    if (!isZeros(matmul.getDpsInits()[0]))
      return std::nullopt;
    return matchMatmulFactors(matmul);
  }
  auto generic = product.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 2)
    return std::nullopt;
  Value yielded = yieldedScalar(generic);
  if (!yielded)
    return std::nullopt;
  return matchScalarProduct(generic, yielded);
}

/// The term added to `acc` by an elementwise add, or null.
Value addedTerm(Value update, Value acc) {
  Operation *def = update.getDefiningOp();
  if (isAdd(def) && isa<RankedTensorType>(update.getType())) {
    if (def->getOperand(0) == acc)
      return def->getOperand(1);
    if (def->getOperand(1) == acc)
      return def->getOperand(0);
    return {};
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(def);
  if (!generic || generic.getNumDpsInputs() != 2)
    return {};
  Value yielded = yieldedScalar(generic);
  Operation *add = yielded ? yielded.getDefiningOp() : nullptr;
  if (!isAdd(add) || add->getBlock() != generic.getBody())
    return {};
  std::optional<unsigned> x = inputArg(generic, add->getOperand(0));
  std::optional<unsigned> y = inputArg(generic, add->getOperand(1));
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!x || !y || *x == *y || !maps[0].isIdentity() || !maps[1].isIdentity())
    return {};
  ValueRange ins = generic.getDpsInputs();
  if (ins[0] == acc)
    return ins[1];
  if (ins[1] == acc)
    return ins[0];
  return {};
}

/// Whether `v` (in `generic`'s body) is the element of `acc`: an input read
/// with the identity map, or the output when `acc` is the destination.
bool isAccumulatorElement(linalg::GenericOp generic, Value v, Value acc) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != generic.getBody())
    return false;
  OpOperand *operand = generic.getMatchingOpOperand(arg);
  return operand->get() == acc &&
         generic.getMatchingIndexingMap(operand).isIdentity();
}

/// `acc + col * row` computed by one generic over (row, column): `acc` an
/// input, or the destination (`outs(acc)`, accumulating into it).
std::optional<OuterFactors> matchFusedUpdate(linalg::GenericOp generic,
                                             Value acc) {
  unsigned inputs = generic.getNumDpsInputs();
  if (inputs != 3 && !(inputs == 2 && generic.getDpsInits()[0] == acc))
    return std::nullopt;
  Value yielded = yieldedScalar(generic);
  Operation *add = yielded ? yielded.getDefiningOp() : nullptr;
  if (!isAdd(add) || add->getBlock() != generic.getBody())
    return std::nullopt;
  for (unsigned k = 0; k < 2; ++k) {
    if (!isAccumulatorElement(generic, add->getOperand(k), acc))
      continue;
    std::optional<OuterFactors> factors =
        matchScalarProduct(generic, add->getOperand(1 - k));
    // (the accumulator must not also be a factor)
    if (factors && factors->col != acc && factors->row != acc)
      return factors;
  }
  return std::nullopt;
}

/// The factors when `update` is `acc + outer(col, row)`.
std::optional<OuterFactors> matchAccumulation(Value update, Value acc) {
  if (auto matmul = update.getDefiningOp<linalg::MatmulOp>()) {
    if (matmul.getDpsInits()[0] != acc)
      return std::nullopt;
    return matchMatmulFactors(matmul);
  }
  if (auto generic = update.getDefiningOp<linalg::GenericOp>())
    if (std::optional<OuterFactors> fused = matchFusedUpdate(generic, acc))
      return fused;
  Value term = addedTerm(update, acc);
  if (!term)
    return std::nullopt;
  return matchProduct(term);
}

/// `factor` (a column for `dim` 0, a row for 1) sliced as `clip` slices
/// their product, created right after `clip`.
Value sliceFactor(OpBuilder &b, Value factor, tensor::ExtractSliceOp clip,
                  unsigned dim) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(clip);
  Location loc = clip.getLoc();
  auto type = cast<RankedTensorType>(factor.getType());
  OpFoldResult offset = clip.getMixedOffsets()[dim];
  OpFoldResult size = clip.getMixedSizes()[dim];
  SmallVector<OpFoldResult> offsets{offset}, sizes{size},
      strides(type.getRank(), b.getIndexAttr(1));
  if (type.getRank() == 2) {
    // the unit dimension stays whole
    offsets.insert(offsets.begin() + (1 - dim), b.getIndexAttr(0));
    sizes.insert(sizes.begin() + (1 - dim), b.getIndexAttr(1));
  }
  return tensor::ExtractSliceOp::create(b, loc, factor, offsets, sizes, strides);
}

/// The map reading stacked factor rows `[T, M]` / `[T, M, 1]` (or `[T, 1, N]`)
/// in the contraction over (i, j, t).
AffineMap stackedMap(MLIRContext *ctx, Value stacked, unsigned loop) {
  AffineExpr t = getAffineDimExpr(2, ctx), d = getAffineDimExpr(loop, ctx);
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  SmallVector<AffineExpr> results{t};
  if (cast<RankedTensorType>(stacked.getType()).getRank() == 2)
    results.push_back(d);
  else if (loop == 0)
    results.append({d, zero});
  else
    results.append({zero, d});
  return AffineMap::get(3, 0, results, ctx);
}

/// `init + A^T B` over the stacked rows, computed into `init`.
Value emitContraction(OpBuilder &b, Location loc, Value init, Value a,
                      Value bRows) {
  MLIRContext *ctx = b.getContext();
  AffineMap out = AffineMap::get(
      3, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
  SmallVector<AffineMap> maps{stackedMap(ctx, a, 0), stackedMap(ctx, bRows, 1),
                              out};
  SmallVector<utils::IteratorType> iterators{utils::IteratorType::parallel,
                                             utils::IteratorType::parallel,
                                             utils::IteratorType::reduction};
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(init.getType()));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{a, bRows},
      ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product, sum;
        if (isFloat) {
          product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
          sum = arith::AddFOp::create(nb, nloc, args[2], product);
        } else {
          product = arith::MulIOp::create(nb, nloc, args[0], args[1]);
          sum = arith::AddIOp::create(nb, nloc, args[2], product);
        }
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

/// After at least one step, the stacked factors' element counts must be the
/// accumulator's sizes (the loop's update would otherwise have failed or
/// read out of bounds): the call fails like a mismatched state row.
void emitFactorChecks(OpBuilder &b, Location loc, Value init, Value a,
                      Value bRows, int64_t item) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value steps = tensor::DimOp::create(b, loc, a, 0);
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, steps, zero);
  for (auto [stacked, dim] : {std::pair{a, 0}, std::pair{bRows, 1}}) {
    auto type = cast<RankedTensorType>(stacked.getType());
    unsigned along = type.getRank() == 2 || dim == 0 ? 1 : 2;
    auto initType = cast<RankedTensorType>(init.getType());
    if (!type.isDynamicDim(along) && !initType.isDynamicDim(dim))
      continue; // (static sizes: the verifier compared them)
    Value have = tensor::DimOp::create(b, loc, stacked, along);
    Value need = tensor::DimOp::create(b, loc, init, dim);
    Value differs =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, have, need);
    if (auto module = init.getParentRegion()
                          ->getParentOp()
                          ->getParentOfType<ModuleOp>())
      declareScanErrorRuntime(module);
    emitScanErrorIf(b, loc, arith::AndIOp::create(b, loc, ran, differs),
                    ScanErrorCode::RowSizeMismatch, item, have, need);
  }
}

struct ScanPushOutAccumulationPass
    : scan::impl::ScanPushOutAccumulationBase<ScanPushOutAccumulationPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (ScanOp op : collectScans(getOperation()))
      while (std::optional<ScanOp> next = pushOutOne(op, rewriter))
        op = *next;
  }

  /// Pushes out one accumulation; the rebuilt scan if it did.
  std::optional<ScanOp> pushOutOne(ScanOp op, IRRewriter &rewriter) {
    ScanArgs args(op);
    for (unsigned i = 0; i < args.sitsots.size(); ++i) {
      ScanArgs::State s = args.sitsots[i];
      auto accType = dyn_cast<RankedTensorType>(s.inner[0].getType());
      if (s.keep != 1 || !accType || accType.getRank() != 2 ||
          !accType.getElementType().isIntOrFloat())
        continue;
      Value acc = s.inner[0];
      std::optional<OuterFactors> factors = matchAccumulation(s.yield, acc);
      if (!factors || !s.yield.hasOneUse() ||
          !llvm::all_of(acc.getUsers(), [&](Operation *user) {
            return user == s.yield.getDefiningOp() || isa<tensor::DimOp>(user);
          }))
        continue;
      Type element = accType.getElementType();
      if (getElementTypeOrSelf(factors->col.getType()) != element ||
          getElementTypeOrSelf(factors->row.getType()) != element ||
          factors->col == acc || factors->row == acc)
        continue;
      rewrite(op, args, i, *factors, rewriter);
      ++numPushedOut;
      return args.op;
    }
    return std::nullopt;
  }

  /// Replaces sitsot `i` by two nitsots stacking the factors and the
  /// contraction after the loop. `args.op` is the new scan afterwards.
  void rewrite(ScanOp op, ScanArgs &args, unsigned i, OuterFactors factors,
               IRRewriter &rewriter) {
    Location loc = op.getLoc();
    ScanArgs::State s = args.sitsots[i];
    if (factors.clip) {
      factors.col = sliceFactor(rewriter, factors.col, factors.clip, 0);
      factors.row = sliceFactor(rewriter, factors.row, factors.clip, 1);
    }
    int64_t item = cast<OpResult>(s.result).getResultNumber();
    auto resultType = cast<RankedTensorType>(s.result.getType());
    // The accumulator stays readable as a non-sequence holding the init
    // (for its sizes); its update loses its only user and is erased.
    args.sitsots.erase(args.sitsots.begin() + i);
    args.nonSequences.push_back({s.outer, s.inner[0]});
    int64_t rows = stackedRows(op.getStaticNumSteps(), op.getUntil(), 0);
    auto stackedType = [&](Value row) {
      auto type = cast<RankedTensorType>(row.getType());
      SmallVector<int64_t> shape{rows};
      llvm::append_range(shape, type.getShape());
      return RankedTensorType::get(shape, type.getElementType());
    };
    unsigned first = args.nitsots.size();
    args.nitsots.push_back({factors.col, Value(), stackedType(factors.col), 0});
    args.nitsots.push_back({factors.row, Value(), stackedType(factors.row), 0});
    // The old result is replaced after the rebuild (which erases `op`),
    // through a placeholder.
    rewriter.setInsertionPoint(op);
    auto placeholder = UnrealizedConversionCastOp::create(
        rewriter, loc, TypeRange{s.result.getType()}, ValueRange{});
    rewriter.replaceAllUsesWith(s.result, placeholder.getResult(0));
    ScanOp newOp = args.rebuild(rewriter);
    args.op = newOp;

    rewriter.setInsertionPointAfter(newOp);
    Value a = args.nitsots[first].result, b = args.nitsots[first + 1].result;
    emitFactorChecks(rewriter, loc, s.outer, a, b, item);
    Value sum = emitContraction(rewriter, loc, s.outer, a, b);
    // keep = 1: the result is the one final row.
    SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1)};
    llvm::append_range(sizes, tensor::getMixedSizes(rewriter, loc, sum));
    auto expandedType = RankedTensorType::get(
        {1, cast<RankedTensorType>(sum.getType()).getDimSize(0),
         cast<RankedTensorType>(sum.getType()).getDimSize(1)},
        resultType.getElementType());
    SmallVector<ReassociationIndices> reassociation{{0, 1}, {2}};
    Value result = tensor::ExpandShapeOp::create(rewriter, loc, expandedType,
                                                 sum, reassociation, sizes);
    if (result.getType() != resultType)
      result = tensor::CastOp::create(rewriter, loc, resultType, result);
    rewriter.replaceAllUsesWith(placeholder.getResult(0), result);
    rewriter.eraseOp(placeholder);
  }
};

} // namespace
