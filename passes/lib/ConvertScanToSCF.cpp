//===- ConvertScanToSCF.cpp - scan.scan -> scf.for / scf.while ------------===//
//
// Lowers `scan.scan` to a loop over tensors in destination-passing style. The
// loop carries one buffer per output and writes each step's rows into it
// after the inlined body has read its inputs, so that one-shot-bufferize can
// keep every buffer in place (SPEC §5, in-place contract).
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/RowBlockFusion.h"
#include "Scan/RuntimeChecks.h"
#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_CONVERTSCANTOSCF
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;
using namespace mlir::scan;

namespace {

//===----------------------------------------------------------------------===//
// Row access. A row of a `tensor<L x ...>` / `memref<L x ...>` is a scalar for
// rank 1 and a rank-reduced slice otherwise.
//===----------------------------------------------------------------------===//

Value constIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Offsets/sizes/strides selecting row `idx` of a value with `sizes`.
void rowSlice(OpBuilder &b, Value idx, SmallVector<OpFoldResult> sizes,
              SmallVectorImpl<OpFoldResult> &offsets,
              SmallVectorImpl<OpFoldResult> &rowSizes,
              SmallVectorImpl<OpFoldResult> &strides) {
  offsets.assign(sizes.size(), b.getIndexAttr(0));
  offsets[0] = idx;
  strides.assign(sizes.size(), b.getIndexAttr(1));
  sizes[0] = b.getIndexAttr(1);
  rowSizes.assign(sizes.begin(), sizes.end());
}

/// Whether rows of `type` (a stacked tensor or buffer) hold no element
/// because a row size is a static 0. MLIR's verifiers reject every slice of
/// such a value ("offset 1 is out-of-bounds: 0 >= 0": a static offset must
/// be below the static size, even for a slice of size 0), so the lowering
/// neither slices nor copies these rows: a read is a `tensor.empty`, a
/// write does nothing.
bool rowsAreEmpty(ShapedType type) {
  return llvm::is_contained(type.getShape().drop_front(), 0);
}

/// The row sizes of `shaped` (a tensor or memref), as a `tensor.empty` of
/// one row: the value of any row of an empty-row value.
Value emptyRow(OpBuilder &b, Location loc, Value shaped) {
  auto type = cast<ShapedType>(shaped.getType());
  SmallVector<OpFoldResult> sizes =
      isa<MemRefType>(type) ? memref::getMixedSizes(b, loc, shaped)
                            : tensor::getMixedSizes(b, loc, shaped);
  return tensor::EmptyOp::create(b, loc, ArrayRef(sizes).drop_front(),
                                 type.getElementType());
}

/// Row `idx` of a tensor (a sequence or an init): a value, no copy.
Value extractTensorRow(OpBuilder &b, Location loc, Value tensor, Value idx) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getRank() == 1)
    return tensor::ExtractOp::create(b, loc, tensor, idx);
  if (rowsAreEmpty(type))
    return emptyRow(b, loc, tensor);
  SmallVector<OpFoldResult> offsets, sizes, strides;
  rowSlice(b, idx, tensor::getMixedSizes(b, loc, tensor), offsets, sizes,
           strides);
  auto rowType = cast<RankedTensorType>(ScanOp::getRowType(type));
  return tensor::ExtractSliceOp::create(b, loc, rowType, tensor, offsets,
                                        sizes, strides);
}

/// A rank-reduced view of row `idx` of a buffer of rank >= 2.
Value bufferRowView(OpBuilder &b, Location loc, Value buffer, Value idx) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  rowSlice(b, idx, memref::getMixedSizes(b, loc, buffer), offsets, sizes,
           strides);
  MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().drop_front(), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, viewType, buffer, offsets, sizes,
                                   strides);
}

/// The tensor value of a whole buffer (or a view of one). `restrict`: the
/// lowering never creates two tensor views of overlapping memory that are
/// live at the same time, so one-shot-bufferize may keep every write in
/// place without proving that rows `t` and `t-1` are disjoint.
/// `writable`: the step may overwrite it in place (a row updated by its
/// only reader, see ScanLowering::rowUpdatedInPlace).
Value bufferAsTensor(OpBuilder &b, Location loc, Value buffer,
                     bool writable = false) {
  auto type = cast<MemRefType>(buffer.getType());
  auto tensorType = RankedTensorType::get(type.getShape(), type.getElementType());
  return bufferization::ToTensorOp::create(
      b, loc, tensorType, buffer, b.getUnitAttr(),
      writable ? b.getUnitAttr() : UnitAttr());
}

/// Row `idx` of a buffer, read in place.
Value readBufferRow(OpBuilder &b, Location loc, Value buffer, Value idx) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return memref::LoadOp::create(b, loc, buffer, idx);
  if (rowsAreEmpty(type))
    return emptyRow(b, loc, buffer);
  return bufferAsTensor(b, loc, bufferRowView(b, loc, buffer, idx));
}

/// Writes `row` as row `idx` of a buffer. For tensor rows the body's result
/// is then computed directly in the row (eliminate-empty-tensors).
void writeBufferRow(OpBuilder &b, Location loc, Value row, Value buffer,
                    Value idx) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1) {
    memref::StoreOp::create(b, loc, row, buffer, idx);
    return;
  }
  if (rowsAreEmpty(type))
    return;
  Value view = bufferRowView(b, loc, buffer, idx);
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, row, view, /*restrict=*/true, /*writable=*/true);
}

/// A new buffer of `shape` whose dynamic sizes come from `sizes`.
Value allocBuffer(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamic;
  dispatchIndexOpFoldResults(sizes, dynamic, shape);
  auto type = MemRefType::get(shape, elementType);
  return memref::AllocOp::create(b, loc, type, dynamic,
                                 b.getI64IntegerAttr(64));
}

/// Rows `[0, count)` of `tensor`, cast to `resultType`.
Value leadingRows(OpBuilder &b, Location loc, Value tensor, Value count,
                  Type resultType) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, tensor);
  sizes[0] = count;
  if (rowsAreEmpty(type)) {
    Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
    return empty.getType() == resultType
               ? empty
               : tensor::CastOp::create(b, loc, resultType, empty);
  }
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, tensor, offsets, sizes, strides);
  if (slice.getType() != resultType)
    slice = tensor::CastOp::create(b, loc, resultType, slice);
  return slice;
}

/// A row of zeros of type `rowType` with the given sizes.
Value zeroRow(OpBuilder &b, Location loc, Type rowType,
              ArrayRef<OpFoldResult> rowSizes) {
  auto tensorType = dyn_cast<RankedTensorType>(rowType);
  Type elem = tensorType ? tensorType.getElementType() : rowType;
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elem));
  if (!tensorType)
    return zero;
  Value empty = tensor::EmptyOp::create(b, loc, rowSizes, elem);
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// The scalar every element of `tensor` equals, when its producer says so:
/// a `linalg.fill`, a `linalg.generic` that only yields a scalar input (a
/// broadcast), or a splat constant. Null otherwise. The value is defined
/// before `tensor`, so it can be used wherever `tensor` can.
Value splatValueOf(OpBuilder &b, Value tensor) {
  if (auto fill = tensor.getDefiningOp<linalg::FillOp>())
    return fill.getInputs()[0];
  if (auto generic = tensor.getDefiningOp<linalg::GenericOp>()) {
    if (generic.getNumDpsInits() != 1 ||
        generic.getNumLoops() != generic.getNumParallelLoops())
      return {};
    auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
    auto arg = dyn_cast<BlockArgument>(yield.getOperand(0));
    if (!arg || arg.getOwner() != generic.getBody() ||
        arg.getArgNumber() >= generic.getNumDpsInputs())
      return {};
    Value input = generic.getDpsInputOperand(arg.getArgNumber())->get();
    return isa<ShapedType>(input.getType()) ? Value() : input;
  }
  DenseElementsAttr dense;
  if (matchPattern(tensor, m_Constant(&dense)) && dense.isSplat()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(tensor);
    return arith::ConstantOp::create(b, tensor.getLoc(),
                                     dense.getSplatValue<TypedAttr>());
  }
  return {};
}

/// `lo = min(0, taps...)` of a mitmot's in and out taps.
int64_t mitmotLow(ScanOp op, unsigned i) {
  int64_t lo = std::min<int64_t>(0, op.getMitMotOutTapsAt(i).front());
  ArrayRef<int64_t> in = op.getMitMotInTapsAt(i);
  return in.empty() ? lo : std::min(lo, in.front());
}

/// The rows an `until` output's buffer starts with: about 1 MiB of rows of a
/// static shape (64 rows for dynamic rows), which most `until` scans never
/// outgrow, and never more than n_steps.
int64_t initialCapacity(Type rowType) {
  constexpr int64_t kInitialBytes = int64_t(1) << 20;
  auto tensor = dyn_cast<RankedTensorType>(rowType);
  Type element = tensor ? tensor.getElementType() : rowType;
  if (tensor && !tensor.hasStaticShape())
    return 64;
  int64_t elements = tensor ? tensor.getNumElements() : 1;
  int64_t bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  int64_t bytes = std::max<int64_t>(1, elements * llvm::divideCeil(bits, 8));
  return std::max<int64_t>(64, kInitialBytes / bytes);
}

//===----------------------------------------------------------------------===//
// The lowering of one scan op.
//===----------------------------------------------------------------------===//

/// `rows + 1`, saturated: windows may span 2**63 - 1 rows (the verifier's
/// limit). A buffer that large is never allocated: the length checks of
/// the operands that must hold those rows fail first.
int64_t rowsPlusOne(int64_t rows) {
  return rows == std::numeric_limits<int64_t>::max() ? rows : rows + 1;
}

