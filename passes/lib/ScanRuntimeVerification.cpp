//===- ScanRuntimeVerification.cpp - run-time checks of a program's ops ---===//
//
// MLIR leaves undefined what a program's ops do with run-time sizes that do
// not match (an elementwise op on tensors of different lengths) or indices
// out of bounds. `mlir_scan.compile` is a user-facing API: such a program
// must fail with an error that names the op, never read or write out of
// bounds. The upstream mechanism is RuntimeVerifiableOpInterface; this pass
// applies it to the program's own ops, before the scans are lowered, with
// located messages and one correction (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/RuntimeVerifiableOpInterface.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANRUNTIMEVERIFICATION
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// "file:line:col" of the first file location in `loc`, or "".
std::string placeOf(Location loc) {
  std::string place;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      place = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
               ":" + Twine(file.getColumn()))
                  .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return place;
}

/// `lo <= v < hi`.
Value inRange(OpBuilder &b, Location loc, Value v, Value lo, Value hi) {
  return b.createOrFold<arith::AndIOp>(
      loc, b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, v, lo),
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v, hi));
}

/// The bounds of a slice of `source`/`dest` (tensor.extract_slice /
/// tensor.insert_slice): per dimension, a size >= 0, and unless the size is
/// 0, first and last position in bounds. Upstream 22.1 checks the offset even
/// of an empty slice, which rejects valid programs (`x[5:5]` of 5 rows).
void verifySlice(OpBuilder &b, Operation *op, Value full,
                 ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                 ArrayRef<OpFoldResult> strides) {
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < offsets.size(); ++d) {
    Value offset = getValueOrCreateConstantIndexOp(b, loc, offsets[d]);
    Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
    Value stride = getValueOrCreateConstantIndexOp(b, loc, strides[d]);
    Value dim = b.createOrFold<tensor::DimOp>(loc, full, d);
    Value last = b.createOrFold<arith::AddIOp>(
        loc, offset,
        b.createOrFold<arith::MulIOp>(
            loc, b.createOrFold<arith::SubIOp>(loc, size, one), stride));
    Value empty =
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, size, zero);
    Value inside = b.createOrFold<arith::AndIOp>(
        loc, inRange(b, loc, offset, zero, dim), inRange(b, loc, last, zero, dim));
    Value ok = b.createOrFold<arith::AndIOp>(
        loc,
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, size, zero),
        b.createOrFold<arith::OrIOp>(loc, empty, inside));
    if (auto constant = getConstantIntValue(ok); constant && *constant)
      continue;
    cf::AssertOp::create(
        b, loc, ok,
        scan::locatedMessage(op, ("slice out of bounds along dimension " +
                                  Twine(d) +
                                  " (offset, size, stride against the size "
                                  "of the dimension)")
                                     .str()));
  }
}

/// `cf.assert %ok, "<location>: <what>"` before the builder's insertion
/// point, unless `ok` folded to true.
void assertAt(OpBuilder &b, Operation *op, Value ok, const Twine &what) {
  if (auto constant = getConstantIntValue(ok); constant && *constant)
    return;
  cf::AssertOp::create(b, op->getLoc(), ok,
                       scan::locatedMessage(op, what.str()));
}

Value constI64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

/// An index or signless integer as i64 (sign-extended, as MLIR reads sizes).
Value toI64(OpBuilder &b, Location loc, Value v) {
  Type i64 = b.getI64Type();
  if (v.getType().isIndex())
    return b.createOrFold<arith::IndexCastOp>(loc, i64, v);
  unsigned bits = v.getType().getIntOrFloatBitWidth();
  if (bits < 64)
    return b.createOrFold<arith::ExtSIOp>(loc, i64, v);
  if (bits > 64)
    return b.createOrFold<arith::TruncIOp>(loc, i64, v);
  return v;
}

/// Size `d` of a tensor or memref, as i64.
Value sizeOf(OpBuilder &b, Location loc, Value shaped, int64_t d) {
  Value dim = isa<TensorType>(shaped.getType())
                  ? b.createOrFold<tensor::DimOp>(loc, shaped, d)
                  : b.createOrFold<memref::DimOp>(loc, shaped, d);
  return b.createOrFold<arith::IndexCastOp>(loc, b.getI64Type(), dim);
}

