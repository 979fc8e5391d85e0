//===- Pipelines.cpp - Scan pass registration and pipelines ---------------===//

#include "Scan/Passes.h"

#include "mlir/Pass/PassRegistry.h"

void mlir::scan::registerScanPassesAndPipelines() {
  registerScanPasses();
}
