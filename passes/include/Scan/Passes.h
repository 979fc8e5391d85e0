//===- Passes.h - Scan dialect passes ---------------------------*- C++ -*-===//

#ifndef SCAN_PASSES_H
#define SCAN_PASSES_H

#include "Scan/ScanOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace scan {

#define GEN_PASS_DECL
#include "Scan/Passes.h.inc"

/// Registers the scan passes and the scan pass pipelines (scan-optimize,
/// scan-to-llvm, ...): what scan-opt and `import mlir_scan` call.
void registerScanPassesAndPipelines();

#define GEN_PASS_REGISTRATION
#include "Scan/Passes.h.inc"

} // namespace scan
} // namespace mlir

#endif // SCAN_PASSES_H
