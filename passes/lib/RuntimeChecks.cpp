//===- RuntimeChecks.cpp - Run-time error reporting of lowered scans ------===//

#include "Scan/RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mlir::scan;

// Written as IR: the runtime is easier to read than its builder calls.
static constexpr llvm::StringLiteral kRuntimeSource = R"mlir(
  memref.global @__mlir_scan_error : memref<4xi64> = dense<0>
  func.func private @__mlir_scan_set_error(%code: i64, %item: i64, %have: i64,
                                           %need: i64) {
    %err = memref.get_global @__mlir_scan_error : memref<4xi64>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0 : i64
    %current = memref.load %err[%c0] : memref<4xi64>
    %first = arith.cmpi eq, %current, %zero : i64
    scf.if %first {
      memref.store %code, %err[%c0] : memref<4xi64>
      memref.store %item, %err[%c1] : memref<4xi64>
      memref.store %have, %err[%c2] : memref<4xi64>
      memref.store %need, %err[%c3] : memref<4xi64>
    }
    return
  }
)mlir";

void mlir::scan::declareScanErrorRuntime(ModuleOp module) {
  if (SymbolTable::lookupSymbolIn(module, kScanSetErrorFunc))
    return;
  OwningOpRef<ModuleOp> runtime =
      parseSourceString<ModuleOp>(kRuntimeSource, module.getContext());
  assert(runtime && "the scan error runtime must parse");
  Block *dest = module.getBody();
  for (Operation &op : llvm::make_early_inc_range(*runtime->getBody()))
    op.moveBefore(dest, dest->end());
}

void mlir::scan::emitScanErrorIf(OpBuilder &b, Location loc, Value bad,
                                 ScanErrorCode code, int64_t item, Value have,
                                 Value need) {
  auto thenBuilder = [&](OpBuilder &nested, Location nestedLoc) {
    Type i64 = nested.getI64Type();
    auto toI64 = [&](Value v) -> Value {
      return arith::IndexCastOp::create(nested, nestedLoc, i64, v);
    };
    Value args[] = {
        arith::ConstantIntOp::create(nested, nestedLoc,
                                     static_cast<int64_t>(code), 64),
        arith::ConstantIntOp::create(nested, nestedLoc, item, 64), toI64(have),
        toI64(need)};
    func::CallOp::create(nested, nestedLoc, kScanSetErrorFunc, TypeRange{},
                         args);
    scf::YieldOp::create(nested, nestedLoc);
  };
  scf::IfOp::create(b, loc, bad, thenBuilder);
}
