//===- AccessLowering.cpp - memref.load/store to LLVM, selectively --------===//

#include "Scan/AccessLowering.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace {

/// What the two patterns share: which accesses they take, and the flags.
struct AccessSelection {
  llvm::function_ref<bool(Operation *)> selects;
  LLVM::GEPNoWrapFlags flags;
};

/// The llvm.load / llvm.store that replaces `op`, at `ptr`.
void replaceAccess(memref::LoadOp op, memref::LoadOp::Adaptor, Value ptr,
                   const TypeConverter &converter,
                   ConversionPatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<LLVM::LoadOp>(
      op, converter.convertType(op.getType()), ptr,
      op.getAlignment().value_or(0), /*isVolatile=*/false, op.getNontemporal());
}

void replaceAccess(memref::StoreOp op, memref::StoreOp::Adaptor adaptor,
                   Value ptr, const TypeConverter &,
                   ConversionPatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<LLVM::StoreOp>(
      op, adaptor.getValue(), ptr, op.getAlignment().value_or(0),
      /*isVolatile=*/false, op.getNontemporal());
}

/// memref.load or memref.store, for the accesses `selection` takes.
template <typename AccessOp>
struct AccessLowering : ConvertOpToLLVMPattern<AccessOp> {
  using Base = ConvertOpToLLVMPattern<AccessOp>;

  AccessLowering(const LLVMTypeConverter &converter, AccessSelection selection)
      : Base(converter), selection(selection) {}

  LogicalResult
  matchAndRewrite(AccessOp op, typename AccessOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!selection.selects(op))
      return failure();
    Value ptr = this->getStridedElementPtr(
        rewriter, op.getLoc(), op.getMemRefType(), adaptor.getMemref(),
        adaptor.getIndices(), selection.flags);
    replaceAccess(op, adaptor, ptr, *this->getTypeConverter(), rewriter);
    return success();
  }

  AccessSelection selection;
};

} // namespace

LogicalResult
scan::lowerMemRefAccesses(Operation *root,
                          llvm::function_ref<bool(Operation *)> selects,
                          LLVM::GEPNoWrapFlags flags) {
  MLIRContext *ctx = root->getContext();
  LLVMTypeConverter converter(ctx);
  RewritePatternSet patterns(ctx);
  AccessSelection selection{selects, flags};
  patterns.add<AccessLowering<memref::LoadOp>, AccessLowering<memref::StoreOp>>(
      converter, selection);
  ConversionTarget target(*ctx);
  target.addLegalDialect<LLVM::LLVMDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  target.addDynamicallyLegalOp<memref::LoadOp, memref::StoreOp>(
      [&](Operation *op) { return !selects(op); });
  // Only the selected accesses are converted: the driver's walk over every
  // op of a large module was most of the pass's time.
  SmallVector<Operation *> accesses;
  root->walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op) && selects(op))
      accesses.push_back(op);
  });
  if (accesses.empty())
    return success();
  return applyPartialConversion(accesses, target, std::move(patterns));
}
