//===- ScanGpuFormKernels.cpp - device work into gpu.launch ops -----------===//
//
// Runs after scan-gpu-device-memory and convert-linalg-to-parallel-loops. The
// ops of a public function are placed on the host or the device, and the
// device work is wrapped in gpu.launch ops:
//
//   * an `scf.parallel` run by the host becomes a grid kernel;
//   * a time loop (scf.for / scf.while) whose steps have parallel work is
//     either run by the host, its steps' work becoming kernels (host mode),
//     or run whole by one block of threads (kernel mode);
//   * the remaining device work (loads and stores, loops without parallel
//     work: scalar recurrences) runs in single-thread kernels, consecutive
//     ops in one kernel.
//
// Values that cross from one kernel to another, or to the host, go through
// device memory cells (a small per-call arena); the host reads a cell back
// only where it needs the value (a loop bound, an `until` condition, a call
// argument). Iteration values of host loops that the device computes live
// in cells for the whole loop. Error reports made in kernels are recorded in
// a device word and reported by the host before the function returns.
//
//===----------------------------------------------------------------------===//

#include "Scan/GpuSupport.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPUFORMKERNELS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

enum class Mode { Auto, Host, Kernel };

/// Where an op of host code runs.
enum class Place {
  HostPure, // no memory effects, all operands known to the host
  Host,     // host only: allocations, copies, calls, return, host memory
  Serial,   // device work for a single thread
  Grid,     // an scf.parallel: a grid kernel
  Block,    // a time loop run by one block
  Control,  // a region op the host runs; its regions are placed op by op
};

/// Threads of a block kernel when the parallel loops' sizes are not static.
constexpr int64_t kDefaultBlockThreads = 256;
constexpr int64_t kMaxBlockThreads = 1024;
/// Bytes of one cell of the arena (every cell holds at most 8 bytes).
constexpr int64_t kCellBytes = 8;

Value constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Whether values of `type` fit a cell of the arena.
bool fitsCell(Type type) {
  if (type.isIndex())
    return true;
  if (isa<IntegerType, FloatType>(type))
    return type.getIntOrFloatBitWidth() <= 64;
  return false;
}

/// The number of iterations of `par` (all dimensions), if static.
std::optional<int64_t> staticIterations(scf::ParallelOp par) {
  int64_t total = 1;
  for (auto [lb, ub, step] : llvm::zip(par.getLowerBound(),
                                       par.getUpperBound(), par.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    total *= std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s));
  }
  return total;
}

/// Memory cells for values that cross kernels: views into one device arena
/// (and one host arena for the values the host reads back), allocated at
/// function entry and sized when the pass is done.
class CellArena {
public:
  explicit CellArena(func::FuncOp func) : func(func) {}

  /// A device cell for values of type `type` (a `memref<1 x T>`; index and
  /// i1 values are stored as i64 / i8: see store()/load()).
  Value deviceCell(Type type) { return cell(device, type); }
  Value hostCell(Type type) { return cell(host, type); }
  /// The device word recording the first error report of a kernel:
  /// [callee + 1, arguments...] (i64); zeroed at entry.
  Value errorWord(unsigned words);
  bool hasErrorWord() const { return bool(word); }
  /// The host copy of the error word (same layout).
  Value hostErrorWord();

  static void store(OpBuilder &b, Location loc, Value value, Value cell);
  static Value load(OpBuilder &b, Location loc, Value cell, Type type);

  /// Sizes the arenas and frees the device one before each return.
  void finish();

private:
  struct Arena {
    bool onDevice = false;
    Value buffer;             // memref<?xi8>
    arith::ConstantIndexOp size;
    int64_t used = 0;
  };
  Value cell(Arena &arena, Type type);
  Value view(Arena &arena, MemRefType type, int64_t bytes);
  void create(Arena &arena);

  func::FuncOp func;
  Arena device{true}, host{false};
  Value word, hostWord;
  unsigned wordSize = 0;
};

Type cellElementType(Type type) {
  if (type.isIndex())
    return IntegerType::get(type.getContext(), 64);
  if (type.isInteger(1))
    return IntegerType::get(type.getContext(), 8);
  return type;
}

void CellArena::create(Arena &arena) {
  Block &entry = func.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = func.getLoc();
  arena.size = arith::ConstantIndexOp::create(b, loc, 0);
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  if (arena.onDevice)
    arena.buffer = gpu::AllocOp::create(b, loc, type, Type(), ValueRange(),
                                        ValueRange{arena.size}, ValueRange(),
                                        false)
                       .getMemref();
  else
    arena.buffer =
        memref::AllocaOp::create(b, loc, type, ValueRange{arena.size});
}

