//===- ScanCheckLowerable.cpp - reject IR the LLVM 22 lowering aborts on --===//
//
// A few valid inputs make upstream lowering passes of LLVM 22.1 abort on an
// assertion instead of failing. The CPU pipeline runs this check first, so
// such a program gets a located error and the process survives.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANCHECKLOWERABLE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// expand-strided-metadata asserts "There must be at most one dynamic size
/// per group" on a memref.expand_shape that expands into several dynamic
/// sizes within one reassociation group. A group with a dynamic size and a
/// static 0 makes it divide by 0 ("division by non-positive value is not
/// supported": an error it reports without failing, which the Python
/// bindings then abort on).
LogicalResult checkExpandShape(memref::ExpandShapeOp op) {
  MemRefType result = op.getResultType();
  for (auto [group, indices] : llvm::enumerate(op.getReassociationIndices())) {
    unsigned dynamic = llvm::count_if(
        indices, [&](int64_t d) { return result.isDynamicDim(d); });
    if (dynamic > 1)
      return op.emitOpError()
             << "expands reassociation group #" << group << " into "
             << dynamic
             << " dynamic sizes, which the LLVM 22 lowering cannot handle "
                "(expand-strided-metadata aborts); reshape with at most one "
                "dynamic size per group";
    if (dynamic == 1 && llvm::any_of(indices, [&](int64_t d) {
          return result.getDimSize(d) == 0;
        }))
      return op.emitOpError()
             << "expands reassociation group #" << group
             << " into a dynamic size beside a static size 0, which the "
                "LLVM 22 lowering cannot handle (expand-strided-metadata "
                "divides by the static sizes); the result is empty: make it "
                "with tensor.empty / memref.alloc instead";
  }
  return success();
}

/// The memref code computes the identity layout's strides from the static
/// sizes and asserts "integer overflow in size computation" when their
/// product passes 2**63 - 1 (`memref<2305843009213693952x8xf64>`, the
/// buffer of a static `tensor<2**61 x 8>` result; a size of 0 does not
/// stop it). No buffer can have so many elements: a located error instead.
LogicalResult checkStaticSize(Operation *op, Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !isa<MemRefType, RankedTensorType>(type))
    return success();
  if (auto memref = dyn_cast<MemRefType>(type);
      memref && !memref.getLayout().isIdentity())
    return success();
  int64_t elements = 1;
  for (int64_t size : shaped.getShape())
    if (size > 0 && llvm::MulOverflow(elements, size, elements))
      return op->emitOpError()
             << "uses the type " << type
             << ", whose static sizes multiply to more than 2**63 - 1 "
                "elements: no buffer can have them (the LLVM 22 lowering "
                "aborts computing its strides)";
  return success();
}

LogicalResult checkOpStaticSizes(Operation *op) {
  for (Type type : op->getResultTypes())
    if (failed(checkStaticSize(op, type)))
      return failure();
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Type type : block.getArgumentTypes())
        if (failed(checkStaticSize(op, type)))
          return failure();
  return success();
}

struct ScanCheckLowerablePass
    : scan::impl::ScanCheckLowerableBase<ScanCheckLowerablePass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](Operation *op) {
      auto expand = dyn_cast<memref::ExpandShapeOp>(op);
      if ((expand && failed(checkExpandShape(expand))) ||
          failed(checkOpStaticSizes(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::scan::checkStaticSizes(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    return failed(checkOpStaticSizes(op)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
