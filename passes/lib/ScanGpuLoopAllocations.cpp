//===- ScanGpuLoopAllocations.cpp - allocations out of GPU time loops -----===//
//
// Runs on bufferized loops, before buffer-loop-hoisting and the deallocation
// pipeline. A loop that allocates memory in its body cannot run in a kernel
// (a device allocation is a host call), so scan-gpu-form-kernels leaves it on
// the host, launching its steps one by one. Two shapes of the scan lowering
// allocate only rarely or not at all, and are rewritten so that the loop of
// steps allocates nothing:
//
//   * an allocation of static size in a branch of a step (the zero row of a
//     `keep` output when no step ran, in an inner scan) is made before the
//     branch, so that buffer-loop-hoisting can take it out of the loop;
//   * an `until` loop whose number of steps is known at run time only grows
//     its stacked outputs' buffers (allocate twice the rows, copy) at the
//     start of the rare step that finds them full. The loop is split: the
//     outer loop runs once per growth, on the host; the inner loop runs the
//     steps until the scan stops or a buffer is full, and allocates nothing.
//
//===----------------------------------------------------------------------===//

#include "Scan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace scan {
#define GEN_PASS_DEF_SCANGPULOOPALLOCATIONS
#include "Scan/Passes.h.inc"
} // namespace scan
} // namespace mlir

using namespace mlir;

namespace {

/// Marks an scf.while this pass has split (its after block already holds
/// the inner loop of steps); removed when the pass is done.
constexpr llvm::StringLiteral kSplitMarker = "scan.gpu_split";

bool isAllocation(Operation *op) {
  return isa<memref::AllocOp, memref::AllocaOp, memref::ReallocOp,
             memref::DeallocOp>(op);
}

bool containsAllocation(Operation *op) {
  return op->walk([](Operation *nested) {
             return isAllocation(nested) ? WalkResult::interrupt()
                                         : WalkResult::advance();
           })
      .wasInterrupted();
}

/// Pure and safe to evaluate where it was not (no memory effects, no
/// undefined behaviour on any operands), regions included.
bool isSpeculatablePure(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        if (nested->hasTrait<OpTrait::IsTerminator>() &&
            isa<scf::YieldOp>(nested))
          return WalkResult::advance();
        return isPure(nested) ? WalkResult::advance()
                              : WalkResult::interrupt();
      })
      .wasInterrupted() == false;
}

/// Whether `size` is known before `op` and is a valid size wherever it is
/// known: the size of an existing buffer or tensor (a `dim` of a constant
/// dimension), or a constant that is not negative.
bool isValidSizeBefore(Value size, Operation *op) {
  // Used inside `op` and defined outside it: defined before it.
  Operation *def = size.getDefiningOp();
  if (!def || op->isAncestor(def))
    return false;
  if (auto dim = dyn_cast<memref::DimOp>(def))
    return getConstantIntValue(dim.getIndex()).has_value();
  if (auto dim = dyn_cast<tensor::DimOp>(def))
    return getConstantIntValue(dim.getIndex()).has_value();
  std::optional<int64_t> value = getConstantIntValue(size);
  return value && *value >= 0;
}

/// A `memref.alloc` in an scf.if (possibly several nested) of a loop body,
/// whose size is fixed or the size of an existing buffer (the zero rows of
/// a `keep` output that has fewer rows than it keeps), is made before the
/// outermost of those ifs: allocating it always costs nothing once
/// buffer-loop-hoisting has moved it out of the loop, while an allocation in
/// a branch keeps the loop on the host. Other dynamic sizes are left alone:
/// the branch may be what keeps them valid.
struct HoistStaticAllocationOutOfIf : OpRewritePattern<memref::AllocOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::AllocOp alloc,
                                PatternRewriter &rewriter) const override {
    if (!alloc.getSymbolOperands().empty())
      return failure();
    Operation *outermost = nullptr;
    for (Operation *parent = alloc->getParentOp();
         parent && isa<scf::IfOp>(parent); parent = parent->getParentOp())
      outermost = parent;
    if (!outermost || !isa_and_nonnull<scf::ForOp, scf::WhileOp>(
                          outermost->getParentOp()))
      return failure();
    for (Value size : alloc.getDynamicSizes())
      if (!isValidSizeBefore(size, outermost))
        return failure();
    rewriter.modifyOpInPlace(alloc, [&] { alloc->moveBefore(outermost); });
    return success();
  }
};

/// The parts of an `until` loop's after block that the split needs.
struct GrowingLoop {
  /// The pure ops and growth ifs at the start of the step, in order.
  SmallVector<Operation *> prefix;
  SmallVector<scf::IfOp> growths;
  /// The rest of the step (without the yield).
  SmallVector<Operation *> rest;
};

