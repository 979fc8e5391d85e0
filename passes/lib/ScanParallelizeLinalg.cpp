//===- ScanParallelizeLinalg.cpp - large linalg ops on every core ---------===//
//
// A scan step whose state is large spends its time in one or two linalg ops
// (the `h^T W` of an RNN with a 1024-wide state reads 8 MB per step). Those
// ops can use every core: split along a parallel dimension that indexes
// every output, the parts write disjoint elements. Each such op is outlined
// into a chunk function (iterations [lo, hi) of that dimension, on
// subviews) and replaced by a call asking for the chunks to run in
// parallel; scan-lower-parallel-calls connects that call to the run-time
// library, which decides from the op's work whether splitting pays.
//
//===----------------------------------------------------------------------===//

#include "Scan/LinalgWork.h"
#include "Scan/MathLibrary.h"
#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANPARALLELIZELINALG
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using scan::emitWork;
using scan::loopSize;
using scan::staticWork;
using scan::kChunkFuncPrefix;
using scan::kParallelStubPrefix;

namespace {

/// The dimension to split `op` along: the outermost parallel loop dimension
/// that every output's indexing map reads as a plain dimension (so parts
/// write disjoint elements), or none.
std::optional<unsigned> splitDimension(linalg::GenericOp op) {
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isProjectedPermutation(); }))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < op.getNumLoops(); ++d) {
    if (iterators[d] != utils::IteratorType::parallel)
      continue;
    bool everyOutput = llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
      return op.getMatchingIndexingMap(&init).getResultPosition(
                 getAffineDimExpr(d, op.getContext())).has_value();
    });
    if (everyOutput)
      return d;
  }
  return std::nullopt;
}

/// Whether `op` may run as parts on several threads: on buffers, with a
/// body of side-effect-free scalar ops (no calls: a part may run on a
/// thread that has no call frame of the run-time library).
bool isSplittable(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0)
    return false;
  if (op->getParentOfType<func::FuncOp>() == nullptr)
    return false;
  return llvm::all_of(op.getBody()->without_terminator(), [](Operation &inner) {
    return inner.getNumRegions() == 0 && isMemoryEffectFree(&inner);
  });
}

/// What a call of the C math library costs, in points of the work
/// threshold (one point: an add or a multiply-add, in vector code well
/// under a nanosecond; `pow` or `exp` take 5-20 ns).
constexpr int64_t kLibmPointCost = 16;

/// What one iteration point of `op` costs: 1, plus kLibmPointCost for each
/// op of its body that becomes a call of the C math library. A map's
/// `c_i * x ** p_i` over 100,000 points takes a millisecond on one core
/// and is worth splitting; 100,000 adds are not.
int64_t pointCost(linalg::GenericOp op) {
  int64_t cost = 1;
  op.getBody()->walk([&](Operation *inner) {
    // fpowi becomes a call too (llvm.powi: __powidf2, repeated squaring).
    if (!scan::mathLibraryName(inner).empty() || isa<math::FPowIOp>(inner))
      cost += kLibmPointCost;
  });
  return cost;
}

/// `value` restricted to iterations [lo, lo + size) of loop dimension `dim`
/// (a subview along the results of `map` that read `dim`).
Value restrict(OpBuilder &b, Location loc, Value value, AffineMap map,
               unsigned dim, Value lo, Value size) {
  std::optional<unsigned> at =
      map.getResultPosition(getAffineDimExpr(dim, b.getContext()));
  if (!at)
    return value;
  auto type = cast<MemRefType>(value.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t p = 0; p < type.getRank(); ++p) {
    bool split = static_cast<unsigned>(p) == *at;
    offsets.push_back(split ? OpFoldResult(lo) : OpFoldResult(b.getIndexAttr(0)));
    sizes.push_back(split ? OpFoldResult(size)
                          : memref::getMixedSize(b, loc, value, p));
    strides.push_back(b.getIndexAttr(1));
  }
  return memref::SubViewOp::create(b, loc, value, offsets, sizes, strides);
}

/// Makes the `linalg.index` ops of dimension `dim` in `part`'s body count
/// from `offset`: `part` runs on subviews that start `offset` iterations
/// into that dimension, and an index must still be the whole op's (the
/// `arange` of 300,000 elements restarted at 0 in its second part).
void shiftIndices(Operation *part, unsigned dim, Value offset) {
  SmallVector<linalg::IndexOp> indices;
  part->getRegion(0).walk([&](linalg::IndexOp index) {
    if (index.getDim() == dim)
      indices.push_back(index);
  });
  for (linalg::IndexOp index : indices) {
    OpBuilder b(index->getContext());
    b.setInsertionPointAfter(index);
    Value shifted = arith::AddIOp::create(b, index.getLoc(), index, offset);
    index.getResult().replaceAllUsesExcept(shifted, shifted.getDefiningOp());
  }
}

/// A chunk function and the stub its calls go through.
struct Outlined {
  func::FuncOp chunk, stub;
};

