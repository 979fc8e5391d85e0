//===- Passes.td - Scan dialect passes ---------------------*- tablegen -*-===//
//
// The scan rewrites (SPEC §5) and the lowerings, by their scan-opt flags.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_PASSES_TD
#define SCAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertScanToSCF : Pass<"convert-scan-to-scf", "::mlir::ModuleOp"> {
  let summary = "Lower scan.scan to scf.for / scf.while on tensors (DPS, in place)";
  let description = [{
    Replaces every `scan.scan` by an `scf.for` loop (an `scf.while` loop when
    the scan has `until`) over tensors in destination-passing style, ready
    for `one-shot-bufferize` to run it in place:

    * every output is a buffer created before the loop (`tensor.empty`) and
      carried through the loop; each step writes its row with
      `tensor.insert` / `tensor.insert_slice` after the body has read
      everything it needs ("read first, write last"), so the yielded tensor
      is equivalent to its `iter_arg` and bufferizes without copies;
    * scalar sitsot/mitsot states are also carried as scalar `iter_args` (a
      shift register of the last `K` values), tensor states are read back
      from the output buffer (or from the init for rows before step 0);
    * mitmot buffers are carried and updated row by row;
    * `keep = k` outputs use a ring buffer of `k` rows (`max(k, K+1)` for
      tensor states, so a row is never overwritten while it is read) and
      are rotated into chronological order after the loop.

    Run-time checks (`n_steps >= 0`, sequences and mitmot buffers long
    enough, dynamic mitsot inits with `K` rows) are compiled in: a failed
    check records an error in the public global `@__mlir_scan_error`
    (`[code, item, have, need]`, first error wins) and the loop then runs
    zero steps, so no out-of-bounds access happens. `mlir_scan.compile`
    turns a recorded error into a Python `ValueError`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numScansLowered", "scans-lowered", "Number of scan.scan ops lowered">
  ];
}

def ScanOwnPublicResults : Pass<"scan-own-public-results", "::mlir::ModuleOp"> {
  let summary = "Make every memref returned by a public function a fresh allocation";
  let description = [{
    Runs after `one-shot-bufferize`, before the buffer deallocation
    pipeline. A public function's caller (the Python runtime) takes
    ownership of each returned memref and frees it. This pass copies into a
    new `memref.alloc` every returned memref that is not rooted in an
    allocation of the function itself: function arguments and their views,
    globals, and a buffer returned a second time. The deallocation pipeline
    then sees owned results only, and never needs a run-time ownership
    assertion.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numCopies", "result-copies", "Number of returned memrefs copied">
  ];
}

def ScanLowerI1Access : Pass<"scan-lower-i1-access", "::mlir::ModuleOp"> {
  let summary = "Lower memref.load/store of i1 to llvm.load/store (works around an LLVM 22 assertion)";
  let description = [{
    The LLVM 22.1 `memref.load`/`memref.store` lowerings assert (abort the
    process) on `i1` elements, which bufferized boolean tensors and the
    buffer deallocation helpers both produce. This pass lowers exactly those
    accesses to `llvm.load`/`llvm.store` (one byte per `i1`, as LLVM lays
    them out) with the same address computation; everything else is left to
    `convert-to-llvm`. Run it right before `convert-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // SCAN_PASSES_TD