Value CellArena::view(Arena &arena, MemRefType type, int64_t bytes) {
  if (!arena.buffer)
    create(arena);
  OpBuilder b(arena.buffer.getContext());
  b.setInsertionPointAfterValue(arena.buffer);
  Location loc = func.getLoc();
  Value offset = constIndex(b, loc, arena.used);
  arena.used += llvm::alignTo(bytes, kCellBytes);
  return memref::ViewOp::create(b, loc, type, arena.buffer, offset,
                                ValueRange());
}

Value CellArena::cell(Arena &arena, Type type) {
  Type elem = cellElementType(type);
  return view(arena, MemRefType::get({1}, elem), kCellBytes);
}

Value CellArena::errorWord(unsigned words) {
  if (word) {
    assert(words <= wordSize && "error word sized for the widest callee");
    return word;
  }
  wordSize = words;
  auto i64 = IntegerType::get(func.getContext(), 64);
  word = view(device, MemRefType::get({words}, i64), words * 8);
  // Zero it (gpu.memset writes 32-bit values).
  OpBuilder b(func.getContext());
  b.setInsertionPointAfterValue(word);
  Location loc = func.getLoc();
  auto i32 = IntegerType::get(func.getContext(), 32);
  auto words32 = memref::ViewOp::create(
      b, loc, MemRefType::get({2 * words}, i32), device.buffer,
      word.getDefiningOp<memref::ViewOp>().getByteShift(), ValueRange());
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  gpu::MemsetOp::create(b, loc, Type(), ValueRange(), words32, zero);
  return word;
}

Value CellArena::hostErrorWord() {
  if (!hostWord) {
    auto i64 = IntegerType::get(func.getContext(), 64);
    hostWord = view(host, MemRefType::get({wordSize}, i64), wordSize * 8);
  }
  return hostWord;
}

void CellArena::store(OpBuilder &b, Location loc, Value value, Value cell) {
  Type elem = cast<MemRefType>(cell.getType()).getElementType();
  if (value.getType().isIndex())
    value = arith::IndexCastOp::create(b, loc, elem, value);
  else if (value.getType() != elem)
    value = arith::ExtUIOp::create(b, loc, elem, value);
  memref::StoreOp::create(b, loc, value, cell, constIndex(b, loc, 0));
}

Value CellArena::load(OpBuilder &b, Location loc, Value cell, Type type) {
  Value value =
      memref::LoadOp::create(b, loc, cell, constIndex(b, loc, 0)).getResult();
  if (type.isIndex())
    return arith::IndexCastOp::create(b, loc, type, value);
  if (type != value.getType())
    return arith::TruncIOp::create(b, loc, type, value);
  return value;
}

void CellArena::finish() {
  for (Arena *arena : {&device, &host})
    if (arena->buffer)
      arena->size.setValueAttr(
          IntegerAttr::get(IndexType::get(func.getContext()),
                           std::max<int64_t>(arena->used, kCellBytes)));
  if (!device.buffer)
    return;
  func.walk([&](func::ReturnOp ret) {
    OpBuilder b(ret);
    gpu::DeallocOp::create(b, ret.getLoc(), Type(), ValueRange(),
                           device.buffer);
  });
}

/// A run of ops of one host block that becomes one kernel.
struct Unit {
  KernelKind kind;
  SmallVector<Operation *> ops;
  int64_t threads = 1; // block kernels
};

class KernelFormer {
public:
  KernelFormer(func::FuncOp func, Mode mode, int64_t gridThreads,
               int64_t kernelLimit)
      : func(func), funcOp(func), mode(mode), gridThreads(gridThreads),
        kernelLimit(kernelLimit), cells(func) {}

  LogicalResult run();

private:
  // Placement.
  void placeAll();
  void placeBlock(Block &block);
  Place decide(Operation *op);
  Place placePure(Operation *op) const;
  Place placeOf(Operation *op) const {
    auto it = places.find(op);
    return it == places.end() ? Place::Serial : it->second;
  }
  bool onHost(Value v) const;
  bool operandsOnHost(Operation *op) const;
  bool isHostOnly(Operation *op) const;
  bool containsHostOnly(Operation *op);
  bool containsParallel(Operation *op);
  bool touchesDevice(Operation *op);
  /// mode=kernel: fails for a loop with device work that the host must run
  /// because every step allocates memory.
  LogicalResult checkKernelMode();
  /// Threads of a block kernel for `loop`; 0 when auto mode keeps the loop
  /// on the host.
  int64_t blockThreads(Operation *loop);
  /// Adds the iteration values of host-run loops and ifs that the device
  /// computes to `deviceSlots`; true if any was added.
  bool findDeviceSlots();

  // Rewriting.
  LogicalResult demote(Operation *op);
  void loadAtUses(Value value, Value cell);
  LogicalResult demoteFor(scf::ForOp loop);
  LogicalResult demoteWhile(scf::WhileOp loop);
  LogicalResult demoteIf(scf::IfOp ifOp);
  void collectUnits(Block &block, SmallVectorImpl<Unit> &units);
  gpu::LaunchOp formLaunch(Unit &unit);
  LogicalResult passEscapingValues(gpu::LaunchOp launch);
  void recordDeviceCalls(gpu::LaunchOp launch);
  void reportDeviceCalls();

