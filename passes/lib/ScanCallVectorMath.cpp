//===- ScanCallVectorMath.cpp - vector math through glibc's libmvec -------===//
//
// `scan-vectorize-linalg-loops` writes the body of `c_i * x ** p_i` or of a
// log-likelihood on vectors, but LLVM has no vector `pow`, `exp` or `log`:
// `convert-math-to-llvm` gives `llvm.pow` on `vector<8xf64>`, which the
// backend splits into eight calls of libm's scalar `pow`. glibc ships the
// same functions for whole vectors (libmvec, the x86-64 vector ABI of
// OpenMP's `declare simd`), within 4 ulp. Here a math op on a vector whose
// length is a multiple of the ISA's width becomes calls of them, one per
// register-wide slice.
//
//===----------------------------------------------------------------------===//

#include "Scan/MathLibrary.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCALLVECTORMATH
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Elements of `element` per register of `isa`, or 0 for an ISA or type
/// libmvec has no functions for.
int64_t registerLanes(StringRef isa, Type element) {
  if (!element.isF32() && !element.isF64())
    return 0;
  int64_t bits = isa == "avx2" ? 256 : 0;
  return bits / element.getIntOrFloatBitWidth();
}

/// The x86-64 vector ABI's name: `_ZGV` + ISA letter (`d`: AVX2) + `N`
/// (unmasked) + lanes + one `v` per vector argument + the scalar name
/// (`f` suffix for f32).
std::string mangledName(StringRef name, Type element, int64_t lanes,
                        unsigned arity) {
  std::string mangled = "_ZGVdN" + std::to_string(lanes) +
                        std::string(arity, 'v') + "_" + name.str();
  if (element.isF32())
    mangled += "f";
  return mangled;
}

struct ScanCallVectorMathPass
    : scan::impl::ScanCallVectorMathBase<ScanCallVectorMathPass> {
  using Base::Base;

  void runOnOperation() override {
    if (isa != "avx2" && isa != "none") {
      emitError(getOperation().getLoc(),
                "scan-call-vector-math: isa must be avx2 or none, not '")
          << isa << "'";
      return signalPassFailure();
    }
    llvm::StringSet<> allowed;
    allowed.insert(functions.begin(), functions.end());
    SmallVector<std::pair<Operation *, StringRef>> ops;
    getOperation().walk([&](Operation *op) {
      if (op->getNumResults() != 1)
        return;
      auto type = dyn_cast<VectorType>(op->getResult(0).getType());
      if (!type || type.getRank() != 1 || type.isScalable())
        return;
      int64_t lanes = registerLanes(isa, type.getElementType());
      StringRef name = scan::mathLibraryName(op);
      // Not log1p and expm1: scan-expand-log1p-expm1 computes them from
      // libm's log and exp (see the pass description).
      if (lanes == 0 || name.empty() || name == "log1p" || name == "expm1" ||
          type.getNumElements() % lanes != 0 ||
          (!allowed.empty() && !allowed.contains(name)))
        return;
      ops.push_back({op, name});
    });
    SymbolTable symbols(getOperation());
    IRRewriter rewriter(&getContext());
    for (auto [op, name] : ops) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, callInSlices(rewriter, op, name, symbols));
      ++numCalls;
    }
  }

  /// `op`'s result computed by calls of the libmvec function `name` on
  /// register-wide slices of its operands, concatenated.
  Value callInSlices(RewriterBase &rewriter, Operation *op, StringRef name,
                     SymbolTable &symbols) {
    Location loc = op->getLoc();
    auto type = cast<VectorType>(op->getResult(0).getType());
    Type element = type.getElementType();
    int64_t lanes = registerLanes(isa, element);
    auto sliceType = VectorType::get({lanes}, element);
    unsigned arity = op->getNumOperands();
    func::FuncOp callee =
        declare(rewriter, symbols, mangledName(name, element, lanes, arity),
                sliceType, arity);
    // Slices and concatenations as vector.shuffle, which becomes LLVM's
    // shufflevector (the strided-slice ops need patterns convert-to-llvm
    // does not run).
    Value result;
    for (int64_t offset = 0; offset < type.getNumElements(); offset += lanes) {
      SmallVector<Value> args;
      for (Value operand : op->getOperands())
        args.push_back(vector::ShuffleOp::create(
            rewriter, loc, operand, operand,
            llvm::to_vector(llvm::seq<int64_t>(offset, offset + lanes))));
      Value part =
          func::CallOp::create(rewriter, loc, callee, args).getResult(0);
      if (!result) {
        result = part;
        continue;
      }
      result = vector::ShuffleOp::create(
          rewriter, loc, result, part,
          llvm::to_vector(llvm::seq<int64_t>(0, offset + lanes)));
    }
    return result;
  }

  /// The declaration `func.func private @mangled(slice...) -> slice`.
  func::FuncOp declare(RewriterBase &rewriter, SymbolTable &symbols,
                       StringRef mangled, VectorType sliceType,
                       unsigned arity) {
    if (auto existing = symbols.lookup<func::FuncOp>(mangled))
      return existing;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(getOperation().getBody());
    SmallVector<Type> inputs(arity, sliceType);
    auto callee = func::FuncOp::create(
        rewriter, getOperation().getLoc(), mangled,
        rewriter.getFunctionType(inputs, {sliceType}));
    callee.setPrivate();
    symbols.insert(callee);
    return callee;
  }
};

} // namespace
