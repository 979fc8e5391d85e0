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

#include <deque>

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANOPTIMIZE
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// One round, in PyTensor's order: unused/constant inputs, push-outs
/// (non-sequences, sequences, outputs), merges, then save-mem (it changes
/// output types, which the other rewrites treat as opaque) and the push-out
/// of accumulations, which needs the `keep = 1` that save-mem sets.
constexpr llvm::StringLiteral kRound =
    "canonicalize,scan-remove-unused,scan-reassociate-adds,"
    "scan-push-out-non-seq,scan-push-out-seq,scan-push-out-output,"
    "scan-remove-unused,canonicalize,cse,"
    "scan-merge,scan-merge-inouts,scan-remove-unused,canonicalize,cse,"
    "scan-save-mem,canonicalize,scan-push-out-accumulation";

struct ScanOptimizePass
    : scan::impl::ScanOptimizeBase<ScanOptimizePass> {
  using ScanOptimizeBase::ScanOptimizeBase;
  // A clone shares the round's pipelines but has statistics of its own.
  ScanOptimizePass(const ScanOptimizePass &other)
      : ScanOptimizeBase(other), round(other.round) {}

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
        SmallVector<uint64_t> counts = statisticValues(*pm);
        if (failed(runPipeline(*pm, getOperation())))
          return signalPassFailure();
        forwardStatistics(*pm, counts);
        scan::materializeSelfFolds(getOperation());
      }
      ++numRounds;
      if (OperationFingerPrint(getOperation()) == before)
        return;
    }
  }

  /// The current values of the statistics of the passes in `pm`.
  static SmallVector<uint64_t> statisticValues(OpPassManager &pm) {
    SmallVector<uint64_t> values;
    for (Pass &pass : pm.getPasses())
      for (Pass::Statistic *statistic : pass.getStatistics())
        values.push_back(statistic->getValue());
    return values;
  }

  /// Adds what the passes of `pm` counted since `before` to statistics of
  /// this pass named "<pass>: <statistic>", so that --mlir-pass-statistics
  /// shows what each rewrite of the round did (the round's pass managers
  /// are not part of the printed pipeline).
  void forwardStatistics(OpPassManager &pm, ArrayRef<uint64_t> before) {
    unsigned i = 0;
    for (Pass &pass : pm.getPasses()) {
      for (Pass::Statistic *statistic : pass.getStatistics()) {
        // Most passes add to their statistics; a few (cse) assign this
        // run's count.
        uint64_t after = statistic->getValue(), previous = before[i++];
        uint64_t delta = after >= previous ? after - previous : after;
        if (delta == 0)
          continue;
        std::string name =
            (pass.getArgument() + ": " + statistic->getName()).str();
        auto [it, inserted] = forwarded.try_emplace(name);
        if (inserted) {
          names.push_back(name);
          descriptions.push_back(statistic->getDesc());
          it->second = std::make_unique<Statistic>(
              this, names.back().c_str(), descriptions.back().c_str());
        }
        *it->second += delta;
      }
    }
  }

  SmallVector<std::shared_ptr<OpPassManager>> round;
  /// Statistics of the round's passes, forwarded (names and descriptions
  /// must outlive them: deques never move their elements).
  llvm::StringMap<std::unique_ptr<Statistic>> forwarded;
  std::deque<std::string> names, descriptions;
};

} // namespace
