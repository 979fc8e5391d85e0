//===- ScanLowerChecks.cpp - scan.check -> scf.if + __mlir_scan_fail ------===//
//
// `scan.check` is what the graph builder emits for its run-time checks, so
// that the scan rewrites can tell a check from an arbitrary side effect. Once
// the rewrites are done, each check becomes the branch and the call of the
// run-time library that every other run-time check of a lowered scan uses.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERCHECKS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

struct ScanLowerChecksPass
    : scan::impl::ScanLowerChecksBase<ScanLowerChecksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CheckOp> checks;
    module.walk([&](CheckOp op) { checks.push_back(op); });
    if (checks.empty())
      return;
    declareScanErrorRuntime(module);
    IRRewriter rewriter(&getContext());
    for (CheckOp op : checks) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      auto asIndex = [&](Value v) -> Value {
        if (v.getType().isIndex())
          return v;
        return arith::IndexCastOp::create(rewriter, loc,
                                          rewriter.getIndexType(), v);
      };
      emitScanErrorIf(rewriter, loc, op.getCondition(),
                      static_cast<ScanErrorCode>(op.getCode()), op.getId(),
                      asIndex(op.getHave()), asIndex(op.getNeed()));
      rewriter.eraseOp(op);
    }
    numLowered += checks.size();
  }
};

} // namespace
