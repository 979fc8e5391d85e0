//===- ScanVectorizeLinalgLoops.cpp - vector inner loops for linalg -------===//
//
// LLVM's loop vectorizer gives up on most scan bodies. The state a step reads
// and the row it writes are rows of one buffer (or the init, picked at run
// time), so LLVM cannot prove that the loads and stores of `h^T W` don't
// alias: the innermost loop stays scalar and reloads `h[k]` every iteration.
// Linalg's semantics already say what LLVM cannot prove (an op's inputs are
// not written while it runs), so this pass writes the vector loop itself:
// after `scan-order-linalg-loops` has made the innermost dimension the
// contiguous one, a `linalg.generic` on buffers becomes scalar outer loops
// around a vector loop of `vector.load`/`vector.store` and a scalar
// remainder loop.
//
//===----------------------------------------------------------------------===//

#include "Scan/LinalgWork.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANVECTORIZELINALGLOOPS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// How one linalg.generic is vectorized.
struct VectorPlan {
  /// Elements per vector (a multiple of the hardware's lanes: LLVM splits
  /// wider vectors into independent registers, which gives a reduction that
  /// many accumulators).
  int64_t lanes = 0;
  /// The innermost dimension is a reduction: the output is accumulated in a
  /// vector and reduced once after the vector loop.
  bool reduction = false;
  /// Per operand: whether the innermost dimension indexes it (its last,
  /// unit-stride, dimension); the others are loaded once per outer iteration.
  SmallVector<bool> varies;
  /// How many iterations of the reduction dimension just outside a parallel
  /// innermost one run per pass over the innermost loop (1: no unrolling).
  int64_t unroll = 1;
  /// How many values of the parallel dimension outside that reduction run
  /// together, sharing the loads of operands that do not depend on it (the
  /// `U` of `x U` read once for four rows of `x`). 1: no blocking.
  int64_t rows = 1;
  /// Per operand: whether it depends on that blocked parallel dimension.
  SmallVector<bool> perRow;
};

bool isScalarElement(Type t) {
  return isa<FloatType>(t) || (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() > 1);
}

/// A body op that can run on vectors of its operands, element by element.
bool isVectorizableBodyOp(Operation &op) {
  if (isa<arith::ConstantOp>(op))
    return isScalarElement(op.getResult(0).getType()) ||
           op.getResult(0).getType().isInteger(1);
  if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()))
    return false;
  if (!op.hasTrait<OpTrait::Elementwise>() ||
      !op.hasTrait<OpTrait::Vectorizable>() || op.getNumRegions() != 0 ||
      !isMemoryEffectFree(&op))
    return false;
  auto scalar = [](Type t) { return isScalarElement(t) || t.isInteger(1); };
  return llvm::all_of(op.getOperandTypes(), scalar) &&
         llvm::all_of(op.getResultTypes(), scalar);
}

/// The reduction the innermost loop computes: `yield %out + X` (arith.addi,
/// or arith.addf allowed to reassociate) with `%out` used nowhere else.
bool isReassociableAccumulation(linalg::GenericOp op) {
  Operation *add = scan::sumIntoOutput(op);
  if (auto addf = dyn_cast_or_null<arith::AddFOp>(add))
    return bitEnumContainsAll(addf.getFastmath(),
                              arith::FastMathFlags::reassoc);
  return add != nullptr;
}