/// Some sizes (i64) and what their product is: `negative` (a size < 0),
/// `zero` (a size is 0: the product is 0 and exact even if the others'
/// product would not fit), `overflow` (the product of the sizes is 2**63 or
/// more, when none is negative), `product` (wrapped: exact when neither).
struct SizeProduct {
  Value product, negative, zero, overflow;

  /// The product is the true one: no size negative, and no overflow unless
  /// a size is 0.
  Value exact(OpBuilder &b, Location loc) const {
    Value one = arith::ConstantIntOp::create(b, loc, 1, 1);
    Value fits = b.createOrFold<arith::OrIOp>(
        loc, zero, b.createOrFold<arith::XOrIOp>(loc, overflow, one));
    return b.createOrFold<arith::AndIOp>(
        loc, b.createOrFold<arith::XOrIOp>(loc, negative, one), fits);
  }
};

SizeProduct multiplySizes(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  Value zero = constI64(b, loc, 0);
  Value falseValue = arith::ConstantIntOp::create(b, loc, 0, 1);
  SizeProduct p{constI64(b, loc, 1), falseValue, falseValue, falseValue};
  for (Value size : sizes) {
    p.negative = b.createOrFold<arith::OrIOp>(
        loc, p.negative,
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, size,
                                      zero));
    p.zero = b.createOrFold<arith::OrIOp>(
        loc, p.zero,
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, size,
                                      zero));
    // Unsigned: for sizes in [0, 2**63) the product wraps exactly when the
    // high half is not 0, and is 2**63 or more when the low half is < 0.
    SmallVector<Value, 2> halves;
    b.createOrFold<arith::MulUIExtendedOp>(halves, loc, p.product, size);
    Value wrapped = b.createOrFold<arith::OrIOp>(
        loc,
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, halves[1],
                                      zero),
        b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt,
                                      halves[0], zero));
    p.overflow = b.createOrFold<arith::OrIOp>(loc, p.overflow, wrapped);
    p.product = halves[0];
  }
  return p;
}

/// tensor.expand_shape / memref.expand_shape: MLIR takes the dynamic sizes
/// of `output_shape` on trust; each group's sizes must be >= 0 and multiply
/// to the source size they split (7 elements "expanded" into 2 x 3 would
/// drop one, -1 x 3 of 6 elements would make one row).
template <typename ExpandOp>
void verifyExpandShape(OpBuilder &b, ExpandOp op) {
  Location loc = op.getLoc();
  SmallVector<OpFoldResult> outputShape = op.getMixedOutputShape();
  for (auto [j, group] : llvm::enumerate(op.getReassociationIndices())) {
    SmallVector<Value> sizes;
    for (int64_t d : group)
      sizes.push_back(b.createOrFold<arith::IndexCastOp>(
          loc, b.getI64Type(),
          getValueOrCreateConstantIndexOp(b, loc, outputShape[d])));
    SizeProduct p = multiplySizes(b, loc, sizes);
    Value same = b.createOrFold<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq, p.product,
        sizeOf(b, loc, op.getSrc(), j));
    assertAt(b, op, b.createOrFold<arith::AndIOp>(loc, p.exact(b, loc), same),
             "the output sizes of dimension " + Twine(j) +
                 " of the source do not multiply to its size (or one is "
                 "negative)");
  }
}

/// tensor.collapse_shape / memref.collapse_shape: a group's product must
/// fit in 64 bits (it can only not when another size is 0: `(2**62, 4, 0)`
/// holds no element, but `2**64` is no size).
template <typename CollapseOp>
void verifyCollapseShape(OpBuilder &b, CollapseOp op) {
  Location loc = op.getLoc();
  auto type = cast<ShapedType>(op.getSrc().getType());
  for (auto [j, group] : llvm::enumerate(op.getReassociationIndices())) {
    if (group.size() < 2 ||
        llvm::none_of(group, [&](int64_t d) { return type.isDynamicDim(d); }))
      continue; // a static product the verifier checked
    SmallVector<Value> sizes;
    for (int64_t d : group)
      sizes.push_back(sizeOf(b, loc, op.getSrc(), d));
    SizeProduct p = multiplySizes(b, loc, sizes);
    Value one = arith::ConstantIntOp::create(b, loc, 1, 1);
    assertAt(b, op, b.createOrFold<arith::XOrIOp>(loc, p.overflow, one),
             "the collapsed size of result dimension " + Twine(j) +
                 " does not fit in 64 bits");
  }
}

