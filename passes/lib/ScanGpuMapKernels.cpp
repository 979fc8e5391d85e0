//===- ScanGpuMapKernels.cpp - kernels' work onto blocks and threads ------===//
//
// The gpu.launch ops of scan-gpu-form-kernels say how their work is shared
// (the `scan.kernel` attribute, see GpuSupport.h); this pass writes it out
// with thread and block ids, so that no scf.parallel is left:
//
//   * grid: iteration `i` of the scf.parallel is thread `i` of the grid;
//   * block: each scf.parallel of the time loop is a loop over its
//     iterations with the block's threads as stride, followed by a
//     gpu.barrier; other writes are made by thread 0 (its results broadcast
//     through workgroup memory) between barriers; all threads run the loop
//     control and the pure ops, so all take the same branches;
//   * serial: one thread; nested scf.parallel become scf.for nests.
//
//===----------------------------------------------------------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUMAPKERNELS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

Value constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Trip counts of the dimensions of `par`, at the builder's position.
SmallVector<Value> tripCounts(OpBuilder &b, Location loc,
                              scf::ParallelOp par) {
  SmallVector<Value> trips;
  Value zero = constIndex(b, loc, 0);
  for (auto [lb, ub, step] : llvm::zip(par.getLowerBound(),
                                       par.getUpperBound(), par.getStep())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    span = arith::MaxSIOp::create(b, loc, span, zero);
    trips.push_back(arith::CeilDivSIOp::create(b, loc, span, step));
  }
  return trips;
}

Value product(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  Value total = constIndex(b, loc, 1);
  for (Value v : values)
    total = arith::MulIOp::create(b, loc, total, v);
  return total;
}

/// Inlines the body of `par` at the builder's position for the linear
/// iteration number `linear` (the last dimension varies fastest).
void inlineIteration(OpBuilder &b, scf::ParallelOp par, ArrayRef<Value> trips,
                     Value linear) {
  Location loc = par.getLoc();
  unsigned rank = par.getNumLoops();
  SmallVector<Value> ivs(rank);
  Value rest = linear;
  for (unsigned d = rank; d-- > 0;) {
    Value index = rank == 1 ? rest
                            : arith::RemUIOp::create(b, loc, rest, trips[d])
                                  .getResult();
    if (d > 0)
      rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
    Value scaled = arith::MulIOp::create(b, loc, index, par.getStep()[d]);
    ivs[d] = arith::AddIOp::create(b, loc, par.getLowerBound()[d], scaled);
  }
  IRMapping mapping;
  mapping.map(par.getInductionVars(), ivs);
  for (Operation &op : par.getBody()->without_terminator())
    b.clone(op, mapping);
}

/// Replaces an scf.parallel (without reductions) by an scf.for nest.
void sequentialize(scf::ParallelOp par) {
  OpBuilder b(par);
  Location loc = par.getLoc();
  SmallVector<Value> ivs;
  for (unsigned d = 0; d < par.getNumLoops(); ++d) {
    auto loop = scf::ForOp::create(b, loc, par.getLowerBound()[d],
                                   par.getUpperBound()[d], par.getStep()[d]);
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  IRMapping mapping;
  mapping.map(par.getInductionVars(), ivs);
  for (Operation &op : par.getBody()->without_terminator())
    b.clone(op, mapping);
  par.erase();
}

/// The scf.parallel ops nested in `root`, outermost first... innermost
/// first (post-order), so that sequentializing one never visits a clone.
void sequentializeAll(Operation *root) {
  SmallVector<scf::ParallelOp> nested;
  root->walk([&](scf::ParallelOp par) {
    if (par != root)
      nested.push_back(par);
  });
  for (scf::ParallelOp par : nested)
    sequentialize(par);
}

LogicalResult checkNoReductions(scf::ParallelOp par) {
  if (par.getNumResults() == 0)
    return success();
  return par.emitError() << "scan-gpu-map-kernels: scf.parallel with "
                            "reductions is not supported";
}

/// Grid kernel: thread `i` of the grid runs iteration `i`.
LogicalResult mapGrid(gpu::LaunchOp launch) {
  SmallVector<scf::ParallelOp> loops;
  for (Operation &op : launch.getBody().front())
    if (auto par = dyn_cast<scf::ParallelOp>(op))
      loops.push_back(par);
  for (scf::ParallelOp par : loops) {
    if (failed(checkNoReductions(par)))
      return failure();
    sequentializeAll(par);
    OpBuilder b(par);
    Location loc = par.getLoc();
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              launch.getBlockSize().x),
        launch.getThreadIds().x);
    SmallVector<Value> trips = tripCounts(b, loc, par);
    Value inBounds =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear,
                              product(b, loc, trips));
    auto ifIn = scf::IfOp::create(b, loc, inBounds, false);
    b.setInsertionPoint(ifIn.thenBlock()->getTerminator());
    inlineIteration(b, par, trips, linear);
    par.erase();
  }
  return success();
}

