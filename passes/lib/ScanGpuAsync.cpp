//===- ScanGpuAsync.cpp - the host's GPU calls on one stream --------------===//
//
// Makes every GPU op of the host code asynchronous on one chain of
// !gpu.async.token values (one CUDA stream after gpu-to-llvm), threaded
// through scf.for / scf.while / scf.if as an extra iteration value or
// result. The host waits for the stream only where it must: before it reads
// host memory that a gpu.memcpy wrote (a value read back, the results, a
// buffer passed to a host function), before it writes or frees host memory
// that a gpu.memcpy reads, and before a return. Upstream gpu-async-region instead waits at the end of
// every block, i.e. once per step of a host loop.
//
// The waits are calls of the CUDA runtime wrappers' mgpuStreamSynchronize
// (and mgpuStreamDestroy at the return) on the stream the token lowers to:
// gpu-to-llvm maps an asynchronous op's token to the stream of its single
// dependency, but lowers `gpu.wait` of a token that reached it through
// control flow (a loop's iteration value) as a wait for an *event*.
//
//===----------------------------------------------------------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUASYNC
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

bool isHostGpuOp(Operation *op) {
  return isa<gpu::AsyncOpInterface>(op) && !isa<gpu::WaitOp>(op);
}

class StreamThreader {
public:
  explicit StreamThreader(func::FuncOp func) : func(func), rewriter(func) {}
  LogicalResult run();

private:
  /// Threads `token` (possibly null: no stream yet) through `block`;
  /// returns the token at its end (null after a host wait).
  Value threadBlock(Block &block, Value token);
  Value threadFor(scf::ForOp loop, Value token);
  Value threadWhile(scf::WhileOp loop, Value token);
  Value threadIf(scf::IfOp ifOp, Value token);
  Value makeAsync(Operation *op, Value token);
  Value newStream(Location loc) {
    return gpu::WaitOp::create(rewriter, loc,
                               rewriter.getType<gpu::AsyncTokenType>(),
                               ValueRange())
        .getAsyncToken();
  }
  /// Calls the runtime wrapper `name(stream)` on the stream of `token`.
  void callOnStream(Location loc, llvm::StringRef name, Value token);
  bool containsGpuOps(Operation *op) {
    return op->walk([](Operation *nested) {
                return isHostGpuOp(nested) ? WalkResult::interrupt()
                                           : WalkResult::advance();
              })
        .wasInterrupted();
  }
  /// Whether `op` (or an op nested in it) must wait for the stream: it
  /// reads or writes host memory that a gpu.memcpy writes, or returns.
  bool needsHostWait(Operation *op);

  func::FuncOp func;
  IRRewriter rewriter;
  /// Roots of the host memory the device copies into.
  llvm::SmallPtrSet<Value, 8> copiedTo;
  /// Roots of the host memory copied to the device (which the host must not
  /// overwrite or free while the copy may be pending).
  llvm::SmallPtrSet<Value, 8> copiedFrom;
  bool failedToThread = false;
};

bool StreamThreader::needsHostWait(Operation *op) {
  return op
      ->walk([&](Operation *nested) {
        if (isa<func::ReturnOp>(nested))
          return WalkResult::interrupt();
        auto rootedIn = [](Value memref,
                           const llvm::SmallPtrSetImpl<Value> &set) {
          SmallVector<Value> roots;
          collectMemoryRoots(memref, roots);
          return llvm::any_of(roots, [&](Value r) { return set.count(r); });
        };
        auto copied = [&](Value memref) { return rootedIn(memref, copiedTo); };
        auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
        if (!iface) {
          // Unknown effects (a call of a host function given a buffer the
          // stream fills: printMemrefF64): it may read any operand.
          if (nested->getNumRegions() == 0 &&
              llvm::any_of(nested->getOperands(), [&](Value v) {
                return isa<BaseMemRefType>(v.getType()) && copied(v);
              }))
            return WalkResult::interrupt();
          return WalkResult::advance();
        }
        SmallVector<MemoryEffects::EffectInstance> effects;
        iface.getEffects(effects);
        for (const MemoryEffects::EffectInstance &e : effects) {
          if (!e.getValue() || !isa<BaseMemRefType>(e.getValue().getType()))
            continue;
          if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()) &&
              rootedIn(e.getValue(), copiedFrom))
            return WalkResult::interrupt();
          if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
            continue;
          if (copied(e.getValue()))
            return WalkResult::interrupt();
        }
        return WalkResult::advance();
      })
      .wasInterrupted();
}