/// A growth: an scf.if with results whose then branch allocates and whose
/// else branch only passes values on (pure ops).
bool isGrowth(Operation *op) {
  auto ifOp = dyn_cast<scf::IfOp>(op);
  if (!ifOp || ifOp.getNumResults() == 0 || ifOp.getElseRegion().empty())
    return false;
  bool thenAllocates = false;
  ifOp.getThenRegion().walk([&](Operation *nested) {
    thenAllocates |= isa<memref::AllocOp>(nested);
  });
  return thenAllocates &&
         llvm::all_of(ifOp.elseBlock()->without_terminator(),
                      [](Operation &o) { return isSpeculatablePure(&o); });
}

std::optional<GrowingLoop> matchGrowingLoop(scf::WhileOp loop) {
  if (loop->hasAttr(kSplitMarker))
    return std::nullopt;
  // The outer loop evaluates the condition again after the inner one
  // stopped: it must be free of effects.
  if (!llvm::all_of(loop.getBeforeBody()->without_terminator(),
                    [](Operation &op) { return isSpeculatablePure(&op); }))
    return std::nullopt;
  GrowingLoop parts;
  Block *after = loop.getAfterBody();
  Operation *lastGrowth = nullptr;
  for (Operation &op : after->without_terminator())
    if (isGrowth(&op))
      lastGrowth = &op;
  if (!lastGrowth)
    return std::nullopt;
  bool inPrefix = true;
  for (Operation &op : after->without_terminator()) {
    if (inPrefix) {
      if (isGrowth(&op))
        parts.growths.push_back(cast<scf::IfOp>(op));
      else if (!isSpeculatablePure(&op))
        return std::nullopt;
      parts.prefix.push_back(&op);
      inPrefix = &op != lastGrowth;
      continue;
    }
    // Splitting is worth it only when the steps themselves allocate nothing.
    if (containsAllocation(&op))
      return std::nullopt;
    parts.rest.push_back(&op);
  }
  // A loop split before (canonicalization may rebuild it without the
  // marker): its step is the inner loop.
  if (parts.rest.empty() ||
      (parts.rest.size() == 1 && isa<scf::WhileOp>(parts.rest.front())))
    return std::nullopt;
  return parts;
}

