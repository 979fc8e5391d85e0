//===- GpuSupport.cpp - What the scan GPU passes share --------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/RuntimeChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::scan;

llvm::StringRef mlir::scan::stringifyKernelKind(KernelKind kind) {
  switch (kind) {
  case KernelKind::Serial:
    return "serial";
  case KernelKind::Grid:
    return "grid";
  case KernelKind::Block:
    return "block";
  }
  llvm_unreachable("unknown kernel kind");
}

std::optional<KernelKind> mlir::scan::getKernelKind(gpu::LaunchOp launch) {
  auto attr = launch->getAttrOfType<StringAttr>(kKernelKindAttr);
  if (!attr)
    return std::nullopt;
  for (KernelKind kind :
       {KernelKind::Serial, KernelKind::Grid, KernelKind::Block})
    if (attr.getValue() == stringifyKernelKind(kind))
      return kind;
  return std::nullopt;
}

void mlir::scan::setKernelKind(gpu::LaunchOp launch, KernelKind kind) {
  launch->setAttr(kKernelKindAttr, StringAttr::get(launch.getContext(),
                                                   stringifyKernelKind(kind)));
}

llvm::ArrayRef<llvm::StringLiteral> mlir::scan::deviceReportedCallees() {
  // The run-time library's failure function, which the scan lowering's
  // checks (RuntimeChecks.h) and the Python builder's checks
  // (mlir_scan/builder/emitter.py) call.
  static constexpr llvm::StringLiteral callees[] = {kScanFailFunc};
  return callees;
}

bool mlir::scan::isDeviceReportedCall(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call || call.getNumResults() != 0 ||
      call.getNumOperands() > kMaxReportedArguments ||
      !llvm::is_contained(deviceReportedCallees(), call.getCallee()))
    return false;
  return llvm::all_of(call.getOperandTypes(), [](Type t) {
    return t.isIndex() ||
           (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() <= 64);
  });
}

/// The operand #`index` of every terminator of `op`'s regions that returns to
/// `op` (scf.yield of an scf.if, scf.index_switch, scf.execute_region...).
static void collectYielded(Operation *op, unsigned index,
                           SmallVectorImpl<Value> &values) {
  for (Region &region : op->getRegions())
    for (Block &block : region) {
      Operation *term = block.getTerminator();
      if (term && term->hasTrait<OpTrait::ReturnLike>() &&
          index < term->getNumOperands())
        values.push_back(term->getOperand(index));
    }
}

static void collectRoots(Value v, SmallVectorImpl<Value> &roots,
                         llvm::SmallPtrSetImpl<Value> &seen) {
  if (!seen.insert(v).second)
    return;
  SmallVector<Value> sources;
  if (auto result = dyn_cast<OpResult>(v)) {
    Operation *op = result.getOwner();
    unsigned i = result.getResultNumber();
    if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
      sources.push_back(view.getViewSource());
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      sources.push_back(loop.getInitArgs()[i]);
      sources.push_back(loop.getYieldedValues()[i]);
    } else if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      sources.push_back(loop.getConditionOp().getArgs()[i]);
    } else if (op->getNumRegions() != 0) {
      collectYielded(op, i, sources);
    }
  } else {
    auto arg = cast<BlockArgument>(v);
    Operation *parent = arg.getOwner()->getParentOp();
    if (auto loop = dyn_cast_or_null<scf::ForOp>(parent)) {
      if (arg.getArgNumber() > 0) {
        unsigned i = arg.getArgNumber() - 1;
        sources.push_back(loop.getInitArgs()[i]);
        sources.push_back(loop.getYieldedValues()[i]);
      }
    } else if (auto loop = dyn_cast_or_null<scf::WhileOp>(parent)) {
      unsigned i = arg.getArgNumber();
      if (arg.getOwner() == loop.getBeforeBody()) {
        sources.push_back(loop.getInits()[i]);
        sources.push_back(loop.getYieldOp().getOperand(i));
      } else {
        sources.push_back(loop.getConditionOp().getArgs()[i]);
      }
    }
  }
  if (sources.empty()) {
    roots.push_back(v);
    return;
  }
  for (Value source : sources)
    collectRoots(source, roots, seen);
}

void mlir::scan::collectMemoryRoots(Value memref,
                                    SmallVectorImpl<Value> &roots) {
  llvm::SmallPtrSet<Value, 8> seen;
  collectRoots(memref, roots, seen);
}

bool mlir::scan::isDeviceMemory(Value memref) {
  if (!isa<BaseMemRefType>(memref.getType()))
    return false;
  SmallVector<Value> roots;
  collectMemoryRoots(memref, roots);
  return !roots.empty() && llvm::all_of(roots, [](Value root) {
    return root.getDefiningOp<gpu::AllocOp>() != nullptr;
  });
}

bool mlir::scan::accessesDeviceMemory(Operation *op) {
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return false;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::any_of(effects, [](const MemoryEffects::EffectInstance &e) {
    Value v = e.getValue();
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) &&
           v && isDeviceMemory(v);
  });
}

std::optional<ReadWrite> mlir::scan::getReadWrite(Operation *op) {
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
      getEffectsRecursively(op);
  if (!effects)
    return std::nullopt;
  ReadWrite rw;
  for (const MemoryEffects::EffectInstance &e : *effects) {
    if (isa<MemoryEffects::Read>(e.getEffect()))
      rw.reads = true;
    else
      rw.writes = true;
  }
  return rw;
}
