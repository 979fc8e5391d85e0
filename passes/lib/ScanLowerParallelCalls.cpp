//===- ScanLowerParallelCalls.cpp - chunk calls -> the run-time pool ------===//
//
// The run-time library's parallel loop calls one function pointer with one
// context pointer, whatever the chunk function's arguments. Once everything
// is LLVM dialect, a chunk function's arguments are scalars (memref
// descriptors are expanded into pointers and i64 fields), so they fit in an
// array of 8-byte slots: the call site stores them there, and an entry
// function loads them back and calls the chunk function.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANLOWERPARALLELCALLS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using scan::kChunkFuncPrefix;
using scan::kParallelForFunc;
using scan::kParallelPartsFunc;
using scan::kParallelStubPrefix;
using scan::kPartsStubPrefix;

namespace {

/// `void <name>(i64 lo, i64 hi, i64 work, ptr fn, ptr ctx)`: the run-time
/// library's __mlir_scan_parallel_for or __mlir_scan_parallel_parts.
LLVM::LLVMFuncOp declareRunner(ModuleOp module, OpBuilder &b, StringRef name) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  auto i64 = IntegerType::get(ctx, 64);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  return LLVM::LLVMFuncOp::create(
      b, module.getLoc(), name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {i64, i64, i64, ptr, ptr}));
}

/// The stub prefix `name` starts with and the run-time function its calls
/// become, or none.
std::optional<std::pair<StringRef, StringRef>> stubKind(StringRef name) {
  if (name.starts_with(kParallelStubPrefix))
    return std::make_pair(StringRef(kParallelStubPrefix),
                          StringRef(kParallelForFunc));
  if (name.starts_with(kPartsStubPrefix))
    return std::make_pair(StringRef(kPartsStubPrefix),
                          StringRef(kParallelPartsFunc));
  return std::nullopt;
}

/// `@<chunk>_entry(ctx, lo, hi)`: loads slot k of `ctx` as the chunk's
/// argument k + 2 and calls the chunk.
LLVM::LLVMFuncOp buildEntry(LLVM::LLVMFuncOp chunk, OpBuilder &b) {
  MLIRContext *ctx = chunk.getContext();
  Location loc = chunk.getLoc();
  auto i64 = IntegerType::get(ctx, 64);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(chunk);
  auto entry = LLVM::LLVMFuncOp::create(
      b, loc, (chunk.getName() + "_entry").str(),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptr, i64, i64}),
      LLVM::Linkage::Internal);
  Block *block = entry.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  SmallVector<Value> args{block->getArgument(1), block->getArgument(2)};
  ArrayRef<Type> params = chunk.getFunctionType().getParams();
  for (auto [k, type] : llvm::enumerate(params.drop_front(2))) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, i64, block->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{int32_t(k)});
    args.push_back(LLVM::LoadOp::create(b, loc, type, slot));
  }
  LLVM::CallOp::create(b, loc, chunk, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return entry;
}

struct ScanLowerParallelCallsPass
    : scan::impl::ScanLowerParallelCallsBase<ScanLowerParallelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto ptr = LLVM::LLVMPointerType::get(ctx);

    SmallVector<LLVM::LLVMFuncOp> stubs;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (stubKind(fn.getName()) && fn.isExternal())
        stubs.push_back(fn);
    if (stubs.empty())
      return;
    // The calls of every stub, in one walk of the module.
    llvm::StringMap<SmallVector<LLVM::CallOp>> callsOf;
    module.walk([&](LLVM::CallOp call) {
      if (std::optional<StringRef> callee = call.getCallee())
        if (stubKind(*callee))
          callsOf[*callee].push_back(call);
    });
    for (LLVM::LLVMFuncOp stub : stubs) {
      auto [prefix, runner] = *stubKind(stub.getName());
      StringRef index = stub.getName().drop_front(prefix.size());
      auto chunk = module.lookupSymbol<LLVM::LLVMFuncOp>(
          (kChunkFuncPrefix + index).str());
      if (!chunk || chunk.isExternal()) {
        stub.emitError("scan-lower-parallel-calls: no chunk function @")
            << kChunkFuncPrefix << index << " for this declaration";
        return signalPassFailure();
      }
      ArrayRef<Type> params = chunk.getFunctionType().getParams();
      for (Type type : params.drop_front(2))
        if (!type.isIntOrIndexOrFloat() && !isa<LLVM::LLVMPointerType>(type)) {
          chunk.emitError("scan-lower-parallel-calls: an argument of type ")
              << type << " does not fit an 8-byte slot";
          return signalPassFailure();
        }
      // Called only through its entry function: internal, so that LLVM
      // compiles its body once (inlined into the entry), not also for a
      // packed wrapper the ExecutionEngine would make for an external one.
      chunk.setLinkage(LLVM::Linkage::Internal);
      LLVM::LLVMFuncOp entry = buildEntry(chunk, b);
      LLVM::LLVMFuncOp parallelFor = declareRunner(module, b, runner);

      for (LLVM::CallOp call : callsOf.lookup(stub.getName())) {
        Location loc = call.getLoc();
        auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
        ValueRange operands = call.getArgOperands();
        // The slots live in the caller's entry block: an alloca in a loop
        // body would grow the stack every iteration.
        b.setInsertionPointToStart(&caller.getBody().front());
        Value count = LLVM::ConstantOp::create(
            b, loc, i64, b.getI64IntegerAttr(std::max<int64_t>(1, operands.size() - 3)));
        Value slots = LLVM::AllocaOp::create(b, loc, ptr, i64, count, 8);
        b.setInsertionPoint(call);
        for (auto [k, value] : llvm::enumerate(operands.drop_front(3))) {
          Value slot = LLVM::GEPOp::create(b, loc, ptr, i64, slots,
                                           ArrayRef<LLVM::GEPArg>{int32_t(k)});
          LLVM::StoreOp::create(b, loc, value, slot);
        }
        Value fn = LLVM::AddressOfOp::create(b, loc, ptr, entry.getName());
        LLVM::CallOp::create(b, loc, parallelFor,
                             ValueRange{operands[0], operands[1], operands[2],
                                        fn, slots});
        call.erase();
      }
      stub.erase();
    }
  }
};

} // namespace
