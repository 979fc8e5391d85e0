//===- ScanCAPI.cpp - C entry points the Python package loads -------------===//
//
// A tiny C API over the dialect and passes. Python calls it through ctypes
// with the MlirDialectRegistry it takes from `_CAPIPtr` capsules, so this
// library links libMLIRPythonCAPI.so (the MLIR copy of the Python bindings)
// and no nanobind at all.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanDialect.h"

#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"


extern "C" {

/// Inserts the Scan dialect into `registry`.
MLIR_CAPI_EXPORTED void mlirScanRegisterDialect(MlirDialectRegistry registry) {
  unwrap(registry)->insert<mlir::scan::ScanDialect>();
}

/// Registers the scan passes and pipelines in the global pass registry, so
/// that `PassManager.parse` finds them by name. Idempotent.
MLIR_CAPI_EXPORTED void mlirScanRegisterPasses() {
  static bool registered = [] {
    mlir::scan::registerScanPassesAndPipelines();
    return true;
  }();
  (void)registered;
}

/// Rewrites the `arith.xori` / `arith.cmpi` ops on dynamically shaped tensors
/// whose upstream folders abort into linalg.generic ops (the guard the scan
/// passes run first); for pipelines that fold before any scan pass runs.
MLIR_CAPI_EXPORTED void mlirScanGenericizeFoldHazards(MlirModule module) {
  mlir::scan::genericizeFoldHazards(unwrap(module));
}

} // extern "C"
