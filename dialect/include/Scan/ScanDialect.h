//===- ScanDialect.h - The Scan dialect -------------------------*- C++ -*-===//

#ifndef SCAN_SCANDIALECT_H
#define SCAN_SCANDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "Scan/ScanOpsDialect.h.inc"

#endif // SCAN_SCANDIALECT_H