  func::FuncOp func;
  Operation *funcOp;
  Mode mode;
  int64_t gridThreads, kernelLimit;
  CellArena cells;
  DenseMap<Operation *, Place> places;
  DenseMap<Operation *, bool> hostOnlyInside, parallelInside;
  /// Block arguments and results of host-run region ops whose values the
  /// device computes: they are passed through cells instead.
  llvm::SetVector<Value> deviceSlots;
  SmallVector<Operation *> controlOps;
  /// Device cells of values that leave their kernel, and the host's copy of
  /// those the host uses.
  DenseMap<Value, Value> cellOf, readBack;
  /// Callees of the error reports recorded on the device.
  llvm::SetVector<StringAttr> deviceCallees;
};

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

bool KernelFormer::isHostOnly(Operation *op) const {
  if (isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp, gpu::MemsetOp,
          gpu::WaitOp, gpu::LaunchOp, gpu::LaunchFuncOp, memref::AllocOp,
          memref::AllocaOp, memref::DeallocOp, memref::ReallocOp,
          memref::GetGlobalOp, func::ReturnOp>(op))
    return true;
  if (isa<CallOpInterface>(op))
    return !isDeviceReportedCall(op);
  if (op->getNumRegions() != 0 || isMemoryEffectFree(op))
    return false;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return true; // unknown effects stay on the host
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::any_of(effects, [](const MemoryEffects::EffectInstance &e) {
    return !isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) ||
           !e.getValue() || !isDeviceMemory(e.getValue());
  });
}

bool KernelFormer::containsHostOnly(Operation *op) {
  auto [it, inserted] = hostOnlyInside.try_emplace(op, false);
  if (!inserted)
    return it->second;
  bool found = op->walk([&](Operation *nested) {
                   if (nested != op && isHostOnly(nested))
                     return WalkResult::interrupt();
                   return WalkResult::advance();
                 }).wasInterrupted();
  hostOnlyInside[op] = found;
  return found;
}

bool KernelFormer::containsParallel(Operation *op) {
  auto [it, inserted] = parallelInside.try_emplace(op, false);
  if (!inserted)
    return it->second;
  bool found = op->walk([](scf::ParallelOp) {
                   return WalkResult::interrupt();
                 }).wasInterrupted();
  parallelInside[op] = found;
  return found;
}

