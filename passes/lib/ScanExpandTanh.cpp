//===- ScanExpandTanh.cpp - tanh as vectorizable arithmetic ---------------===//
//
// `tanh` is the activation of every RNN step. Lowered as usual it is a libm
// call per element (LLVM has no vector `exp`), which costs as much as the
// step's matrix-vector product at hidden sizes around 128. Here it becomes
// plain arithmetic that works on vectors: a polynomial near zero and
// `1 - 2 / (exp(2|x|) + 1)` elsewhere, with `exp` reduced to a polynomial
// and a power of two, in the value's own precision (f32 or f64, within 2 ulp).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANEXPANDTANH
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// The constants of the expansion for one precision.
struct TanhParameters {
  /// Below this |x|: x * P(x^2), P a least-squares fit of tanh(x)/x.
  double small;
  ArrayRef<double> tanhOverX;
  /// Beyond this |x|, tanh(x) rounds to +-1.
  double saturated;
  /// ln 2 split into a part with trailing zero bits (k * ln2Hi is exact for
  /// the k used here) and the rest.
  double ln2Hi, ln2Lo;
  /// exp(r) on |r| <= ln(2)/2: Taylor terms up to r^expDegree.
  int expDegree;
  /// 2^k is built from its bits: (k + bias) << mantissaBits.
  unsigned intWidth, mantissaBits;
  int64_t bias;
};

/// f64: relative error 2e-16 for the polynomial, 1.5e-16 for exp(r).
constexpr double kTanhOverXF64[] = {
    1.0,
    -0.3333333333333263,
    0.13333333333247405,
    -0.05396825392680268,
    0.021869487500911576,
    -0.008863220229781175,
    0.0035919840707635013,
    -0.001454936778320557,
    0.0005862540956088113,
    -0.00022845333652258255,
    7.703206652785811e-05,
    -1.6023079478560803e-05,
};
const TanhParameters kF64{0.625, kTanhOverXF64, 20.0, 0.693147180369123816490,
                          1.90821492927058770002e-10, 13, 64, 52, 1023};

/// f32: 1.4 ulp for the polynomial (on |x| < 0.9, where the other branch
/// loses more to cancellation), 1 ulp for the exp branch.
constexpr double kTanhOverXF32[] = {
    1.0,
    -0.33333316445350647,
    0.13332921266555786,
    -0.0539260096848011,
    0.02165387012064457,
    -0.008249289356172085,
    0.0025703853461891413,
    -0.0004514949396252632,
};
const TanhParameters kF32{0.9, kTanhOverXF32, 9.5, 0.693145751953125,
                          1.428606765330187e-06, 7, 32, 23, 127};

constexpr double kLog2E = 1.4426950408889634;

/// Builds values of one float type (scalar or vector), splatting constants.
struct Builder {
  OpBuilder &b;
  Location loc;
  Type type;
  const TanhParameters &params;

