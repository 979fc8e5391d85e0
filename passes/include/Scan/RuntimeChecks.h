//===- RuntimeChecks.h - Run-time error reporting of lowered scans -*- C++ -*-===//
//
// Lowered scans check at run time what the verifier cannot (SPEC §4, §7). A
// failed check must not abort the process, so it records an error in a
// module-level global that the caller (the Python runtime) reads after each
// call:
//
//   memref.global @__mlir_scan_error : memref<4xi64>  // [code, item, have, need]
//
// The first error recorded wins until the caller resets the global.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_RUNTIMECHECKS_H
#define SCAN_RUNTIMECHECKS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace scan {

/// Codes stored in `@__mlir_scan_error[0]`; mirrored in mlir_scan/runtime.py.
enum class ScanErrorCode : int64_t {
  None = 0,
  NegativeSteps = 1,    // have = n_steps
  SequenceTooShort = 2, // item = sequence, have = rows, need = rows needed
  MitMotTooShort = 3,   // item = mitmot buffer, have = rows, need = rows needed
  MitSotInitRows = 4,   // item = mitsot, have = init rows, need = K
};

/// Name of the error global and of the function that records an error.
inline constexpr llvm::StringLiteral kScanErrorGlobal = "__mlir_scan_error";
inline constexpr llvm::StringLiteral kScanSetErrorFunc = "__mlir_scan_set_error";

/// Adds the error global and `@__mlir_scan_set_error` to `module` unless
/// they are already there.
void declareScanErrorRuntime(ModuleOp module);

/// Emits `scf.if %bad { call @__mlir_scan_set_error(code, item, have, need) }`
/// at the builder's insertion point; `have` and `need` are `index` values.
void emitScanErrorIf(OpBuilder &b, Location loc, Value bad, ScanErrorCode code,
                     int64_t item, Value have, Value need);

} // namespace scan
} // namespace mlir

#endif // SCAN_RUNTIMECHECKS_H
