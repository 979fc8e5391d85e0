//===- Passes.td - Scan dialect passes ---------------------*- tablegen -*-===//
//
// The scan rewrites (SPEC §5) and the lowerings, by their scan-opt flags.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_PASSES_TD
#define SCAN_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // SCAN_PASSES_TD
