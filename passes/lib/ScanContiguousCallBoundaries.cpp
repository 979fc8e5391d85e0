//===- ScanContiguousCallBoundaries.cpp - copy views at call boundaries ---===//
//
// one-shot-bufferize with identity-layout function boundaries retypes a view
// of run-time strides with a `memref.cast` to the identity layout where the
// cast verifies. The descriptor keeps the view's strides, but every consumer
// that trusts the identity layout (memref.copy's memcpy path, collapse_shape)
// treats the buffer as contiguous: a QR helper returning the first k columns
// of its work matrix handed back rows read at the wrong stride. At the
// boundaries of private functions the view becomes a contiguous copy.
//
//===----------------------------------------------------------------------===//

#include "Scan/BufferCopies.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCONTIGUOUSCALLBOUNDARIES
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `cast` claims the identity layout for a view that may not have
/// it at run time (a stride or the offset differs or is unknown).
bool castHidesStrides(memref::CastOp cast) {
  auto source = dyn_cast<MemRefType>(cast.getSource().getType());
  auto result = dyn_cast<MemRefType>(cast.getType());
  if (!source || !result || !result.getLayout().isIdentity() ||
      source.getLayout().isIdentity())
    return false;
  SmallVector<int64_t> sourceStrides, resultStrides;
  int64_t sourceOffset, resultOffset;
  if (failed(source.getStridesAndOffset(sourceStrides, sourceOffset)) ||
      failed(result.getStridesAndOffset(resultStrides, resultOffset)))
    return true;
  if (sourceOffset != 0)
    return true;
  for (auto [have, want] : llvm::zip(sourceStrides, resultStrides))
    if (ShapedType::isDynamic(have) || have != want)
      return true;
  return false;
}

/// Whether the body of `callee` may write its memref argument `index` (or a
/// view of it). Unknown ops and external callees may.
bool mayWriteArgument(func::FuncOp callee, unsigned index,
                      llvm::DenseSet<Operation *> &visiting) {
  if (callee.isExternal() || !visiting.insert(callee).second)
    return true;
  SmallVector<Value> worklist{callee.getArgument(index)};
  bool writes = false;
  while (!worklist.empty() && !writes) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DimOp, func::ReturnOp>(user))
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          llvm::append_range(worklist, user->getResults());
          continue;
        }
      }
      if (isa<CastOpInterface>(user)) {
        llvm::append_range(worklist, user->getResults());
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(user)) {
        auto inner = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        if (!inner ||
            mayWriteArgument(inner, use.getOperandNumber(), visiting)) {
          writes = true;
          break;
        }
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects) {
        writes = true;
        break;
      }
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      for (const MemoryEffects::EffectInstance &effect : instances) {
        bool onValue = !effect.getValue() || effect.getValue() == value;
        if (onValue && !isa<MemoryEffects::Read>(effect.getEffect()))
          writes = true;
      }
      if (writes)
        break;
    }
  }
  visiting.erase(callee);
  return writes;
}

struct ScanContiguousCallBoundariesPass
    : scan::impl::ScanContiguousCallBoundariesBase<
          ScanContiguousCallBoundariesPass> {
  void runOnOperation() override {
    SmallVector<memref::CastOp> casts;
    getOperation().walk([&](memref::CastOp cast) {
      if (castHidesStrides(cast))
        casts.push_back(cast);
    });
    for (memref::CastOp retype : casts) {
      Value view = retype.getSource();
      auto type = cast<MemRefType>(retype.getType());
      for (OpOperand &use : llvm::make_early_inc_range(retype->getUses())) {
        Operation *user = use.getOwner();
        OpBuilder b(user);
        if (isa<func::ReturnOp>(user)) {
          auto func = user->getParentOfType<func::FuncOp>();
          if (func.isPublic())
            continue;
          use.set(scan::copyToNewBuffer(b, user->getLoc(), view, type));
          ++numCopies;
          continue;
        }
        auto call = dyn_cast<func::CallOp>(user);
        if (!call)
          continue;
        Value copy = scan::copyToNewBuffer(b, user->getLoc(), view, type);
        use.set(copy);
        ++numCopies;
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        llvm::DenseSet<Operation *> visiting;
        if (!callee ||
            mayWriteArgument(callee, use.getOperandNumber(), visiting)) {
          b.setInsertionPointAfter(call);
          memref::CopyOp::create(b, call.getLoc(), copy, view);
        }
      }
      if (retype->use_empty())
        retype->erase();
    }
  }
};

} // namespace