bool KernelFormer::touchesDevice(Operation *op) {
  return op
      ->walk([&](Operation *nested) {
        if (nested->getNumRegions() != 0 || isDeviceReportedCall(nested) ||
            isMemoryEffectFree(nested))
          return WalkResult::advance();
        if (!isa<MemoryEffectOpInterface>(nested) ||
            accessesDeviceMemory(nested))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

int64_t KernelFormer::blockThreads(Operation *loop) {
  if (mode == Mode::Host)
    return 0;
  int64_t widest = 0;
  bool dynamic = false;
  loop->walk([&](scf::ParallelOp par) {
    if (std::optional<int64_t> n = staticIterations(par))
      widest = std::max(widest, *n);
    else
      dynamic = true;
  });
  if (mode == Mode::Auto && (dynamic || widest > kernelLimit))
    return 0;
  if (dynamic && widest == 0)
    widest = kDefaultBlockThreads;
  return std::clamp<int64_t>(llvm::alignTo(widest, 32), 32, kMaxBlockThreads);
}

bool KernelFormer::onHost(Value v) const {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation *parent = arg.getOwner()->getParentOp();
    if (parent == funcOp)
      return true;
    if (!places.count(parent) || placeOf(parent) != Place::Control)
      return false;
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      if (arg == loop.getInductionVar())
        return true;
    return !deviceSlots.contains(v);
  }
  Operation *def = v.getDefiningOp();
  if (!places.count(def))
    return false; // inside a device op
  switch (placeOf(def)) {
  case Place::HostPure:
  case Place::Host:
    return true;
  case Place::Control:
    return !deviceSlots.contains(v);
  default:
    return false;
  }
}

bool KernelFormer::operandsOnHost(Operation *op) const {
  if (!llvm::all_of(op->getOperands(), [&](Value v) { return onHost(v); }))
    return false;
  if (op->getNumRegions() == 0)
    return true;
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  return llvm::all_of(above, [&](Value v) { return onHost(v); });
}

/// A pure op runs on the host when the host knows its operands, else on the
/// device, except when its results cannot pass through a cell (a view with a
/// size or offset the device computed): the host then reads the operands
/// back and computes it.
Place KernelFormer::placePure(Operation *op) const {
  if (operandsOnHost(op))
    return Place::HostPure;
  if (llvm::all_of(op->getResultTypes(), fitsCell))
    return Place::Serial;
  return Place::Host;
}

Place KernelFormer::decide(Operation *op) {
  // Terminators of host blocks stay where they are (the host reads back
  // what they need).
  if (op->hasTrait<OpTrait::IsTerminator>())
    return Place::Host;
  if (isa<scf::ParallelOp>(op))
    return Place::Grid;
  if (op->getNumRegions() == 0) {
    if (isDeviceReportedCall(op))
      return operandsOnHost(op) ? Place::Host : Place::Serial;
    if (isHostOnly(op))
      return Place::Host;
    if (isMemoryEffectFree(op))
      return placePure(op);
    return Place::Serial;
  }
  if (containsHostOnly(op))
    return Place::Control;
  if (isMemoryEffectFree(op))
    return placePure(op);
  // Work that needs no device memory (a run-time check) stays on the host.
  if (!touchesDevice(op))
    return operandsOnHost(op) ? Place::Control : Place::Serial;
  if (!containsParallel(op))
    return Place::Serial;
  if (isa<scf::ForOp, scf::WhileOp>(op) && blockThreads(op) > 0)
    return Place::Block;
  return Place::Control;
}

void KernelFormer::placeBlock(Block &block) {
  for (Operation &op : block) {
    Place place = decide(&op);
    places[&op] = place;
    if (place != Place::Control)
      continue;
    controlOps.push_back(&op);
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        placeBlock(nested);
  }
}

void KernelFormer::placeAll() {
  places.clear();
  hostOnlyInside.clear();
  parallelInside.clear();
  controlOps.clear();
  for (Block &block : func.getBody())
    placeBlock(block);
}

bool KernelFormer::findDeviceSlots() {
  bool added = false;
  auto require = [&](bool host, ArrayRef<Value> slot) {
    if (host || deviceSlots.contains(slot.front()))
      return;
    for (Value v : slot)
      deviceSlots.insert(v);
    added = true;
  };
  for (Operation *op : controlOps) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      for (unsigned k = 0; k < loop.getNumRegionIterArgs(); ++k)
        require(onHost(loop.getInitArgs()[k]) &&
                    onHost(loop.getYieldedValues()[k]),
                {loop.getRegionIterArgs()[k], loop.getResult(k)});
    } else if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      for (unsigned k = 0; k < loop.getInits().size(); ++k)
        require(onHost(loop.getInits()[k]) &&
                    onHost(loop.getYieldOp().getOperand(k)),
                {loop.getBeforeArguments()[k]});
      for (unsigned j = 0; j < loop.getNumResults(); ++j)
        require(onHost(loop.getConditionOp().getArgs()[j]),
                {loop.getAfterArguments()[j], loop.getResult(j)});
    } else {
      for (unsigned r = 0; r < op->getNumResults(); ++r) {
        SmallVector<Value> yielded;
        for (Region &region : op->getRegions())
          for (Block &block : region)
            if (block.mightHaveTerminator())
              yielded.push_back(block.getTerminator()->getOperand(r));
        require(llvm::all_of(yielded, [&](Value v) { return onHost(v); }),
                {op->getResult(r)});
      }
    }
  }
  return added;
}

//===----------------------------------------------------------------------===//
// Device-computed iteration values of host loops go through cells
//===----------------------------------------------------------------------===//

/// Fails for a slot that cannot live in a cell.
LogicalResult checkCellType(Operation *op, Value slot) {
  if (fitsCell(slot.getType()))
    return success();
  return op->emitError() << "scan-gpu-form-kernels: the device computes a "
                            "value of type "
                         << slot.getType()
                         << " that the host carries through this op; only "
                            "scalars can be passed between kernels";
}

/// Replaces each use of `value` by a load of `cell` right before its user,
/// so the load joins the user's kernel; a host op (a return, a call) gets
/// the cell read back instead.
void KernelFormer::loadAtUses(Value value, Value cell) {
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    Operation *user = use.getOwner();
    OpBuilder b(user);
    Location loc = value.getLoc();
    if (places.count(user) && placeOf(user) == Place::Host) {
      Value hostCell = cells.hostCell(value.getType());
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), hostCell, cell);
      use.set(CellArena::load(b, loc, hostCell, value.getType()));
      continue;
    }
    use.set(CellArena::load(b, loc, cell, value.getType()));
  }
}

