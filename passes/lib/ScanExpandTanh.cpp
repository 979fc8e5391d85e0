//===- ScanExpandTanh.cpp - tanh as vectorizable arithmetic ---------------===//
//
// `tanh` is the activation of every RNN step. Lowered as usual it is a libm
// call per element (LLVM has no vector `exp`), which costs as much as the
// step's matrix-vector product at hidden sizes around 128. Here it becomes
// plain arithmetic that works on vectors: a polynomial near zero and
// `1 - 2 / (exp(2|x|) + 1)` elsewhere, with `exp` reduced to a polynomial
// and a power of two, in f64 (about one ulp); f32 goes through f64.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

/// tanh(x) / x as a polynomial in z = x^2 on |x| < kSmall (least-squares fit,
/// relative error 2e-16 in double arithmetic).
constexpr double kSmall = 0.625;
constexpr double kTanhOverX[] = {
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
/// Beyond this |x|, tanh(x) rounds to +-1 in double precision.
constexpr double kSaturated = 20.0;
constexpr double kLog2E = 1.4426950408889634;
/// ln 2 split into a part with trailing zero bits (k * kLn2Hi is exact for
/// the k used here) and the rest.
constexpr double kLn2Hi = 0.693147180369123816490;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
/// exp(r) on |r| <= ln(2)/2: Taylor terms up to r^13 (error 1.5e-16).
constexpr int kExpDegree = 13;

/// Builds values of one float type (f64 or a vector of f64), splatting
/// constants as needed.
struct Builder {
  OpBuilder &b;
  Location loc;
  Type type;

  Type intType() const {
    Type i64 = b.getI64Type();
    if (auto v = dyn_cast<VectorType>(type))
      return v.clone(i64);
    return i64;
  }
  Value constant(double value) const {
    return constantOf(type, b.getF64FloatAttr(value));
  }
  Value intConstant(int64_t value) const {
    return constantOf(intType(), b.getI64IntegerAttr(value));
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

/// exp(y) for y in [0, 2 * kSaturated]: y = k ln2 + r, exp(y) = 2^k exp(r).
Value expOfBounded(const Builder &f, Value y) {
  OpBuilder &b = f.b;
  Value k = math::RoundEvenOp::create(b, f.loc, f.mul(y, f.constant(kLog2E)));
  Value r = f.fma(k, f.constant(-kLn2Hi), y);
  r = f.fma(k, f.constant(-kLn2Lo), r);
  SmallVector<double> taylor;
  double term = 1.0;
  for (int i = 0; i <= kExpDegree; ++i) {
    taylor.push_back(term);
    term /= i + 1;
  }
  Value expR = f.polynomial(r, taylor);
  // 2^k from its bit pattern: the biased exponent k + 1023 in bits 52..62.
  Value kInt = arith::FPToSIOp::create(b, f.loc, f.intType(), k);
  Value biased = arith::AddIOp::create(b, f.loc, kInt, f.intConstant(1023));
  Value bits = arith::ShLIOp::create(b, f.loc, biased, f.intConstant(52));
  Value twoToK = arith::BitcastOp::create(b, f.loc, f.type, bits);
  return f.mul(expR, twoToK);
}

/// tanh of an f64 scalar or vector.
Value expandF64Tanh(OpBuilder &b, Location loc, Value x) {
  Builder f{b, loc, x.getType()};
  Value ax = math::AbsFOp::create(b, loc, x);

  Value small = f.mul(x, f.polynomial(f.mul(x, x), kTanhOverX));

  // minnumf turns a NaN into the bound, so the integer conversion in exp
  // never sees a NaN; the NaN comes back through the last select.
  Value y = arith::MinNumFOp::create(b, loc, f.add(ax, ax),
                                     f.constant(2 * kSaturated));
  Value e = expOfBounded(f, y);
  Value large =
      f.sub(f.constant(1.0), arith::DivFOp::create(b, loc, f.constant(2.0),
                                                   f.add(e, f.constant(1.0))));
  large = math::CopySignOp::create(b, loc, large, x);

  Value isSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, ax,
                                        f.constant(kSmall));
  Value result = arith::SelectOp::create(b, loc, isSmall, small, large);
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, isNaN, x, result);
}

/// f64 tanh directly; f32 tanh through f64 (a correctly rounded f32 result
/// in all but rare ties, at half the vector width).
struct ExpandTanh : OpRewritePattern<math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    Type element = getElementTypeOrSelf(type);
    if (!(element.isF64() || element.isF32()) ||
        !(isa<FloatType>(type) || isa<VectorType>(type)))
      return rewriter.notifyMatchFailure(op, "not an f32/f64 scalar or vector");
    Location loc = op.getLoc();
    Value x = op.getOperand();
    if (element.isF64()) {
      rewriter.replaceOp(op, expandF64Tanh(rewriter, loc, x));
      return success();
    }
    Type wide = rewriter.getF64Type();
    if (auto v = dyn_cast<VectorType>(type))
      wide = v.clone(wide);
    Value extended = arith::ExtFOp::create(rewriter, loc, wide, x);
    Value result = expandF64Tanh(rewriter, loc, extended);
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, type, result);
    return success();
  }
};

struct ScanExpandTanhPass
    : scan::impl::ScanExpandTanhBase<ScanExpandTanhPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandTanh>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