/// Scalar states whose window (K rows) is at most this many are also
/// carried as loop registers, a shift register of K values; larger windows
/// are read from their buffer (one register per row would make the loop
/// carry, and the lowering emit, K values: a tap of -10**7 took minutes
/// and gigabytes to compile). Eight registers cover every recurrence of
/// the benchmarks (Fibonacci has 2).
constexpr int64_t kMaxRegisterRows = 8;

/// Emits `body(j)` for `j` in `[0, count)`: unrolled for a few rows, an
/// `scf.for` otherwise (a window of a million rows must not become a
/// million ops).
void forEachRow(OpBuilder &b, Location loc, int64_t count,
                function_ref<void(Value)> body) {
  if (count <= kMaxRegisterRows) {
    for (int64_t j = 0; j < count; ++j)
      body(constIndex(b, loc, j));
    return;
  }
  scf::ForOp::create(b, loc, constIndex(b, loc, 0), constIndex(b, loc, count),
                     constIndex(b, loc, 1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value j, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(j);
                       scf::YieldOp::create(nested, loc);
                     });
}

/// How one non-mitmot output is stored while the loop runs.
struct OutputPlan {
  ScanOp::OutputKind kind;
  unsigned index = 0;        // index inside its group
  unsigned result = 0;       // result number of the scan
  Type rowType;              // S
  int64_t initRows = 0;      // K: 1 for sitsot, -min(taps) for mitsot, 0 nitsot
  int64_t keep = 0;          // 0: all rows
  bool scalarState = false;  // scalar state carried as iter_args (a window
                             // of at most kMaxRegisterRows rows)
  Value ringRows;            // rows of the ring buffer when keep > 0
  SmallVector<OpFoldResult> rowSizes;
  Value init;                // init operand (null for nitsot)
  Value initBuffer;          // tensor states: the init rows, laid out as
                             // buffer rows (null otherwise)
  Value buffer;              // memref written row by row (inside the loop
                             // of a growing buffer: this step's buffer)
  bool grows = false;        // an `until` output whose buffer starts small
                             // and doubles when full (see growIfFull)
  bool dynamicRow = false;   // a nitsot whose rows have dynamic sizes: its
                             // buffer is allocated by the first step, from
                             // that step's row (see allocateOnFirstStep)
  unsigned firstReg = 0;     // position of its registers in the iter_args
  bool inPlace = false;      // a sitsot of keep 1 whose step only reads its
                             // state to compute the new one, element by
                             // element: one row, updated in place
  int rowSums = -1;          // a nitsot whose rows only row-sum consumers
                             // read (index into ScanLowering::rowSums): its
                             // buffer holds one block of steps' rows
  Value blockStart;          // ... the step of the block's first row

  /// The buffer is carried through the loop (it changes while steps run).
  bool carried() const { return grows || dynamicRow; }
};

/// How one mitmot buffer is updated.
///
/// A mitmot whose result is not used (the gradient of a scan whose initial
/// state's gradient nobody asked for) lives in a ring of `span + 1` rows, the
/// rows one step touches: step `t` first loads row `t + span` (from the
/// operand, or as the operand's splat value) into the slot of row `t - 1`,
/// which no later step reads. Otherwise the whole buffer is copied (or, for a
/// splat operand, filled) and updated in place.
struct MitMotPlan {
  Value buffer;                 // memref holding the current buffer (a ring)
  int64_t lo = 0;
  int64_t span = 0;             // hi - lo: rows a step touches, minus one
  Value init;                   // the operand
  Value splat;                  // the operand's splat value, or null
  Value ringRows;               // rows of the ring, null for a full buffer
  SmallVector<Value> scratch;   // per in tap: row copy when an out tap
                                // overwrites the same row, else null
  SmallVector<bool> inPlace;    // per in tap: overwritten by its reader
};

class ScanLowering {
public:
  ScanLowering(ScanOp op, RewriterBase &rewriter, bool privateNonSequences,
               int64_t blockSteps)
      : op(op), rewriter(rewriter), loc(op.getLoc()),
        privateNonSequences(privateNonSequences), blockSteps(blockSteps) {}

  void lower();

private:
  Value emitRuntimeChecks();
  void planNonSequences();
  Value outputBytes();
  Value isPrivateCopySize(Value value, Value outputs);
  Value pickCopy(Value value, Value large);
  Value pickCopyAsBuffer(Value value, Value large);
  void planMitMots();
  void planOutputs();
  void planInitBuffer(OutputPlan &plan, Type elementType);
  void loadInitInPlace(const OutputPlan &plan);
  /// Sequences computed a block at a time (before the runtime checks, which
  /// read their sizes) and nitsots summed a block at a time (see
  /// RowBlockFusion.h); both only when the steps run in blocks.
  void planTiledSequences();
  void planRowSums();
  /// The loop of steps as an scf.for over blocks of `blockSteps` steps
  /// around an scf.for over the block's steps: each block first computes
  /// its rows of the tiled sequences, and after its steps adds its rows to
  /// the row sums' accumulators (carried by the outer loop, in `accs`).
  void emitBlockedLoop(ArrayRef<Value> carried,
                       llvm::function_ref<void(ValueRange)> setCarried,
                       llvm::function_ref<SmallVector<Value>()> carriedNow);
  bool runsInBlocks() const {
    return llvm::is_contained(tiledSequence, true) || !rowSums.empty();
  }
  /// Values of the body's block arguments at step `t`.
  SmallVector<Value> blockArgValues(Value t, ValueRange regs);
  /// Inlines the body at the insertion point, writes this step's rows and
  /// returns the next registers (and the `until` condition in `stop`).
  SmallVector<Value> emitStep(Value t, ValueRange regs, Value &stop);
  Value slotOf(const OutputPlan &plan, Value row);
  void checkRowSizes(Value row, Value buffer, unsigned result);
  Value growIfFull(const OutputPlan &plan, Value buffer, Value t);
  Value allocateOnFirstStep(const OutputPlan &plan, Value buffer, Value t,
                            Value row);
  SmallVector<OpFoldResult> rowSizesOf(const OutputPlan &plan, Value buffer);
  Value stateRow(const OutputPlan &plan, Value t, ValueRange regs, int64_t k);
  Value finalResult(const OutputPlan &plan, Value stepsRun);
  /// The buffer row holding row `row` of mitmot `plan`.
  Value mitMotSlot(const MitMotPlan &plan, Value row);
  /// Loads row `row` of mitmot `plan`'s operand into its ring.
  void loadMitMotRow(const MitMotPlan &plan, Value row);
  /// Whether in tap `k` of mitmot `i`, whose row out tap `k` overwrites,
  /// can be read in place; if so, makes its reader write into it.
  bool rowUpdatedInPlace(unsigned i, int64_t k);
  /// Whether the row `arg` (a block argument) is read only by the
  /// element-wise op computing `next`, the row yielded in its place, element
  /// by element; if so, makes that op compute into `arg`.
  bool computesInto(BlockArgument arg, Value next);

  Value plus(Value v, int64_t k) {
    if (k == 0)
      return v;
    return arith::AddIOp::create(rewriter, loc, v,
                                 constIndex(rewriter, loc, k));
  }

  ScanOp op;
  RewriterBase &rewriter;
  Location loc;
  bool privateNonSequences; // see kPrivateNonSequenceBytes
  int64_t blockSteps;       // steps per block; 0: never run in blocks
  /// Per sequence: whether it is computed a block at a time, and (inside a
  /// block) those rows of it and the sequence row of the first of them.
  SmallVector<bool> tiledSequence;
  SmallVector<Value> sequenceBlock, sequenceFirst;
  SmallVector<RowSumFusion, 1> rowSums;
  SmallVector<SmallVector<OpFoldResult>> rowSumSizes;
  SmallVector<Value> rowSumValid; // i1: its moved slices are in bounds
  /// The accumulators of all row sums (`rowSums[i]`'s start at accBase[i]).
  SmallVector<unsigned> accBase;
  SmallVector<Value> accs;
  Value nSteps;
  SmallVector<MitMotPlan> mitmots;
  SmallVector<OutputPlan> plans;
  SmallVector<Value> initialRegs;
  /// What the body reads for each non-sequence (the operand or its copy).
  SmallVector<Value> nonSequences;
};

Value ScanLowering::emitRuntimeChecks() {
  Value ok = arith::ConstantIntOp::create(rewriter, loc, 1, 1);
  auto check = [&](Value bad, ScanErrorCode code, int64_t item, Value have,
                   Value need) {
    emitScanErrorIf(rewriter, loc, bad, code, item, have, need);
    Value good = arith::XOrIOp::create(
        rewriter, loc, bad, arith::ConstantIntOp::create(rewriter, loc, 1, 1));
    ok = arith::AndIOp::create(rewriter, loc, ok, good);
  };
  Value n = op.getNSteps();
  Value zero = constIndex(rewriter, loc, 0);
  check(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, n,
                              zero),
        ScanErrorCode::NegativeSteps, 0, n, zero);

  // `n_steps + window` rows, compared unsigned: both terms are in
  // [0, 2**63) (the negative n_steps check above fails first; the verifier
  // rejects windows that overflow), so the sum is exact as an unsigned
  // number even where it wraps as a signed one (n_steps = 2**63 - 1), and
  // the run-time library prints it unsigned.
  auto checkLength = [&](Value tensor, int64_t window, ScanErrorCode code,
                         unsigned item) {
    Value have = tensor::DimOp::create(rewriter, loc, tensor, 0);
    Value need = plus(n, window);
    check(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, have,
                                need),
          code, item, have, need);
  };
  for (unsigned i = 0; i < op.getNumSequences(); ++i) {
    ArrayRef<int64_t> taps = op.getSequenceTapsAt(i);
    int64_t lo = std::min<int64_t>(0, taps.front());
    int64_t hi = std::max<int64_t>(0, taps.back());
    checkLength(op.getSequences()[i], hi - lo, ScanErrorCode::SequenceTooShort,
                i);
  }
  for (unsigned i = 0; i < op.getNumMitMot(); ++i) {
    int64_t hi = std::max<int64_t>(0, op.getMitMotOutTapsAt(i).back());
    ArrayRef<int64_t> in = op.getMitMotInTapsAt(i);
    if (!in.empty())
      hi = std::max(hi, in.back());
    checkLength(op.getMitmot()[i], hi - mitmotLow(op, i),
                ScanErrorCode::MitMotTooShort, i);
  }
  for (unsigned i = 0; i < op.getNumMitSot(); ++i) {
    Value init = op.getMitsotInits()[i];
    if (!cast<RankedTensorType>(init.getType()).isDynamicDim(0))
      continue;
    Value have = tensor::DimOp::create(rewriter, loc, init, 0);
    Value need = constIndex(rewriter, loc, -op.getMitSotTapsAt(i).front());
    check(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, have,
                                need),
          ScanErrorCode::MitSotInitRows, i, have, need);
  }
  // A failed check runs no step at all: nothing is read out of bounds.
  return arith::SelectOp::create(rewriter, loc, ok, n, zero);
}

