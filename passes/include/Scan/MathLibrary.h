//===- MathLibrary.h - math ops that become C math library calls -*- C++ -*-===//
//
// LLVM has no instructions for `pow`, `exp`, `sin`, ...: the `math` ops that
// compute them become calls of the C math library (through LLVM's
// intrinsics, or convert-math-to-libm), one per element. Passes that weigh
// that cost (scan-parallelize-linalg) or call a vector library instead
// (scan-call-vector-math) share this one list.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_MATHLIBRARY_H
#define SCAN_MATHLIBRARY_H

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::scan {

/// The C math library's name of the function `op` computes (its
/// double-precision name: `pow`, `exp`, ...) when it is lowered to a call
/// of it, or an empty string.
inline StringRef mathLibraryName(Operation *op) {
  return llvm::TypeSwitch<Operation *, StringRef>(op)
      .Case([](math::PowFOp) { return "pow"; })
      .Case([](math::Atan2Op) { return "atan2"; })
      .Case([](math::ExpOp) { return "exp"; })
      .Case([](math::Exp2Op) { return "exp2"; })
      .Case([](math::ExpM1Op) { return "expm1"; })
      .Case([](math::LogOp) { return "log"; })
      .Case([](math::Log2Op) { return "log2"; })
      .Case([](math::Log10Op) { return "log10"; })
      .Case([](math::Log1pOp) { return "log1p"; })
      .Case([](math::SinOp) { return "sin"; })
      .Case([](math::CosOp) { return "cos"; })
      .Case([](math::TanOp) { return "tan"; })
      .Case([](math::AsinOp) { return "asin"; })
      .Case([](math::AcosOp) { return "acos"; })
      .Case([](math::AtanOp) { return "atan"; })
      .Case([](math::SinhOp) { return "sinh"; })
      .Case([](math::CoshOp) { return "cosh"; })
      .Case([](math::AsinhOp) { return "asinh"; })
      .Case([](math::AcoshOp) { return "acosh"; })
      .Case([](math::AtanhOp) { return "atanh"; })
      .Case([](math::ErfOp) { return "erf"; })
      .Case([](math::ErfcOp) { return "erfc"; })
      .Case([](math::CbrtOp) { return "cbrt"; })
      .Default([](Operation *) { return ""; });
}

} // namespace mlir::scan

#endif // SCAN_MATHLIBRARY_H
