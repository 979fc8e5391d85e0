//===- Pipelines.cpp - Scan pass registration and pipelines ---------------===//
//
// Pipelines are spelled as pass-pipeline text: the same string a user can
// paste into `scan-opt --pass-pipeline=...` to reproduce one stage.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstring>

using namespace mlir;

namespace {

/// Tensor-level scf loops -> in-place buffers (SPEC §3, measured recipe).
constexpr llvm::StringLiteral kBufferize =
    "func.func(convert-elementwise-to-linalg),"
    "canonicalize,cse,"
    // After CSE, which would merge the destinations this makes private.
    "func.func(scan-fresh-elementwise-inits),"
    "eliminate-empty-tensors,"
    "empty-tensor-to-alloc-tensor,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    // One canonicalize leaves `memref.copy %a, %a` self-copies behind.
    "canonicalize,cse,canonicalize,"
    "scan-own-public-results,"
    "buffer-deallocation-pipeline,"
    // A buffer of dynamic ownership (an `until` output's grown buffer) is
    // returned through `bufferization.clone` on its never-taken unowned path.
    "convert-bufferization-to-memref";

/// Buffers -> LLVM dialect; `vectorize` is replaced by the vector inner
/// loops pass, or by nothing.
constexpr llvm::StringLiteral kToLLVM =
    "scan-check-lowerable,"
    "scan-check-allocations,"
    "func.func(scan-order-linalg-loops,{vectorize}convert-linalg-to-loops),"
    "expand-strided-metadata,lower-affine,"
    "scan-lower-asserts,"
    "convert-scf-to-cf,"
    // libm's tanh is a call per element; the expansions vectorize.
    "func.func(scan-expand-tanh,math-expand-ops{ops=tanh}),"
    "convert-math-to-llvm,"
    "scan-lower-i1-access,"
    // Allocations go through the run-time library (python/runtime/), which
    // never hands a program a null block.
    "finalize-memref-to-llvm{use-generic-functions},"
    "convert-to-llvm,"
    "reconcile-unrealized-casts,canonicalize";

void buildPipeline(OpPassManager &pm, llvm::ArrayRef<llvm::StringRef> parts) {
  std::string text;
  for (llvm::StringRef part : parts) {
    if (!text.empty())
      text += ",";
    text += part.str();
  }
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error("mlir-scan: invalid built-in pipeline");
}

struct LoweringOptions : PassPipelineOptions<LoweringOptions> {
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Write vector inner loops for linalg ops "
                     "(scan-vectorize-linalg-loops); off leaves "
                     "vectorization to LLVM"),
      llvm::cl::init(true)};
};

struct WholeLoweringOptions : PassPipelineOptions<WholeLoweringOptions> {
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Write vector inner loops for linalg ops "
                     "(scan-vectorize-linalg-loops); off leaves "
                     "vectorization to LLVM"),
      llvm::cl::init(true)};
  Option<bool> checks{
      *this, "checks",
      llvm::cl::desc("Verify the program's ops at run time "
                     "(scan-runtime-verification): a mismatched dynamic size "
                     "or an out-of-bounds index fails the call"),
      llvm::cl::init(true)};
};

std::string toLLVM(bool vectorize) {
  std::string text = kToLLVM.str();
  size_t at = text.find("{vectorize}");
  text.replace(at, strlen("{vectorize}"),
               vectorize ? "scan-vectorize-linalg-loops," : "");
  return text;
}

} // namespace

void mlir::scan::registerScanPassesAndPipelines() {
  registerScanPasses();

  PassPipelineRegistration<>(
      "scan-bufferize",
      "Lower scans to scf and bufferize in place (convert-scan-to-scf, "
      "one-shot-bufferize, buffer deallocation)",
      [](OpPassManager &pm) {
        buildPipeline(pm, {"convert-scan-to-scf", kBufferize});
      });
  // The two halves of the lowering after convert-scan-to-scf, by name, so
  // that `mlir_scan.compile` can stop between them (Program.ir stages).
  PassPipelineRegistration<>(
      "scan-bufferize-loops",
      "Bufferize the tensor scf loops convert-scan-to-scf leaves, in place "
      "(the second half of scan-bufferize)",
      [](OpPassManager &pm) { buildPipeline(pm, {kBufferize}); });
  PassPipelineRegistration<LoweringOptions>(
      "scan-buffers-to-llvm",
      "Lower the bufferized loops to the LLVM dialect: loop order, vector "
      "inner loops, then the upstream conversions",
      [](OpPassManager &pm, const LoweringOptions &options) {
        buildPipeline(pm, {toLLVM(options.vectorize)});
      });
  PassPipelineRegistration<WholeLoweringOptions>(
      "scan-to-llvm",
      "The whole CPU pipeline: scan-optimize, run-time verification, scans "
      "to scf, in-place bufferization, LLVM dialect (run the result with the "
      "JIT or mlir-runner, with libMLIRScanRuntime.so)",
      [](OpPassManager &pm, const WholeLoweringOptions &options) {
        SmallVector<StringRef> parts{"scan-optimize"};
        if (options.checks)
          parts.push_back("scan-runtime-verification");
        std::string lower = toLLVM(options.vectorize);
        parts.append({"convert-scan-to-scf", kBufferize, lower});
        buildPipeline(pm, parts);
      });
}