/// Whether `a` and `b` compute the same thing on the same arguments: then
/// one function serves both ops (the forward and backward steps of a
/// gradient often split the same product; each copy cost LLVM as much time
/// as the rest of a step).
bool sameChunk(func::FuncOp a, func::FuncOp b) {
  return a.getFunctionType() == b.getFunctionType() &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

/// Gives `chunk` the LLVM attribute kHotChunkAttr (the JIT's quick tier
/// optimizes it).
void markHot(func::FuncOp chunk) {
  Builder b(chunk.getContext());
  chunk->setAttr("passthrough",
                 b.getArrayAttr({b.getStringAttr(scan::kHotChunkAttr)}));
}

/// Outlines `op` into `@__mlir_scan_chunk<index>` (or into an equal chunk
/// of `done`) and replaces it by a call of `@__mlir_scan_run_chunks<index>`
/// over all iterations of `dim`; the chunk function is marked hot if `hot`.
void outline(linalg::GenericOp op, unsigned dim, unsigned index, bool hot,
             SymbolTable &symbols, SmallVectorImpl<Outlined> &done) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  auto parent = op->getParentOfType<func::FuncOp>();

  // The chunk function's arguments: lo, hi, the op's distinct operands and
  // the values its body uses from above.
  SetVector<Value> args;
  for (Value operand : op->getOperands())
    args.insert(operand);
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegion(0), captured);
  args.insert(captured.begin(), captured.end());

  OpBuilder b(ctx);
  Type indexType = b.getIndexType();
  SmallVector<Type> chunkInputs{indexType, indexType};
  for (Value arg : args)
    chunkInputs.push_back(arg.getType());

  b.setInsertionPoint(parent);
  std::string suffix = std::to_string(index);
  auto chunk = func::FuncOp::create(
      b, loc, (kChunkFuncPrefix + suffix).str(),
      b.getFunctionType(chunkInputs, {}));
  chunk.setPrivate();
  symbols.insert(chunk);
  Block *entry = chunk.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value lo = entry->getArgument(0), hi = entry->getArgument(1);
  Value size = arith::SubIOp::create(b, loc, hi, lo);
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(args, entry->getArguments().drop_front(2)))
    mapping.map(arg, value);
  SmallVector<Value> operands;
  for (OpOperand &operand : op->getOpOperands())
    operands.push_back(restrict(b, loc, mapping.lookup(operand.get()),
                                op.getMatchingIndexingMap(&operand), dim, lo,
                                size));
  Operation *part = b.clone(*op, mapping);
  part->setOperands(operands);
  shiftIndices(part, dim, lo);
  func::ReturnOp::create(b, loc);

  // The call: all iterations, and the op's work for the run-time library.
  func::FuncOp stub;
  auto same = llvm::find_if(done, [&](const Outlined &o) { return sameChunk(o.chunk, chunk); });
  if (same != done.end()) {
    symbols.erase(chunk);
    stub = same->stub;
    if (hot)
      markHot(same->chunk);
  } else {
    if (hot)
      markHot(chunk);
    SmallVector<Type> stubInputs{indexType, indexType, indexType};
    for (Value arg : args)
      stubInputs.push_back(arg.getType());
    b.setInsertionPoint(parent);
    stub = func::FuncOp::create(b, loc, (kParallelStubPrefix + suffix).str(),
                                b.getFunctionType(stubInputs, {}));
    stub.setPrivate();
    symbols.insert(stub);
    done.push_back({chunk, stub});
  }

  b.setInsertionPoint(op);
  Value work = emitWork(b, loc, op);
  if (int64_t cost = pointCost(op); cost != 1)
    work = arith::MulIOp::create(b, loc, work,
                                 arith::ConstantIndexOp::create(b, loc, cost));
  SmallVector<Value> callArgs;
  callArgs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
  callArgs.push_back(
      getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, dim)));
  callArgs.push_back(work);
  callArgs.append(args.begin(), args.end());
  func::CallOp::create(b, loc, stub, callArgs);
  op.erase();
}

struct ScanParallelizeLinalgPass
    : scan::impl::ScanParallelizeLinalgBase<ScanParallelizeLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each op to split, the dimension split and whether it is hot.
    SmallVector<std::tuple<linalg::GenericOp, unsigned, bool>> candidates;
    module.walk([&](linalg::GenericOp op) {
      if (!isSplittable(op))
        return;
      std::optional<int64_t> points = staticWork(op);
      int64_t cost = pointCost(op);
      if (points && *points < llvm::divideCeil(minWork, cost))
        return;
      bool hot = hotWork > 0 && points &&
                 *points >= llvm::divideCeil(hotWork, cost);
      if (std::optional<unsigned> dim = splitDimension(op))
        candidates.push_back({op, *dim, hot});
    });
    SymbolTable symbols(module);
    SmallVector<Outlined> done;
    unsigned index = 0;
    for (auto [op, dim, hot] : candidates) {
      // Numbered after what the module has (a module lowered twice).
      while (symbols.lookup((kChunkFuncPrefix + std::to_string(index)).str()))
        ++index;
      outline(op, dim, index++, hot, symbols, done);
      ++numSplit;
    }
  }
};

} // namespace