Value ScanLowering::mitMotSlot(const MitMotPlan &plan, Value row) {
  if (!plan.ringRows)
    return row;
  return arith::RemUIOp::create(rewriter, loc, row, plan.ringRows);
}

void ScanLowering::loadMitMotRow(const MitMotPlan &plan, Value row) {
  if (rowsAreEmpty(cast<MemRefType>(plan.buffer.getType())))
    return;
  Value slot = mitMotSlot(plan, row);
  if (!plan.splat) {
    writeBufferRow(rewriter, loc, extractTensorRow(rewriter, loc, plan.init, row),
                   plan.buffer, slot);
    return;
  }
  if (cast<MemRefType>(plan.buffer.getType()).getRank() == 1) {
    memref::StoreOp::create(rewriter, loc, plan.splat, plan.buffer, slot);
    return;
  }
  linalg::FillOp::create(rewriter, loc, plan.splat,
                         bufferRowView(rewriter, loc, plan.buffer, slot));
}

/// A gradient's step reads the partial gradient of a state (in tap `k`)
/// and writes it back with this step's contribution added (out tap `k`):
/// `g'[t+1] = g[t+1] + W^T d_t`. Read from the row it overwrites, the row
/// must be copied first, unless the only op reading it is the elementwise
/// op that computes the new row, element by element (an input with the
/// identity map, like its destination): that op can write into the row
/// itself, each element read just before it is written. It is given the in
/// tap as its destination here, and the row is passed writable.
bool ScanLowering::rowUpdatedInPlace(unsigned i, int64_t k) {
  ArrayRef<int64_t> in = op.getMitMotInTapsAt(i);
  ArrayRef<int64_t> out = op.getMitMotOutTapsAt(i);
  return computesInto(op.getMitMotArgs(i)[llvm::find(in, k) - in.begin()],
                      op.getMitMotYields(i)[llvm::find(out, k) - out.begin()]);
}

bool ScanLowering::computesInto(BlockArgument arg, Value next) {
  auto generic = next.getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInits() != 1 || generic->getNumResults() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      arg.getType() != next.getType())
    return false;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!generic.getMatchingIndexingMap(init).isIdentity() ||
      (generic.payloadUsesValueFromOperand(init) && init->get() != arg))
    return false;
  // The new row is yielded once: written to the row it was computed in.
  if (llvm::count(op.getBodyBlock().getTerminator()->getOperands(), next) != 1)
    return false;
  // (`tensor.dim`, of the run-time verification, reads no element.) The op
  // must read the row, element by element: its extents are then the row's,
  // as the row written in its place must be.
  bool read = false;
  for (OpOperand &use : arg.getUses()) {
    if (isa<tensor::DimOp>(use.getOwner()))
      continue;
    if (use.getOwner() != generic.getOperation() ||
        !generic.getMatchingIndexingMap(&use).isIdentity())
      return false;
    read = true;
  }
  if (!read)
    return false;
  rewriter.modifyOpInPlace(generic, [&] { init->set(arg); });
  return true;
}

void ScanLowering::planMitMots() {
  for (unsigned i = 0; i < op.getNumMitMot(); ++i) {
    MitMotPlan plan;
    plan.lo = mitmotLow(op, i);
    int64_t hi = std::max<int64_t>(0, op.getMitMotOutTapsAt(i).back());
    if (!op.getMitMotInTapsAt(i).empty())
      hi = std::max(hi, op.getMitMotInTapsAt(i).back());
    plan.span = hi - plan.lo;
    Value init = plan.init = op.getMitmot()[i];
    plan.splat = splatValueOf(rewriter, init);
    auto type = cast<RankedTensorType>(init.getType());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, init);
    if (op.getResult(i).use_empty()) {
      plan.ringRows = constIndex(rewriter, loc, rowsPlusOne(plan.span));
      sizes[0] = rewriter.getIndexAttr(rowsPlusOne(plan.span));
      plan.buffer = allocBuffer(rewriter, loc, sizes, type.getElementType());
      // Rows [0, span) before the first step; none when no step runs (the
      // operand may then be shorter than that).
      if (plan.span > 0) {
        Value runs =
            arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt,
                                  nSteps, constIndex(rewriter, loc, 0));
        auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange{}, runs,
                                      /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifOp.thenBlock());
        forEachRow(rewriter, loc, plan.span,
                   [&](Value j) { loadMitMotRow(plan, j); });
      }
    } else {
      // The result must not modify the operand: update a copy in place
      // (or a buffer filled with the operand's splat value).
      plan.buffer = allocBuffer(rewriter, loc, sizes, type.getElementType());
      if (plan.splat)
        linalg::FillOp::create(rewriter, loc, plan.splat, plan.buffer);
      else
        bufferization::MaterializeInDestinationOp::create(
            rewriter, loc, TypeRange{}, init, plan.buffer, /*restrict=*/true,
            /*writable=*/true);
    }
    // A row read by an in tap and overwritten by an out tap of the same
    // step is read from a copy: the body may write its result before it
    // has finished reading its inputs.
    ArrayRef<int64_t> out = op.getMitMotOutTapsAt(i);
    for (int64_t k : op.getMitMotInTapsAt(i)) {
      Value scratch;
      bool inPlace = false;
      if (type.getRank() > 1 && llvm::is_contained(out, k)) {
        inPlace = rowUpdatedInPlace(i, k);
        if (!inPlace) {
          SmallVector<OpFoldResult> sizes =
              tensor::getMixedSizes(rewriter, loc, init);
          scratch = allocBuffer(rewriter, loc, ArrayRef(sizes).drop_front(),
                                type.getElementType());
        }
      }
      plan.scratch.push_back(scratch);
      plan.inPlace.push_back(inPlace);
    }
    mitmots.push_back(std::move(plan));
  }
}

void ScanLowering::planOutputs() {
  for (unsigned r = op.getNumMitMot(); r < op.getNumResults(); ++r) {
    OutputPlan plan;
    std::tie(plan.kind, plan.index) = op.getOutputKind(r);
    plan.result = r;
    plan.keep = op.getKeepAt(r);
    plan.init = op.getOutputInit(r);
    auto resultType = cast<RankedTensorType>(op.getResult(r).getType());
    plan.rowType = ScanOp::getRowType(resultType);
    auto rowTensor = dyn_cast<RankedTensorType>(plan.rowType);
    switch (plan.kind) {
    case ScanOp::OutputKind::MitSot: {
      plan.initRows = -op.getMitSotTapsAt(plan.index).front();
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, plan.init);
      plan.rowSizes.assign(sizes.begin() + 1, sizes.end());
      break;
    }
    case ScanOp::OutputKind::SitSot:
      plan.initRows = 1;
      if (rowTensor) {
        plan.rowSizes = tensor::getMixedSizes(rewriter, loc, plan.init);
        // (an accumulator `acc + x_t`: a checkpointed gradient's dW)
        plan.inPlace = plan.keep == 1 && !rowsAreEmpty(rowTensor) &&
                       computesInto(op.getSitSotArg(plan.index),
                                    op.getSitSotYield(plan.index));
      }
      break;
    case ScanOp::OutputKind::NitSot:
      if (!rowTensor)
        break;
      if (llvm::any_of(rowSums, [&](const RowSumFusion &fusion) {
            return fusion.result == r;
          }))
        break; // (sized below)
      // Rows with dynamic sizes: the buffer starts with those sizes 0 (the
      // result of zero steps) and the first step allocates the real one.
      plan.dynamicRow = !rowTensor.hasStaticShape();
      for (int64_t d : rowTensor.getShape())
        plan.rowSizes.push_back(ShapedType::isDynamic(d)
                                    ? OpFoldResult(constIndex(rewriter, loc, 0))
                                    : OpFoldResult(rewriter.getIndexAttr(d)));
      break;
    case ScanOp::OutputKind::MitMot:
      llvm_unreachable("mitmot outputs are planned separately");
    }
    for (auto [f, fusion] : llvm::enumerate(rowSums))
      if (fusion.result == r) {
        plan.rowSums = f;
        plan.rowSizes = rowSumSizes[f];
      }
    plan.scalarState = plan.kind != ScanOp::OutputKind::NitSot &&
                       !rowTensor && plan.initRows <= kMaxRegisterRows;
    // A state read from its buffer (tensor rows, or a scalar window too
    // large for registers).
    bool readFromBuffer = plan.kind != ScanOp::OutputKind::NitSot &&
                          !plan.scalarState && plan.rowSums < 0;

    SmallVector<OpFoldResult> sizes;
    std::optional<int64_t> staticSteps = op.getStaticNumSteps();
    if (plan.keep == 0 && op.getUntil() &&
        (!staticSteps || *staticSteps > initialCapacity(plan.rowType))) {
      // An `until` scan may stop long before n_steps (which may be huge):
      // its buffer grows with the steps taken.
      plan.grows = true;
      Value capacity = constIndex(rewriter, loc, initialCapacity(plan.rowType));
      sizes.push_back(
          arith::MinSIOp::create(rewriter, loc, nSteps, capacity).getResult());
    } else if (plan.keep > 0) {
      // A state read from the ring needs its K rows there; a tensor state
      // is read through views of it, and one extra row keeps the row being
      // written distinct from every row being read.
      int64_t rows = plan.keep;
      if (readFromBuffer && !plan.inPlace)
        rows = std::max(rows, rowsPlusOne(plan.initRows));
      plan.ringRows = constIndex(rewriter, loc, rows);
      sizes.push_back(rewriter.getIndexAttr(rows));
    } else if (plan.rowSums >= 0) {
      // One block's rows.
      sizes.push_back(
          arith::MinSIOp::create(rewriter, loc, nSteps,
                                 constIndex(rewriter, loc, blockSteps))
              .getResult());
    } else if (!resultType.isDynamicDim(0)) {
      sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(0)));
    } else {
      sizes.push_back(nSteps);
    }
    llvm::append_range(sizes, plan.rowSizes);
    plan.buffer = allocBuffer(rewriter, loc, sizes, resultType.getElementType());
    if (plan.inPlace)
      loadInitInPlace(plan);
    else if (readFromBuffer)
      planInitBuffer(plan, resultType.getElementType());

    // Scalar states also live in registers: x[t-K .. t-1].
    plan.firstReg = initialRegs.size();
    if (plan.scalarState) {
      if (plan.kind == ScanOp::OutputKind::SitSot)
        initialRegs.push_back(plan.init);
      else
        for (int64_t j = 0; j < plan.initRows; ++j)
          initialRegs.push_back(extractTensorRow(
              rewriter, loc, plan.init, constIndex(rewriter, loc, j)));
    }
    plans.push_back(std::move(plan));
  }
}

