//===- ScanLowerSignedStrideAccess.cpp - loads/stores of reversed views ---===//
//
// LLVM 22.1's MemRefToLLVM lowers every memref.load and memref.store with
// `getelementptr inbounds|nuw` and, through the address helper, `mul nuw` /
// `add nuw` for each `index * stride` term. With a negative stride the
// product wraps as an unsigned number for every index > 0, so the address is
// poison even though the access is in bounds, and LLVM's optimizer is free
// to compute anything from it (upstream fixed this after 22.1). Reversed
// views are common here: the gradient of a scan reads its forward states
// and sequences backwards through `tensor.extract_slice ... [-1, ...]`, and
// `x[::-1]` is one in the Theano API. A dynamic stride may be such a stride
// (a view passed through a branch or a loop loses its static layout), so
// every access whose strides are not all statically non-negative is lowered
// here with `inbounds` alone (signed, `nsw`, index arithmetic), which is
// sound for any in-bounds access. The others keep the upstream lowering.
//
//===----------------------------------------------------------------------===//

#include "Scan/AccessLowering.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERSIGNEDSTRIDEACCESS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Whether the upstream lowering's `nuw` holds for every access of `type`:
/// each stride is known and not negative.
bool hasNonNegativeStaticStrides(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return llvm::all_of(strides, [](int64_t stride) {
    return !ShapedType::isDynamic(stride) && stride >= 0;
  });
}

bool mayHaveNegativeStride(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return !hasNonNegativeStaticStrides(load.getMemRefType());
  auto store = dyn_cast<memref::StoreOp>(op);
  return store && !hasNonNegativeStaticStrides(store.getMemRefType());
}

struct ScanLowerSignedStrideAccessPass
    : scan::impl::ScanLowerSignedStrideAccessBase<
          ScanLowerSignedStrideAccessPass> {
  void runOnOperation() override {
    if (failed(scan::lowerMemRefAccesses(getOperation(), mayHaveNegativeStride,
                                         LLVM::GEPNoWrapFlags::inbounds)))
      signalPassFailure();
  }
};

} // namespace
