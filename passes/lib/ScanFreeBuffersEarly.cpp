//===- ScanFreeBuffersEarly.cpp - free a buffer after its last use --------===//
//
// MLIR's buffer deallocation pipeline frees a buffer at the end of the block
// that owns it, so every temporary of a function lives until the function
// returns. A scan program is a few long phases -- the forward loop, the
// backward loop, the contractions after it -- and their temporaries are
// large (T x H): the gradient of an RNN held the forward's pushed-out `x U`
// through the whole backward loop, beside the states and the stacked
// deltas. This pass moves each `memref.dealloc` of an allocation up to just
// after the last operation of its block that uses the buffer or a view of
// it, so the run-time allocator can hand the block to the next phase.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANFREEBUFFERSEARLY
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// The operation of `dealloc`'s block after which the buffer is no longer
/// used (its last user there, or the allocation itself), or null when that
/// cannot be known: the freed value is not a `memref.alloc`, a use is
/// outside the block, or a user derives a buffer or an address the alias
/// analysis does not follow (then a later operation could still read it).
Operation *lastUse(memref::DeallocOp dealloc,
                   const BufferViewFlowAnalysis &aliases) {
  auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return nullptr;
  Block *block = dealloc->getBlock();
  BufferViewFlowAnalysis::ValueSetT views = aliases.resolve(alloc);
  Operation *last = block->findAncestorOpInBlock(*alloc);
  for (Value view : views) {
    for (Operation *user : view.getUsers()) {
      if (user == dealloc)
        continue;
      if (isa<memref::ExtractAlignedPointerAsIndexOp,
              memref::ExtractStridedMetadataOp>(user))
        return nullptr;
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType()) && !views.contains(result))
          return nullptr;
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at || at == dealloc || dealloc->isBeforeInBlock(at))
        return nullptr;
      if (!last || last->isBeforeInBlock(at))
        last = at;
    }
  }
  return last;
}

struct ScanFreeBuffersEarlyPass
    : scan::impl::ScanFreeBuffersEarlyBase<ScanFreeBuffersEarlyPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BufferViewFlowAnalysis aliases(func);
    SmallVector<memref::DeallocOp> deallocs;
    func.walk([&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      Operation *last = lastUse(dealloc, aliases);
      if (!last || last->getNextNode() == dealloc.getOperation())
        continue;
      dealloc->moveAfter(last);
      ++numMoved;
    }
  }
};

} // namespace
