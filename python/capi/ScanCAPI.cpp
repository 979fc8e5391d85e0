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
#include "mlir-c/Pass.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cstring>
#include <string>


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

/// Makes LLVM compile each function body of the LLVM-dialect `module` once.
/// Python calls only the `_mlir_ciface_` wrappers: with the function a
/// wrapper wraps external, LLVM inlines it into the wrapper and still
/// compiles the original (the loop nest twice: 40% of a small program's
/// compile time), so it becomes internal and never inlined. Other functions
/// with a body (the deallocation pipeline's `dealloc_helper`, private
/// functions, which lower to external ones) become internal: LLVM need not
/// keep them where they are inlined or unused. (In C++: setting the
/// attribute from Python imported the LLVM dialect's Python module, 45 ms of
/// a process's first compile.)
MLIR_CAPI_EXPORTED void mlirScanCompileOnce(MlirModule module) {
  mlir::ModuleOp op = unwrap(module);
  llvm::StringSet<> names;
  for (auto func : op.getOps<mlir::LLVM::LLVMFuncOp>())
    names.insert(func.getName());
  for (auto func : op.getOps<mlir::LLVM::LLVMFuncOp>()) {
    llvm::StringRef name = func.getName();
    if (names.contains(("_mlir_ciface_" + name).str())) {
      func.setLinkage(mlir::LLVM::Linkage::Internal);
      func.setNoInline(true);
    } else if (!name.starts_with("_mlir_ciface_") && !func.isExternal()) {
      func.setLinkage(mlir::LLVM::Linkage::Internal);
    }
  }
}

/// Runs `pm` on `op` and reports every error diagnostic, whether or not a
/// pass failed. Some upstream passes emit an error and still succeed
/// (lower-affine's "division by non-positive value" after
/// expand-strided-metadata divided by a static 0); the Python
/// bindings' `PassManager.run` then aborts the process ("unhandled captured
/// errors"). Here such a run is a failure like any other. The diagnostics
/// go to `out` (at most `capacity` bytes, NUL-terminated) as records ending
/// in '\x1e', each `kind '\x1f' location '\x1f' message` with kind 'E' for
/// an error and 'N' for a note of the error before it. Returns 1 on
/// failure, 0 otherwise.
MLIR_CAPI_EXPORTED int mlirScanRunPassManager(MlirPassManager pm,
                                              MlirOperation op, char *out,
                                              size_t capacity) {
  mlir::Operation *operation = unwrap(op);
  std::string text;
  auto append = [&](char kind, mlir::Location loc, llvm::StringRef message) {
    text += kind;
    text += '\x1f';
    llvm::raw_string_ostream os(text);
    loc.print(os);
    os << '\x1f' << message << '\x1e';
  };
  bool sawError = false;
  bool failed;
  {
    mlir::ScopedDiagnosticHandler handler(
        operation->getContext(), [&](mlir::Diagnostic &diag) {
          if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::failure(); // (to the other handlers)
          sawError = true;
          append('E', diag.getLocation(), diag.str());
          for (mlir::Diagnostic &note : diag.getNotes())
            append('N', note.getLocation(), note.str());
          return mlir::success();
        });
    failed = mlir::failed(unwrap(pm)->run(operation));
  }
  if (capacity) {
    size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
  }
  return failed || sawError ? 1 : 0;
}

} // extern "C"
