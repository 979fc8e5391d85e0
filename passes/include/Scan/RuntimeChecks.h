//===- RuntimeChecks.h - Run-time error reporting of lowered scans -*- C++ -*-===//
//
// Lowered scans check at run time what the verifier cannot (SPEC §4, §7). A
// failed check calls an external function of the run-time library
// (python/runtime/ScanRuntime.h), which ends the call: in Python the call
// raises, with an error record that belongs to that call alone (no global
// state, so concurrent calls never see each other's errors):
//
//   func.func private @__mlir_scan_fail(%code: i64, %item: i64, %have: i64,
//                                       %need: i64)
//
// It does not return. Run with mlir-runner, the library prints the message
// and exits with status 1.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_RUNTIMECHECKS_H
#define SCAN_RUNTIMECHECKS_H

#include "Scan/ErrorCodes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace scan {

/// The run-time library's failure entry points (none returns):
///   __mlir_scan_fail(code, item, have, need : i64)         a scan check
///   __mlir_scan_fail_alloc(elementBytes, rank : i64, sizes : !llvm.ptr,
///                          limit : i64)                      a bad buffer size
///   __mlir_scan_fail_message(message : !llvm.ptr)           a cf.assert
inline constexpr llvm::StringLiteral kScanFailFunc = "__mlir_scan_fail";
inline constexpr llvm::StringLiteral kScanFailAllocFunc =
    "__mlir_scan_fail_alloc";
inline constexpr llvm::StringLiteral kScanFailMessageFunc =
    "__mlir_scan_fail_message";

/// The run-time library's upgrade poll, `__mlir_scan_poll_upgrade(loop,
/// done, total)`: the quick tier of a program (python/capi/ScanJIT.cpp)
/// calls it in its loops, with how far the loop is; it ends the call for a
/// restart when the optimized tier is ready.
inline constexpr llvm::StringLiteral kScanPollUpgradeFunc =
    "__mlir_scan_poll_upgrade";

/// Declares `@__mlir_scan_fail` in `module` unless it is there.
void declareScanErrorRuntime(ModuleOp module);

/// Emits `scf.if %bad { call @__mlir_scan_fail(code, item, have, need) }`
/// at the builder's insertion point; `have` and `need` are `index` values.
void emitScanErrorIf(OpBuilder &b, Location loc, Value bad, ScanErrorCode code,
                     int64_t item, Value have, Value need);

/// For rewrites that use a scan's step count outside it (the scan may then
/// be erased as dead): emits the scan's own check that `n_steps >= 0` at
/// the builder's insertion point, the error reported as the scan would.
/// Not emitted for a constant (the verifier checked it).
void emitStepCountCheck(OpBuilder &b, Operation *anchor, Value nSteps);

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

/// Whether `op` may rely on a `scan.check` that precedes it: ops that MLIR
/// lets run on any operands but whose result (or memory access, once
/// bufferized) is undefined when sizes disagree or an index is out of
/// bounds -- linalg ops and elementwise ops on dynamically shaped tensors,
/// tensor indexing and reshaping ops. The graph builder guards those with a
/// check instead of clamping their operands. Constants, scalar arithmetic,
/// `tensor.dim`, `tensor.empty` and `linalg.fill` are defined for every
/// operand.
/// The scan rewrites never move such an op before a check it may rely on
/// where the check might not run (see scan-push-out-non-seq).
bool reliesOnChecks(Operation *op);

} // namespace scan
} // namespace mlir

#endif // SCAN_RUNTIMECHECKS_H