void StreamThreader::callOnStream(Location loc, llvm::StringRef name,
                                  Value token) {
  auto module = func->getParentOfType<ModuleOp>();
  auto ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
  auto type = LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(rewriter.getContext()), {ptr});
  if (!module.lookupSymbol(name)) {
    OpBuilder atEnd = OpBuilder::atBlockEnd(module.getBody());
    LLVM::LLVMFuncOp::create(atEnd, loc, name, type);
  }
  Value stream =
      UnrealizedConversionCastOp::create(rewriter, loc, ptr, token).getResult(
          0);
  LLVM::CallOp::create(rewriter, loc, type, name, ValueRange{stream});
}

Value StreamThreader::makeAsync(Operation *op, Value token) {
  auto asyncOp = cast<gpu::AsyncOpInterface>(op);
  asyncOp.addAsyncDependency(token);
  if (Value existing = asyncOp.getAsyncToken())
    return existing;
  // The same op with a token result.
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(op->getOperands());
  state.addTypes(op->getResultTypes());
  state.addTypes(rewriter.getType<gpu::AsyncTokenType>());
  state.propertiesAttr = op->getPropertiesAsAttribute();
  state.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
  for (Region &region : op->getRegions())
    state.addRegion()->takeBody(region);
  rewriter.setInsertionPoint(op);
  Operation *replacement = rewriter.create(state);
  rewriter.replaceOp(op, replacement->getResults().drop_back());
  return replacement->getResults().back();
}

Value StreamThreader::threadBlock(Block &block, Value token) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isHostGpuOp(&op)) {
      rewriter.setInsertionPoint(&op);
      if (!token)
        token = newStream(op.getLoc());
      token = makeAsync(&op, token);
      continue;
    }
    if (op.getNumRegions() != 0 && containsGpuOps(&op)) {
      rewriter.setInsertionPoint(&op);
      if (!token)
        token = newStream(op.getLoc());
      if (auto loop = dyn_cast<scf::ForOp>(op))
        token = threadFor(loop, token);
      else if (auto loop = dyn_cast<scf::WhileOp>(op))
        token = threadWhile(loop, token);
      else if (auto ifOp = dyn_cast<scf::IfOp>(op))
        token = threadIf(ifOp, token);
      else {
        op.emitError() << "scan-gpu-async: cannot thread a stream through "
                       << op.getName();
        failedToThread = true;
      }
      continue;
    }
    if (token && needsHostWait(&op)) {
      rewriter.setInsertionPoint(&op);
      callOnStream(op.getLoc(), "mgpuStreamSynchronize", token);
      if (isa<func::ReturnOp>(op))
        callOnStream(op.getLoc(), "mgpuStreamDestroy", token);
    }
  }
  return token;
}

Value StreamThreader::threadFor(scf::ForOp loop, Value token) {
  Value end;
  Block *body = loop.getBody();
  FailureOr<LoopLikeOpInterface> newLoop = loop.replaceWithAdditionalYields(
      rewriter, token, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &b, Location loc, ArrayRef<BlockArgument> newArgs) {
        // Called before the body moves to the new loop: thread the old body
        // with the new loop's token argument.
        end = threadBlock(*body, newArgs.front());
        if (!end) {
          rewriter.setInsertionPoint(body->getTerminator());
          end = newStream(loc);
        }
        return SmallVector<Value>{end};
      });
  if (failed(newLoop)) {
    loop.emitError() << "scan-gpu-async: cannot add the stream to the loop";
    failedToThread = true;
    return token;
  }
  return newLoop->getOperation()->getResults().back();
}

