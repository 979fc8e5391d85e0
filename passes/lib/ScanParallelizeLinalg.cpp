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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
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
using scan::kChunkFuncPrefix;
using scan::kParallelStubPrefix;
using scan::kPartsStubPrefix;
using scan::loopSize;
using scan::staticWork;

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

/// Makes the chunk functions of a module and the calls of their stubs.
class ChunkBuilder {
public:
  explicit ChunkBuilder(ModuleOp module) : symbols(module) {}

  /// Makes `@__mlir_scan_chunk<N>(%lo, %hi, args...)` before `parent`, its
  /// body built by `body` (with `args` mapped to the function's arguments),
  /// and calls `@<stubPrefix><N>(lo, hi, work, args...)` at `b`'s insertion
  /// point. A chunk equal to one made before is dropped for that one (and
  /// its stub); a chunk of a hot op is marked hot.
  void call(OpBuilder &b, Location loc, func::FuncOp parent,
            StringRef stubPrefix, Value lo, Value hi, Value work,
            ArrayRef<Value> args, bool hot,
            function_ref<void(OpBuilder &, Value, Value, IRMapping &)> body) {
    // Numbered after what the module has (a module lowered twice).
    while (symbols.lookup((kChunkFuncPrefix + Twine(next)).str()))
      ++next;
    std::string suffix = std::to_string(next++);
    OpBuilder fb(b.getContext());
    Type indexType = fb.getIndexType();
    SmallVector<Type> inputs{indexType, indexType};
    for (Value arg : args)
      inputs.push_back(arg.getType());
    fb.setInsertionPoint(parent);
    auto chunk =
        func::FuncOp::create(fb, loc, (kChunkFuncPrefix + suffix).str(),
                             fb.getFunctionType(inputs, {}));
    chunk.setPrivate();
    symbols.insert(chunk);
    Block *entry = chunk.addEntryBlock();
    fb.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [arg, value] :
         llvm::zip(args, entry->getArguments().drop_front(2)))
      mapping.map(arg, value);
    body(fb, entry->getArgument(0), entry->getArgument(1), mapping);
    fb.setInsertionPointToEnd(entry);
    func::ReturnOp::create(fb, loc);

    func::FuncOp stub;
    auto same = llvm::find_if(done, [&](Outlined &o) {
      return o.stub.getName().starts_with(stubPrefix) &&
             sameChunk(o.chunk, chunk);
    });
    if (same != done.end()) {
      symbols.erase(chunk);
      chunk = same->chunk;
      stub = same->stub;
    } else {
      SmallVector<Type> stubInputs{indexType, indexType, indexType};
      llvm::append_range(stubInputs, TypeRange(ValueRange(args)));
      fb.setInsertionPoint(parent);
      stub = func::FuncOp::create(fb, loc, (stubPrefix + suffix).str(),
                                  fb.getFunctionType(stubInputs, {}));
      stub.setPrivate();
      symbols.insert(stub);
      done.push_back({chunk, stub});
    }
    if (hot)
      markHot(chunk);
    SmallVector<Value> callArgs{lo, hi, work};
    llvm::append_range(callArgs, args);
    func::CallOp::create(b, loc, stub, callArgs);
  }

private:
  SymbolTable symbols;
  SmallVector<Outlined> done;
  unsigned next = 0;
};

/// The values `op`'s body uses from above (a part's chunk function takes
/// them as arguments).
SetVector<Value> capturedValues(linalg::GenericOp op) {
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegion(0), captured);
  return captured;
}

/// `op`'s work for the run-time library: its iteration points, each
/// weighted by pointCost.
Value emitWeightedWork(OpBuilder &b, Location loc, linalg::GenericOp op) {
  Value work = emitWork(b, loc, op);
  if (int64_t cost = pointCost(op); cost != 1)
    work = arith::MulIOp::create(b, loc, work,
                                 arith::ConstantIndexOp::create(b, loc, cost));
  return work;
}

