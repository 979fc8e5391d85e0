//===- ScanOptimize.cpp - the scan rewrites, to a fixed point -------------===//
//
// PyTensor runs its scan rewrites in an equilibrium optimizer: each rewrite
// can enable another (pushing work out leaves inputs unused, merging scans
// duplicates inputs, ...). scan-optimize runs the scan passes in PyTensor's
// order until the IR stops changing.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANOPTIMIZE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// One round, in PyTensor's order: unused/constant inputs, push-outs
/// (non-sequences, sequences, outputs), merges, then save-mem last (it
/// changes output types, which the other rewrites treat as opaque).
constexpr llvm::StringLiteral kRound =
    "canonicalize,scan-remove-unused,scan-reassociate-adds,"
    "scan-push-out-non-seq,scan-push-out-seq,scan-push-out-output,"
    "scan-remove-unused,canonicalize,cse,"
    "scan-merge,scan-merge-inouts,scan-remove-unused,canonicalize,cse,"
    "scan-save-mem,canonicalize";

struct ScanOptimizePass
    : scan::impl::ScanOptimizeBase<ScanOptimizePass> {
  using ScanOptimizeBase::ScanOptimizeBase;

  LogicalResult initialize(MLIRContext *context) override {
    // One pass manager per pass of the round: the self-folds that abort
    // upstream folders (see materializeSelfFolds) are rewritten after every
    // pass, since merging inputs can create them.
    // Called again whenever the context gains dialects (a reused pass
    // manager): start the round afresh.
    round.clear();
    SmallVector<StringRef> names;
    kRound.split(names, ',');
    for (StringRef name : names) {
      auto pm = std::make_shared<OpPassManager>("builtin.module");
      if (failed(parsePassPipeline(name, *pm)))
        return failure();
      round.push_back(pm);
    }
    return success();
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm("builtin.module");
    if (succeeded(parsePassPipeline(kRound, pm)))
      pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    scan::genericizeFoldHazards(getOperation());
    scan::materializeSelfFolds(getOperation());
    for (unsigned i = 0; i < maxIterations; ++i) {
      OperationFingerPrint before(getOperation());
      for (std::shared_ptr<OpPassManager> &pm : round) {
        if (failed(runPipeline(*pm, getOperation())))
          return signalPassFailure();
        scan::materializeSelfFolds(getOperation());
      }
      ++numRounds;
      if (OperationFingerPrint(getOperation()) == before)
        return;
    }
  }

  SmallVector<std::shared_ptr<OpPassManager>> round;
};

} // namespace