LogicalResult KernelFormer::demoteFor(scf::ForOp loop) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  SmallVector<unsigned> slots;
  for (unsigned k = 0; k < loop.getNumRegionIterArgs(); ++k)
    if (deviceSlots.contains(loop.getRegionIterArgs()[k])) {
      if (failed(checkCellType(loop, loop.getRegionIterArgs()[k])))
        return failure();
      slots.push_back(k);
    }
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  DenseMap<unsigned, Value> cellFor;
  for (unsigned k : slots) {
    Value arg = loop.getRegionIterArgs()[k];
    Value cell = cells.deviceCell(arg.getType());
    cellFor[k] = cell;
    CellArena::store(b, loc, loop.getInitArgs()[k], cell);
    loadAtUses(arg, cell);
    OpBuilder atYield(yield);
    CellArena::store(atYield, loc, yield.getOperand(k), cell);
  }
  // The loop without those iteration values.
  SmallVector<Value> inits;
  for (unsigned k = 0; k < loop.getNumRegionIterArgs(); ++k)
    if (!cellFor.count(k))
      inits.push_back(loop.getInitArgs()[k]);
  auto newLoop =
      scf::ForOp::create(b, loc, loop.getLowerBound(), loop.getUpperBound(),
                         loop.getStep(), inits);
  newLoop->setAttrs(loop->getAttrs());
  Block *newBody = newLoop.getBody();
  if (!newBody->empty())
    newBody->getTerminator()->erase();
  SmallVector<Value> argValues{newLoop.getInductionVar()};
  unsigned next = 0;
  for (unsigned k = 0; k < loop.getNumRegionIterArgs(); ++k)
    argValues.push_back(cellFor.count(k) ? loop.getInitArgs()[k]
                                         : newLoop.getRegionIterArgs()[next++]);
  IRRewriter rewriter(b);
  rewriter.mergeBlocks(body, newBody, argValues);
  auto newYield = cast<scf::YieldOp>(newBody->getTerminator());
  for (unsigned k : llvm::reverse(slots))
    newYield->eraseOperand(k);
  b.setInsertionPointAfter(newLoop);
  next = 0;
  for (unsigned k = 0; k < loop.getNumResults(); ++k) {
    Value result = loop.getResult(k);
    if (cellFor.count(k))
      loadAtUses(result, cellFor[k]);
    else
      result.replaceAllUsesWith(newLoop.getResult(next++));
  }
  loop.erase();
  return success();
}

LogicalResult KernelFormer::demoteWhile(scf::WhileOp loop) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Block *before = loop.getBeforeBody(), *after = loop.getAfterBody();
  scf::ConditionOp cond = loop.getConditionOp();
  scf::YieldOp yield = loop.getYieldOp();
  unsigned numIter = loop.getInits().size(), numFwd = loop.getNumResults();
  DenseMap<unsigned, Value> iterCell, fwdCell;
  for (unsigned k = 0; k < numIter; ++k) {
    Value arg = before->getArgument(k);
    if (!deviceSlots.contains(arg))
      continue;
    if (failed(checkCellType(loop, arg)))
      return failure();
    Value cell = iterCell[k] = cells.deviceCell(arg.getType());
    CellArena::store(b, loc, loop.getInits()[k], cell);
    loadAtUses(arg, cell);
    OpBuilder atYield(yield);
    CellArena::store(atYield, loc, yield.getOperand(k), cell);
  }
  for (unsigned j = 0; j < numFwd; ++j) {
    Value arg = after->getArgument(j);
    if (!deviceSlots.contains(arg))
      continue;
    if (failed(checkCellType(loop, arg)))
      return failure();
    Value cell = fwdCell[j] = cells.deviceCell(arg.getType());
    OpBuilder atCond(cond);
    CellArena::store(atCond, loc, cond.getArgs()[j], cell);
    loadAtUses(arg, cell);
  }
  SmallVector<Value> inits;
  SmallVector<Type> resultTypes;
  for (unsigned k = 0; k < numIter; ++k)
    if (!iterCell.count(k))
      inits.push_back(loop.getInits()[k]);
  for (unsigned j = 0; j < numFwd; ++j)
    if (!fwdCell.count(j))
      resultTypes.push_back(loop.getResult(j).getType());
  auto newLoop = scf::WhileOp::create(b, loc, resultTypes, inits);
  newLoop->setAttrs(loop->getAttrs());
  SmallVector<Location> beforeLocs(inits.size(), loc);
  SmallVector<Location> afterLocs(resultTypes.size(), loc);
  Block *newBefore = b.createBlock(&newLoop.getBefore(), {},
                                   ValueRange(inits).getTypes(), beforeLocs);
  Block *newAfter =
      b.createBlock(&newLoop.getAfter(), {}, resultTypes, afterLocs);
  IRRewriter rewriter(b);
  SmallVector<Value> beforeValues, afterValues;
  unsigned next = 0;
  for (unsigned k = 0; k < numIter; ++k)
    beforeValues.push_back(iterCell.count(k) ? loop.getInits()[k]
                                             : newBefore->getArgument(next++));
  next = 0;
  for (unsigned j = 0; j < numFwd; ++j)
    afterValues.push_back(fwdCell.count(j) ? cond.getArgs()[j]
                                           : newAfter->getArgument(next++));
  rewriter.mergeBlocks(before, newBefore, beforeValues);
  rewriter.mergeBlocks(after, newAfter, afterValues);
  scf::ConditionOp newCond = newLoop.getConditionOp();
  for (unsigned j = numFwd; j-- > 0;)
    if (fwdCell.count(j))
      newCond->eraseOperand(j + 1);
  scf::YieldOp newYield = newLoop.getYieldOp();
  for (unsigned k = numIter; k-- > 0;)
    if (iterCell.count(k))
      newYield->eraseOperand(k);
  b.setInsertionPointAfter(newLoop);
  next = 0;
  for (unsigned j = 0; j < numFwd; ++j) {
    Value result = loop.getResult(j);
    if (fwdCell.count(j))
      loadAtUses(result, fwdCell[j]);
    else
      result.replaceAllUsesWith(newLoop.getResult(next++));
  }
  loop.erase();
  return success();
}