Value StreamThreader::threadWhile(scf::WhileOp loop, Value token) {
  Location loc = loop.getLoc();
  Type tokenType = rewriter.getType<gpu::AsyncTokenType>();
  SmallVector<Value> inits(loop.getInits());
  inits.push_back(token);
  SmallVector<Type> results(loop.getResultTypes());
  results.push_back(tokenType);
  rewriter.setInsertionPoint(loop);
  auto newLoop = scf::WhileOp::create(rewriter, loc, results, inits);
  newLoop->setAttrs(loop->getAttrs());
  // Move the regions and give each block a token argument.
  newLoop.getBefore().takeBody(loop.getBefore());
  newLoop.getAfter().takeBody(loop.getAfter());
  Block *before = newLoop.getBeforeBody(), *after = newLoop.getAfterBody();
  Value beforeToken = before->addArgument(tokenType, loc);
  Value afterToken = after->addArgument(tokenType, loc);
  Value exitToken = threadBlock(*before, beforeToken);
  scf::ConditionOp cond = newLoop.getConditionOp();
  if (!exitToken) {
    rewriter.setInsertionPoint(cond);
    exitToken = newStream(loc);
  }
  cond.getArgsMutable().append(exitToken);
  Value endToken = threadBlock(*after, afterToken);
  scf::YieldOp yield = newLoop.getYieldOp();
  if (!endToken) {
    rewriter.setInsertionPoint(yield);
    endToken = newStream(loc);
  }
  yield.getResultsMutable().append(endToken);
  rewriter.replaceOp(loop, newLoop.getResults().drop_back());
  return newLoop.getResults().back();
}

Value StreamThreader::threadIf(scf::IfOp ifOp, Value token) {
  Location loc = ifOp.getLoc();
  rewriter.setInsertionPoint(ifOp);
  SmallVector<Type> results(ifOp.getResultTypes());
  results.push_back(rewriter.getType<gpu::AsyncTokenType>());
  auto newIf = scf::IfOp::create(rewriter, loc, results, ifOp.getCondition(),
                                 /*withElseRegion=*/true);
  for (auto [from, to] :
       {std::pair(&ifOp.getThenRegion(), &newIf.getThenRegion()),
        std::pair(&ifOp.getElseRegion(), &newIf.getElseRegion())}) {
    to->getBlocks().clear();
    if (from->empty()) {
      Block *block = rewriter.createBlock(to);
      rewriter.setInsertionPointToEnd(block);
      scf::YieldOp::create(rewriter, loc, ValueRange{token});
      continue;
    }
    to->takeBody(*from);
    Block &block = to->front();
    Value end = threadBlock(block, token);
    Operation *yield = block.getTerminator();
    if (!end) {
      rewriter.setInsertionPoint(yield);
      end = newStream(loc);
    }
    yield->insertOperands(yield->getNumOperands(), end);
  }
  rewriter.replaceOp(ifOp, newIf.getResults().drop_back());
  return newIf.getResults().back();
}

LogicalResult StreamThreader::run() {
  func.walk([&](gpu::MemcpyOp copy) {
    SmallVector<Value> roots;
    if (!isDeviceMemory(copy.getSrc())) {
      collectMemoryRoots(copy.getSrc(), roots);
      copiedFrom.insert(roots.begin(), roots.end());
    }
    if (isDeviceMemory(copy.getDst()))
      return;
    roots.clear();
    collectMemoryRoots(copy.getDst(), roots);
    copiedTo.insert(roots.begin(), roots.end());
  });
  for (Block &block : func.getBody())
    threadBlock(block, Value());
  return failure(failedToThread);
}

struct ScanGpuAsyncPass : scan::impl::ScanGpuAsyncBase<ScanGpuAsyncPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(StreamThreader(func).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
