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

struct LoadLowering : ConvertOpToLLVMPattern<memref::LoadOp> {
  LoadLowering(const LLVMTypeConverter &converter, AccessSelection selection)
      : ConvertOpToLLVMPattern(converter), selection(selection) {}

  LogicalResult
  matchAndRewrite(memref::LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!selection.selects(op))
      return failure();
    Value ptr = getStridedElementPtr(rewriter, op.getLoc(), op.getMemRefType(),
                                     adaptor.getMemref(), adaptor.getIndices(),
                                     selection.flags);
    Type element = getTypeConverter()->convertType(op.getType());
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(
        op, element, ptr, op.getAlignment().value_or(0), /*isVolatile=*/false,
        op.getNontemporal());
    return success();
  }

  AccessSelection selection;
};

struct StoreLowering : ConvertOpToLLVMPattern<memref::StoreOp> {
  StoreLowering(const LLVMTypeConverter &converter, AccessSelection selection)
      : ConvertOpToLLVMPattern(converter), selection(selection) {}

  LogicalResult
  matchAndRewrite(memref::StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!selection.selects(op))
      return failure();
    Value ptr = getStridedElementPtr(rewriter, op.getLoc(), op.getMemRefType(),
                                     adaptor.getMemref(), adaptor.getIndices(),
                                     selection.flags);
    rewriter.replaceOpWithNewOp<LLVM::StoreOp>(
        op, adaptor.getValue(), ptr, op.getAlignment().value_or(0),
        /*isVolatile=*/false, op.getNontemporal());
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
  patterns.add<LoadLowering, StoreLowering>(converter, selection);
  ConversionTarget target(*ctx);
  target.addLegalDialect<LLVM::LLVMDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  target.addDynamicallyLegalOp<memref::LoadOp, memref::StoreOp>(
      [&](Operation *op) { return !selects(op); });
  return applyPartialConversion(root, target, std::move(patterns));
}