LogicalResult KernelFormer::demoteIf(scf::IfOp ifOp) {
  Location loc = ifOp.getLoc();
  OpBuilder b(ifOp);
  DenseMap<unsigned, Value> cellFor;
  for (unsigned r = 0; r < ifOp.getNumResults(); ++r) {
    Value result = ifOp.getResult(r);
    if (!deviceSlots.contains(result))
      continue;
    if (failed(checkCellType(ifOp, result)))
      return failure();
    Value cell = cellFor[r] = cells.deviceCell(result.getType());
    for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
      Operation *yield = region->front().getTerminator();
      OpBuilder atYield(yield);
      CellArena::store(atYield, loc, yield->getOperand(r), cell);
    }
  }
  SmallVector<Type> types;
  for (unsigned r = 0; r < ifOp.getNumResults(); ++r)
    if (!cellFor.count(r))
      types.push_back(ifOp.getResult(r).getType());
  auto newIf = scf::IfOp::create(b, loc, types, ifOp.getCondition(),
                                 /*withElseRegion=*/true);
  for (auto [from, to] : {std::pair(&ifOp.getThenRegion(),
                                    &newIf.getThenRegion()),
                          std::pair(&ifOp.getElseRegion(),
                                    &newIf.getElseRegion())}) {
    to->getBlocks().clear();
    to->takeBody(*from);
    Operation *yield = to->front().getTerminator();
    for (unsigned r = ifOp.getNumResults(); r-- > 0;)
      if (cellFor.count(r))
        yield->eraseOperand(r);
  }
  b.setInsertionPointAfter(newIf);
  unsigned next = 0;
  for (unsigned r = 0; r < ifOp.getNumResults(); ++r) {
    Value result = ifOp.getResult(r);
    if (cellFor.count(r))
      loadAtUses(result, cellFor[r]);
    else
      result.replaceAllUsesWith(newIf.getResult(next++));
  }
  ifOp.erase();
  return success();
}

