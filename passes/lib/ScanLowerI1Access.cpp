//===- ScanLowerI1Access.cpp - i1 memref loads/stores to LLVM -----------===//
//
// LLVM 22.1's MemRefToLLVM load/store lowerings assert that the integer
// element is at least 8 bits wide. Boolean buffers are common here
// (comparisons in scan bodies, deallocation helpers), so i1 loads and stores
// are lowered before convert-to-llvm runs, with the upstream address helper.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERI1ACCESS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

bool accessesI1(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getType().isInteger(1);
  auto store = dyn_cast<memref::StoreOp>(op);
  return store && store.getValueToStore().getType().isInteger(1);
}

struct I1LoadLowering : ConvertOpToLLVMPattern<memref::LoadOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(memref::LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!accessesI1(op))
      return failure();
    Value ptr = getStridedElementPtr(rewriter, op.getLoc(), op.getMemRefType(),
                                     adaptor.getMemref(), adaptor.getIndices());
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(op, op.getType(), ptr);
    return success();
  }
};

struct I1StoreLowering : ConvertOpToLLVMPattern<memref::StoreOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(memref::StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!accessesI1(op))
      return failure();
    Value ptr = getStridedElementPtr(rewriter, op.getLoc(), op.getMemRefType(),
                                     adaptor.getMemref(), adaptor.getIndices());
    rewriter.replaceOpWithNewOp<LLVM::StoreOp>(op, adaptor.getValue(), ptr);
    return success();
  }
};

struct ScanLowerI1AccessPass
    : scan::impl::ScanLowerI1AccessBase<ScanLowerI1AccessPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    patterns.add<I1LoadLowering, I1StoreLowering>(converter);
    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addDynamicallyLegalOp<memref::LoadOp, memref::StoreOp>(
        [](Operation *op) { return !accessesI1(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
