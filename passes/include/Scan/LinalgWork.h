//===- LinalgWork.h - the static work of a linalg op -------------*- C++ -*-===//
//
// Passes that decide by an op's size whether a transformation pays
// (scan-parallelize-linalg, scan-call-blas) compare its work -- the number
// of points of its iteration space -- with a threshold: statically where the
// sizes are static, at run time otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_LINALGWORK_H
#define SCAN_LINALGWORK_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

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

} // namespace mlir::scan

#endif // SCAN_LINALGWORK_H