LogicalResult KernelFormer::demote(Operation *op) {
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return demoteFor(loop);
  if (auto loop = dyn_cast<scf::WhileOp>(op))
    return demoteWhile(loop);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return demoteIf(ifOp);
  return op->emitError() << "scan-gpu-form-kernels: the host runs this op "
                            "(it allocates or calls the host), but the "
                            "device computes its results";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

void KernelFormer::collectUnits(Block &block, SmallVectorImpl<Unit> &units) {
  Unit *serial = nullptr;
  for (Operation &op : block) {
    switch (placeOf(&op)) {
    case Place::HostPure:
      break; // moved before a serial kernel that it is in the middle of
    case Place::Host:
      serial = nullptr;
      break;
    case Place::Control:
      serial = nullptr;
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          collectUnits(nested, units);
      break;
    case Place::Serial:
      if (!serial) {
        units.push_back({KernelKind::Serial, {}});
        serial = &units.back();
      }
      serial->ops.push_back(&op);
      break;
    case Place::Grid:
      units.push_back({KernelKind::Grid, {&op}});
      serial = nullptr;
      break;
    case Place::Block:
      units.push_back({KernelKind::Block, {&op}, blockThreads(&op)});
      serial = nullptr;
      break;
    }
  }
}

/// The number of iterations of `par` (index values before it).
Value iterationCount(OpBuilder &b, Location loc, scf::ParallelOp par) {
  Value total = constIndex(b, loc, 1);
  Value zero = constIndex(b, loc, 0);
  for (auto [lb, ub, step] : llvm::zip(par.getLowerBound(),
                                       par.getUpperBound(), par.getStep())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    span = arith::MaxSIOp::create(b, loc, span, zero);
    Value trips = arith::CeilDivSIOp::create(b, loc, span, step);
    total = arith::MulIOp::create(b, loc, total, trips);
  }
  return total;
}

gpu::LaunchOp KernelFormer::formLaunch(Unit &unit) {
  Operation *first = unit.ops.front();
  Location loc = first->getLoc();
  OpBuilder b(first);
  if (unit.kind == KernelKind::Serial && unit.ops.size() > 1) {
    // Host ops in the middle of the run go before the kernel.
    for (Operation *op = first->getNextNode(); op != unit.ops.back();) {
      Operation *next = op->getNextNode();
      if (placeOf(op) == Place::HostPure)
        op->moveBefore(first);
      op = next;
    }
  }
  Value one = constIndex(b, loc, 1);
  Value blocks = one, threads = one;
  if (unit.kind == KernelKind::Grid) {
    Value total = iterationCount(b, loc, cast<scf::ParallelOp>(first));
    threads = constIndex(b, loc, gridThreads);
    blocks = arith::CeilDivSIOp::create(b, loc, total, threads);
    // A launch needs one block at least; the kernel checks the bound.
    blocks = arith::MaxSIOp::create(b, loc, blocks, one);
  } else if (unit.kind == KernelKind::Block) {
    threads = constIndex(b, loc, unit.threads);
  }
  auto launch =
      gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  setKernelKind(launch, unit.kind);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  for (Operation *op : unit.ops)
    op->moveBefore(terminator);
  return launch;
}

LogicalResult KernelFormer::passEscapingValues(gpu::LaunchOp launch) {
  SmallVector<std::pair<Value, OpOperand *>> escaping;
  launch.getBody().walk([&](Operation *op) {
    for (Value result : op->getResults())
      for (OpOperand &use : result.getUses())
        if (!launch->isAncestor(use.getOwner()))
          escaping.push_back({result, &use});
  });
  for (auto [value, use] : escaping) {
    Operation *user = use->getOwner();
    Location loc = user->getLoc();
    Type type = value.getType();
    if (!fitsCell(type))
      return user->emitError()
             << "scan-gpu-form-kernels: a value of type " << type
             << " computed in one kernel is used outside it; only scalars "
                "can be passed between kernels";
    Value &cell = cellOf[value];
    if (!cell) {
      cell = cells.deviceCell(type);
      OpBuilder b(value.getContext());
      b.setInsertionPointAfterValue(value);
      CellArena::store(b, value.getLoc(), value, cell);
    }
    if (user->getParentOfType<gpu::LaunchOp>()) {
      OpBuilder b(user);
      use->set(CellArena::load(b, loc, cell, type));
      continue;
    }
    // The host needs the value: read the cell back once, after the kernel
    // (every use of the value comes after it).
    Value &onHost = readBack[value];
    if (!onHost) {
      OpBuilder b(launch->getContext());
      b.setInsertionPointAfter(launch);
      Value hostCell = cells.hostCell(type);
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), hostCell, cell);
      onHost = CellArena::load(b, loc, hostCell, type);
    }
    use->set(onHost);
  }
  return success();
}

/// Width of the error word: the callee id and the widest argument list.
unsigned errorWordSize() { return 1 + kMaxReportedArguments; }

void KernelFormer::recordDeviceCalls(gpu::LaunchOp launch) {
  SmallVector<func::CallOp> calls;
  launch.getBody().walk([&](func::CallOp call) {
    if (isDeviceReportedCall(call))
      calls.push_back(call);
  });
  for (func::CallOp call : calls) {
    Location loc = call.getLoc();
    OpBuilder b(call);
    Value word = cells.errorWord(errorWordSize());
    StringAttr callee = call.getCalleeAttr().getAttr();
    deviceCallees.insert(callee);
    unsigned id = llvm::find(deviceCallees, callee) - deviceCallees.begin();
    Value zero = constIndex(b, loc, 0);
    Value current = memref::LoadOp::create(b, loc, word, zero);
    Value free = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, current,
        arith::ConstantIntOp::create(b, loc, 0, 64));
    auto ifFree = scf::IfOp::create(b, loc, free, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifFree.thenBlock());
    memref::StoreOp::create(b, loc,
                            arith::ConstantIntOp::create(b, loc, id + 1, 64),
                            word, zero);
    for (auto [i, arg] : llvm::enumerate(call.getOperands())) {
      Value wide = arg;
      if (arg.getType().isIndex())
        wide = arith::IndexCastOp::create(b, loc, b.getI64Type(), arg);
      else if (arg.getType().getIntOrFloatBitWidth() < 64)
        wide = arith::ExtSIOp::create(b, loc, b.getI64Type(), arg);
      memref::StoreOp::create(b, loc, wide, word, constIndex(b, loc, i + 1));
    }
    call.erase();
  }
}