/// tensor.reshape / memref.reshape: the sizes in the shape operand must be
/// >= 0, match the result type's static sizes, and have as many elements
/// as the source (MLIR reads past the source otherwise: 4 elements as 3 x 3).
void verifyReshape(OpBuilder &b, Operation *op, Value source, Value shape,
                   ShapedType resultType) {
  Location loc = op->getLoc();
  SmallVector<Value> sizes;
  Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (int64_t d = 0; d < resultType.getRank(); ++d) {
    Value index = arith::ConstantIndexOp::create(b, loc, d);
    Value size = isa<TensorType>(shape.getType())
                     ? b.createOrFold<tensor::ExtractOp>(loc, shape, index)
                     : b.createOrFold<memref::LoadOp>(loc, shape, index);
    size = toI64(b, loc, size);
    sizes.push_back(size);
    if (!resultType.isDynamicDim(d))
      ok = b.createOrFold<arith::AndIOp>(
          loc, ok,
          b.createOrFold<arith::CmpIOp>(
              loc, arith::CmpIPredicate::eq, size,
              constI64(b, loc, resultType.getDimSize(d))));
  }
  SizeProduct p = multiplySizes(b, loc, sizes);
  // The source holds real elements: its wrapped product is exact (a product
  // that wraps has a factor 0, which makes it 0 anyway).
  Value elements = constI64(b, loc, 1);
  auto sourceType = cast<ShapedType>(source.getType());
  for (int64_t d = 0; d < sourceType.getRank(); ++d)
    elements = b.createOrFold<arith::MulIOp>(loc, elements,
                                             sizeOf(b, loc, source, d));
  Value same = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                             p.product, elements);
  ok = b.createOrFold<arith::AndIOp>(
      loc, ok, b.createOrFold<arith::AndIOp>(loc, p.exact(b, loc), same));
  assertAt(b, op, ok,
           "the shape operand does not have as many elements as the source "
           "(or a size is negative, or differs from the result type)");
}

/// tensor.pad: padding >= 0, and `low + size + high` must fit in 64 bits
/// (2**62 on each side of 3 elements would wrap to a negative size).
void verifyPad(OpBuilder &b, tensor::PadOp op) {
  Location loc = op.getLoc();
  SmallVector<OpFoldResult> low = op.getMixedLowPad(),
                            high = op.getMixedHighPad();
  Value zero = constI64(b, loc, 0);
  for (int64_t d = 0; d < op.getSourceType().getRank(); ++d) {
    if (!isa<Value>(low[d]) && !isa<Value>(high[d]))
      continue; // static padding the verifier checked
    auto asI64 = [&](OpFoldResult v) {
      return b.createOrFold<arith::IndexCastOp>(
          loc, b.getI64Type(), getValueOrCreateConstantIndexOp(b, loc, v));
    };
    Value lo = asI64(low[d]), hi = asI64(high[d]);
    auto nonNegative = [&](Value v) {
      return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, v,
                                           zero);
    };
    // All three terms are in [0, 2**63): each partial sum is exact as an
    // unsigned number and fits when it is not negative as a signed one.
    Value withLow = b.createOrFold<arith::AddIOp>(
        loc, sizeOf(b, loc, op.getSource(), d), lo);
    Value padded = b.createOrFold<arith::AddIOp>(loc, withLow, hi);
    Value ok = b.createOrFold<arith::AndIOp>(
        loc, b.createOrFold<arith::AndIOp>(loc, nonNegative(lo), nonNegative(hi)),
        b.createOrFold<arith::AndIOp>(loc, nonNegative(withLow),
                                      nonNegative(padded)));
    assertAt(b, op, ok,
             "padding of dimension " + Twine(d) +
                 " is negative or the padded size does not fit in 64 bits");
  }
}