/// Block kernel: the SPMD form of a time loop run by one block.
class BlockMapper {
public:
  explicit BlockMapper(gpu::LaunchOp launch) : launch(launch) {}

  LogicalResult run() {
    map(launch.getBody().front(), /*pending=*/false, /*dry=*/false);
    return failure(hadError);
  }

private:
  /// Maps the ops of `block`; `pending` says that some thread may have read
  /// memory since the last barrier (a write by another thread must wait for
  /// a barrier). Returns that state at the end of the block. With `dry`,
  /// only computes the state.
  bool map(Block &block, bool pending, bool dry);
  bool mapUniform(Operation *op, bool pending, bool dry);
  void distribute(scf::ParallelOp par);
  /// Runs `ops` (consecutive) on thread 0; returns true when results were
  /// broadcast (all threads read workgroup memory afterwards).
  bool runOnThreadZero(ArrayRef<Operation *> ops, bool pending);
  Value broadcast(OpBuilder &b, Value value, Operation *ifZero,
                  IRMapping &done);
  static bool usedAfter(ArrayRef<Operation *> ops);
  bool containsParallel(Operation *op) {
    return op->getNumRegions() != 0 &&
           op->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
               .wasInterrupted();
  }
  void barrier(OpBuilder &b, Location loc) { gpu::BarrierOp::create(b, loc); }

  gpu::LaunchOp launch;
  bool hadError = false;
};

bool BlockMapper::usedAfter(ArrayRef<Operation *> ops) {
  for (Operation *op : ops)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!llvm::any_of(ops, [&](Operation *o) {
              return o->isAncestor(user);
            }))
          return true;
  return false;
}

bool BlockMapper::map(Block &block, bool pending, bool dry) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (size_t i = 0; i < ops.size();) {
    Operation *op = ops[i];
    if (auto par = dyn_cast<scf::ParallelOp>(op)) {
      if (!dry) {
        OpBuilder b(par);
        if (pending)
          barrier(b, par.getLoc());
        b.setInsertionPointAfter(par);
        barrier(b, par.getLoc());
        distribute(par);
      }
      pending = false;
      ++i;
      continue;
    }
    if (containsParallel(op)) {
      pending = mapUniform(op, pending, dry);
      ++i;
      continue;
    }
    std::optional<ReadWrite> rw = getReadWrite(op);
    if (rw && !rw->writes) {
      pending |= rw->reads;
      ++i;
      continue;
    }
    // Thread 0 runs everything up to the last writer before the next
    // parallel work.
    size_t last = i;
    for (size_t j = i; j < ops.size(); ++j) {
      if (isa<scf::ParallelOp>(ops[j]) || containsParallel(ops[j]))
        break;
      std::optional<ReadWrite> rwj = getReadWrite(ops[j]);
      if (!rwj || rwj->writes)
        last = j;
    }
    ArrayRef<Operation *> run = ArrayRef(ops).slice(i, last + 1 - i);
    pending = dry ? usedAfter(run) : runOnThreadZero(run, pending);
    i = last + 1;
  }
  return pending;
}

bool BlockMapper::mapUniform(Operation *op, bool pending, bool dry) {
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    Block &body = *loop.getBody();
    bool entry = pending || map(body, pending, /*dry=*/true);
    bool end = map(body, entry, dry);
    return entry || end;
  }
  if (auto loop = dyn_cast<scf::WhileOp>(op)) {
    Block &before = *loop.getBeforeBody(), &after = *loop.getAfterBody();
    bool entry =
        pending || map(after, map(before, pending, true), /*dry=*/true);
    bool exit = map(before, entry, dry);
    map(after, exit, dry);
    return exit;
  }
  // scf.if and other region ops: every region starts in the same state.
  bool end = pending;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      end |= map(block, pending, dry);
  return end;
}

