//===- ScanGpuDeviceMemory.cpp - the buffers of public functions on the GPU -===//
//
// After this pass every buffer a public function works on is device memory
// (a gpu.alloc): arguments and globals are copied in once at entry, the
// function's own allocations are device allocations, and results are copied
// out into host buffers at the return. Only the deallocation bookkeeping of
// the buffer-deallocation pipeline (small index/i1 arrays passed to its
// helper function) stays in host memory, and a call of a host function that
// takes a buffer gets a host copy of it.
//
//===----------------------------------------------------------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUDEVICEMEMORY
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

/// The dynamic sizes of `memref` as values (for an allocation like it).
SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, loc, memref, d));
  return sizes;
}

/// A device buffer of `type` holding a copy of `host` (identity layout).
Value copyToDevice(OpBuilder &b, Location loc, Value host) {
  auto type = cast<MemRefType>(host.getType());
  Value device = gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                      ValueRange(), dynamicSizes(b, loc, host),
                                      ValueRange(), /*hostShared=*/false)
                     .getMemref();
  gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), device, host);
  return device;
}

/// The values `v` is viewed through (subviews, casts...), `v` included.
void collectViews(Value v, SmallVectorImpl<Value> &views) {
  views.push_back(v);
  for (Operation *user : v.getUsers())
    if (auto view = dyn_cast<ViewLikeOpInterface>(user))
      if (view.getViewSource() == v)
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            collectViews(result, views);
}

/// Whether the memory of `memref` may be written by the function: a write
/// effect on it or on a view of it, or a use the analysis cannot see
/// through (a region op, a call, a terminator).
bool mayBeWritten(Value memref) {
  SmallVector<Value> views;
  collectViews(memref, views);
  for (Value v : views)
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ViewLikeOpInterface>(user) &&
          cast<ViewLikeOpInterface>(user).getViewSource() == v)
        continue;
      // Copies out of the buffer, and the copy-in that fills it.
      if (isa<gpu::MemcpyOp>(user))
        continue;
      // Region ops without their own effects (scf.if, scf.for...): unknown.
      auto iface = dyn_cast<MemoryEffectOpInterface>(user);
      if (!iface)
        return true;
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      for (const MemoryEffects::EffectInstance &e : effects)
        if ((!e.getValue() || e.getValue() == v) &&
            !isa<MemoryEffects::Read>(e.getEffect()))
          return true;
    }
  return false;
}

/// Allocations that the function passes to host functions (through casts
/// and views): the deallocation helper's arrays of pointers and flags.
bool feedsHostCall(Value alloc) {
  SmallVector<Value> views;
  collectViews(alloc, views);
  for (Value v : views)
    for (Operation *user : v.getUsers())
      if (isa<CallOpInterface>(user))
        return true;
  return false;
}

bool hasIdentityLayout(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.getLayout().isIdentity();
}

class DeviceMemory {
public:
  explicit DeviceMemory(func::FuncOp func) : func(func), b(func) {}
  LogicalResult run();

private:
  LogicalResult copyArguments();
  void copyGlobals();
  LogicalResult convertAllocations();
  LogicalResult convertCopies();
  /// A call that passes device memory (to an external host function, such
  /// as mlir-runner's printMemrefF64) gets host copies instead, copied back
  /// after the call.
  LogicalResult passHostCopies(CallOpInterface call);
  LogicalResult copyResults(func::ReturnOp ret);

  func::FuncOp func;
  OpBuilder b;
  /// (host, device) buffers copied in at entry: written back at exit when
  /// `writeBack`; freed at exit.
  struct Copy {
    Value host, device;
    bool writeBack;
  };
  SmallVector<Copy> copies;
};

LogicalResult DeviceMemory::copyArguments() {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    if (!isa<BaseMemRefType>(arg.getType()) || arg.use_empty())
      continue;
    if (!hasIdentityLayout(arg.getType()))
      return func.emitError()
             << "scan-gpu-device-memory: argument #" << arg.getArgNumber()
             << " has type " << arg.getType()
             << "; only memrefs with the identity layout can be copied to "
                "the device";
    // The uses before the copy exists: the copy reads the argument.
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : arg.getUses())
      uses.push_back(&use);
    Value device = copyToDevice(b, func.getLoc(), arg);
    for (OpOperand *use : uses)
      use->set(device);
    copies.push_back({arg, device, false});
  }
  return success();
}

