//===- RowBlockFusion.h - Producers and consumers of a scan's rows -*- C++ -*-===//
//
// The push-out rewrites turn per-step work into one op over all steps: the
// `x_t U + b` of an RNN becomes a `T x H` product computed before the loop
// (scan-push-out-seq), the `dW += outer(h_{t-1}, d_t)` of its gradient a
// `T x H` stack of `d_t` and one contraction over its rows after the loop
// (scan-push-out-accumulation, the builder's gradient). That is matmul
// speed at the price of one more `T x H` array beside the states.
//
// When convert-scan-to-scf runs the steps in blocks of K, these helpers give
// back the memory: a sequence's producer is computed K rows at a time, just
// before the block that reads them, and the contractions that sum a nitsot's
// rows are applied to each block of K rows as soon as it is written, into
// accumulators carried by the loop; the nitsot itself then needs K rows.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_ROWBLOCKFUSION_H
#define SCAN_ROWBLOCKFUSION_H

#include "Scan/ScanOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir {
namespace scan {

/// Whether `v` (a scan's sequence) is the result of a linalg op on tensors
/// whose rows are computed independently (dimension 0 of the result is a
/// parallel loop), used by nothing but the scan (and shape queries): computing it a block of
/// rows at a time then saves its memory and does the same work.
bool isRowTileableProducer(Value v, Operation *scan);

/// The slice `[offset, offset + size)` along dimension `dim` of `v`. A value
/// computed by a row-tileable linalg op that nothing else uses is recomputed
/// for the slice only, recursively through its operands; a `tensor.empty`
/// becomes one of the slice's sizes; any other value is sliced. Shape queries
/// do not count as uses: those of a recomputed value then read its
/// destination. `recompute` forces the recomputation of `v` itself (the
/// scan's sequence).
Value tileAlong(RewriterBase &b, Location loc, Value v, unsigned dim,
                OpFoldResult offset, OpFoldResult size, bool recompute = false);

/// A `linalg.generic` that sums over the rows of a slice of a scan's nitsot:
/// `out += f(..., rows[r], ...)` for every row `r` of the slice, `r` a
/// reduction loop that indexes the slice's dimension 0 (and possibly one
/// dimension of other operands: the "partners" read with each row).
struct RowSumConsumer {
  linalg::GenericOp op;
  tensor::ExtractSliceOp slice; // rows of the nitsot the op reads
  unsigned sliceOperand = 0;    // operand number of the slice in `op`
  unsigned rowLoop = 0;         // loop dimension over the slice's rows
  unsigned accumulator = 0;     // index into RowSumFusion::accInits
};

/// Everything after a scan that reads one nitsot result, when all of it can
/// be computed a block of rows at a time: only `tensor.dim`s of the result
/// and row-sum consumers of slices of it, chained through their inits
/// (`c2 = sum(..., init = c1)`) into accumulators.
struct RowSumFusion {
  unsigned result = 0;
  SmallVector<RowSumConsumer> consumers;
  SmallVector<tensor::DimOp> dims;
  /// Per accumulator: its initial value (the first consumer's init) and the
  /// value it replaces (the last consumer's result).
  SmallVector<Value> accInits;
  SmallVector<Value> accResults;
  /// Ops after the scan that the consumers' other operands need (partners,
  /// inits, the slices' offsets and sizes), to be moved before the loop:
  /// side-effect free ops that cannot trap (see isHoistable in the .cpp);
  /// the slices among them are checked against their sources at run time
  /// (sliceInBounds) and the generics against their operands (guardExtents).
  /// The program's own checks stay where they are, in their order.
  SmallVector<Operation *> hoisted;
};

/// Replaces the shape queries of `rows` (a scan result) and of its slices
/// that the run-time verification adds (`tensor.rank`, `tensor.dim` of a
/// slice, and of the results of the ops reading the slices, which are the
/// sizes of their destinations) by the values they compute, so that only
/// the row sums read them.
void foldShapeQueries(RewriterBase &rewriter, Value rows);

/// Replaces `op` (moved before a loop, ahead of the checks of its operands'
/// sizes) by an scf.if that runs it only when its loops' extents agree, and
/// otherwise yields its destinations (the checks after the loop then fail).
void guardExtents(RewriterBase &rewriter, linalg::GenericOp op);

/// Whether `slice` (unit or -1 strides, rank kept) lies in its source: an i1.
Value sliceInBounds(OpBuilder &b, Location loc, tensor::ExtractSliceOp slice);

/// The row-sum fusion of nitsot result `result` of `op`, if every use of it
/// qualifies (see RowSumFusion) and the consumers' other operands can be
/// computed before the scan (ops that touch no memory and cannot trap, and
/// read no result of the scan but the nitsot's sizes).
std::optional<RowSumFusion> analyzeRowSums(ScanOp op, unsigned result);

/// The sizes of a row the scan body yields as `yielded`, when they are the
/// same at every step and known before the loop: constants, non-sequence
/// operands, or sizes of non-sequences, through the destinations of the ops
/// computing the row. Values are created at the builder's insertion point
/// (before the scan).
std::optional<SmallVector<OpFoldResult>>
invariantRowSizes(OpBuilder &b, ScanOp op, Value yielded);

/// `acc` plus the consumer's sum over the rows `[blockStart, blockStart +
/// blockRows)` of the nitsot, those rows being rows `0 .. blockRows` of
/// `block`. Rows outside the consumer's slice (or beyond its partners'
/// extents) are skipped: an empty intersection adds nothing; so is the
/// whole block when the consumer's other loops have inconsistent extents or
/// `valid` (an i1: the moved slices lie in their sources) is false.
Value accumulateBlock(OpBuilder &b, Location loc, RowSumConsumer c,
                      Value acc, Value block, Value blockStart,
                      Value blockRows, Value valid);

} // namespace scan
} // namespace mlir

#endif // SCAN_ROWBLOCKFUSION_H