/// An in-place sitsot's row starts as the init (when a step runs).
void ScanLowering::loadInitInPlace(const OutputPlan &plan) {
  Value runs = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt,
                                     nSteps, constIndex(rewriter, loc, 0));
  auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange{}, runs,
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  writeBufferRow(rewriter, loc, plan.init, plan.buffer,
                 constIndex(rewriter, loc, 0));
}

/// A state's rows before step 0 are read from a copy of the init whose rows
/// have the buffer's row layout: the two branches of stateRow's scf.if then
/// bufferize to one unit-stride view type instead of a fully dynamic
/// layout, and the step's loops read a contiguous state (which
/// scan-vectorize-linalg-loops needs, and which spares LLVM versioning them).
/// One copy of the init per call (a whole mitsot init at once, however many
/// rows its window has); none when the checks stopped the loop.
void ScanLowering::planInitBuffer(OutputPlan &plan, Type elementType) {
  SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(plan.initRows)};
  llvm::append_range(sizes, plan.rowSizes);
  plan.initBuffer = allocBuffer(rewriter, loc, sizes, elementType);
  Value runs = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt,
                                     nSteps, constIndex(rewriter, loc, 0));
  auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange{}, runs,
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  if (plan.kind == ScanOp::OutputKind::SitSot) {
    writeBufferRow(rewriter, loc, plan.init, plan.initBuffer,
                   constIndex(rewriter, loc, 0));
    return;
  }
  // The init has K rows (its check ran before: the loop runs no step
  // otherwise), as the buffer's type says once cast.
  auto bufferType = cast<MemRefType>(plan.initBuffer.getType());
  Value init = plan.init;
  auto initType = RankedTensorType::get(bufferType.getShape(), elementType);
  if (init.getType() != initType)
    init = tensor::CastOp::create(rewriter, loc, initType, init);
  if (!rowsAreEmpty(bufferType))
    bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, TypeRange{}, init, plan.initBuffer, /*restrict=*/true,
        /*writable=*/true);
}

/// The `tensor.empty` a yielded row is computed into (through the
/// destinations of the ops computing it), or the row itself.
/// eliminate-empty-tensors makes that empty the output row, so the row's
/// sizes must be checked where the empty is, before anything is computed
/// into it.
static Value destinationOf(Value row) {
  Value root = destinationRoot(row);
  return root.getDefiningOp<tensor::EmptyOp>() ? root : row;
}

/// A yielded row with dynamic sizes must have the buffer's row sizes (the
/// verifier only checks types): a step of raw IR can yield a state longer
/// than its init, which would be written past the row. Fails the call with
/// the first size that differs. `row` may be the empty the row is computed
/// into (see destinationOf): the check then goes right after it.
void ScanLowering::checkRowSizes(Value row, Value buffer, unsigned result) {
  auto rowType = dyn_cast<RankedTensorType>(row.getType());
  if (!rowType || rowType.hasStaticShape())
    return;
  OpBuilder::InsertionGuard guard(rewriter);
  if (auto empty = row.getDefiningOp<tensor::EmptyOp>();
      empty && empty->getBlock() == rewriter.getInsertionBlock())
    rewriter.setInsertionPointAfter(empty);
  auto bufferType = cast<MemRefType>(buffer.getType());
  for (int64_t d = 0; d < rowType.getRank(); ++d) {
    if (!rowType.isDynamicDim(d) && !bufferType.isDynamicDim(d + 1))
      continue;
    Value have = tensor::DimOp::create(rewriter, loc, row, d);
    Value need = memref::DimOp::create(rewriter, loc, buffer, d + 1);
    Value bad = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                      have, need);
    emitScanErrorIf(rewriter, loc, bad, ScanErrorCode::RowSizeMismatch, result,
                    have, need);
  }
}

Value ScanLowering::slotOf(const OutputPlan &plan, Value row) {
  if (plan.rowSums >= 0)
    return arith::SubIOp::create(rewriter, loc, row, plan.blockStart);
  if (plan.keep == 0)
    return row;
  return arith::RemUIOp::create(rewriter, loc, row, plan.ringRows);
}

/// The buffer step `t` writes into: `buffer`, or when it is full (`t` rows,
/// fewer than n_steps), a new one with twice the rows (at most n_steps)
/// holding a copy of the `t` rows written so far. The ownership-based buffer
/// deallocation frees the old one.
Value ScanLowering::growIfFull(const OutputPlan &plan, Value buffer, Value t) {
  Value capacity = memref::DimOp::create(rewriter, loc, buffer, 0);
  Value full = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                     t, capacity);
  auto ifFull = scf::IfOp::create(rewriter, loc, TypeRange{buffer.getType()},
                                  full, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifFull.thenBlock());
  // min(2 * capacity, n_steps), without overflowing the doubling.
  Value room = arith::SubIOp::create(rewriter, loc, nSteps, capacity);
  Value last = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge,
                                     capacity, room);
  Value doubled = arith::AddIOp::create(rewriter, loc, capacity, capacity);
  Value rows = arith::SelectOp::create(rewriter, loc, last, nSteps, doubled);
  SmallVector<OpFoldResult> rowSizes = rowSizesOf(plan, buffer);
  SmallVector<OpFoldResult> sizes{rows};
  llvm::append_range(sizes, rowSizes);
  auto type = cast<MemRefType>(buffer.getType());
  Value grown = allocBuffer(rewriter, loc, sizes, type.getElementType());
  if (!rowsAreEmpty(type)) {
    SmallVector<OpFoldResult> written{t};
    llvm::append_range(written, rowSizes);
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    memref::CopyOp::create(
        rewriter, loc,
        memref::SubViewOp::create(rewriter, loc, buffer, offsets, written,
                                  strides),
        memref::SubViewOp::create(rewriter, loc, grown, offsets, written,
                                  strides));
  }
  scf::YieldOp::create(rewriter, loc, grown);
  rewriter.setInsertionPointToStart(ifFull.elseBlock());
  scf::YieldOp::create(rewriter, loc, buffer);
  return ifFull.getResult(0);
}

/// The row sizes of an output's buffer: fixed, or for a nitsot with dynamic
/// rows those of its current buffer.
SmallVector<OpFoldResult> ScanLowering::rowSizesOf(const OutputPlan &plan,
                                                   Value buffer) {
  if (!plan.dynamicRow)
    return plan.rowSizes;
  SmallVector<OpFoldResult> sizes =
      memref::getMixedSizes(rewriter, loc, buffer);
  return SmallVector<OpFoldResult>(sizes.begin() + 1, sizes.end());
}

/// A nitsot with dynamic row sizes (Theano allocates such an output from its
/// first step's result): at step 0 a buffer with as many rows as `buffer`
/// and the sizes of `row`; at every later step, `row` must have the sizes of
/// the first (NitSotRowSize fails the call otherwise).
Value ScanLowering::allocateOnFirstStep(const OutputPlan &plan, Value buffer,
                                        Value t, Value row) {
  auto rowType = cast<RankedTensorType>(row.getType());
  Value zero = constIndex(rewriter, loc, 0);
  Value first =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, t, zero);
  Value later = arith::XOrIOp::create(
      rewriter, loc, first, arith::ConstantIntOp::create(rewriter, loc, 1, 1));
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> sizes{
      type.isDynamicDim(0)
          ? OpFoldResult(memref::DimOp::create(rewriter, loc, buffer, 0))
          : OpFoldResult(rewriter.getIndexAttr(type.getDimSize(0)))};
  for (int64_t d = 0; d < rowType.getRank(); ++d) {
    if (!rowType.isDynamicDim(d)) {
      sizes.push_back(rewriter.getIndexAttr(rowType.getDimSize(d)));
      continue;
    }
    Value have = tensor::DimOp::create(rewriter, loc, row, d);
    Value need = memref::DimOp::create(rewriter, loc, buffer, d + 1);
    Value differs = arith::CmpIOp::create(rewriter, loc,
                                          arith::CmpIPredicate::ne, have, need);
    emitScanErrorIf(rewriter, loc,
                    arith::AndIOp::create(rewriter, loc, later, differs),
                    ScanErrorCode::NitSotRowSize, plan.index, have, need);
    sizes.push_back(have);
  }
  auto ifFirst = scf::IfOp::create(rewriter, loc, TypeRange{buffer.getType()},
                                   first, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifFirst.thenBlock());
  scf::YieldOp::create(rewriter, loc,
                       allocBuffer(rewriter, loc, sizes, type.getElementType()));
  rewriter.setInsertionPointToStart(ifFirst.elseBlock());
  scf::YieldOp::create(rewriter, loc, buffer);
  return ifFirst.getResult(0);
}

