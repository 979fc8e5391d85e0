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

/// `bytes` (the element size) times `type`'s static sizes other than 0, and
/// whether that overflows int64_t. NumPy's rule for a shape is that it does
/// not, even when a size is 0 (`np.empty((2**62, 0))` raises).
std::pair<int64_t, bool> staticNonZeroByteCount(MemRefType type,
                                                int64_t bytes) {
  bool overflow = false;
  for (int64_t size : type.getShape())
    if (!ShapedType::isDynamic(size) && size != 0)
      overflow |= llvm::MulOverflow(bytes, size, bytes);
  return {bytes, overflow};
}

/// The byte count of `type`'s static sizes times its element size, and
/// whether it overflows int64_t. A zero size makes it 0 whatever the other
/// sizes are (a `(2**62, 0)` buffer holds no byte).
std::pair<int64_t, bool> staticByteCount(MemRefType type, int64_t bytes) {
  if (llvm::is_contained(type.getShape(), 0))
    return {0, false};
  return staticNonZeroByteCount(type, bytes);
}

/// Adds the size check before `alloc` (a memref.alloc or memref.alloca, at
/// most `limit` bytes); false when none is needed.
bool checkAllocation(Operation *alloc, MemRefType type,
                     OperandRange dynamicSizes, int64_t limit) {
  std::optional<int64_t> bytes = elementBytes(type, alloc);
  if (!bytes || *bytes <= 0)
    return false;
  // The constant part first: element bytes times the static sizes.
  auto [staticBytes, staticOverflow] = staticByteCount(type, *bytes);
  staticOverflow |= staticBytes > limit;
  auto [staticNonZero, staticUnrepresentable] =
      staticNonZeroByteCount(type, *bytes);
  if (!staticOverflow && !staticUnrepresentable && dynamicSizes.empty())
    return false;

  OpBuilder b(alloc);
  Location loc = alloc->getLoc();
  Type i64 = b.getI64Type();
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value falseValue = arith::ConstantIntOp::create(b, loc, 0, 1);
  // A negative size is always an error; a byte count too large for `limit`
  // only when no size is 0 (then the buffer is empty, whatever the product
  // of the other sizes).
  Value negative = falseValue, empty = falseValue;
  Value tooLarge = arith::ConstantIntOp::create(b, loc, staticOverflow, 1);
  Value total = arith::ConstantIntOp::create(b, loc, staticBytes, 64);
  // The same product over the sizes other than 0 (NumPy's rule), so that an
  // empty buffer of an unrepresentable shape fails here, before a loop of
  // steps that write nothing runs for as long as its huge size says.
  Value unrepresentable =
      arith::ConstantIntOp::create(b, loc, staticUnrepresentable, 1);
  // (past an overflow the product is meaningless: the check fails anyway)
  Value nonZeroTotal = arith::ConstantIntOp::create(
      b, loc, staticUnrepresentable ? *bytes : staticNonZero, 64);
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  auto overflows = [&](Value product) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, product,
                                 zero);
  };
  SmallVector<Value> sizes;
  unsigned next = 0;
  for (int64_t size : type.getShape()) {
    if (!ShapedType::isDynamic(size)) {
      sizes.push_back(arith::ConstantIntOp::create(b, loc, size, 64));
      continue;
    }
    Value dim = arith::IndexCastOp::create(b, loc, i64, dynamicSizes[next++]);
    sizes.push_back(dim);
    negative = arith::OrIOp::create(
        b, loc, negative,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, dim, zero));
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim, zero);
    empty = arith::OrIOp::create(b, loc, empty, isZero);
    auto product = arith::MulUIExtendedOp::create(b, loc, total, dim);
    tooLarge = arith::OrIOp::create(b, loc, tooLarge,
                                    overflows(product.getHigh()));
    total = product.getLow();
    Value dimOrOne = arith::SelectOp::create(b, loc, isZero, one, dim);
    auto nonZero =
        arith::MulUIExtendedOp::create(b, loc, nonZeroTotal, dimOrOne);
    unrepresentable = arith::OrIOp::create(b, loc, unrepresentable,
                                           overflows(nonZero.getHigh()));
    nonZeroTotal = nonZero.getLow();
  }
  // Unsigned: a byte count of 2**63 or more reads as negative.
  Value huge = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ugt, total,
      arith::ConstantIntOp::create(b, loc, limit, 64));
  tooLarge = arith::OrIOp::create(b, loc, tooLarge, huge);
  unrepresentable = arith::OrIOp::create(
      b, loc, unrepresentable,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, nonZeroTotal,
                            zero));
  Value nonEmpty = arith::XOrIOp::create(
      b, loc, empty, arith::ConstantIntOp::create(b, loc, 1, 1));
  Value bad = arith::OrIOp::create(
      b, loc, negative, arith::AndIOp::create(b, loc, tooLarge, nonEmpty));
  bad = arith::OrIOp::create(b, loc, bad, unrepresentable);
  auto ifBad = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifBad.thenBlock());
  emitFailAlloc(b, loc, *bytes, sizes, limit);
  return true;
}