void DeviceMemory::copyGlobals() {
  llvm::MapVector<StringAttr, SmallVector<memref::GetGlobalOp>> globals;
  func.walk([&](memref::GetGlobalOp op) {
    globals[op.getNameAttr().getAttr()].push_back(op);
  });
  Block &entry = func.getBody().front();
  for (auto &[name, uses] : globals) {
    b.setInsertionPoint(&entry, entry.begin());
    Location loc = uses.front().getLoc();
    auto host = memref::GetGlobalOp::create(b, loc, uses.front().getType(),
                                            uses.front().getNameAttr());
    Value device = copyToDevice(b, loc, host);
    for (memref::GetGlobalOp use : uses) {
      use.replaceAllUsesWith(device);
      use.erase();
    }
    copies.push_back({host, device, false});
  }
}

LogicalResult DeviceMemory::convertAllocations() {
  SmallVector<Operation *> allocs;
  func.walk([&](Operation *op) {
    if (isa<memref::AllocOp, memref::AllocaOp>(op) &&
        !feedsHostCall(op->getResult(0)))
      allocs.push_back(op);
  });
  for (Operation *op : allocs) {
    b.setInsertionPoint(op);
    auto type = cast<MemRefType>(op->getResult(0).getType());
    if (type.getMemorySpace())
      return op->emitError() << "scan-gpu-device-memory: cannot move an "
                                "allocation in memory space "
                             << type.getMemorySpace() << " to the device";
    Value device =
        gpu::AllocOp::create(b, op->getLoc(), type, Type(), ValueRange(),
                             isa<memref::AllocOp>(op)
                                 ? cast<memref::AllocOp>(op).getDynamicSizes()
                                 : cast<memref::AllocaOp>(op).getDynamicSizes(),
                             ValueRange(), false)
            .getMemref();
    if (isa<memref::AllocaOp>(op)) {
      // Stack memory lives until its allocation scope ends.
      Operation *scope =
          op->getParentWithTrait<OpTrait::AutomaticAllocationScope>();
      for (Block &block : scope->getRegion(0))
        if (Operation *term = block.getTerminator();
            term && term->hasTrait<OpTrait::ReturnLike>()) {
          b.setInsertionPoint(term);
          gpu::DeallocOp::create(b, op->getLoc(), Type(), ValueRange(),
                                 device);
        }
    }
    op->getResult(0).replaceAllUsesWith(device);
    op->erase();
  }
  SmallVector<memref::DeallocOp> deallocs;
  func.walk([&](memref::DeallocOp op) {
    if (isDeviceMemory(op.getMemref()))
      deallocs.push_back(op);
  });
  for (memref::DeallocOp op : deallocs) {
    b.setInsertionPoint(op);
    gpu::DeallocOp::create(b, op.getLoc(), Type(), ValueRange(),
                           op.getMemref());
    op.erase();
  }
  return success();
}

LogicalResult DeviceMemory::convertCopies() {
  SmallVector<memref::CopyOp> copyOps;
  func.walk([&](memref::CopyOp op) { copyOps.push_back(op); });
  for (memref::CopyOp op : copyOps) {
    bool source = isDeviceMemory(op.getSource());
    bool target = isDeviceMemory(op.getTarget());
    if (!source && !target)
      continue;
    b.setInsertionPoint(op);
    if (source != target) {
      // A host buffer handed to a host function (the cast buffer that a
      // call of printMemrefF64 gets) filled from device memory, or back.
      if (!hasIdentityLayout(op.getSource().getType()) ||
          !hasIdentityLayout(op.getTarget().getType()))
        return op.emitError()
               << "scan-gpu-device-memory: copy between host and device "
                  "memory of a view (only whole buffers can be copied)";
      gpu::MemcpyOp::create(b, op.getLoc(), Type(), ValueRange(),
                            op.getTarget(), op.getSource());
      op.erase();
      continue;
    }
    linalg::CopyOp::create(b, op.getLoc(), op.getSource(), op.getTarget());
    op.erase();
  }
  return success();
}