/// Replaces `op` by a call running it in parts along the parallel
/// dimension `dim` (`@__mlir_scan_run_chunks<N>(0, size, work, ...)`): each
/// part runs the op on the subviews of iterations [lo, hi) of `dim`.
void splitParallel(ChunkBuilder &chunks, linalg::GenericOp op, unsigned dim,
                   bool hot) {
  Location loc = op.getLoc();
  // The chunk function's arguments: the op's distinct operands and the
  // values its body uses from above.
  SetVector<Value> args;
  for (Value operand : op->getOperands())
    args.insert(operand);
  SetVector<Value> captured = capturedValues(op);
  args.insert(captured.begin(), captured.end());

  OpBuilder b(op);
  Value work = emitWeightedWork(b, loc, op);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value size =
      getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, dim));
  chunks.call(b, loc, op->getParentOfType<func::FuncOp>(), kParallelStubPrefix,
              zero, size, work, args.getArrayRef(), hot,
              [&](OpBuilder &fb, Value lo, Value hi, IRMapping &mapping) {
                Value count = arith::SubIOp::create(fb, loc, hi, lo);
                SmallVector<Value> operands;
                for (OpOperand &operand : op->getOpOperands())
                  operands.push_back(restrict(
                      fb, loc, mapping.lookup(operand.get()),
                      op.getMatchingIndexingMap(&operand), dim, lo, count));
                Operation *part = fb.clone(*op, mapping);
                part->setOperands(operands);
                shiftIndices(part, dim, lo);
              });
  op.erase();
}

/// A reduction split's parts read at least this many iterations of the
/// reduction dimension (rows of `W`: each part also zeroes and writes a
/// row of partial sums, and the caller adds the rows).
constexpr int64_t kRowsPerPart = 128;
/// At most this many parts (cores) take a reduction split's op.
constexpr int64_t kMaxReductionParts = 8;

/// Whether `op` sums into its output (sumIntoOutput) elements of at least
/// a byte: then the sum can be split into partial sums.
bool accumulatesBySum(linalg::GenericOp op) {
  if (!scan::sumIntoOutput(op))
    return false;
  Type element = op.getRegionOutputArgs()[0].getType();
  return element.isIntOrFloat() && element.getIntOrFloatBitWidth() >= 8;
}

/// The reduction dimension to split `op` along rather than its parallel
/// dimension `dim`, if any. That is when `dim` is the innermost loop, the
/// contiguous dimension of a matrix the op reads along a reduction (the
/// `h^T W` of a step: `W[k, j]`, the sum over k): parts of `dim` would each
/// read a slice of every row of `W` (half rows, on two cores), which the
/// cores' prefetchers stream from L3 slower than whole consecutive rows
/// when the slice is under a page (see kMaxSplitRowBytes). Split along the
/// reduction, each part reads whole rows, into a row of partial sums.
std::optional<unsigned> reductionToSplit(linalg::GenericOp op, unsigned dim) {
  if (dim + 1 != op.getNumLoops() || !accumulatesBySum(op))
    return std::nullopt;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineExpr inner = getAffineDimExpr(dim, op.getContext());
  if (outMap.getNumResults() != 1 || outMap.getResult(0) != inner)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() < 2 || map.getResults().back() != inner)
      continue;
    for (AffineExpr expr : map.getResults().drop_back())
      if (auto d = dyn_cast<AffineDimExpr>(expr);
          d && iterators[d.getPosition()] == utils::IteratorType::reduction)
        return d.getPosition();
  }
  return std::nullopt;
}

/// What a row of partial sums starts at: 0, or -0.0 for floats (the
/// identity of IEEE addition: -0.0 + x is x for every x, +0.0 + -0.0 is
/// +0.0), so that a sum of -0.0s keeps its sign as in the unsplit op.
/// (Upstream's arith::getIdentityValue gives +0.0 for addf.)
TypedAttr additiveIdentity(Type element) {
  if (auto type = dyn_cast<FloatType>(element))
    return FloatAttr::get(type, APFloat::getZero(type.getFloatSemantics(),
                                                 /*Negative=*/true));
  return IntegerAttr::get(element, 0);
}

/// The value of `v` in a chunk function: a constant is made again there
/// (LLVM folds it into the loops), anything else is the mapped argument.
Value inChunk(OpBuilder &b, Value v, IRMapping &mapping) {
  if (Operation *def = v.getDefiningOp();
      def && matchPattern(def, m_Constant()))
    return b.clone(*def)->getResult(0);
  return mapping.lookup(v);
}