/// Whether the buffer of `alloca` is dead once control leaves its block:
/// every use of it and of its views is inside that block (nested regions
/// included) and none hands it on (the block's terminator, an op returning
/// a memref that is not a view, such as a call or a loop yielding it).
bool usedOnlyInItsBlock(memref::AllocaOp alloca) {
  Block *block = alloca->getBlock();
  SmallVector<Value> worklist{alloca.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (!inBlock || user == block->getTerminator())
        return false;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          llvm::append_range(worklist, user->getResults());
          continue;
        }
      }
      if (llvm::any_of(user->getResultTypes(),
                       llvm::IsaPred<BaseMemRefType>))
        return false;
    }
  }
  return true;
}

/// A static `memref.alloca` larger than the stack limit moves the stack
/// pointer past the thread's stack when the frame is entered: LLVM puts
/// static allocas in the function's prologue (or, inlined, the caller's),
/// before any check can run. Such an alloca becomes a heap allocation freed
/// at the end of its block (where its buffer dies, see usedOnlyInItsBlock;
/// an alloca in a loop body is freed every iteration instead of piling up
/// on the stack), which checkAllocation then checks against the heap limit.
/// Returns whether it moved the alloca; fails (an error naming the op and
/// its size) when the buffer outlives its block.
FailureOr<bool> moveToHeap(memref::AllocaOp alloca) {
  MemRefType type = alloca.getType();
  std::optional<int64_t> bytes = elementBytes(type, alloca);
  // Dynamic sizes are checked against the stack limit when the call runs
  // (checkAllocation): the alloca is where the code runs, not the prologue.
  if (!type.hasStaticShape() || !bytes)
    return false;
  auto [total, overflow] = staticByteCount(type, *bytes);
  if (!overflow && total <= kMaxStackBytes)
    return false;
  if (!usedOnlyInItsBlock(alloca)) {
    InFlightDiagnostic diag = alloca.emitOpError() << "of ";
    if (overflow)
      diag << "more than 2**63 bytes";
    else
      diag << total << " bytes";
    diag << " (" << type << ") is too large for the stack (at most "
         << kMaxStackBytes
         << " bytes) and its buffer is used outside its block, so it cannot "
            "be moved to the heap: use memref.alloc";
    return failure();
  }
  OpBuilder b(alloca);
  auto heap = memref::AllocOp::create(b, alloca.getLoc(), type,
                                      alloca.getDynamicSizes(),
                                      alloca.getAlignmentAttr());
  b.setInsertionPoint(alloca->getBlock()->getTerminator());
  memref::DeallocOp::create(b, alloca.getLoc(), heap);
  alloca.replaceAllUsesWith(heap.getResult());
  alloca.erase();
  return true;
}

struct ScanCheckAllocationsPass
    : scan::impl::ScanCheckAllocationsBase<ScanCheckAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::AllocaOp> allocas;
    module.walk([&](memref::AllocaOp op) { allocas.push_back(op); });
    bool failedToMove = false;
    for (memref::AllocaOp alloca : allocas) {
      FailureOr<bool> moved = moveToHeap(alloca);
      failedToMove |= failed(moved);
      numMovedToHeap += succeeded(moved) && *moved;
    }
    if (failedToMove)
      return signalPassFailure();

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
