//===- RowBatching.cpp - Apply per-step body ops to all rows at once ------===//

#include "Scan/RowBatching.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::scan;

/// The indexing map of a batched operand: the row dimension d0 in front of
/// the op's own dimensions, shifted by one.
static AffineMap withRowDim(AffineMap map) {
  AffineMap shifted = map.shiftDims(1);
  return shifted.insertResult(getAffineDimExpr(0, map.getContext()), 0);
}

bool RowBatcher::canBatch(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  // A rank-0 tensor row (`linalg.dot` into `tensor<f32>`) has no stacked
  // form: stacked, its rows would be scalars, not `tensor<f32>`.
  if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
    if (t.getRank() == 0)
      return false;
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return op->hasTrait<OpTrait::Elementwise>() && op->getNumRegions() == 0 &&
           !op->hasTrait<OpTrait::ConstantLike>();
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics())
    return false;
  bool usesIndex = false;
  op->walk([&](linalg::IndexOp) { usesIndex = true; });
  return !usesIndex;
}

LogicalResult RowBatcher::batch(Operation *op) {
  if (isa<linalg::GenericOp>(op))
    return batchLinalg(op);
  if (auto named = dyn_cast<linalg::LinalgOp>(op))
    return batchNamed(named);
  if (op->hasTrait<OpTrait::Elementwise>())
    return batchElementwise(op);
  return failure();
}

Value RowBatcher::emptyRows(Type rowType, Value like) {
  auto rowTensor = dyn_cast<RankedTensorType>(rowType);
  SmallVector<OpFoldResult> sizes{getAsOpFoldResult(rows)};
  if (rowTensor)
    for (int64_t d = 0; d < rowTensor.getRank(); ++d) {
      if (!rowTensor.isDynamicDim(d)) {
        sizes.push_back(rewriter.getIndexAttr(rowTensor.getDimSize(d)));
        continue;
      }
      // Dynamic row sizes come from a batched value with the same rows.
      sizes.push_back(
          tensor::DimOp::create(rewriter, loc, like, d + 1).getResult());
    }
  return tensor::EmptyOp::create(rewriter, loc, sizes,
                                 getElementTypeOrSelf(rowType));
}

Value RowBatcher::emptyRowsLike(tensor::EmptyOp empty) {
  RankedTensorType type = empty.getType();
  SmallVector<OpFoldResult> sizes{getAsOpFoldResult(rows)};
  unsigned next = 0;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
      continue;
    }
    Value size = empty.getDynamicSizes()[next++];
    if (isInvariant(size))
      sizes.push_back(invariant.lookup(size));
    else if (std::optional<int64_t> c = getConstantIntValue(size))
      sizes.push_back(rewriter.getIndexAttr(*c));
    else
      return Value();
  }
  return tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType());
}

LogicalResult RowBatcher::batchElementwise(Operation *op) {
  Type rowType = op->getResult(0).getType();
  auto rowTensor = dyn_cast<RankedTensorType>(rowType);
  unsigned rank = 1 + (rowTensor ? rowTensor.getRank() : 0);
  MLIRContext *ctx = op->getContext();

  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  Value like;
  for (Value operand : op->getOperands()) {
    if (isBatched(operand)) {
      inputs.push_back(lookupBatched(operand));
      if (rowTensor && !isa<RankedTensorType>(operand.getType())) {
        // A scalar row operand of a tensor op (the condition of
        // `arith.select %c, %a, %b : tensor<...>`): one value per row.
        maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(0, ctx)));
        continue;
      }
      maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
      like = inputs.back();
      continue;
    }
    if (!isInvariant(operand))
      return failure();
    inputs.push_back(invariant.lookup(operand));
    if (isa<RankedTensorType>(operand.getType())) {
      // A tensor the same in every row: drop the row dimension.
      SmallVector<AffineExpr> dims;
      for (unsigned d = 1; d < rank; ++d)
        dims.push_back(getAffineDimExpr(d, ctx));
      maps.push_back(AffineMap::get(rank, 0, dims, ctx));
    } else {
      maps.push_back(AffineMap::get(rank, 0, {}, ctx)); // a broadcast scalar
    }
  }
  // Without a batched operand of the result's shape, the rows' dynamic
  // sizes are unknown.
  if (!llvm::any_of(op->getOperands(), [&](Value v) { return isBatched(v); }) ||
      (!like && rowTensor && !rowTensor.hasStaticShape()))
    return failure();
  Value init = emptyRows(rowType, like);
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  // The batched op keeps the body op's location: a run-time check of it
  // (generate-runtime-verification) names the user's op.
  auto generic = linalg::GenericOp::create(
      rewriter, op->getLoc(), init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &b, Location nested, ValueRange args) {
        OperationState state(nested, op->getName());
        state.addOperands(args.drop_back());
        state.addTypes(getElementTypeOrSelf(rowType));
        state.addAttributes(op->getAttrs());
        Operation *scalar = b.create(state);
        linalg::YieldOp::create(b, nested, scalar->getResult(0));
      });
  mapBatched(op->getResult(0), generic.getResult(0));
  return success();
}