  Type element() const { return getElementTypeOrSelf(type); }
  Type intType() const {
    Type i = b.getIntegerType(params.intWidth);
    if (auto v = dyn_cast<VectorType>(type))
      return v.clone(i);
    return i;
  }
  Value constant(double value) const {
    return constantOf(type, b.getFloatAttr(element(), value));
  }
  Value intConstant(int64_t value) const {
    return constantOf(intType(), b.getIntegerAttr(b.getIntegerType(params.intWidth), value));
  }
  Value constantOf(Type t, TypedAttr scalar) const {
    if (auto v = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc, v,
                                       DenseElementsAttr::get(v, scalar));
    return arith::ConstantOp::create(b, loc, t, scalar);
  }
  Value add(Value x, Value y) const { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) const { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) const { return arith::MulFOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value z) const {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  /// c[0] + c[1] x + c[2] x^2 + ..., by Horner's rule.
  Value polynomial(Value x, ArrayRef<double> c) const {
    Value acc = constant(c.back());
    for (double coefficient : llvm::reverse(c.drop_back()))
      acc = fma(acc, x, constant(coefficient));
    return acc;
  }
};

/// exp(y) for y in [0, 2 * saturated]: y = k ln2 + r, exp(y) = 2^k exp(r).
Value expOfBounded(const Builder &f, Value y) {
  OpBuilder &b = f.b;
  Value k = math::RoundEvenOp::create(b, f.loc, f.mul(y, f.constant(kLog2E)));
  Value r = f.fma(k, f.constant(-f.params.ln2Hi), y);
  r = f.fma(k, f.constant(-f.params.ln2Lo), r);
  SmallVector<double> taylor;
  double term = 1.0;
  for (int i = 0; i <= f.params.expDegree; ++i) {
    taylor.push_back(term);
    term /= i + 1;
  }
  Value expR = f.polynomial(r, taylor);
  // 2^k from its bit pattern: the biased exponent above the mantissa.
  Value kInt = arith::FPToSIOp::create(b, f.loc, f.intType(), k);
  Value biased =
      arith::AddIOp::create(b, f.loc, kInt, f.intConstant(f.params.bias));
  Value bits = arith::ShLIOp::create(b, f.loc, biased,
                                     f.intConstant(f.params.mantissaBits));
  Value twoToK = arith::BitcastOp::create(b, f.loc, f.type, bits);
  return f.mul(expR, twoToK);
}

/// tanh of an f32/f64 scalar or vector.
Value expandTanh(OpBuilder &b, Location loc, Value x,
                 const TanhParameters &params) {
  Builder f{b, loc, x.getType(), params};
  Value ax = math::AbsFOp::create(b, loc, x);

  Value small = f.mul(x, f.polynomial(f.mul(x, x), params.tanhOverX));

  // minnumf turns a NaN into the bound, so the integer conversion in exp
  // never sees a NaN; the NaN comes back through the last select.
  Value y = arith::MinNumFOp::create(b, loc, f.add(ax, ax),
                                     f.constant(2 * params.saturated));
  Value e = expOfBounded(f, y);
  Value large =
      f.sub(f.constant(1.0), arith::DivFOp::create(b, loc, f.constant(2.0),
                                                   f.add(e, f.constant(1.0))));
  large = math::CopySignOp::create(b, loc, large, x);

  Value isSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, ax,
                                        f.constant(params.small));
  Value result = arith::SelectOp::create(b, loc, isSmall, small, large);
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, isNaN, x, result);
}

/// The parameters of `op`'s expansion here, or null for an element type
/// this pass leaves to upstream's expansion.
const TanhParameters *parametersFor(math::TanhOp op) {
  Type element = getElementTypeOrSelf(op.getType());
  return element.isF64() ? &kF64 : element.isF32() ? &kF32 : nullptr;
}

struct ScanExpandTanhPass
    : scan::impl::ScanExpandTanhBase<ScanExpandTanhPass> {
  void runOnOperation() override {
    // The tanh ops are collected in one walk and rewritten in place, with no
    // pattern driver: the greedy driver's folding of every op of a large
    // function was most of this pass's time, tanh or not.
    SmallVector<std::pair<math::TanhOp, const TanhParameters *>> ours;
    SmallVector<Operation *> others;
    getOperation()->walk([&](math::TanhOp op) {
      if (!isa<FloatType, VectorType>(op.getType()))
        return; // tensors: the elementwise-to-linalg conversion's
      if (const TanhParameters *parameters = parametersFor(op))
        ours.emplace_back(op, parameters);
      else
        others.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, parameters] : ours) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, expandTanh(rewriter, op.getLoc(), op.getOperand(),
                                        *parameters));
    }
    if (others.empty())
      return;
    // f16, bf16, ...: upstream's exp-based expansion (math-expand-ops'), so
    // that no tanh reaches convert-math-to-llvm, which has no lowering for it.
    RewritePatternSet patterns(&getContext());
    math::populateExpansionPatterns(patterns, {"tanh"});
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(others, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