/// State row x[t+k] (k < 0) of a sitsot/mitsot output.
Value ScanLowering::stateRow(const OutputPlan &plan, Value t, ValueRange regs,
                             int64_t k) {
  if (plan.scalarState)
    return regs[plan.firstReg + plan.initRows + k];
  if (plan.inPlace)
    return bufferAsTensor(
        rewriter, loc,
        bufferRowView(rewriter, loc, plan.buffer, constIndex(rewriter, loc, 0)),
        /*writable=*/true);
  // Rows before step 0 come from the init, the others from the buffer.
  Value fromInit = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::slt, t, constIndex(rewriter, loc, -k));
  auto ifOp = scf::IfOp::create(rewriter, loc, plan.rowType, fromInit,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(rewriter, loc,
                       readBufferRow(rewriter, loc, plan.initBuffer,
                                     plus(t, plan.initRows + k)));
  rewriter.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(
      rewriter, loc,
      readBufferRow(rewriter, loc, plan.buffer, slotOf(plan, plus(t, k))));
  return ifOp.getResult(0);
}

SmallVector<Value> ScanLowering::blockArgValues(Value t, ValueRange regs) {
  SmallVector<Value> args;
  for (unsigned i = 0; i < op.getNumSequences(); ++i) {
    Value seq = op.getSequences()[i];
    ArrayRef<int64_t> taps = op.getSequenceTapsAt(i);
    int64_t lo = std::min<int64_t>(0, taps.front());
    Value last;
    if (op.getGoBackwards())
      last = arith::SubIOp::create(
          rewriter, loc, tensor::DimOp::create(rewriter, loc, seq, 0),
          constIndex(rewriter, loc, 1));
    for (int64_t k : taps) {
      Value row = plus(t, k - lo);
      if (op.getGoBackwards())
        row = arith::SubIOp::create(rewriter, loc, last, row);
      if (tiledSequence[i])
        args.push_back(extractTensorRow(
            rewriter, loc, sequenceBlock[i],
            arith::SubIOp::create(rewriter, loc, row, sequenceFirst[i])));
      else
        args.push_back(extractTensorRow(rewriter, loc, seq, row));
    }
  }

  for (auto [i, plan] : llvm::enumerate(mitmots)) {
    // A ring first receives the one row this step touches for the first time.
    if (plan.ringRows)
      loadMitMotRow(plan, plus(t, plan.span));
    for (auto [k, scratch, inPlace] :
         llvm::zip(op.getMitMotInTapsAt(i), plan.scratch, plan.inPlace)) {
      Value row = mitMotSlot(plan, plus(t, k - plan.lo));
      if (inPlace) {
        args.push_back(bufferAsTensor(
            rewriter, loc, bufferRowView(rewriter, loc, plan.buffer, row),
            /*writable=*/true));
        continue;
      }
      if (!scratch) {
        args.push_back(readBufferRow(rewriter, loc, plan.buffer, row));
        continue;
      }
      if (!rowsAreEmpty(cast<MemRefType>(plan.buffer.getType())))
        memref::CopyOp::create(rewriter, loc,
                               bufferRowView(rewriter, loc, plan.buffer, row),
                               scratch);
      args.push_back(bufferAsTensor(rewriter, loc, scratch));
    }
  }

  for (const OutputPlan &plan : plans)
    if (plan.kind == ScanOp::OutputKind::MitSot)
      for (int64_t k : op.getMitSotTapsAt(plan.index))
        args.push_back(stateRow(plan, t, regs, k));
  for (const OutputPlan &plan : plans)
    if (plan.kind == ScanOp::OutputKind::SitSot)
      // (a sitsot summed by rows: the step does not read its state)
      args.push_back(plan.rowSums >= 0 ? plan.init
                                       : stateRow(plan, t, regs, -1));

  llvm::append_range(args, nonSequences);
  return args;
}

SmallVector<Value> ScanLowering::emitStep(Value t, ValueRange regs,
                                          Value &stop) {
  SmallVector<Value> args = blockArgValues(t, regs);

  // Inline the body: its ops read the block arguments first ...
  Block &body = op.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  rewriter.inlineBlockBefore(&body, rewriter.getInsertionBlock(),
                             rewriter.getInsertionPoint(), args);
  SmallVector<Value> yielded(yield.getValues());
  rewriter.setInsertionPoint(yield);

  // ... then every row is written, last.
  unsigned y = 0;
  for (auto [i, plan] : llvm::enumerate(mitmots))
    for (int64_t k : op.getMitMotOutTapsAt(i)) {
      Value row = yielded[y++];
      checkRowSizes(destinationOf(row), plan.buffer, i);
      writeBufferRow(rewriter, loc, row, plan.buffer,
                     mitMotSlot(plan, plus(t, k - plan.lo)));
    }
  SmallVector<Value> next(regs.begin(), regs.end());
  for (OutputPlan &plan : plans) {
    Value row = yielded[y++];
    if (plan.dynamicRow)
      plan.buffer = allocateOnFirstStep(plan, plan.buffer, t, row);
    else
      checkRowSizes(destinationOf(row), plan.buffer, plan.result);
    writeBufferRow(rewriter, loc, row, plan.buffer, slotOf(plan, t));
    if (plan.scalarState) {
      // Shift register: x[t-K+1 .. t].
      for (int64_t j = 0; j + 1 < plan.initRows; ++j)
        next[plan.firstReg + j] = regs[plan.firstReg + j + 1];
      next[plan.firstReg + plan.initRows - 1] = row;
    }
  }
  stop = op.getUntil() ? yielded[y] : Value();
  rewriter.eraseOp(yield);
  return next;
}

Value ScanLowering::finalResult(const OutputPlan &plan, Value stepsRun) {
  Type resultType = op.getResult(plan.result).getType();
  if (plan.rowSums >= 0) {
    // Nothing reads these rows any more (the consumers read each block): a
    // placeholder of the result's sizes, dead once they are erased.
    SmallVector<OpFoldResult> sizes{stepsRun};
    llvm::append_range(sizes, plan.rowSizes);
    Value rows = tensor::EmptyOp::create(
        rewriter, loc, sizes,
        cast<RankedTensorType>(resultType).getElementType());
    if (rows.getType() != resultType)
      rows = tensor::CastOp::create(rewriter, loc, resultType, rows);
    return rows;
  }
  Value buffer = bufferAsTensor(rewriter, loc, plan.buffer);
  if (plan.keep == 0) {
    // Without `until` every row of the buffer is a result row; with the
    // constant n_steps 0 there are no rows at all. Only a cast then: a
    // slice at offset 0 of a buffer that canonicalization later gives the
    // static size 0 becomes (memref.cast folded into memref.subview) a
    // subview that the memref verifier rejects ("offset 0 is
    // out-of-bounds: 0 >= 0").
    if (!op.getUntil() || op.getStaticNumSteps() == 0) {
      if (buffer.getType() != resultType)
        buffer = tensor::CastOp::create(rewriter, loc, resultType, buffer);
      return buffer;
    }
    return leadingRows(rewriter, loc, buffer, stepsRun, resultType);
  }

  // Gather the last `keep` rows of (init rows ++ computed rows), oldest
  // first; rows before the first existing one are zero.
  auto resultTensor = cast<RankedTensorType>(resultType);
  SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(plan.keep)};
  llvm::append_range(sizes, plan.rowSizes);
  Value result = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         resultTensor.getElementType());
  Value total = plus(stepsRun, plan.initRows);
  Value firstRow = plus(total, -plan.keep);
  auto loop = scf::ForOp::create(
      rewriter, loc, constIndex(rewriter, loc, 0),
      constIndex(rewriter, loc, plan.keep), constIndex(rewriter, loc, 1),
      ValueRange{result},
      [&](OpBuilder &b, Location loc, Value j, ValueRange acc) {
        Value chrono = arith::AddIOp::create(b, loc, firstRow, j);
        Value missing = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, chrono, constIndex(b, loc, 0));
        auto ifMissing = scf::IfOp::create(b, loc, plan.rowType, missing, true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifMissing.thenBlock());
          scf::YieldOp::create(b, loc,
                               zeroRow(b, loc, plan.rowType, plan.rowSizes));
          b.setInsertionPointToStart(ifMissing.elseBlock());
          Value computed = arith::SubIOp::create(
              b, loc, chrono, constIndex(b, loc, plan.initRows));
          Value slot = arith::RemUIOp::create(b, loc, computed, plan.ringRows);
          if (plan.initRows == 0) {
            scf::YieldOp::create(b, loc, extractTensorRow(b, loc, buffer, slot));
          } else {
            Value inInit = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::slt, chrono,
                constIndex(b, loc, plan.initRows));
            auto ifInit = scf::IfOp::create(b, loc, plan.rowType, inInit, true);
            b.setInsertionPointToStart(ifInit.thenBlock());
            Value initRow = plan.kind == ScanOp::OutputKind::SitSot
                                ? plan.init
                                : extractTensorRow(b, loc, plan.init, chrono);
            scf::YieldOp::create(b, loc, initRow);
            b.setInsertionPointToStart(ifInit.elseBlock());
            scf::YieldOp::create(b, loc, extractTensorRow(b, loc, buffer, slot));
            b.setInsertionPointAfter(ifInit);
            scf::YieldOp::create(b, loc, ifInit.getResult(0));
          }
        }
        Value row = ifMissing.getResult(0);
        Value updated;
        if (rowsAreEmpty(resultTensor)) {
          updated = acc[0];
        } else if (auto rowTensor = dyn_cast<RankedTensorType>(plan.rowType)) {
          SmallVector<OpFoldResult> offsets, rowSizes, strides;
          rowSlice(b, j, tensor::getMixedSizes(b, loc, acc[0]), offsets,
                   rowSizes, strides);
          updated = tensor::InsertSliceOp::create(b, loc, row, acc[0], offsets,
                                                  rowSizes, strides);
        } else {
          updated = tensor::InsertOp::create(b, loc, row, acc[0], j);
        }
        scf::YieldOp::create(b, loc, updated);
      });
  Value gathered = loop.getResult(0);
  if (gathered.getType() != resultType)
    gathered = tensor::CastOp::create(rewriter, loc, resultType, gathered);
  return gathered;
}