/// Replaces `op` (an accumulation by sum whose reduction dimension `red`
/// has at least 2 * kRowsPerPart iterations, and whose output is indexed by
/// its innermost, parallel, dimension `dim`) by a call running it in parts
/// of the reduction (`@__mlir_scan_run_parts<N>(0, parts, work, ...)`):
/// part p sums iterations [K p / P, K (p + 1) / P) of `red` into row p of a
/// buffer of partial sums (from -0.0 for floats), which the caller then
/// adds to the output in the order of p. The parts are a function of the
/// sizes alone, so the results do not depend on how many cores run them.
void splitReduction(ChunkBuilder &chunks, linalg::GenericOp op, unsigned dim,
                    unsigned red, bool hot) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  OpBuilder b(op);
  Value out = op.getDpsInitOperand(0)->get();
  Type element = getElementTypeOrSelf(out.getType());
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value rows =
      getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, red));
  Value cols =
      getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, dim));
  // Folded where the sizes are static: a static op gets constant parts.
  Value parts = b.createOrFold<arith::MinUIOp>(
      loc, b.createOrFold<arith::DivUIOp>(loc, rows, index(kRowsPerPart)),
      index(kMaxReductionParts));
  // Rows of whole cache lines, so that parts on different cores do not
  // write the same line.
  Value stride = b.createOrFold<arith::MulIOp>(
      loc, b.createOrFold<arith::CeilDivUIOp>(loc, cols, index(16)), index(16));
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  for (Value size : {parts, stride}) {
    std::optional<int64_t> known = getConstantIntValue(size);
    shape.push_back(known ? *known : ShapedType::kDynamic);
    if (!known)
      dynamicSizes.push_back(size);
  }
  auto bufferType = MemRefType::get(shape, element);
  Value partials = memref::AllocOp::create(b, loc, bufferType, dynamicSizes,
                                           b.getI64IntegerAttr(64));

  SetVector<Value> args;
  for (Value v : {parts, rows, cols})
    if (!matchPattern(v, m_Constant()))
      args.insert(v);
  args.insert(partials);
  for (OpOperand *input : op.getDpsInputOperands())
    args.insert(input->get());
  SetVector<Value> captured = capturedValues(op);
  args.insert(captured.begin(), captured.end());

  Value work = emitWeightedWork(b, loc, op);
  chunks.call(
      b, loc, op->getParentOfType<func::FuncOp>(), kPartsStubPrefix, index(0),
      parts, work, args.getArrayRef(), hot,
      [&](OpBuilder &fb, Value lo, Value hi, IRMapping &mapping) {
        Value count = inChunk(fb, parts, mapping),
              size = inChunk(fb, rows, mapping);
        Value width = inChunk(fb, cols, mapping),
              buffer = mapping.lookup(partials);
        Value one = arith::ConstantIndexOp::create(fb, loc, 1);
        auto loop = scf::ForOp::create(fb, loc, lo, hi, one);
        fb.setInsertionPoint(loop.getBody()->getTerminator());
        Value p = loop.getInductionVar();
        auto bound = [&](Value q) {
          return fb.createOrFold<arith::DivUIOp>(
              loc, fb.createOrFold<arith::MulIOp>(loc, size, q), count);
        };
        Value begin = bound(p),
              end = bound(arith::AddIOp::create(fb, loc, p, one));
        Value length = fb.createOrFold<arith::SubIOp>(loc, end, begin);
        SmallVector<OpFoldResult> offsets{p, fb.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes{fb.getIndexAttr(1),
                                        getAsOpFoldResult(width)};
        SmallVector<OpFoldResult> strides(2, fb.getIndexAttr(1));
        auto rowType = memref::SubViewOp::inferRankReducedResultType(
            {getConstantIntValue(width).value_or(ShapedType::kDynamic)},
            bufferType, offsets, sizes, strides);
        Value row = memref::SubViewOp::create(fb, loc, rowType, buffer, offsets,
                                              sizes, strides);
        AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
        linalg::GenericOp::create(
            fb, loc, TypeRange{}, ValueRange{}, ValueRange{row},
            ArrayRef<AffineMap>{identity},
            ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange) {
              Value identity =
                  arith::ConstantOp::create(nb, l, additiveIdentity(element));
              linalg::YieldOp::create(nb, l, identity);
            });
        SmallVector<Value> operands;
        for (OpOperand *input : op.getDpsInputOperands())
          operands.push_back(restrict(fb, loc, mapping.lookup(input->get()),
                                      op.getMatchingIndexingMap(input), red,
                                      begin, length));
        operands.push_back(row);
        Operation *part = fb.clone(*op, mapping);
        part->setOperands(operands);
        shiftIndices(part, red, begin);
      });

  // out += the partial sums, in the order of the parts.
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes{getAsOpFoldResult(parts),
                                  getAsOpFoldResult(cols)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  Value sums =
      memref::SubViewOp::create(b, loc, partials, offsets, sizes, strides);
  AffineExpr p = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{sums}, ValueRange{out},
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {p, j}, ctx),
                          AffineMap::get(2, 0, {j}, ctx)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::reduction,
                                    utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value sum = isa<FloatType>(element)
                        ? arith::AddFOp::create(nb, l, a[1], a[0]).getResult()
                        : arith::AddIOp::create(nb, l, a[1], a[0]).getResult();
        linalg::YieldOp::create(nb, l, sum);
      });
  memref::DeallocOp::create(b, loc, partials);
  op.erase();
}