//===----------------------------------------------------------------------===//
// Integer division: a zero divisor, or the signed minimum divided by -1,
// makes the x86 division instruction trap (SIGFPE kills the process).
//===----------------------------------------------------------------------===//

/// Whether `cond` being false implies `v != value`: `cond` is
/// `arith.cmpi eq, v, value` or an `arith.ori` of conditions one of which
/// implies it (the graph builder's guard of `//` and `%`).
bool falseExcludes(Value cond, Value v, int64_t value) {
  if (auto cmp = cond.getDefiningOp<arith::CmpIOp>()) {
    if (cmp.getPredicate() != arith::CmpIPredicate::eq)
      return false;
    for (auto [x, c] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                        std::pair(cmp.getRhs(), cmp.getLhs())})
      if (x == v)
        if (std::optional<int64_t> k = getConstantIntValue(c))
          return *k == value;
    return false;
  }
  if (auto any = cond.getDefiningOp<arith::OrIOp>())
    return falseExcludes(any.getLhs(), v, value) ||
           falseExcludes(any.getRhs(), v, value);
  return false;
}

/// Whether `divisor` is never `value` (0, or -1 for the signed overflow): a
/// constant other than it, or `select %c, %a, %b` where `%a` is such a
/// constant and `%c` false excludes it for `%b` (the builder's
/// `select(y == 0 or y == -1, 1, y)`).
bool neverEquals(Value divisor, int64_t value) {
  if (std::optional<int64_t> k = getConstantIntValue(divisor))
    return *k != value;
  if (auto select = divisor.getDefiningOp<arith::SelectOp>())
    return neverEquals(select.getTrueValue(), value) &&
           (neverEquals(select.getFalseValue(), value) ||
            falseExcludes(select.getCondition(), select.getFalseValue(),
                          value));
  return false;
}

/// Checks before an integer division or remainder on scalars (elementwise
/// ones on tensors are scalar ops in linalg bodies by now).
void verifyDivision(OpBuilder &b, Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Type type = rhs.getType();
  if (!type.isSignlessIntOrIndex())
    return; // vectors: not checked (see the pass description)
  Location loc = op->getLoc();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  if (!neverEquals(rhs, 0))
    assertAt(b, op,
             b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, rhs,
                                           zero),
             "integer division by zero");
  if (!isa<arith::DivSIOp, arith::RemSIOp, arith::CeilDivSIOp,
           arith::FloorDivSIOp>(op) ||
      neverEquals(rhs, -1))
    return;
  unsigned bits = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  if (bits == 1)
    return; // i1: -1 / -1 is the only case and does not trap
  TypedAttr minimum =
      type.isIndex()
          ? TypedAttr(b.getIndexAttr(std::numeric_limits<int64_t>::min()))
          : TypedAttr(b.getIntegerAttr(type, APInt::getSignedMinValue(bits)));
  if (std::optional<int64_t> k = getConstantIntValue(lhs);
      k && *k != getConstantIntValue(minimum))
    return;
  Value minusOne = arith::ConstantOp::create(
      b, loc,
      type.isIndex() ? TypedAttr(b.getIndexAttr(-1))
                     : TypedAttr(b.getIntegerAttr(type, -1)));
  Value overflows = b.createOrFold<arith::AndIOp>(
      loc,
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lhs,
                                    arith::ConstantOp::create(b, loc, minimum)),
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rhs,
                                    minusOne));
  assertAt(b, op,
           b.createOrFold<arith::XOrIOp>(
               loc, overflows, arith::ConstantIntOp::create(b, loc, 1, 1)),
           "signed integer division overflows (the minimum value divided by "
           "-1)");
}