/// Splits an `until` loop that grows buffers:
///
///   scf.while (%a = init) { cond(%a) -> %c, %f } do { ^(%f):
///     prefix(%f) with growth ifs -> %u; rest(%f, %u) -> %y; yield %y }
///
/// becomes an outer loop (one iteration per growth: the prefix, allocating
/// when a buffer is full) around an inner do-while loop of steps that stops
/// as soon as the scan ends or the next step would need to grow a buffer:
///
///   scf.while (%a = init) { cond(%a) -> %c, %f } do { ^(%f):
///     %u = prefix(%f)
///     %r = scf.while (%f1 = %f, %u1 = %u) {
///       %y = rest(%f1, %u1); %c2, %f2 = cond(%y)
///       %go, %u2 = scf.if %c2 { prefix(%f2) without growth: !grow, %u }
///                  else { false, %u1 }
///       scf.condition(%go) %f2, %u2, %y
///     } do { yield }
///     yield %r#y }
///
/// The outer loop then evaluates the condition on the inner loop's last
/// step: false when the scan ended, true when a buffer must grow.
struct SplitGrowingLoop : OpRewritePattern<scf::WhileOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(scf::WhileOp loop,
                                PatternRewriter &rewriter) const override {
    std::optional<GrowingLoop> parts = matchGrowingLoop(loop);
    if (!parts)
      return failure();
    Location loc = loop.getLoc();
    Block *before = loop.getBeforeBody(), *after = loop.getAfterBody();
    auto yield = cast<scf::YieldOp>(after->getTerminator());

    // The prefix values the rest of the step uses.
    llvm::SetVector<Value> used;
    llvm::SmallPtrSet<Operation *, 16> prefixOps(parts->prefix.begin(),
                                                 parts->prefix.end());
    auto collectUsed = [&](Operation *op) {
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && prefixOps.contains(def))
            used.insert(operand);
      });
    };
    for (Operation *op : parts->rest)
      collectUsed(op);
    collectUsed(yield);

    SmallVector<Value> inits(after->getArguments());
    inits.append(used.begin(), used.end());
    SmallVector<Type> stateTypes = llvm::to_vector(ValueRange(inits).getTypes());
    SmallVector<Type> resultTypes(stateTypes);
    llvm::append_range(resultTypes, yield.getOperandTypes());
    unsigned numArgs = after->getNumArguments();

    rewriter.setInsertionPoint(parts->rest.front());
    auto inner = scf::WhileOp::create(rewriter, loc, resultTypes, inits);
    Block *step = rewriter.createBlock(
        &inner.getBefore(), {}, stateTypes,
        SmallVector<Location>(stateTypes.size(), loc));
    IRMapping map;
    for (unsigned i = 0; i < numArgs; ++i)
      map.map(after->getArgument(i), step->getArgument(i));
    for (auto [i, value] : llvm::enumerate(used))
      map.map(value, step->getArgument(numArgs + i));
    // The step.
    for (Operation *op : parts->rest)
      rewriter.clone(*op, map);
    SmallVector<Value> next = llvm::map_to_vector(
        yield.getOperands(), [&](Value v) { return map.lookupOrDefault(v); });
    // The loop condition on the step's results.
    IRMapping condMap;
    condMap.map(before->getArguments(), next);
    for (Operation &op : before->without_terminator())
      rewriter.clone(op, condMap);
    auto cond = cast<scf::ConditionOp>(before->getTerminator());
    Value go = condMap.lookupOrDefault(cond.getCondition());
    SmallVector<Value> forwarded = llvm::map_to_vector(
        cond.getArgs(), [&](Value v) { return condMap.lookupOrDefault(v); });
    // Whether the next step would grow a buffer, evaluated only when it
    // runs (the prefix need not be valid after the last step).
    SmallVector<Type> guardTypes{rewriter.getI1Type()};
    for (Value v : used)
      guardTypes.push_back(v.getType());
    auto guard =
        scf::IfOp::create(rewriter, loc, guardTypes, go, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(guard.thenBlock());
      IRMapping prefixMap;
      prefixMap.map(after->getArguments(), forwarded);
      Value grow = arith::ConstantIntOp::create(rewriter, loc, 0, 1);
      for (Operation *op : parts->prefix) {
        auto growth = dyn_cast<scf::IfOp>(op);
        if (!growth || !llvm::is_contained(parts->growths, growth)) {
          rewriter.clone(*op, prefixMap);
          continue;
        }
        grow = arith::OrIOp::create(
            rewriter, loc, grow,
            prefixMap.lookupOrDefault(growth.getCondition()));
        for (Operation &o : growth.elseBlock()->without_terminator())
          rewriter.clone(o, prefixMap);
        for (auto [result, value] :
             llvm::zip(growth.getResults(),
                       growth.elseYield().getOperands()))
          prefixMap.map(result, prefixMap.lookupOrDefault(value));
      }
      Value stay = arith::XOrIOp::create(
          rewriter, loc, grow, arith::ConstantIntOp::create(rewriter, loc, 1, 1));
      SmallVector<Value> thenValues{stay};
      for (Value v : used)
        thenValues.push_back(prefixMap.lookupOrDefault(v));
      scf::YieldOp::create(rewriter, loc, thenValues);
      rewriter.setInsertionPointToStart(guard.elseBlock());
      SmallVector<Value> elseValues{
          arith::ConstantIntOp::create(rewriter, loc, 0, 1)};
      for (unsigned i = 0; i < used.size(); ++i)
        elseValues.push_back(step->getArgument(numArgs + i));
      scf::YieldOp::create(rewriter, loc, elseValues);
    }
    SmallVector<Value> carried(forwarded);
    llvm::append_range(carried, guard.getResults().drop_front());
    SmallVector<Value> conditionArgs(carried);
    llvm::append_range(conditionArgs, next);
    scf::ConditionOp::create(rewriter, loc, guard.getResult(0), conditionArgs);
    // The after block passes the state on.
    Block *pass = rewriter.createBlock(
        &inner.getAfter(), {}, resultTypes,
        SmallVector<Location>(resultTypes.size(), loc));
    scf::YieldOp::create(rewriter, loc,
                         pass->getArguments().take_front(stateTypes.size()));

    // The outer step: the prefix, the inner loop, its last step's values.
    rewriter.modifyOpInPlace(yield, [&] {
      yield->setOperands(inner.getResults().drop_front(stateTypes.size()));
    });
    // Each op's users are later ops of the rest (or the yield, updated).
    for (Operation *op : llvm::reverse(parts->rest))
      rewriter.eraseOp(op);
    rewriter.modifyOpInPlace(loop, [&] {
      loop->setAttr(kSplitMarker, rewriter.getUnitAttr());
    });
    return success();
  }
};

struct ScanGpuLoopAllocationsPass
    : scan::impl::ScanGpuLoopAllocationsBase<ScanGpuLoopAllocationsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<HoistStaticAllocationOutOfIf, SplitGrowingLoop>(context);
    // The inner loop carries every value of the step; those that do not
    // change from step to step (the grown buffers) are dropped, and the
    // guard's results that both branches agree on folded, so that the loop
    // of steps has no buffer-typed iteration values.
    scf::WhileOp::getCanonicalizationPatterns(patterns, context);
    scf::IfOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    getOperation().walk(
        [](scf::WhileOp loop) { loop->removeAttr(kSplitMarker); });
  }
};

} // namespace