/// A reduction split is for matrices whose rows are narrower than this:
/// split by columns on two cores, each part would read less than a page
/// (4 KiB) of every row, which the cores' prefetchers stream from L3 slower
/// than whole rows. Wider rows give each of two cores whole pages of every
/// row, as fast as whole rows or faster (docs/performance.md, "Ninth
/// round"), and keep the unsplit op's rounding. A bound on the sizes alone,
/// not on the cores: the results must not depend on the thread count.
constexpr int64_t kMaxSplitRowBytes = 8192;

/// Replaces `op` by a call running it in parts: along the reduction `red`
/// when it has at least 2 * kRowsPerPart iterations and the rows of its
/// matrix are narrower than kMaxSplitRowBytes (tested at run time where the
/// sizes are dynamic), else along the parallel dimension `dim`.
void splitEitherWay(ChunkBuilder &chunks, linalg::GenericOp op, unsigned dim,
                    unsigned red, bool hot) {
  int64_t bytes = llvm::divideCeil(
      getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType())
          .getIntOrFloatBitWidth(),
      8);
  int64_t maxColumns = kMaxSplitRowBytes / bytes;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  bool staticRows = !ShapedType::isDynamic(ranges[red]);
  bool staticColumns = !ShapedType::isDynamic(ranges[dim]);
  if ((staticRows && ranges[red] < 2 * kRowsPerPart) ||
      (staticColumns && ranges[dim] >= maxColumns))
    return splitParallel(chunks, op, dim, hot);
  if (staticRows && staticColumns)
    return splitReduction(chunks, op, dim, red, hot);

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto test = [&](unsigned d, arith::CmpIPredicate predicate, int64_t bound) {
    Value size =
        getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, d));
    return arith::CmpIOp::create(b, loc, predicate, size,
                                 arith::ConstantIndexOp::create(b, loc, bound))
        .getResult();
  };
  Value byRowsPays;
  if (!staticRows)
    byRowsPays = test(red, arith::CmpIPredicate::uge, 2 * kRowsPerPart);
  if (!staticColumns) {
    Value narrow = test(dim, arith::CmpIPredicate::ult, maxColumns);
    byRowsPays =
        byRowsPays
            ? arith::AndIOp::create(b, loc, byRowsPays, narrow).getResult()
            : narrow;
  }
  auto branch = scf::IfOp::create(b, loc, byRowsPays, /*withElseRegion=*/true);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  auto byRows = cast<linalg::GenericOp>(b.clone(*op));
  b.setInsertionPoint(branch.elseBlock()->getTerminator());
  auto byColumns = cast<linalg::GenericOp>(b.clone(*op));
  op.erase();
  splitReduction(chunks, byRows, dim, red, hot);
  splitParallel(chunks, byColumns, dim, hot);
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
    ChunkBuilder chunks(module);
    for (auto [op, dim, hot] : candidates) {
      std::optional<unsigned> red;
      if (splitReductions)
        red = reductionToSplit(op, dim);
      if (red) {
        splitEitherWay(chunks, op, dim, *red, hot);
        ++numSplitReduction;
      } else {
        splitParallel(chunks, op, dim, hot);
      }
      ++numSplit;
    }
  }
};

} // namespace