std::optional<VectorPlan> planVectorization(linalg::GenericOp op,
                                            unsigned vectorBits) {
  unsigned rank = op.getNumLoops();
  if (rank == 0 || !op.hasPureBufferSemantics())
    return std::nullopt;
  Block *body = op.getBody();
  unsigned widest = 0;
  for (Operation &inner : body->without_terminator()) {
    if (!isVectorizableBodyOp(inner))
      return std::nullopt;
    for (Type t : inner.getResultTypes())
      if (isScalarElement(t))
        widest = std::max(widest, t.getIntOrFloatBitWidth());
  }

  VectorPlan plan;
  unsigned innermost = rank - 1;
  AffineExpr innerDim = getAffineDimExpr(innermost, op.getContext());
  for (OpOperand &operand : op->getOpOperands()) {
    // A scalar input (`x` of `x ** p_i`, the map `(i) -> ()`) is the same
    // for every iteration: broadcast where a vector op uses it.
    if (op.isDpsInput(&operand) && isScalarElement(operand.get().getType())) {
      widest = std::max(widest,
                        operand.get().getType().getIntOrFloatBitWidth());
      plan.varies.push_back(false);
      continue;
    }
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !isScalarElement(type.getElementType()))
      return std::nullopt;
    widest = std::max(widest, type.getElementType().getIntOrFloatBitWidth());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation())
      return std::nullopt;
    bool varies = map.isFunctionOfDim(innermost);
    if (varies && (map.getResults().back() != innerDim ||
                   !type.isLastDimUnitStride()))
      return std::nullopt;
    plan.varies.push_back(varies);
  }
  // An input that is also the output is read after this op wrote it unless
  // each element is read and written exactly once (same indexing map, no
  // loop revisiting an output element): keep the scalar order otherwise.
  bool inputIsOutput = false;
  for (OpOperand *input : op.getDpsInputOperands())
    for (OpOperand &init : op.getDpsInitsMutable())
      if (input->get() == init.get()) {
        if (op.getMatchingIndexingMap(input) != op.getMatchingIndexingMap(&init))
          return std::nullopt;
        inputIsOutput = true;
      }

  plan.reduction =
      op.getIteratorTypesArray()[innermost] == utils::IteratorType::reduction;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (plan.varies[init.getOperandNumber()] == plan.reduction)
      return std::nullopt;
  if (plan.reduction && !isReassociableAccumulation(op))
    return std::nullopt;
  if (inputIsOutput && (plan.reduction || op.getNumReductionLoops() > 0))
    return std::nullopt;

  if (widest == 0 || vectorBits / widest < 2)
    return std::nullopt;
  // Two registers per step for parallel loops, four independent accumulators
  // for reductions (an FMA's latency is four times its throughput).
  plan.lanes = (vectorBits / widest) * (plan.reduction ? 4 : 2);

  // `out[j] += h[k] * W[k, j]`: four k per pass over j keep out[j] in
  // registers across four FMAs instead of a load and a store for each.
  if (!plan.reduction && rank >= 2 &&
      op.getIteratorTypesArray()[rank - 2] == utils::IteratorType::reduction &&
      llvm::none_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
        return op.getMatchingIndexingMap(&init).isFunctionOfDim(rank - 2);
      }))
    plan.unroll = 4;

  // `C[i, j] += A[i, k] * B[k, j]`: four rows i share each vector of B.
  for (OpOperand &operand : op->getOpOperands())
    plan.perRow.push_back(
        rank >= 3 &&
        op.getMatchingIndexingMap(&operand).isFunctionOfDim(rank - 3));
  if (plan.unroll > 1 && rank >= 3 &&
      op.getIteratorTypesArray()[rank - 3] == utils::IteratorType::parallel &&
      llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
        return plan.perRow[init.getOperandNumber()];
      }) &&
      llvm::any_of(llvm::zip(plan.varies, plan.perRow), [](auto pair) {
        return std::get<0>(pair) && !std::get<1>(pair);
      }))
    plan.rows = 4;
  return plan;
}

/// Marks a loop this pass wrote as final for LLVM (`llvm.loop.disable_nonforced`,
/// carried to the loop's latch by convert-scf-to-cf and convert-cf-to-llvm):
/// its vector loops are already as wide and as unrolled as they should be,
/// its scalar tails run fewer than a vector's lanes, and its outer loops
/// only step rows; LLVM's vectorizer, unroller and unswitching would only
/// copy them again (half of the compile time of a program with dynamic sizes
/// went there, for no speed).
scf::ForOp markFinal(scf::ForOp loop) {
  MLIRContext *context = loop.getContext();
  loop->setAttr("loop_annotation",
                LLVM::LoopAnnotationAttr::get(
                    context, BoolAttr::get(context, true), {}, {}, {}, {}, {},
                    {}, {}, {}, {}, {}, {}, {}, {}, {}));
  return loop;
}