/// A `tensor.dim`/`memref.dim` of `shaped`'s dimension `d` that comes before
/// `at` in its block or an enclosing one (so it dominates `at`), or null.
Value existingDim(Value shaped, int64_t d, Operation *at) {
  for (Operation *user : shaped.getUsers()) {
    std::optional<int64_t> index;
    if (auto dim = dyn_cast<tensor::DimOp>(user);
        dim && dim.getSource() == shaped)
      index = dim.getConstantIndex();
    else if (auto dim = dyn_cast<memref::DimOp>(user);
             dim && dim.getSource() == shaped)
      index = dim.getConstantIndex();
    if (index != d)
      continue;
    for (Operation *ancestor = at; ancestor;
         ancestor = ancestor->getParentOp())
      if (ancestor->getBlock() == user->getBlock() &&
          user->isBeforeInBlock(ancestor))
        return user->getResult(0);
  }
  return {};
}

/// Checks of a linalg op whose indexing maps take every operand dimension
/// from one loop or a constant (elementwise ops, broadcasts, transposes,
/// matrix products: nearly every linalg op of a program), with the upstream
/// model's semantics in fewer ops: unless a loop is empty, each such
/// dimension equals its loop's size (the first operand dimension that is that
/// loop, as `createLoopRanges` takes it), and a constant position `c` is
/// inside its dimension (`c + 1 <= size`). A dimension that is its loop's own
/// size, or two equal static sizes, needs no check. The upstream model also
/// asserts that `min(0, size - 1) >= 0` and compares `max(0, size - 1) + 1`
/// with the size for every dimension, which no canonicalization folds: it made
/// the checks most of the ops of a large program (834 of the 944 assertions of
/// the LSTM tutorial's training step). Returns false, having built nothing,
/// for other maps (`d0 + d1`, ...), which keep the upstream model.
bool verifyStructuredOp(OpBuilder &b, linalg::LinalgOp op) {
  llvm::SmallBitVector sized(op.getNumLoops());
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr result : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(result)) {
        sized.set(dim.getPosition());
        continue;
      }
      auto constant = dyn_cast<AffineConstantExpr>(result);
      if (!constant || constant.getValue() < 0)
        return false;
    }
  if (!sized.all())
    return false; // a loop no operand dimension sizes: the upstream model's
  Location loc = op.getLoc();
  // Every operand's sizes, created once (the loop sizes are some of them).
  SmallVector<SmallVector<OpFoldResult>> sizes;
  SmallVector<OpFoldResult> loops(op.getNumLoops());
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<OpFoldResult> &operandSizes = sizes.emplace_back();
    for (auto [d, result] : llvm::enumerate(map.getResults())) {
      // The very values the sizes were computed from where the IR has them
      // (a `tensor.empty`'s sizes, the usual init of a result; a dimension
      // read before), so that equal sizes are seen equal here.
      Value shaped = operand.get();
      auto empty = shaped.getDefiningOp<tensor::EmptyOp>();
      if (empty)
        operandSizes.push_back(empty.getMixedSizes()[d]);
      else if (Value dim = existingDim(shaped, d, op))
        operandSizes.push_back(dim);
      else
        operandSizes.push_back(linalg::createFoldedDimOp(b, loc, shaped, d));
      if (auto dim = dyn_cast<AffineDimExpr>(result);
          dim && !loops[dim.getPosition()])
        loops[dim.getPosition()] = operandSizes.back();
    }
  }

  // Whether some loop is empty (no element is accessed then), built once and
  // only if a check needs it.
  Value anyEmpty;
  bool anyEmptyBuilt = false;
  auto orEmpty = [&](Value ok) -> Value {
    if (!anyEmptyBuilt) {
      anyEmptyBuilt = true;
      for (OpFoldResult size : loops) {
        if (std::optional<int64_t> n = getConstantIntValue(size); n && *n > 0)
          continue;
        Value empty = b.createOrFold<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq,
            getValueOrCreateConstantIndexOp(b, loc, size),
            arith::ConstantIndexOp::create(b, loc, 0));
        anyEmpty = anyEmpty
                       ? b.createOrFold<arith::OrIOp>(loc, anyEmpty, empty)
                       : empty;
      }
    }
    return anyEmpty ? b.createOrFold<arith::OrIOp>(loc, anyEmpty, ok) : ok;
  };
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    unsigned number = operand.getOperandNumber();
    for (auto [d, result] : llvm::enumerate(map.getResults())) {
      OpFoldResult size = sizes[number][d];
      Value ok;
      if (auto dim = dyn_cast<AffineDimExpr>(result)) {
        OpFoldResult loop = loops[dim.getPosition()];
        if (isEqualConstantIntOrValue(size, loop))
          continue;
        ok = b.createOrFold<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq,
            getValueOrCreateConstantIndexOp(b, loc, size),
            getValueOrCreateConstantIndexOp(b, loc, loop));
      } else {
        int64_t position = cast<AffineConstantExpr>(result).getValue();
        if (std::optional<int64_t> n = getConstantIntValue(size);
            n && *n > position)
          continue;
        ok = b.createOrFold<arith::CmpIOp>(
            loc, arith::CmpIPredicate::sgt,
            getValueOrCreateConstantIndexOp(b, loc, size),
            arith::ConstantIndexOp::create(b, loc, position));
      }
      assertAt(b, op, orEmpty(ok),
               "dimension #" + Twine(d) + " of input/output operand #" +
                   Twine(number) +
                   " is incompatible with inferred dimension size");
    }
  }
  return true;
}