/// Non-sequence tensors of at least this many bytes that the body reads are
/// copied into a fresh buffer before the loop. Every step reads all of such
/// a matrix (`W` of an RNN), and the caller's array lies in 4 KiB pages
/// whose physical placement can crowd L2 sets; a fresh buffer this large
/// comes from the runtime's huge-page blocks (ScanAllocator.cpp). One copy
/// per call against a read per step: W5 through the API (dynamic shapes)
/// ran 1.16-1.19x slower than with the copy at H = 512 and 1024.
constexpr int64_t kPrivateNonSequenceBytes = int64_t(1) << 20;
/// ... and at most this many: a table that large is unlikely to be read
/// whole every step, and a copy per call would double its memory. Nor more
/// than twice the bytes of the scan's outputs: the copy would then dominate
/// the memory the loop needs (the backward loop of an RNN's gradient, whose
/// per-step rows are summed block by block, holds a few rows against a W
/// as large as the gradient it computes).
/// With dynamic sizes a copy is allocated in every case, with no rows when
/// it is not needed, so that it is an allocation of the function's block,
/// which scan-free-buffers-early frees after the loop's last use of it.
constexpr int64_t kPrivateNonSequenceMaxBytes = int64_t(1) << 26;

/// `type` with a dynamic size for its rows (dimension 0).
static RankedTensorType rows(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, type.getElementType());
}

/// A non-sequence of the scan whose body this value is an argument of: the
/// lowering of that scan (after this one: inner scans first) gives it its
/// private copy, by the same rule; a copy here would be a second one, made
/// at every step of the enclosing scan (every segment of a checkpointed
/// gradient's backward loop, for its recomputing scan).
static bool isEnclosingNonSequence(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  auto enclosing = arg ? dyn_cast<ScanOp>(arg.getOwner()->getParentOp())
                       : ScanOp();
  return enclosing && outerNonSequence(enclosing, value);
}

/// An argument of the function that nothing writes in place
/// (`bufferization.writable = false`, as `mlir_scan.compile` marks them).
static bool isReadOnlyArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || arg.getOwner() != &func.getBody().front())
    return false;
  auto writable = func.getArgAttrOfType<BoolAttr>(arg.getArgNumber(),
                                                  "bufferization.writable");
  return writable && !writable.getValue();
}

void ScanLowering::planNonSequences() {
  Block &body = op.getBodyBlock();
  unsigned first = body.getNumArguments() - op.getNonSequences().size();
  Value outputs; // bytes of the output buffers (computed once, if needed)
  for (auto [i, value] : llvm::enumerate(op.getNonSequences())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!privateNonSequences || !type || type.getRank() == 0 ||
        !type.getElementType().isIntOrFloat() ||
        body.getArgument(first + i).use_empty() ||
        isEnclosingNonSequence(value)) {
      nonSequences.push_back(value);
      continue;
    }
    if (!outputs)
      outputs = outputBytes();
    Value large = isPrivateCopySize(value, outputs);
    if (std::optional<int64_t> known = getConstantIntValue(large)) {
      nonSequences.push_back(
          *known ? bufferization::AllocTensorOp::create(rewriter, loc, type,
                                                        ValueRange(), value)
                       .getResult()
                 : value);
      continue;
    }
    nonSequences.push_back(isReadOnlyArgument(value)
                               ? pickCopyAsBuffer(value, large)
                               : pickCopy(value, large));
  }
}

/// A copy of `value` (a non-sequence) when `large`, else `value`: an scf.if
/// that makes the copy. The buffer deallocation frees a buffer made in an
/// scf.if only when the function returns.
Value ScanLowering::pickCopy(Value value, Value large) {
  auto type = cast<RankedTensorType>(value.getType());
  auto ifLarge = scf::IfOp::create(rewriter, loc, TypeRange{type}, large,
                                   /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(ifLarge.thenBlock());
  scf::YieldOp::create(rewriter, loc,
                       bufferization::AllocTensorOp::create(
                           rewriter, loc, type, ValueRange(), value)
                           .getResult());
  rewriter.setInsertionPointToStart(ifLarge.elseBlock());
  scf::YieldOp::create(rewriter, loc, value);
  return ifLarge.getResult(0);
}

/// The same for a function argument nothing writes: a buffer of all rows or
/// of none, allocated unconditionally (so that scan-free-buffers-early frees
/// it after the loop), filled when `large`, and a `memref` select of it or
/// the argument's buffer. The loop reads it through a `restrict` tensor:
/// true because no op writes the argument in place (as tensors,
/// canonicalization would make the choice an `arith.select`, which
/// bufferizes to an element-wise copy).
Value ScanLowering::pickCopyAsBuffer(Value value, Value large) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, value);
  sizes[0] = arith::SelectOp::create(
                 rewriter, loc, large,
                 tensor::DimOp::create(rewriter, loc, value, 0),
                 constIndex(rewriter, loc, 0))
                 .getResult();
  Value copy = allocBuffer(rewriter, loc, sizes, type.getElementType());
  auto ifLarge = scf::IfOp::create(rewriter, loc, TypeRange{}, large,
                                   /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifLarge.thenBlock());
    bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, TypeRange{}, value, copy, /*restrict=*/true,
        /*writable=*/true);
  }
  // (identity layouts, those of the function's arguments: the loop's vector
  // code needs unit inner strides)
  RankedTensorType rowsType = rows(type);
  Value operand = value;
  if (rowsType != type)
    operand = tensor::CastOp::create(rewriter, loc, rowsType, value);
  Value buffer = bufferization::ToBufferOp::create(
      rewriter, loc, cast<MemRefType>(copy.getType()), operand,
      /*read_only=*/true);
  Value chosen = arith::SelectOp::create(rewriter, loc, large, copy, buffer);
  Value read = bufferization::ToTensorOp::create(
      rewriter, loc, rowsType, chosen, rewriter.getUnitAttr(), UnitAttr());
  if (read.getType() != type)
    read = tensor::CastOp::create(rewriter, loc, type, read);
  return read;
}


/// The bytes of a tensor or buffer of integers or floats (folded when its
/// sizes are static).
static Value bytesOf(RewriterBase &rewriter, Location loc, Value shaped) {
  auto type = cast<ShapedType>(shaped.getType());
  Value bytes = constIndex(
      rewriter, loc,
      llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8));
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value size = isa<MemRefType>(type)
                     ? rewriter.createOrFold<memref::DimOp>(loc, shaped, d)
                     : rewriter.createOrFold<tensor::DimOp>(loc, shaped, d);
    bytes = rewriter.createOrFold<arith::MulIOp>(loc, bytes, size);
  }
  return bytes;
}

/// The bytes of the scan's output buffers (mitmot buffers and rings too).
Value ScanLowering::outputBytes() {
  Value total = constIndex(rewriter, loc, 0);
  auto add = [&](Value buffer) {
    total = rewriter.createOrFold<arith::AddIOp>(
        loc, total, bytesOf(rewriter, loc, buffer));
  };
  for (const MitMotPlan &plan : mitmots)
    add(plan.buffer);
  for (const OutputPlan &plan : plans)
    if (cast<MemRefType>(plan.buffer.getType()).getElementType().isIntOrFloat())
      add(plan.buffer);
  return total;
}

/// Whether `value` gets a private copy (see kPrivateNonSequenceBytes): an
/// i1, a constant when the sizes are static.
Value ScanLowering::isPrivateCopySize(Value value, Value outputs) {
  Value bytes = bytesOf(rewriter, loc, value);
  auto compare = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return rewriter.createOrFold<arith::CmpIOp>(loc, predicate, lhs, rhs);
  };
  auto both = [&](Value a, Value b) {
    return rewriter.createOrFold<arith::AndIOp>(loc, a, b);
  };
  Value room = rewriter.createOrFold<arith::AddIOp>(loc, outputs, outputs);
  return both(both(compare(arith::CmpIPredicate::sge, bytes,
                           constIndex(rewriter, loc, kPrivateNonSequenceBytes)),
                   compare(arith::CmpIPredicate::sle, bytes,
                           constIndex(rewriter, loc,
                                      kPrivateNonSequenceMaxBytes))),
              compare(arith::CmpIPredicate::sle, bytes, room));
}

