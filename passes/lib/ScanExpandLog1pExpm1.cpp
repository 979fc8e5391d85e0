//===- ScanExpandLog1pExpm1.cpp - log1p and expm1 without cancellation ----===//
//
// `convert-math-to-llvm` lowers `math.log1p(x)` as `log(1 + x)` and
// `math.expm1(x)` as `exp(x) - 1`: both lose every digit for small |x|
// (`expm1(1e-8)` is 0 in f32, `log1p(1e-12)` is 1e-4 off in f64), where these
// functions are the point (softplus, log-probabilities, compound growth).
// Here they become the classical corrections that keep `log` and `exp` as the
// only transcendental calls, on scalars and vectors alike:
//
//   log1p(x) = log(u) * x / (u - 1),  u = 1 + x   (x itself when u == 1)
//   expm1(x) = (u - 1) * x / log(u),  u = exp(x)  (x itself when u == 1)
//
// The rounding error of `u` cancels in the ratio (Goldberg, "What every
// computer scientist should know about floating-point arithmetic", thm. 4;
// Kahan's expm1): a few ulp wherever `log`/`exp` are correctly rounded.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANEXPANDLOG1PEXPM1
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Arithmetic on values of one f32/f64 scalar or vector type.
struct FloatBuilder {
  PatternRewriter &b;
  Location loc;
  Type type;

  Value constant(double value) const {
    auto scalar = b.getFloatAttr(getElementTypeOrSelf(type), value);
    if (auto v = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(b, loc, v,
                                       DenseElementsAttr::get(v, scalar));
    return arith::ConstantOp::create(b, loc, type, scalar);
  }
  Value add(Value x, Value y) const {
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return arith::SubFOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) const {
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value div(Value x, Value y) const {
    return arith::DivFOp::create(b, loc, x, y);
  }
  Value equal(Value x, Value y) const {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, y);
  }
  Value select(Value c, Value x, Value y) const {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
};

bool isF32OrF64(Type type) {
  Type element = getElementTypeOrSelf(type);
  return (element.isF32() || element.isF64()) &&
         (isa<FloatType>(type) || isa<VectorType>(type));
}

/// log1p(x): u = 1 + x; x where u == 1, +inf where u == +inf, else
/// log(u) * (x / (u - 1)). NaN and x <= -1 come out of `log` as NumPy's.
Value expandLog1p(const FloatBuilder &f, math::Log1pOp op) {
  Value x = op.getOperand();
  Value one = f.constant(1.0);
  Value u = f.add(one, x);
  Value logU = math::LogOp::create(f.b, f.loc, u, op.getFastmath());
  Value corrected = f.mul(logU, f.div(x, f.sub(u, one)));
  Value result = f.select(f.equal(u, one), x, corrected);
  // (inf / inf in the correction)
  return f.select(f.equal(u, f.constant(INFINITY)), u, result);
}

/// expm1(x): u = exp(x); x where u == 1, -1 where u - 1 == -1, +inf where
/// u == +inf, else (u - 1) * (x / log(u)).
Value expandExpm1(const FloatBuilder &f, math::ExpM1Op op) {
  Value x = op.getOperand();
  Value one = f.constant(1.0);
  Value u = math::ExpOp::create(f.b, f.loc, x, op.getFastmath());
  Value uMinusOne = f.sub(u, one);
  Value logU = math::LogOp::create(f.b, f.loc, u, op.getFastmath());
  Value corrected = f.mul(uMinusOne, f.div(x, logU));
  Value result = f.select(f.equal(u, one), x, corrected);
  // (u == 0 or u - 1 rounding to -1: x / log(u) is 0 or ~1)
  result = f.select(f.equal(uMinusOne, f.constant(-1.0)), uMinusOne, result);
  // (inf / inf in the correction)
  return f.select(f.equal(u, f.constant(INFINITY)), u, result);
}

/// Replaces an f32/f64 (scalar or vector) `OpTy` with `expand`'s value.
template <typename OpTy, Value (*expand)(const FloatBuilder &, OpTy)>
struct ExpandFloatOp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isF32OrF64(op.getType()))
      return rewriter.notifyMatchFailure(op, "not an f32/f64 scalar or vector");
    FloatBuilder f{rewriter, op.getLoc(), op.getType()};
    rewriter.replaceOp(op, expand(f, op));
    return success();
  }
};

struct ScanExpandLog1pExpm1Pass
    : scan::impl::ScanExpandLog1pExpm1Base<ScanExpandLog1pExpm1Pass> {
  void runOnOperation() override {
    // One walk, no fixpoint: the expansions create no op this pass rewrites,
    // and the greedy driver's folding of every op of a large function was
    // most of the pass's time.
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandFloatOp<math::Log1pOp, expandLog1p>,
                 ExpandFloatOp<math::ExpM1Op, expandExpm1>>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
