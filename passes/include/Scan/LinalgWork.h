//===- LinalgWork.h - the static work of a linalg op -------------*- C++ -*-===//
//
// Passes that decide by an op's size whether a transformation pays
// (scan-parallelize-linalg, scan-call-blas) compare its work -- the number
// of points of its iteration space -- with a threshold: statically where the
// sizes are static, at run time otherwise. The ops are on buffers. Passes
// that rewrite a sum (scan-vectorize-linalg-loops' vector accumulators,
// scan-parallelize-linalg's partial sums) recognize it with sumIntoOutput.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_LINALGWORK_H
#define SCAN_LINALGWORK_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>
#include <optional>

namespace mlir::scan {

/// The number of points of `op`'s iteration space if its sizes are static
/// (saturated at INT64_MAX).
inline std::optional<int64_t> staticWork(linalg::LinalgOp op) {
  int64_t work = 1;
  for (int64_t size : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(size))
      return std::nullopt;
    if (size != 0 && work > std::numeric_limits<int64_t>::max() / size)
      return std::numeric_limits<int64_t>::max();
    work *= size;
  }
  return work;
}

/// The number of iterations of loop dimension `dim` of `op` (on buffers):
/// the size of the first operand dimension it indexes.
inline OpFoldResult loopSize(OpBuilder &b, Location loc, linalg::LinalgOp op,
                             unsigned dim) {
  AffineExpr expr = getAffineDimExpr(dim, b.getContext());
  for (OpOperand &operand : op->getOpOperands())
    if (std::optional<unsigned> at =
            op.getMatchingIndexingMap(&operand).getResultPosition(expr))
      return memref::getMixedSize(b, loc, operand.get(), *at);
  llvm_unreachable("a loop dimension no operand indexes");
}

/// The number of points of `op`'s iteration space, computed at `b`'s
/// insertion point.
inline Value emitWork(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  auto iterations = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(b, loc, loopSize(b, loc, op, d));
  };
  Value work = iterations(0);
  for (unsigned d = 1; d < op.getNumLoops(); ++d)
    work = arith::MulIOp::create(b, loc, work, iterations(d));
  return work;
}

/// The `arith.addf` or `arith.addi` that `op`'s body yields as `out + x`,
/// where `out`, the element of its one output, is used nowhere else (so `x`
/// does not depend on it): `op` sums into its output. Null otherwise.
inline Operation *sumIntoOutput(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1)
    return nullptr;
  BlockArgument out = op.getRegionOutputArgs()[0];
  Operation *add = op.getBody()->getTerminator()->getOperand(0).getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) || !out.hasOneUse() ||
      out.getUses().begin()->getOwner() != add)
    return nullptr;
  return add;
}

} // namespace mlir::scan

#endif // SCAN_LINALGWORK_H