/// Emits the loops of one linalg.generic according to `plan`.
class GenericVectorizer {
public:
  GenericVectorizer(linalg::GenericOp op, const VectorPlan &plan)
      : op(op), plan(plan) {}

  void emit(OpBuilder &b) {
    Location loc = op.getLoc();
    SmallVector<Range> ranges(
        cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc));
    for (Range r : ranges)
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
    emitLoop(b, loc, {}, /*rows=*/1, /*unroll=*/1);
  }

private:
  /// The loop over dimension `ivs.size()`, and inside it the next ones. The
  /// dimension before the innermost is stepped by `plan.unroll` (a
  /// reduction: unroll-and-jam, see emitInnermost), the one before that by
  /// `plan.rows` (independent rows sharing each vector load); each has a
  /// remainder loop of single steps.
  void emitLoop(OpBuilder &b, Location loc, SmallVector<Value> ivs,
                int64_t rows, int64_t unroll) {
    unsigned dim = ivs.size();
    unsigned rank = sizes.size();
    if (dim + 1 == rank)
      return emitInnermost(b, loc, ivs, rows, unroll);
    int64_t block = 1;
    if (dim + 2 == rank)
      block = plan.unroll;
    else if (dim + 3 == rank)
      block = plan.rows;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loopOver = [&](Value lb, Value ub, Value step, int64_t factor) {
      auto loop = scf::ForOp::create(
          b, loc, lb, ub, step, ValueRange(),
          [&](OpBuilder &ib, Location il, Value iv, ValueRange) {
            SmallVector<Value> inner(ivs);
            inner.push_back(iv);
            emitLoop(ib, il, inner, dim + 3 == rank ? factor : rows,
                     dim + 2 == rank ? factor : unroll);
            scf::YieldOp::create(ib, il);
          });
      markFinal(loop);
    };
    if (block == 1)
      return loopOver(zero, sizes[dim], one, 1);
    Value step = arith::ConstantIndexOp::create(b, loc, block);
    Value end = roundDown(b, loc, sizes[dim], step);
    loopOver(zero, end, step, block);
    loopOver(end, sizes[dim], one, 1);
  }

  static Value roundDown(OpBuilder &b, Location loc, Value size, Value step) {
    return arith::SubIOp::create(b, loc, size,
                                 arith::RemUIOp::create(b, loc, size, step));
  }

  SmallVector<Value> indices(OpOperand &operand, ValueRange ivs) {
    SmallVector<Value> result;
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults())
      result.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    return result;
  }

  /// Clones the body with `args` for its block arguments; scalar arguments
  /// and constants stay scalar and are broadcast where a vector op uses them.
  SmallVector<Value> emitBody(OpBuilder &b, Location loc, ValueRange args,
                              int64_t lanes) {
    Block *body = op.getBody();
    IRMapping mapping;
    mapping.map(body->getArguments(), args);
    auto vectorOf = [&](Value v) -> Value {
      if (lanes == 1 || isa<VectorType>(v.getType()))
        return v;
      return vector::BroadcastOp::create(
          b, loc, VectorType::get({lanes}, v.getType()), v);
    };
    for (Operation &inner : body->without_terminator()) {
      bool anyVector = llvm::any_of(inner.getOperands(), [&](Value v) {
        return isa<VectorType>(mapping.lookupOrDefault(v).getType());
      });
      if (!anyVector) {
        b.clone(inner, mapping);
        continue;
      }
      IRMapping widened;
      for (Value v : inner.getOperands())
        widened.map(v, vectorOf(mapping.lookupOrDefault(v)));
      Operation *clone = b.clone(inner, widened);
      for (OpResult r : clone->getResults())
        r.setType(VectorType::get({lanes}, r.getType()));
      mapping.map(inner.getResults(), clone->getResults());
    }
    SmallVector<Value> yielded;
    for (Value v : body->getTerminator()->getOperands())
      yielded.push_back(vectorOf(mapping.lookupOrDefault(v)));
    return yielded;
  }

  /// Scalar loads of the operands the innermost loop does not index (one
  /// per outer iteration; null for the others and for unused operands).
  SmallVector<Value> loadInvariants(OpBuilder &b, Location loc,
                                    ArrayRef<Value> ivs) {
    SmallVector<Value> invariant;
    for (OpOperand &operand : op->getOpOperands()) {
      if (plan.varies[operand.getOperandNumber()] ||
          op.getMatchingBlockArgument(&operand).use_empty()) {
        invariant.push_back(Value());
        continue;
      }
      if (!isa<MemRefType>(operand.get().getType())) {
        invariant.push_back(operand.get()); // a scalar input
        continue;
      }
      invariant.push_back(
          memref::LoadOp::create(b, loc, operand.get(), indices(operand, ivs)));
    }
    return invariant;
  }

  /// The block arguments for one (vector or scalar) iteration: varying
  /// operands are loaded at `ivs`, the others come from `invariant`;
  /// `outputs`, when given, replaces the output arguments (a chained update).
  SmallVector<Value> loadArgs(OpBuilder &b, Location loc, ValueRange ivs,
                              int64_t lanes, ArrayRef<Value> invariant,
                              ValueRange outputs = {},
                              ArrayRef<Value> sameForAllRows = {}) {
    SmallVector<Value> args;
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      if (!outputs.empty() && op.isDpsInit(&operand)) {
        args.push_back(outputs[i - op.getNumDpsInputs()]);
        continue;
      }
      if (!sameForAllRows.empty() && !plan.perRow[i]) {
        args.push_back(sameForAllRows[i]); // loaded for the first row
        continue;
      }
      if (!plan.varies[i] || op.getMatchingBlockArgument(&operand).use_empty()) {
        args.push_back(invariant[i]);
        continue;
      }
      SmallVector<Value> idx = indices(operand, ivs);
      Type element = getElementTypeOrSelf(operand.get().getType());
      if (lanes == 1)
        args.push_back(memref::LoadOp::create(b, loc, operand.get(), idx));
      else
        args.push_back(vector::LoadOp::create(
            b, loc, VectorType::get({lanes}, element), operand.get(), idx));
    }
    return args;
  }

  void storeResults(OpBuilder &b, Location loc, ValueRange ivs,
                    ValueRange values, int64_t lanes) {
    for (auto [init, value] : llvm::zip(op.getDpsInitsMutable(), values)) {
      SmallVector<Value> idx = indices(init, ivs);
      if (lanes == 1)
        memref::StoreOp::create(b, loc, value, init.get(), idx);
      else
        vector::StoreOp::create(b, loc, value, init.get(), idx);
    }
  }

  /// The innermost loop for fixed outer indices `outer` (all dimensions but
  /// the innermost). With `unroll` > 1, the last outer index is the first of
  /// `unroll` consecutive values of the reduction dimension before the
  /// innermost one, applied to each output vector one after the other, in
  /// order. With `rows` > 1, the outer index before it is the first of
  /// `rows` values of a parallel dimension, each with its own outputs.
  void emitInnermost(OpBuilder &b, Location loc, ValueRange outer,
                     int64_t rows, int64_t unroll) {
    Value size = sizes.back();
    // ivs[r][u]: the indices of update u of row r.
    SmallVector<SmallVector<SmallVector<Value>>> ivs(rows);
    SmallVector<SmallVector<SmallVector<Value>>> invariants(rows);
    auto offset = [&](Value v, int64_t by) -> Value {
      if (by == 0)
        return v;
      return arith::AddIOp::create(b, loc, v,
                                   arith::ConstantIndexOp::create(b, loc, by));
    };
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t u = 0; u < unroll; ++u) {
        SmallVector<Value> at(outer.begin(), outer.end());
        if (unroll > 1)
          at.back() = offset(at.back(), u);
        if (rows > 1)
          at[at.size() - 2] = offset(at[at.size() - 2], r);
        at.push_back(Value()); // the innermost index, set inside the loops
        invariants[r].push_back(loadInvariants(b, loc, at));
        ivs[r].push_back(std::move(at));
      }
    }

    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value lanes = arith::ConstantIndexOp::create(b, loc, plan.lanes);
    Value vectorEnd = roundDown(b, loc, size, lanes);

    if (!plan.reduction) {
      auto loopOver = [&](Value lb, Value ub, Value step, int64_t width) {
        markFinal(scf::ForOp::create(
            b, loc, lb, ub, step, ValueRange(),
            [&](OpBuilder &lb2, Location l, Value iv, ValueRange) {
              SmallVector<SmallVector<Value>> outputs(rows);
              for (int64_t u = 0; u < unroll; ++u) {
                SmallVector<Value> firstRow;
                for (int64_t r = 0; r < rows; ++r) {
                  ivs[r][u].back() = iv;
                  SmallVector<Value> args =
                      loadArgs(lb2, l, ivs[r][u], width, invariants[r][u],
                               outputs[r], firstRow);
                  if (r == 0)
                    firstRow = args;
                  outputs[r] = emitBody(lb2, l, args, width);
                }
              }
              for (int64_t r = 0; r < rows; ++r)
                storeResults(lb2, l, ivs[r][0], outputs[r], width);
              scf::YieldOp::create(lb2, l);
            }));
      };
      loopOver(arith::ConstantIndexOp::create(b, loc, 0), vectorEnd, lanes,
               plan.lanes);
      loopOver(vectorEnd, size, one, 1);
      return;
    }

    // Reduction: a vector of partial sums over the vector loop, reduced into
    // the output's value, then the remainder added one element at a time.
    SmallVector<Value> &at = ivs[0][0];
    SmallVector<Value> &invariant = invariants[0][0];
    OpOperand &init = op.getDpsInitsMutable()[0];
    Type element = getElementTypeOrSelf(init.get().getType());
    VectorType accType = VectorType::get({plan.lanes}, element);
    Attribute neutral =
        isa<FloatType>(element)
            ? Attribute(b.getFloatAttr(element, -0.0))
            : Attribute(b.getIntegerAttr(element, 0));
    Value accInit = arith::ConstantOp::create(
        b, loc, accType, DenseElementsAttr::get(accType, neutral));
    auto accumulate = [&](Value lb, Value ub, Value step, Value start,
                          int64_t width) {
      return markFinal(scf::ForOp::create(
          b, loc, lb, ub, step, ValueRange{start},
          [&](OpBuilder &lb2, Location l, Value iv, ValueRange acc) {
            at.back() = iv;
            SmallVector<Value> args =
                loadArgs(lb2, l, at, width, invariant, acc);
            scf::YieldOp::create(lb2, l, emitBody(lb2, l, args, width));
          }));
    };
    auto vectorLoop = accumulate(arith::ConstantIndexOp::create(b, loc, 0),
                                 vectorEnd, lanes, accInit, plan.lanes);
    arith::FastMathFlags flags = arith::FastMathFlags::none;
    Operation *add = op.getBody()->getTerminator()->getOperand(0).getDefiningOp();
    if (auto addf = dyn_cast<arith::AddFOp>(add))
      flags = addf.getFastmath();
    Value reduced = vector::ReductionOp::create(
        b, loc, vector::CombiningKind::ADD, vectorLoop.getResult(0),
        invariant[init.getOperandNumber()], flags);
    auto tailLoop = accumulate(vectorEnd, size, one, reduced, 1);
    at.back() = Value();
    memref::StoreOp::create(b, loc, tailLoop.getResult(0), init.get(),
                            indices(init, at));
  }

  linalg::GenericOp op;
  const VectorPlan &plan;
  /// The size of every loop dimension.
  SmallVector<Value> sizes;
};

struct ScanVectorizeLinalgLoopsPass
    : scan::impl::ScanVectorizeLinalgLoopsBase<ScanVectorizeLinalgLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      std::optional<VectorPlan> plan = planVectorization(op, vectorBits);
      if (!plan)
        continue;
      OpBuilder b(op);
      GenericVectorizer(op, *plan).emit(b);
      op.erase();
      ++(plan->reduction ? numReductions : numParallel);
    }
  }
};

} // namespace
