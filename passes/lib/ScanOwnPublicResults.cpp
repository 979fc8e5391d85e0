//===- ScanOwnPublicResults.cpp - fresh buffers for public results --------===//
//
// The Python runtime frees every memref a public function returns. After
// one-shot-bufferize a returned memref may still alias a function argument
// (an input array the caller owns), a global, or another result; copying
// exactly those keeps every returned buffer a distinct allocation of the
// callee, which the deallocation pipeline can then hand over without any
// run-time ownership assertion.
//
//===----------------------------------------------------------------------===//

#include "Scan/BufferCopies.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANOWNPUBLICRESULTS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// The `memref.alloc` whose buffer `value` is (a view of), looking through
/// views, casts and loops that carry the buffer; null when `value` may be
/// rooted in anything else (an argument, a global, a branch, ...).
memref::AllocOp rootAllocation(Value value) {
  while (value) {
    if (auto alloc = value.getDefiningOp<memref::AllocOp>())
      return alloc;
    if (auto view = value.getDefiningOp<ViewLikeOpInterface>()) {
      value = view.getViewSource();
      continue;
    }
    if (auto cast = value.getDefiningOp<memref::CastOp>()) {
      value = cast.getSource();
      continue;
    }
    if (auto forOp = value.getDefiningOp<scf::ForOp>()) {
      value = forOp.getInits()[cast<OpResult>(value).getResultNumber()];
      continue;
    }
    if (auto whileOp = value.getDefiningOp<scf::WhileOp>()) {
      // Results are the forwarded condition arguments; ours forward the
      // before-region arguments unchanged, position by position.
      unsigned i = cast<OpResult>(value).getResultNumber();
      if (i >= whileOp.getInits().size())
        return nullptr;
      value = whileOp.getInits()[i];
      continue;
    }
    return nullptr;
  }
  return nullptr;
}

struct ScanOwnPublicResultsPass
    : scan::impl::ScanOwnPublicResultsBase<ScanOwnPublicResultsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (!func.isPublic() || func.isExternal())
        return;
      func.walk([&](func::ReturnOp ret) {
        llvm::SmallPtrSet<Operation *, 4> returned;
        OpBuilder b(ret);
        for (OpOperand &operand : ret->getOpOperands()) {
          auto type = dyn_cast<MemRefType>(operand.get().getType());
          if (!type)
            continue;
          memref::AllocOp root = rootAllocation(operand.get());
          if (root && returned.insert(root).second)
            continue;
          Value copy =
              scan::copyToNewBuffer(b, ret.getLoc(), operand.get(), type);
          operand.set(copy);
          returned.insert(copy.getDefiningOp());
          ++numCopies;
        }
      });
    });
  }
};

} // namespace