LogicalResult DeviceMemory::passHostCopies(CallOpInterface call) {
  // What the callee returns would be host memory that device code uses.
  for (Type type : call->getResultTypes())
    if (isa<BaseMemRefType>(type))
      return call->emitError()
             << "scan-gpu-device-memory: a call of a host function that "
                "returns a buffer ("
             << type
             << ") and takes device memory; calls of the module's own "
                "functions are inlined before (scan-gpu-bufferize-loops), "
                "so this one is external or recursive";
  Location loc = call.getLoc();
  SmallVector<std::pair<Value, Value>> copyBack; // (device, host)
  for (OpOperand &operand : call->getOpOperands()) {
    Value value = operand.get();
    if (!isDeviceMemory(value))
      continue;
    // A buffer, or a cast of one (printMemrefF64 takes memref<*xf64>).
    Value buffer = value;
    auto castOp = value.getDefiningOp<memref::CastOp>();
    if (!hasIdentityLayout(buffer.getType()) && castOp)
      buffer = castOp.getSource();
    if (!hasIdentityLayout(buffer.getType()))
      return call->emitError()
             << "scan-gpu-device-memory: a call of a host function takes "
                "operand #"
             << operand.getOperandNumber() << " of type " << value.getType()
             << " in device memory; only buffers with the identity layout "
                "(or casts of one) can be copied to the host for it";
    b.setInsertionPoint(call);
    auto type = cast<MemRefType>(buffer.getType());
    Value host =
        memref::AllocOp::create(b, loc, type, dynamicSizes(b, loc, buffer));
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host, buffer);
    operand.set(buffer == value ? host
                                : memref::CastOp::create(b, loc,
                                                         value.getType(), host)
                                      .getResult());
    copyBack.push_back({buffer, host});
  }
  // The callee may have written its arguments.
  b.setInsertionPointAfter(call);
  for (auto [device, host] : copyBack) {
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), device, host);
    memref::DeallocOp::create(b, loc, host);
  }
  return success();
}

LogicalResult DeviceMemory::copyResults(func::ReturnOp ret) {
  b.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  llvm::SmallPtrSet<Value, 4> freed;
  for (const Copy &copy : copies)
    freed.insert(copy.device);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value value = operand.get();
    if (!isa<BaseMemRefType>(value.getType()))
      continue;
    if (!isDeviceMemory(value))
      return ret.emitError()
             << "scan-gpu-device-memory: result #"
             << operand.getOperandNumber()
             << " is not device memory (it is not rooted in allocations of "
                "the function; run scan-own-public-results first)";
    if (!hasIdentityLayout(value.getType()))
      return ret.emitError() << "scan-gpu-device-memory: result #"
                             << operand.getOperandNumber() << " has type "
                             << value.getType()
                             << "; only the identity layout is supported";
    auto type = cast<MemRefType>(value.getType());
    SmallVector<Value> sizes = dynamicSizes(b, loc, value);
    Value host = memref::AllocOp::create(b, loc, type, sizes).getResult();
    // gpu.memcpy lowers for identity layouts only, and the lowering folds a
    // memref.cast into it: a view (rows of a larger buffer) goes through a
    // contiguous device buffer first.
    Value source = value;
    if (!value.getDefiningOp<gpu::AllocOp>()) {
      source = gpu::AllocOp::create(b, loc, type, Type(), ValueRange(), sizes,
                                    ValueRange(), false)
                   .getMemref();
      linalg::CopyOp::create(b, loc, value, source);
    }
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host, source);
    if (source != value)
      gpu::DeallocOp::create(b, loc, Type(), ValueRange(), source);
    operand.set(host);
    // The returned device buffer is not needed any more.
    SmallVector<Value> roots;
    collectMemoryRoots(value, roots);
    if (roots.size() == 1) {
      if (freed.insert(roots.front()).second)
        gpu::DeallocOp::create(b, loc, Type(), ValueRange(), roots.front());
    } else {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, value);
      gpu::DeallocOp::create(b, loc, Type(), ValueRange(),
                             meta.getBaseBuffer());
    }
  }
  for (const Copy &copy : copies) {
    if (copy.writeBack)
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), copy.host,
                            copy.device);
    gpu::DeallocOp::create(b, loc, Type(), ValueRange(), copy.device);
  }
  return success();
}

LogicalResult DeviceMemory::run() {
  if (failed(copyArguments()))
    return failure();
  copyGlobals();
  for (Copy &copy : copies)
    copy.writeBack = mayBeWritten(copy.device);
  if (failed(convertAllocations()) || failed(convertCopies()))
    return failure();
  // Calls of host functions get host memory only.
  SmallVector<CallOpInterface> calls;
  func.walk([&](CallOpInterface call) {
    if (llvm::any_of(call->getOperands(), isDeviceMemory))
      calls.push_back(call);
  });
  for (CallOpInterface call : calls)
    if (failed(passHostCopies(call)))
      return failure();
  SmallVector<func::ReturnOp> returns;
  func.walk([&](func::ReturnOp op) { returns.push_back(op); });
  for (func::ReturnOp ret : returns)
    if (failed(copyResults(ret)))
      return failure();
  return success();
}

struct ScanGpuDeviceMemoryPass
    : scan::impl::ScanGpuDeviceMemoryBase<ScanGpuDeviceMemoryPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      if (failed(DeviceMemory(func).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
