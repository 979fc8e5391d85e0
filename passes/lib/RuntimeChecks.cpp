//===- RuntimeChecks.cpp - Run-time error reporting of lowered scans ------===//

#include "Scan/RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::scan;

void mlir::scan::declareScanErrorRuntime(ModuleOp module) {
  if (SymbolTable::lookupSymbolIn(module, kScanFailFunc))
    return;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type i64 = b.getI64Type();
  auto type = b.getFunctionType({i64, i64, i64, i64}, {});
  auto fail = func::FuncOp::create(b, module.getLoc(), kScanFailFunc, type);
  fail.setPrivate();
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
    func::CallOp::create(nested, nestedLoc, kScanFailFunc, TypeRange{},
                         args);
    scf::YieldOp::create(nested, nestedLoc);
  };
  scf::IfOp::create(b, loc, bad, thenBuilder);
}

/// `n_steps >= 0 && bad`, after adding the error runtime to the module.
static Value whenStepsValid(OpBuilder &b, Location loc, Operation *anchor,
                            Value nSteps, Value bad) {
  if (auto module = anchor->getParentOfType<ModuleOp>())
    declareScanErrorRuntime(module);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value stepsValid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, nSteps, zero);
  return arith::AndIOp::create(b, loc, stepsValid, bad);
}

void mlir::scan::emitStepCountCheck(OpBuilder &b, Operation *anchor,
                                    Value nSteps) {
  if (getConstantIntValue(nSteps))
    return;
  if (auto module = anchor->getParentOfType<ModuleOp>())
    declareScanErrorRuntime(module);
  Location loc = anchor->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, nSteps, zero);
  emitScanErrorIf(b, loc, negative, ScanErrorCode::NegativeSteps, 0, nSteps,
                  zero);
}

void mlir::scan::emitSequenceLengthCheck(OpBuilder &b, Operation *anchor,
                                         Value nSteps, Value sequence,
                                         ArrayRef<int64_t> taps, int64_t item) {
  auto type = cast<RankedTensorType>(sequence.getType());
  if (!type.isDynamicDim(0) && getConstantIntValue(nSteps))
    return;
  Location loc = anchor->getLoc();
  int64_t window = std::max<int64_t>(0, taps.back()) -
                   std::min<int64_t>(0, taps.front());
  Value have = tensor::DimOp::create(b, loc, sequence, 0);
  Value need = arith::AddIOp::create(
      b, loc, nSteps, arith::ConstantIndexOp::create(b, loc, window));
  // Unsigned, as the scan's own check (ConvertScanToSCF.cpp): exact for
  // n_steps >= 0 even where `n_steps + window` wraps as a signed number.
  Value tooShort =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, have, need);
  emitScanErrorIf(b, loc, whenStepsValid(b, loc, anchor, nSteps, tooShort),
                  ScanErrorCode::SequenceTooShort, item, have, need);
}

void mlir::scan::emitMitSotInitCheck(OpBuilder &b, Operation *anchor,
                                     Value nSteps, Value init, int64_t rows,
                                     int64_t item) {
  if (!cast<RankedTensorType>(init.getType()).isDynamicDim(0))
    return;
  Location loc = anchor->getLoc();
  Value have = tensor::DimOp::create(b, loc, init, 0);
  Value need = arith::ConstantIndexOp::create(b, loc, rows);
  Value wrong =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, have, need);
  emitScanErrorIf(b, loc, whenStepsValid(b, loc, anchor, nSteps, wrong),
                  ScanErrorCode::MitSotInitRows, item, have, need);
}

bool mlir::scan::reliesOnChecks(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>() ||
      isa<tensor::DimOp, tensor::EmptyOp, linalg::FillOp>(op))
    return false;
  auto shaped = [](Type t) { return isa<ShapedType>(t); };
  return op->getNumRegions() > 0 ||
         llvm::any_of(op->getOperandTypes(), shaped) ||
         llvm::any_of(op->getResultTypes(), shaped);
}