void BlockMapper::distribute(scf::ParallelOp par) {
  if (failed(checkNoReductions(par))) {
    hadError = true;
    return;
  }
  sequentializeAll(par);
  OpBuilder b(par);
  Location loc = par.getLoc();
  SmallVector<Value> trips = tripCounts(b, loc, par);
  Value total = product(b, loc, trips);
  auto loop = scf::ForOp::create(b, loc, launch.getThreadIds().x, total,
                                 launch.getBlockSize().x);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  inlineIteration(b, par, trips, loop.getInductionVar());
  par.erase();
}

Value BlockMapper::broadcast(OpBuilder &b, Value value, Operation *ifZero,
                             IRMapping &done) {
  if (Value known = done.lookupOrNull(value))
    return known;
  Location loc = value.getLoc();
  Type type = value.getType();
  Value result;
  if (type.isIndex() || isa<IntegerType, FloatType>(type)) {
    // Through workgroup memory: thread 0 stores after the definition.
    Type elem = type;
    if (type.isIndex())
      elem = b.getI64Type();
    else if (type.isInteger(1))
      elem = b.getI8Type();
    auto cellType = MemRefType::get(
        {1}, elem, MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    Value cell = launch.addWorkgroupAttribution(cellType, loc);
    OpBuilder atDef(value.getContext());
    atDef.setInsertionPointAfterValue(value);
    Value stored = value;
    if (type.isIndex())
      stored = arith::IndexCastOp::create(atDef, loc, elem, value);
    else if (elem != type)
      stored = arith::ExtUIOp::create(atDef, loc, elem, value);
    memref::StoreOp::create(atDef, loc, stored, cell,
                            constIndex(atDef, loc, 0));
    result = memref::LoadOp::create(b, loc, cell, constIndex(b, loc, 0));
    if (type.isIndex())
      result = arith::IndexCastOp::create(b, loc, type, result);
    else if (elem != type)
      result = arith::TruncIOp::create(b, loc, type, result);
  } else if (Operation *def = value.getDefiningOp();
             def && isMemoryEffectFree(def) && def->getNumRegions() == 0) {
    // A view (or other pure value): every thread recomputes it.
    IRMapping operands;
    for (Value operand : def->getOperands())
      if (ifZero->isAncestor(operand.getParentBlock()->getParentOp()) ||
          (operand.getDefiningOp() &&
           ifZero->isAncestor(operand.getDefiningOp())))
        operands.map(operand, broadcast(b, operand, ifZero, done));
    result = b.clone(*def, operands)->getResult(
        cast<OpResult>(value).getResultNumber());
  } else {
    emitError(loc) << "scan-gpu-map-kernels: cannot pass a value of type "
                   << type << " from thread 0 to the other threads";
    hadError = true;
    return value;
  }
  done.map(value, result);
  return result;
}

bool BlockMapper::runOnThreadZero(ArrayRef<Operation *> ops, bool pending) {
  Location loc = ops.front()->getLoc();
  OpBuilder b(ops.front());
  if (pending)
    barrier(b, loc);
  Value zero = constIndex(b, loc, 0);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       launch.getThreadIds().x, zero);
  auto ifZero = scf::IfOp::create(b, loc, isZero, false);
  // The uses after the run, before the ops move.
  SmallVector<std::pair<Value, OpOperand *>> escaping;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      for (OpOperand &use : result.getUses())
        if (!llvm::any_of(ops, [&](Operation *o) {
              return o->isAncestor(use.getOwner());
            }))
          escaping.push_back({result, &use});
  Operation *yield = ifZero.thenBlock()->getTerminator();
  for (Operation *op : ops)
    op->moveBefore(yield);
  b.setInsertionPointAfter(ifZero);
  barrier(b, loc);
  IRMapping done;
  for (auto [value, use] : escaping)
    use->set(broadcast(b, value, ifZero, done));
  return !escaping.empty();
}

struct ScanGpuMapKernelsPass
    : scan::impl::ScanGpuMapKernelsBase<ScanGpuMapKernelsPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp launch) {
      if (getKernelKind(launch))
        launches.push_back(launch);
    });
    for (gpu::LaunchOp launch : launches) {
      LogicalResult mapped = success();
      switch (*getKernelKind(launch)) {
      case KernelKind::Grid:
        mapped = mapGrid(launch);
        break;
      case KernelKind::Block:
        mapped = BlockMapper(launch).run();
        break;
      case KernelKind::Serial:
        sequentializeAll(launch);
        break;
      }
      if (failed(mapped))
        return signalPassFailure();
    }
    WalkResult left = getOperation()->walk([](scf::ParallelOp par) {
      if (!par->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      par.emitError() << "scan-gpu-map-kernels: parallel loop left in a "
                         "kernel that scan-gpu-form-kernels did not make";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
