//===- AccessLowering.h - memref.load/store to LLVM, selectively -*- C++ -*-===//
//
// Two LLVM 22.1 defects of the upstream memref.load/memref.store lowering are
// worked around by lowering some accesses before convert-to-llvm, with the
// same address computation and chosen no-wrap flags: i1 elements (an
// assertion) and views whose strides may be negative (`nuw` address
// arithmetic, which is poison there). Both passes share this helper.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_ACCESSLOWERING_H
#define SCAN_ACCESSLOWERING_H

#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace scan {

/// Lowers every `memref.load` and `memref.store` under `root` for which
/// `selects(op)` holds to `llvm.load`/`llvm.store`, computing the address
/// with `getStridedElementPtr` and `flags` (which also set the no-wrap flags
/// of its index arithmetic). Other ops are left for convert-to-llvm.
LogicalResult lowerMemRefAccesses(Operation *root,
                                  llvm::function_ref<bool(Operation *)> selects,
                                  LLVM::GEPNoWrapFlags flags);

} // namespace scan
} // namespace mlir

#endif // SCAN_ACCESSLOWERING_H