void KernelFormer::reportDeviceCalls() {
  if (!cells.hasErrorWord())
    return;
  auto module = func->getParentOfType<ModuleOp>();
  func.walk([&](func::ReturnOp ret) {
    Location loc = ret.getLoc();
    OpBuilder b(ret);
    Value word = cells.errorWord(errorWordSize());
    Value hostWord = cells.hostErrorWord();
    gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), hostWord, word);
    Value id = memref::LoadOp::create(b, loc, hostWord, constIndex(b, loc, 0));
    for (auto [k, callee] : llvm::enumerate(deviceCallees)) {
      auto target = module.lookupSymbol<func::FuncOp>(callee);
      Value match = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, id,
          arith::ConstantIntOp::create(b, loc, k + 1, 64));
      auto ifMatch = scf::IfOp::create(b, loc, match, false);
      OpBuilder inIf = OpBuilder::atBlockBegin(ifMatch.thenBlock());
      SmallVector<Value> args;
      for (auto [i, type] :
           llvm::enumerate(target.getFunctionType().getInputs())) {
        Value wide = memref::LoadOp::create(inIf, loc, hostWord,
                                            constIndex(inIf, loc, i + 1));
        if (type.isIndex())
          wide = arith::IndexCastOp::create(inIf, loc, type, wide);
        else if (type != wide.getType())
          wide = arith::TruncIOp::create(inIf, loc, type, wide);
        args.push_back(wide);
      }
      func::CallOp::create(inIf, loc, target, args);
    }
  });
}

/// An allocation made in every step of `loop` (directly in its body, not in
/// a branch: scan-gpu-loop-allocations leaves allocations in branches only
/// for rare steps, such as the growth of an `until` output's buffer).
Operation *everyStepAllocation(Operation *loop) {
  for (Region &region : loop->getRegions())
    for (Block &block : region)
      for (Operation &op : block)
        if (isa<gpu::AllocOp, memref::AllocOp, memref::AllocaOp>(op))
          return &op;
  return nullptr;
}

LogicalResult KernelFormer::checkKernelMode() {
  if (mode != Mode::Kernel)
    return success();
  for (Operation *op : controlOps) {
    if (!isa<scf::ForOp, scf::WhileOp>(op) || !touchesDevice(op))
      continue;
    Operation *alloc = everyStepAllocation(op);
    if (!alloc)
      continue;
    InFlightDiagnostic diag =
        op->emitError()
        << "scan-gpu-form-kernels: mode=kernel cannot run this loop in one "
           "kernel: every step allocates memory (a device allocation is a "
           "host call), e.g. the buffers of a nested scan whose sizes change "
           "from step to step; compile with mode=auto or mode=host, which "
           "run it on the host";
    diag.attachNote(alloc->getLoc()) << "the allocation";
    return failure();
  }
  return success();
}

LogicalResult KernelFormer::run() {
  // Iteration values of host loops that the device computes: to cells.
  placeAll();
  if (failed(checkKernelMode()))
    return failure();
  while (findDeviceSlots())
    placeAll();
  if (!deviceSlots.empty()) {
    SmallVector<Operation *> owners;
    for (Value slot : deviceSlots) {
      Operation *owner = isa<BlockArgument>(slot)
                             ? cast<BlockArgument>(slot)
                                   .getOwner()
                                   ->getParentOp()
                             : slot.getDefiningOp();
      if (!llvm::is_contained(owners, owner))
        owners.push_back(owner);
    }
    for (Operation *owner : owners)
      if (failed(demote(owner)))
        return failure();
    deviceSlots.clear();
    placeAll();
    if (findDeviceSlots())
      return func.emitError() << "scan-gpu-form-kernels: could not keep the "
                                 "host loops' values on the host";
  }

  SmallVector<Unit> units;
  for (Block &block : func.getBody())
    collectUnits(block, units);
  SmallVector<gpu::LaunchOp> launches;
  for (Unit &unit : units)
    launches.push_back(formLaunch(unit));
  for (gpu::LaunchOp launch : launches)
    if (failed(passEscapingValues(launch)))
      return failure();
  for (gpu::LaunchOp launch : launches)
    recordDeviceCalls(launch);
  reportDeviceCalls();
  cells.finish();
  return success();
}

struct ScanGpuFormKernelsPass
    : scan::impl::ScanGpuFormKernelsBase<ScanGpuFormKernelsPass> {
  using ScanGpuFormKernelsBase::ScanGpuFormKernelsBase;

  void runOnOperation() override {
    Mode parsed;
    if (mode == "auto")
      parsed = Mode::Auto;
    else if (mode == "host")
      parsed = Mode::Host;
    else if (mode == "kernel")
      parsed = Mode::Kernel;
    else {
      emitError(getOperation().getLoc())
          << "scan-gpu-form-kernels: mode must be auto, host or kernel, not '"
          << mode << "'";
      return signalPassFailure();
    }
    if (blockSize < 1 || blockSize > kMaxBlockThreads) {
      emitError(getOperation().getLoc())
          << "scan-gpu-form-kernels: block-size must be in [1, 1024]";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      KernelFormer former(func, parsed, blockSize, kernelLimit);
      if (failed(former.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