bool isIntegerDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
             arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op);
}

/// The ops this pass checks itself (no upstream model, or a wrong one).
bool hasOwnCheck(Operation *op) {
  return isa<tensor::InsertSliceOp, tensor::ReshapeOp, memref::ReshapeOp,
             tensor::ExpandShapeOp, memref::ExpandShapeOp,
             tensor::CollapseShapeOp, memref::CollapseShapeOp, tensor::PadOp>(
             op) ||
         isIntegerDivision(op);
}

struct ScanRuntimeVerificationPass
    : scan::impl::ScanRuntimeVerificationBase<ScanRuntimeVerificationPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    // Elementwise ops on tensors become linalg, whose operand sizes are then
    // checked against each other (without folding: see genericizeFoldHazards).
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseToLinalgConversionPatterns(patterns);
    walkAndApplyPatterns(root, FrozenRewritePatternSet(std::move(patterns)));

    SmallVector<Operation *> ops;
    root->walk([&](Operation *op) {
      if (isa<RuntimeVerifiableOpInterface>(op) || hasOwnCheck(op))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        verifySlice(b, op, slice.getSource(), slice.getMixedOffsets(),
                    slice.getMixedSizes(), slice.getMixedStrides());
      } else if (auto slice = dyn_cast<tensor::InsertSliceOp>(op)) {
        verifySlice(b, op, slice.getDest(), slice.getMixedOffsets(),
                    slice.getMixedSizes(), slice.getMixedStrides());
      } else if (auto reshape = dyn_cast<tensor::ReshapeOp>(op)) {
        verifyReshape(b, op, reshape.getSource(), reshape.getShape(),
                      reshape.getResult().getType());
      } else if (auto reshape = dyn_cast<memref::ReshapeOp>(op)) {
        verifyReshape(b, op, reshape.getSource(), reshape.getShape(),
                      reshape.getResult().getType());
      } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        verifyExpandShape(b, expand);
      } else if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
        // (replaces the upstream model, which only checks that a source
        // size divides by the group's static sizes)
        verifyExpandShape(b, expand);
      } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
        verifyCollapseShape(b, collapse);
      } else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op)) {
        verifyCollapseShape(b, collapse);
      } else if (auto pad = dyn_cast<tensor::PadOp>(op)) {
        verifyPad(b, pad);
      } else if (isIntegerDivision(op)) {
        verifyDivision(b, op);
      } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
                 linalgOp && verifyStructuredOp(b, linalgOp)) {
        // (the upstream model's checks, in fewer ops)
      } else {
        cast<RuntimeVerifiableOpInterface>(op).generateRuntimeVerification(
            b, op->getLoc(), scan::locatedMessage);
      }
      ++numVerified;
    }
    // Upstream models assert conditions that are often statically true.
    root->walk([](cf::AssertOp op) {
      if (matchPattern(op.getArg(), m_One()))
        op.erase();
    });
  }
};

} // namespace

std::string mlir::scan::locatedMessage(Operation *op, StringRef what) {
  std::string place = placeOf(op->getLoc());
  if (place.empty())
    return (op->getName().getStringRef() + ": " + what).str();
  return place + ": " + what.str();
}
