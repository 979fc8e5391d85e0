//===- ScanCheckAllocations.cpp - run-time checks of buffer sizes ---------===//
//
// Every allocation whose byte count is not a known, representable constant
// gets an overflow-checked computation of that byte count before it; a bad
// size ends the call through the run-time library instead of wrapping into a
// small buffer (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCHECKALLOCATIONS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// Heap byte counts from 2**63 up are refused: the allocator takes a size_t,
/// but no such block can exist and half the range keeps every sum below safe.
constexpr int64_t kMaxHeapBytes = std::numeric_limits<int64_t>::max();
/// A `memref.alloca` larger than this would overflow the stack of a thread
/// (8 MiB by default, shared with everything below the call).
constexpr int64_t kMaxStackBytes = int64_t(1) << 20;

/// `@__mlir_scan_fail_alloc(i64 elementBytes, i64 rank, !llvm.ptr sizes,
/// i64 limit)`.
void declareFailAlloc(ModuleOp module) {
  if (SymbolTable::lookupSymbolIn(module, kScanFailAllocFunc))
    return;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type i64 = b.getI64Type();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto fail = func::FuncOp::create(b, module.getLoc(), kScanFailAllocFunc,
                                   b.getFunctionType({i64, i64, ptr, i64}, {}));
  fail.setPrivate();
}

/// Emits, in the `then` block of a failure branch, the call that reports
/// `sizes` (one i64 per dimension) against `limit` bytes and ends the call.
void emitFailAlloc(OpBuilder &b, Location loc, int64_t elementBytes,
                   ArrayRef<Value> sizes, int64_t limit) {
  Type i64 = b.getI64Type();
  auto shapeType = MemRefType::get({int64_t(sizes.size())}, i64);
  Value shape = memref::AllocaOp::create(b, loc, shapeType);
  for (auto [d, size] : llvm::enumerate(sizes))
    memref::StoreOp::create(b, loc, size, shape,
                            ValueRange{arith::ConstantIndexOp::create(b, loc, d)});
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shape);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()),
      arith::IndexCastOp::create(b, loc, i64, address).getResult());
  Value args[] = {
      arith::ConstantIntOp::create(b, loc, elementBytes, 64),
      arith::ConstantIntOp::create(b, loc, int64_t(sizes.size()), 64),
      pointer, arith::ConstantIntOp::create(b, loc, limit, 64)};
  func::CallOp::create(b, loc, kScanFailAllocFunc, TypeRange{}, args);
}

/// The element size of `type` in bytes, as the LLVM lowering lays it out.
std::optional<int64_t> elementBytes(MemRefType type, Operation *op) {
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat() && !isa<VectorType>(element))
    return std::nullopt;
  DataLayout layout = DataLayout::closest(op);
  return int64_t(layout.getTypeSize(element).getFixedValue());
}

/// Adds the size check before `alloc` (a memref.alloc or memref.alloca, at
/// most `limit` bytes); false when none is needed.
bool checkAllocation(Operation *alloc, MemRefType type,
                     OperandRange dynamicSizes, int64_t limit) {
  std::optional<int64_t> bytes = elementBytes(type, alloc);
  if (!bytes || *bytes <= 0)
    return false;
  // The constant part first: element bytes times the static sizes.
  int64_t staticBytes = *bytes;
  bool staticOverflow = false;
  for (int64_t size : type.getShape())
    if (!ShapedType::isDynamic(size))
      staticOverflow |= llvm::MulOverflow(staticBytes, size, staticBytes);
  staticOverflow |= staticBytes > limit;
  if (!staticOverflow && dynamicSizes.empty())
    return false;

  OpBuilder b(alloc);
  Location loc = alloc->getLoc();
  Type i64 = b.getI64Type();
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value bad = arith::ConstantIntOp::create(b, loc, staticOverflow, 1);
  Value total = arith::ConstantIntOp::create(b, loc, staticBytes, 64);
  SmallVector<Value> sizes;
  unsigned next = 0;
  for (int64_t size : type.getShape()) {
    if (!ShapedType::isDynamic(size)) {
      sizes.push_back(arith::ConstantIntOp::create(b, loc, size, 64));
      continue;
    }
    Value dim = arith::IndexCastOp::create(b, loc, i64, dynamicSizes[next++]);
    sizes.push_back(dim);
    Value negative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, dim, zero);
    auto product = arith::MulUIExtendedOp::create(b, loc, total, dim);
    Value wrapped = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                          product.getHigh(), zero);
    bad = arith::OrIOp::create(
        b, loc, bad, arith::OrIOp::create(b, loc, negative, wrapped));
    total = product.getLow();
  }
  // Unsigned: a byte count of 2**63 or more reads as negative.
  Value huge = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ugt, total,
      arith::ConstantIntOp::create(b, loc, limit, 64));
  bad = arith::OrIOp::create(b, loc, bad, huge);
  auto ifBad = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifBad.thenBlock());
  emitFailAlloc(b, loc, *bytes, sizes, limit);
  return true;
}

struct ScanCheckAllocationsPass
    : scan::impl::ScanCheckAllocationsBase<ScanCheckAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> allocations;
    module.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::AllocaOp>(op))
        allocations.push_back(op);
    });
    unsigned checked = 0;
    for (Operation *op : allocations) {
      bool added = false;
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        added = checkAllocation(op, alloc.getType(), alloc.getDynamicSizes(),
                                kMaxHeapBytes);
      else if (auto alloca = dyn_cast<memref::AllocaOp>(op))
        added = checkAllocation(op, alloca.getType(),
                                alloca.getDynamicSizes(), kMaxStackBytes);
      checked += added;
    }
    if (checked)
      declareFailAlloc(module);
    numChecked += checked;
  }
};

} // namespace
