//===- RowBatching.h - Apply per-step body ops to all rows at once -*- C++ -*-===//
//
// The push-out rewrites move work from a scan body, where it runs once per
// step on one row, to outside the scan, where it runs once on all rows
// stacked in a `tensor<R x ...>`. RowBatcher clones a body op in that
// batched form: elementwise ops become a `linalg.generic` over (row, element)
// and linalg ops get a leading parallel row dimension. Operands that do not
// change from step to step (non-sequences, constants) are broadcast over the
// rows by the indexing maps instead of being copied.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_ROWBATCHING_H
#define SCAN_ROWBATCHING_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {

class RowBatcher {
public:
  /// Batched values have `rows` rows (an index value).
  RowBatcher(RewriterBase &rewriter, Location loc, Value rows)
      : rewriter(rewriter), loc(loc), rows(rows) {}

  /// `inner` (one row) corresponds to all the rows in `outer`.
  void mapBatched(Value inner, Value outer) { batched.map(inner, outer); }
  /// `inner` is the same in every step and equals `outer` outside the body.
  void mapInvariant(Value inner, Value outer) { invariant.map(inner, outer); }

  bool isBatched(Value inner) const { return batched.contains(inner); }
  bool isInvariant(Value inner) const { return invariant.contains(inner); }
  Value lookupBatched(Value inner) const { return batched.lookup(inner); }

  /// Whether `op` can be batched once its operands are mapped: elementwise
  /// arith/math ops, and linalg ops on tensors without `linalg.index`.
  static bool canBatch(Operation *op);

  /// Creates the batched form of `op` at the rewriter's insertion point and
  /// maps its results as batched. Every operand (and value the op's regions
  /// use from outside) must be mapped, at least one of them batched. `op`
  /// itself is left unchanged (a named linalg op is batched through the
  /// generic form of a temporary clone). On failure, ops created so far are
  /// left at the insertion point for the caller to erase.
  LogicalResult batch(Operation *op);

private:
  LogicalResult batchElementwise(Operation *op);
  LogicalResult batchLinalg(Operation *op);
  /// A named linalg op, through the generic form of a temporary clone.
  LogicalResult batchNamed(linalg::LinalgOp op);
  /// The value a linalg destination gets in batched form: a batched value,
  /// or an invariant one broadcast to every row (a `linalg.fill` of an empty
  /// tensor is re-created with the row dimension instead).
  Value batchedDestination(Value inner);
  /// `tensor.empty` of `rows` x `rowType`'s shape; dynamic sizes from `like`.
  Value emptyRows(Type rowType, Value like);
  /// `tensor.empty` of `rows` x the shape of the row `empty` makes, whose
  /// dynamic sizes must be step-invariant values (or constants); null if
  /// one is not.
  Value emptyRowsLike(tensor::EmptyOp empty);

  RewriterBase &rewriter;
  Location loc;
  Value rows;
  IRMapping batched, invariant;
};

} // namespace scan
} // namespace mlir

#endif // SCAN_ROWBATCHING_H