void ScanLowering::lower() {
  rewriter.setInsertionPoint(op);
  planTiledSequences();
  nSteps = emitRuntimeChecks();
  planRowSums();
  planMitMots();
  planOutputs();
  // (after the outputs: a copy is weighed against their size)
  planNonSequences();

  Value zero = constIndex(rewriter, loc, 0);
  Value one = constIndex(rewriter, loc, 1);
  // Buffers that change while the loop runs (growing `until` buffers, and
  // nitsots whose rows are sized by the first step) are loop-carried.
  SmallVector<Value> carried;
  for (OutputPlan &plan : plans)
    if (plan.carried())
      carried.push_back(plan.buffer);
  auto setCarried = [&](ValueRange values) {
    unsigned b = 0;
    for (OutputPlan &plan : plans)
      if (plan.carried())
        plan.buffer = values[b++];
  };
  auto carriedNow = [&]() {
    SmallVector<Value> values;
    for (OutputPlan &plan : plans)
      if (plan.carried())
        values.push_back(plan.buffer);
    return values;
  };
  Value stepsRun;
  if (runsInBlocks()) {
    emitBlockedLoop(carried, setCarried, carriedNow);
    stepsRun = nSteps;
  } else if (!op.getUntil()) {
    SmallVector<Value> inits(initialRegs);
    llvm::append_range(inits, carried);
    unsigned nRegs = initialRegs.size();
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, nSteps, one, inits,
        [&](OpBuilder &, Location, Value t, ValueRange args) {
          setCarried(args.drop_front(nRegs));
          Value stop;
          SmallVector<Value> next = emitStep(t, args.take_front(nRegs), stop);
          llvm::append_range(next, carriedNow());
          scf::YieldOp::create(rewriter, loc, next);
        });
    setCarried(loop.getResults().drop_front(nRegs));
    stepsRun = nSteps;
  } else {
    // (t, stopped, registers..., carried buffers...): run while t < n and
    // the last step did not ask to stop.
    SmallVector<Value> inits{zero,
                             arith::ConstantIntOp::create(rewriter, loc, 0, 1)};
    llvm::append_range(inits, initialRegs);
    unsigned firstBuffer = inits.size();
    llvm::append_range(inits, carried);
    SmallVector<Type> types(ValueRange(inits).getTypes());
    auto loop = scf::WhileOp::create(
        rewriter, loc, types, inits,
        [&](OpBuilder &, Location, ValueRange args) {
          Value more = arith::CmpIOp::create(
              rewriter, loc, arith::CmpIPredicate::slt, args[0], nSteps);
          Value notStopped = arith::XOrIOp::create(
              rewriter, loc, args[1],
              arith::ConstantIntOp::create(rewriter, loc, 1, 1));
          Value cond = arith::AndIOp::create(rewriter, loc, more, notStopped);
          scf::ConditionOp::create(rewriter, loc, cond, args);
        },
        [&](OpBuilder &, Location, ValueRange args) {
          Value t = args[0];
          setCarried(args.drop_front(firstBuffer));
          for (OutputPlan &plan : plans)
            if (plan.grows)
              plan.buffer = growIfFull(plan, plan.buffer, t);
          Value stop;
          SmallVector<Value> next =
              emitStep(t, args.slice(2, initialRegs.size()), stop);
          SmallVector<Value> yields{plus(t, 1), stop};
          llvm::append_range(yields, next);
          llvm::append_range(yields, carriedNow());
          scf::YieldOp::create(rewriter, loc, yields);
        });
    stepsRun = loop.getResult(0);
    setCarried(loop.getResults().drop_front(firstBuffer));
  }
  // The rows of the outputs whose first step sized them.
  for (OutputPlan &plan : plans)
    if (plan.dynamicRow)
      plan.rowSizes = rowSizesOf(plan, plan.buffer);

  SmallVector<Value> results;
  for (auto [i, plan] : llvm::enumerate(mitmots)) {
    if (plan.ringRows) {
      // (nothing reads the result)
      auto type = cast<RankedTensorType>(op.getResult(i).getType());
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, tensor::getMixedSizes(rewriter, loc, plan.init),
          type.getElementType());
      if (empty.getType() != type)
        empty = tensor::CastOp::create(rewriter, loc, type, empty);
      results.push_back(empty);
      continue;
    }
    Value result = bufferAsTensor(rewriter, loc, plan.buffer);
    if (result.getType() != op.getResult(i).getType())
      result = tensor::CastOp::create(rewriter, loc, op.getResult(i).getType(),
                                      result);
    results.push_back(result);
  }
  for (const OutputPlan &plan : plans)
    results.push_back(finalResult(plan, stepsRun));
  rewriter.replaceOp(op, results);

  // The row sums' results are the accumulators; their ops go.
  for (auto [f, fusion] : llvm::enumerate(rowSums)) {
    for (auto [a, result] : llvm::enumerate(fusion.accResults))
      rewriter.replaceAllUsesWith(result, accs[accBase[f] + a]);
    SmallVector<Operation *> dead;
    for (const RowSumConsumer &c : fusion.consumers)
      dead.append({c.op, c.slice});
    llvm::sort(dead, [](Operation *a, Operation *b) {
      return b->isBeforeInBlock(a);
    });
    for (Operation *deadOp : dead)
      rewriter.eraseOp(deadOp);
  }
}

void ScanLowering::planTiledSequences() {
  bool blocks = blockSteps > 0 && !op.getUntil() && !op.getGoBackwards();
  for (Value seq : op.getSequences())
    tiledSequence.push_back(blocks && isRowTileableProducer(seq, op));
  sequenceBlock.assign(tiledSequence.size(), Value());
  sequenceFirst.assign(tiledSequence.size(), Value());
}

void ScanLowering::planRowSums() {
  if (blockSteps <= 0 || op.getUntil())
    return;
  for (unsigned r = op.getNumMitMot(); r < op.getNumResults(); ++r) {
    auto [kind, index] = op.getOutputKind(r);
    // A sitsot whose step never reads its state (the gradient's stacked
    // deltas) has the rows of a nitsot of its init's sizes.
    bool stateless = kind == ScanOp::OutputKind::SitSot &&
                     isa<RankedTensorType>(op.getOutputInit(r).getType()) &&
                     op.getSitSotArg(index).use_empty();
    if ((kind != ScanOp::OutputKind::NitSot && !stateless) ||
        op.getKeepAt(r) != 0)
      continue;
    foldShapeQueries(rewriter, op.getResult(r));
    std::optional<RowSumFusion> fusion = analyzeRowSums(op, r);
    if (!fusion)
      continue;
    std::optional<SmallVector<OpFoldResult>> sizes =
        stateless ? std::optional(tensor::getMixedSizes(rewriter, loc,
                                                        op.getOutputInit(r)))
                  : invariantRowSizes(rewriter, op, op.getNitSotYield(index));
    if (!sizes)
      continue;
    // The result's sizes are known before the loop; what the consumers read
    // besides the rows moves before it.
    for (tensor::DimOp dim : fusion->dims) {
      int64_t d = *dim.getConstantIndex();
      Value size = d == 0 ? nSteps
                          : getValueOrCreateConstantIndexOp(
                                rewriter, loc, (*sizes)[d - 1]);
      rewriter.replaceOp(dim, size);
    }
    fusion->dims.clear();
    // (moved ahead of the checks of their sizes: a generic runs only when
    // its operands agree, and the blocks read only slices in their sources)
    Value valid = arith::ConstantIntOp::create(rewriter, loc, 1, 1);
    for (Operation *hoisted : fusion->hoisted) {
      rewriter.moveOpBefore(hoisted, op);
      if (auto generic = dyn_cast<linalg::GenericOp>(hoisted))
        guardExtents(rewriter, generic);
      else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(hoisted))
        valid = arith::AndIOp::create(rewriter, loc, valid,
                                      sliceInBounds(rewriter, loc, slice));
    }
    rowSumValid.push_back(valid);
    accBase.push_back(accs.size());
    llvm::append_range(accs, fusion->accInits);
    rowSums.push_back(std::move(*fusion));
    rowSumSizes.push_back(std::move(*sizes));
  }
}

void ScanLowering::emitBlockedLoop(
    ArrayRef<Value> carried, llvm::function_ref<void(ValueRange)> setCarried,
    llvm::function_ref<SmallVector<Value>()> carriedNow) {
  Value zero = constIndex(rewriter, loc, 0);
  Value one = constIndex(rewriter, loc, 1);
  Value block = constIndex(rewriter, loc, blockSteps);
  unsigned nRegs = initialRegs.size(), nCarried = carried.size();
  SmallVector<Value> inits(initialRegs);
  llvm::append_range(inits, carried);
  llvm::append_range(inits, accs);
  // Every block computes the same number of sequence rows (the last one
  // starts earlier and recomputes a few): the tiles' sizes do not change
  // from block to block, so their buffers are allocated once, before the
  // loop (buffer-loop-hoisting).
  Value tileRows = arith::MinSIOp::create(rewriter, loc, block, nSteps);
  Value lastTile = arith::SubIOp::create(rewriter, loc, nSteps, tileRows);
  auto outer = scf::ForOp::create(
      rewriter, loc, zero, nSteps, block, inits,
      [&](OpBuilder &, Location, Value start, ValueRange args) {
        Value rows = arith::MinSIOp::create(
            rewriter, loc, block,
            arith::SubIOp::create(rewriter, loc, nSteps, start));
        // The rows of each tiled sequence this block reads: the steps'
        // rows plus the taps' window.
        Value tileStart =
            arith::MinSIOp::create(rewriter, loc, start, lastTile);
        for (auto [i, tiled] : llvm::enumerate(tiledSequence)) {
          if (!tiled)
            continue;
          ArrayRef<int64_t> taps = op.getSequenceTapsAt(i);
          int64_t lo = std::min<int64_t>(0, taps.front());
          sequenceFirst[i] = plus(tileStart, taps.front() - lo);
          sequenceBlock[i] = tileAlong(
              rewriter, loc, op.getSequences()[i], 0, sequenceFirst[i],
              plus(tileRows, taps.back() - taps.front()), /*recompute=*/true);
        }
        for (OutputPlan &plan : plans)
          plan.blockStart = start;
        setCarried(args.slice(nRegs, nCarried));
        auto inner = scf::ForOp::create(
            rewriter, loc, start,
            arith::AddIOp::create(rewriter, loc, start, rows), one,
            args.take_front(nRegs + nCarried),
            [&](OpBuilder &, Location, Value t, ValueRange stepArgs) {
              setCarried(stepArgs.drop_front(nRegs));
              Value stop;
              SmallVector<Value> next =
                  emitStep(t, stepArgs.take_front(nRegs), stop);
              llvm::append_range(next, carriedNow());
              scf::YieldOp::create(rewriter, loc, next);
            });
        setCarried(inner.getResults().drop_front(nRegs));
        // Each row sum adds this block's rows.
        SmallVector<Value> next(inner.getResults());
        SmallVector<Value> blockAccs(args.drop_front(nRegs + nCarried));
        for (const OutputPlan &plan : plans) {
          if (plan.rowSums < 0)
            continue;
          const RowSumFusion &fusion = rowSums[plan.rowSums];
          Value rowsWritten = bufferAsTensor(rewriter, loc, plan.buffer);
          for (const RowSumConsumer &c : fusion.consumers) {
            Value &acc = blockAccs[accBase[plan.rowSums] + c.accumulator];
            acc = accumulateBlock(rewriter, loc, c, acc, rowsWritten, start,
                                  rows, rowSumValid[plan.rowSums]);
          }
        }
        llvm::append_range(next, blockAccs);
        scf::YieldOp::create(rewriter, loc, next);
      });
  setCarried(outer.getResults().slice(nRegs, nCarried));
  accs.assign(outer.getResults().begin() + nRegs + nCarried,
              outer.getResults().end());
}

