//===- BufferCopies.h - fresh copies of buffers -----------------*- C++ -*-===//
//
// Passes after bufferization that give a value its own buffer
// (scan-own-public-results, scan-contiguous-call-boundaries) copy it into a
// new allocation of the identity layout.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_BUFFERCOPIES_H
#define SCAN_BUFFERCOPIES_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::scan {

/// A new identity-layout buffer of `type` holding a copy of `value` (any
/// layout, the same shape).
inline Value copyToNewBuffer(OpBuilder &b, Location loc, Value value,
                             MemRefType type) {
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(memref::DimOp::create(b, loc, value, i));
  Value buffer = memref::AllocOp::create(b, loc, type, dynamicSizes);
  memref::CopyOp::create(b, loc, value, buffer);
  return buffer;
}

} // namespace mlir::scan

#endif // SCAN_BUFFERCOPIES_H
