//===- scan-opt.cpp - mlir-opt with the Scan dialect and its passes -------===//
//
// Every upstream dialect, extension, pass and LLVM-IR translation, plus the
// Scan dialect and the scan passes and pipelines.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"
#include "Scan/ScanDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::scan::registerScanPassesAndPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::scan::ScanDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Scan dialect optimizer and lowering driver\n", registry));
}