//===----------------------------------------------------------------------===//
// Destinations that may become output rows.
//
// After the lowering, `eliminate-empty-tensors` gives the `tensor.empty` at
// the root of a yielded row's destination chain (empty -> fill -> matvec ->
// elementwise op -> yield, each op computing into the previous value) the
// memory of that output row, so the body computes the row in place. The row
// is then written by `materialize_in_destination` into a memref, a write that
// one-shot-bufferize does not see. That is only sound when no other value
// that may live in the same memory is read after the write, i.e. by the
// write of another row: when at most one value computed into the empty is
// yielded, and nothing is computed into that one. Two ways it was not:
//   * `s = matvec(fill(empty))` yielded as a nitsot and `tanh(s)` (computed
//     into `s`) as a sitsot: `s` lived in the sitsot row, which was written
//     with `tanh(s)` before `s` was copied into the nitsot row;
//   * `f = fill(empty)`, `a = addi(k, f)` and `b = minsi(f, k)` both computed
//     into `f`, yielded to two mitmot rows: `b` lived in `a`'s row. (Such a
//     shared empty or fill is now first copied for each op, as
//     scan-fresh-elementwise-inits does after the last CSE.)
// Every other empty of the body becomes a `bufferization.alloc_tensor`,
// which `eliminate-empty-tensors` leaves alone (one-shot-bufferize then
// copies, correctly).
//===----------------------------------------------------------------------===//

/// True when, of all the values computed into `empty` (its destination-
/// passing family: the tied results of the ops that take a member as their
/// DPS init), at most one is yielded and that one is the last of its chain
/// (no op computes into it). Members may be read freely by DPS inputs and by
/// ops without tensor results or regions; any other use (an alias such as a
/// slice or a cast, a terminator, a region) is not followed: unsafe.
bool isSafeFamily(Value empty, Operation *yield) {
  Block *block = empty.getParentBlock();
  SmallVector<Value> worklist{empty};
  Value yieldedMember;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    bool yielded = false, computedInto = false;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == yield) {
        yielded = true;
        continue;
      }
      if (auto dps = dyn_cast<DestinationStyleOpInterface>(user)) {
        if (dps.isDpsInput(&use))
          continue;
        if (user->getBlock() != block)
          return false;
        computedInto = true;
        worklist.push_back(dps.getTiedOpResult(&use));
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          user->getNumRegions() != 0 ||
          llvm::any_of(user->getResultTypes(), llvm::IsaPred<TensorType>))
        return false;
    }
    if (!yielded)
      continue;
    if (computedInto || (yieldedMember && yieldedMember != v))
      return false;
    yieldedMember = v;
  }
  return true;
}


/// Makes the body's destination chains explicit and keeps only exclusive
/// ones eligible for computing in place in an output row (see above).
void prepareBody(ScanOp op, RewriterBase &rewriter,
                 const FrozenRewritePatternSet &elementwiseToLinalg) {
  // Elementwise arith/math ops on tensors become linalg.generic (as the
  // bufferization pipeline does anyway) so that their destinations show.
  walkAndApplyPatterns(op, elementwiseToLinalg);
  // A `tensor.empty` (or a `linalg.fill` of one) that several ops take as
  // their destination reaches eliminate-empty-tensors as one private copy
  // per op (scan-fresh-elementwise-inits makes them, after the last CSE):
  // check the families of those copies.
  privatizeDestinations(op, rewriter);
  Operation *yield = op.getYieldOp();
  SmallVector<tensor::EmptyOp> shared;
  op.getBody().walk([&](tensor::EmptyOp empty) {
    if (!isSafeFamily(empty.getResult(), yield))
      shared.push_back(empty);
  });
  for (tensor::EmptyOp empty : shared) {
    rewriter.setInsertionPoint(empty);
    rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
        empty, empty.getType(), empty.getDynamicSizes());
  }
}

struct ConvertScanToSCFPass
    : scan::impl::ConvertScanToSCFBase<ConvertScanToSCFPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Buffers and views of these types would abort in MLIR's stride
    // computation (SubViewOp::inferResultType) below.
    if (failed(checkStaticSizes(module)))
      return signalPassFailure();
    genericizeFoldHazards(module);
    // Post-order: an inner scan is lowered (into its parent's body) first.
    SmallVector<ScanOp> scans = collectScans(module);
    if (scans.empty()) {
      materializeSelfFolds(module);
      return;
    }
    declareScanErrorRuntime(module);

    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseToLinalgConversionPatterns(patterns);
    FrozenRewritePatternSet elementwiseToLinalg(std::move(patterns));
    IRRewriter rewriter(&getContext());
    unsigned lowered = 0;
    for (ScanOp op : scans) {
      prepareBody(op, rewriter, elementwiseToLinalg);
      ScanLowering(op, rewriter, privateNonSequences, blockSteps).lower();
      ++lowered;
    }

    bool failedToLower = false;
    module.walk([&](ScanOp op) {
      failedToLower = true;
      op.emitOpError() << "could not be lowered to scf";
    });
    if (failedToLower)
      return signalPassFailure();
    numScansLowered += lowered;
    materializeSelfFolds(module);
  }
};

} // namespace

/// The LLVM 22.1 folders of `arith.xori %x, %x` and `arith.cmpi <p>, %x, %x`
/// build a DenseElementsAttr of the result type, which aborts the process
/// ("type must have static shape") when the type is a tensor with dynamic
/// sizes: every later pass that folds (canonicalize, the dialect conversion
/// of convert-elementwise-to-linalg) would crash. Inlining a scan body makes
/// such ops out of distinct block arguments (the same value passed twice as a
/// non-sequence), so the pass rewrites them, in the whole module, into a
/// `linalg.fill` of their value, which is what the folder means to produce.
/// The `arith.xori` / `arith.cmpi` ops on tensors with dynamic sizes whose
/// upstream folders abort (all of them, or those whose two operands are one
/// value).
static SmallVector<Operation *> dynamicXorCmpOps(ModuleOp module,
                                                 bool onlySelfOps) {
  SmallVector<Operation *> found;
  module.walk([&](Operation *op) {
    if (!isa<arith::XOrIOp, arith::CmpIOp>(op) ||
        (onlySelfOps && op->getOperand(0) != op->getOperand(1)))
      return;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (type && !type.hasStaticShape())
      found.push_back(op);
  });
  return found;
}

void mlir::scan::materializeSelfFolds(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  for (Operation *op : dynamicXorCmpOps(module, /*onlySelfOps=*/true)) {
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, op->getOperand(0));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType());
    TypedAttr value = rewriter.getZeroAttr(type.getElementType());
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      using P = arith::CmpIPredicate;
      P p = cmp.getPredicate();
      bool holds = p == P::eq || p == P::sle || p == P::sge || p == P::ule ||
                   p == P::uge;
      value = rewriter.getIntegerAttr(rewriter.getI1Type(), holds);
    }
    Value fill = arith::ConstantOp::create(rewriter, loc, value);
    rewriter.replaceOp(
        op, linalg::FillOp::create(rewriter, loc, fill, empty).getResult(0));
  }
}


/// Every `arith.xori` / `arith.cmpi` on a tensor with dynamic sizes becomes
/// the equivalent elementwise `linalg.generic`: its operands may become one
/// value in the middle of a canonicalization (`select %c, %x, %x` folds to
/// `%x`), where materializeSelfFolds cannot intervene, and the upstream
/// folder then aborts. Inside the generic the ops fold on scalars.
void mlir::scan::genericizeFoldHazards(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  for (Operation *op : dynamicXorCmpOps(module, /*onlySelfOps=*/false)) {
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, op->getOperand(0)),
        type.getElementType());
    SmallVector<AffineMap> maps(
        3, AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext()));
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, op->getOperands(), ValueRange{empty},
        maps, iterators, [&](OpBuilder &b, Location nested, ValueRange args) {
          OperationState state(nested, op->getName());
          state.addOperands(args.take_front(2));
          state.addTypes(type.getElementType());
          state.addAttributes(op->getAttrs());
          Operation *scalar = b.create(state);
          linalg::YieldOp::create(b, nested, scalar->getResult(0));
        });
    rewriter.replaceOp(op, generic.getResults());
  }
}
