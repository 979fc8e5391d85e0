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

/// For rewrites that drop or shrink a sequence: emits, at the builder's
/// insertion point (before the scan `anchor`), the scan's own run-time check
/// that `sequence` read at `taps` (sorted) has `n_steps + max(0, max taps) -
/// min(0, min taps)` rows, reported as sequence #`item`, so that a too-short
/// sequence stays an error after the rewrite. Skipped for a negative
/// `n_steps` (the scan reports that first), and not emitted at all when both
/// lengths are static (the verifier checked them).
void emitSequenceLengthCheck(OpBuilder &b, Operation *anchor, Value nSteps,
                             Value sequence, ArrayRef<int64_t> taps,
                             int64_t item);

/// Likewise for a dropped mitsot whose init has a dynamic number of rows: it
/// must have `rows` (K) rows. Not emitted for a static init.
void emitMitSotInitCheck(OpBuilder &b, Operation *anchor, Value nSteps,
                         Value init, int64_t rows, int64_t item);

} // namespace scan
} // namespace mlir

#endif // SCAN_RUNTIMECHECKS_H