LogicalResult RowBatcher::batchNamed(linalg::LinalgOp op) {
  // The generic form of a clone (same operands, next to `op`) is the
  // template; `op` itself stays as it is, whether batching succeeds or not.
  OpBuilder::InsertPoint outside = rewriter.saveInsertionPoint();
  rewriter.setInsertionPoint(op);
  Operation *clone = rewriter.clone(*op);
  FailureOr<linalg::GenericOp> generic =
      linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(clone));
  rewriter.restoreInsertionPoint(outside);
  if (failed(generic)) {
    rewriter.eraseOp(clone);
    return failure();
  }
  LogicalResult result = batchLinalg(*generic);
  if (succeeded(result))
    for (auto [named, general] :
         llvm::zip(op->getResults(), generic->getResults()))
      mapBatched(named, lookupBatched(general));
  rewriter.eraseOp(*generic);
  return result;
}

Value RowBatcher::batchedDestination(Value inner) {
  if (isBatched(inner))
    return lookupBatched(inner);
  // A fill of an empty tensor: fill all rows directly.
  if (auto fill = inner.getDefiningOp<linalg::FillOp>()) {
    Value value = fill.getInputs()[0];
    auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
    Value rowsEmpty = empty ? emptyRowsLike(empty) : Value();
    if (rowsEmpty &&
        (isInvariant(value) || matchPattern(value, m_Constant()))) {
      Value outerValue = isInvariant(value)
                             ? invariant.lookup(value)
                             : rewriter.clone(*value.getDefiningOp())->getResult(0);
      return linalg::FillOp::create(rewriter, loc, outerValue, rowsEmpty)
          .getResult(0);
    }
    if (rowsEmpty)
      rewriter.eraseOp(rowsEmpty.getDefiningOp());
  }
  if (auto empty = inner.getDefiningOp<tensor::EmptyOp>())
    if (Value rowsEmpty = emptyRowsLike(empty))
      return rowsEmpty;
  if (!isInvariant(inner))
    return Value();
  auto rowType = dyn_cast<RankedTensorType>(inner.getType());
  if (!rowType)
    return Value();
  // Dynamic sizes: those of the invariant value itself.
  SmallVector<OpFoldResult> sizes{getAsOpFoldResult(rows)};
  for (int64_t d = 0; d < rowType.getRank(); ++d)
    sizes.push_back(rowType.isDynamicDim(d)
                        ? OpFoldResult(tensor::DimOp::create(
                              rewriter, loc, invariant.lookup(inner), d)
                                           .getResult())
                        : OpFoldResult(
                              rewriter.getIndexAttr(rowType.getDimSize(d))));
  Value rowsEmpty = tensor::EmptyOp::create(rewriter, loc, sizes,
                                            rowType.getElementType());
  return linalg::BroadcastOp::create(rewriter, loc, invariant.lookup(inner),
                                     rowsEmpty, ArrayRef<int64_t>{0})
      ->getResult(0);
}

LogicalResult RowBatcher::batchLinalg(Operation *op) {
  auto generic = cast<linalg::GenericOp>(op);
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(generic.getRegion(), captured);
  if (!llvm::all_of(captured, [&](Value v) { return isInvariant(v); }))
    return failure();

  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> maps;
  bool anyBatched = false;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(input);
    if (isBatched(input->get())) {
      inputs.push_back(lookupBatched(input->get()));
      maps.push_back(withRowDim(map));
      anyBatched = true;
    } else if (isInvariant(input->get())) {
      inputs.push_back(invariant.lookup(input->get()));
      maps.push_back(map.shiftDims(1));
    } else {
      return failure();
    }
  }
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    Value destination = batchedDestination(init.get());
    if (!destination)
      return failure();
    anyBatched |= isBatched(init.get());
    outputs.push_back(destination);
    maps.push_back(withRowDim(generic.getMatchingIndexingMap(&init)));
  }
  if (!anyBatched)
    return failure();

  SmallVector<utils::IteratorType> iterators{utils::IteratorType::parallel};
  llvm::append_range(iterators, generic.getIteratorTypesArray());
  auto batchedOp = linalg::GenericOp::create(
      rewriter, op->getLoc(), ValueRange(outputs).getTypes(), inputs, outputs,
      maps,
      iterators);
  IRMapping captures;
  for (Value v : captured)
    captures.map(v, invariant.lookup(v));
  rewriter.cloneRegionBefore(generic.getRegion(), batchedOp.getRegion(),
                             batchedOp.getRegion().end(), captures);
  for (auto [oldResult, newResult] :
       llvm::zip(generic.getResults(), batchedOp.getResults()))
    mapBatched(oldResult, newResult);
  return success();
}
