//===- ScanArgs.cpp - Editable view of a scan.scan's groups ---------------===//

#include "Scan/ScanArgs.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::scan;

SmallVector<ScanOp> mlir::scan::collectScans(Operation *root) {
  SmallVector<ScanOp> scans;
  root->walk([&](ScanOp op) { scans.push_back(op); });
  return scans;
}

int64_t mlir::scan::stackedRows(std::optional<int64_t> nSteps, bool until,
                                int64_t keep) {
  if (keep > 0)
    return keep;
  if (nSteps && !until)
    return *nSteps;
  return ShapedType::kDynamic;
}

DenseSet<Operation *> mlir::scan::liveBodyOps(ScanOp op) {
  Block &body = op.getBodyBlock();
  DenseSet<Operation *> live;
  SmallVector<Operation *> worklist{body.getTerminator()};
  for (Operation &bodyOp : body.without_terminator())
    if (!isMemoryEffectFree(&bodyOp))
      worklist.push_back(&bodyOp);
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    if (!live.insert(next).second)
      continue;
    next->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *top = body.findAncestorOpInBlock(*def))
            worklist.push_back(top);
    });
  }
  return live;
}

bool mlir::scan::hasLiveUserOutside(Value value, Block &block,
                                    const DenseSet<Operation *> &live,
                                    function_ref<bool(Operation *)> except) {
  return llvm::any_of(value.getUsers(), [&](Operation *user) {
    Operation *top = block.findAncestorOpInBlock(*user);
    return top && live.contains(top) && !except(user);
  });
}

static SmallVector<Value> toValues(Block::BlockArgListType args) {
  return SmallVector<Value>(args.begin(), args.end());
}

ScanArgs::ScanArgs(ScanOp op)
    : op(op), nSteps(op.getNSteps()), goBackwards(op.getGoBackwards()),
      untilCondition(op.getUntilCondition()) {
  for (unsigned i = 0; i < op.getNumSequences(); ++i)
    sequences.push_back({op.getSequences()[i],
                         llvm::to_vector(op.getSequenceTapsAt(i)),
                         toValues(op.getSequenceArgs(i))});
  for (unsigned i = 0; i < op.getNumMitMot(); ++i)
    mitmots.push_back({op.getMitmot()[i],
                       llvm::to_vector(op.getMitMotInTapsAt(i)),
                       llvm::to_vector(op.getMitMotOutTapsAt(i)),
                       toValues(op.getMitMotArgs(i)),
                       SmallVector<Value>(op.getMitMotYields(i)),
                       op.getMitMotResults()[i]});
  for (unsigned i = 0; i < op.getNumMitSot(); ++i) {
    OpResult result = op.getMitSotResults()[i];
    mitsots.push_back({op.getMitsotInits()[i],
                       llvm::to_vector(op.getMitSotTapsAt(i)),
                       toValues(op.getMitSotArgs(i)), op.getMitSotYield(i),
                       result, result.getType(),
                       op.getKeepAt(result.getResultNumber())});
  }
  for (unsigned i = 0; i < op.getNumSitSot(); ++i) {
    OpResult result = op.getSitSotResults()[i];
    sitsots.push_back({op.getSitsotInits()[i],
                       {-1},
                       {op.getSitSotArg(i)},
                       op.getSitSotYield(i),
                       result,
                       result.getType(),
                       op.getKeepAt(result.getResultNumber())});
  }
  for (unsigned i = 0; i < op.getNumNitSot(); ++i) {
    OpResult result = op.getNitSotResults()[i];
    nitsots.push_back({op.getNitSotYield(i), result, result.getType(),
                       op.getKeepAt(result.getResultNumber())});
  }
  for (unsigned i = 0; i < op.getNumNonSequences(); ++i)
    nonSequences.push_back({op.getNonSequences()[i], op.getNonSequenceArg(i)});
}

void ScanArgs::replaceAllUsesWith(RewriterBase &rewriter, Value from,
                                  Value to) {
  rewriter.replaceAllUsesWith(from, to);
  auto update = [&](Value &v) {
    if (v == from)
      v = to;
  };
  for (MitMot &m : mitmots)
    for (Value &y : m.yields)
      update(y);
  for (auto *states : {&mitsots, &sitsots})
    for (State &s : *states)
      update(s.yield);
  for (NitSot &n : nitsots)
    update(n.yield);
  if (untilCondition)
    update(untilCondition);
}

/// The type of the block argument reading one row of `outer`.
static Type rowOf(Value outer) {
  return ScanOp::getRowType(cast<RankedTensorType>(outer.getType()));
}

ScanOp ScanArgs::rebuild(RewriterBase &rewriter, Operation *insertBefore) {
  Builder &b = rewriter;
  Location loc = op.getLoc();

  // Operands, attributes and result types, group by group.
  SmallVector<Value> seqOuter, mitmotOuter, mitsotOuter, sitsotOuter, nonSeq;
  SmallVector<Attribute> seqTaps, inTaps, outTaps, mitsotTaps;
  SmallVector<Type> resultTypes, argTypes;
  SmallVector<int64_t> keep;
  SmallVector<Value *> argSlots; // where each new block argument goes
  for (Sequence &s : sequences) {
    seqOuter.push_back(s.outer);
    seqTaps.push_back(b.getDenseI64ArrayAttr(s.taps));
    s.inner.resize(s.taps.size());
    for (Value &inner : s.inner) {
      argTypes.push_back(rowOf(s.outer));
      argSlots.push_back(&inner);
    }
  }
  for (MitMot &m : mitmots) {
    mitmotOuter.push_back(m.outer);
    inTaps.push_back(b.getDenseI64ArrayAttr(m.inTaps));
    outTaps.push_back(b.getDenseI64ArrayAttr(m.outTaps));
    resultTypes.push_back(m.outer.getType());
    keep.push_back(0);
    m.inner.resize(m.inTaps.size());
    for (Value &inner : m.inner) {
      argTypes.push_back(rowOf(m.outer));
      argSlots.push_back(&inner);
    }
  }
  for (State &s : mitsots) {
    mitsotOuter.push_back(s.outer);
    mitsotTaps.push_back(b.getDenseI64ArrayAttr(s.taps));
    resultTypes.push_back(s.resultType);
    keep.push_back(s.keep);
    s.inner.resize(s.taps.size());
    for (Value &inner : s.inner) {
      argTypes.push_back(rowOf(s.outer));
      argSlots.push_back(&inner);
    }
  }
  for (State &s : sitsots) {
    sitsotOuter.push_back(s.outer);
    resultTypes.push_back(s.resultType);
    keep.push_back(s.keep);
    s.inner.resize(1);
    argTypes.push_back(s.outer.getType());
    argSlots.push_back(&s.inner[0]);
  }
  for (NitSot &n : nitsots) {
    resultTypes.push_back(n.resultType);
    keep.push_back(n.keep);
  }
  for (NonSequence &n : nonSequences) {
    nonSeq.push_back(n.outer);
    argTypes.push_back(n.outer.getType());
    argSlots.push_back(&n.inner);
  }

  DenseI64ArrayAttr keepAttr;
  if (llvm::any_of(keep, [](int64_t k) { return k != 0; }))
    keepAttr = b.getDenseI64ArrayAttr(keep);

  rewriter.setInsertionPoint(insertBefore ? insertBefore : op.getOperation());
  auto newOp = ScanOp::create(
      rewriter, loc, resultTypes, nSteps, seqOuter, mitmotOuter, mitsotOuter,
      sitsotOuter, nonSeq, b.getArrayAttr(seqTaps), b.getArrayAttr(inTaps),
      b.getArrayAttr(outTaps), b.getArrayAttr(mitsotTaps), keepAttr,
      goBackwards, static_cast<bool>(untilCondition));
  // Keep discardable attributes the user put on the op.
  for (NamedAttribute attr : op->getDiscardableAttrs())
    newOp->setAttr(attr.getName(), attr.getValue());

  // The new block: every surviving old argument is replaced by its new one.
  SmallVector<Location> argLocs(argTypes.size(), loc);
  Block *newBlock = rewriter.createBlock(&newOp.getBody(), {}, argTypes, argLocs);
  Block &oldBlock = op.getBodyBlock();
  // Yields may be block arguments themselves: map them too.
  IRMapping argMap;
  for (auto [slot, arg] : llvm::zip(argSlots, newBlock->getArguments())) {
    if (*slot) {
      rewriter.replaceAllUsesWith(*slot, arg);
      argMap.map(*slot, arg);
    }
    *slot = arg;
  }
  newBlock->getOperations().splice(newBlock->end(), oldBlock.getOperations());

  // The new yield, in group order.
  Operation *oldYield = newBlock->getTerminator();
  SmallVector<Value> yields;
  auto yieldOf = [&](Value &v) {
    v = argMap.lookupOrDefault(v);
    yields.push_back(v);
  };
  for (MitMot &m : mitmots)
    for (Value &y : m.yields)
      yieldOf(y);
  for (State &s : mitsots)
    yieldOf(s.yield);
  for (State &s : sitsots)
    yieldOf(s.yield);
  for (NitSot &n : nitsots)
    yieldOf(n.yield);
  if (untilCondition)
    yieldOf(untilCondition);
  rewriter.setInsertionPoint(oldYield);
  YieldOp::create(rewriter, loc, yields);
  rewriter.eraseOp(oldYield);

  // Ops that only fed dropped outputs are dead now (and may still use the
  // block arguments of dropped items, which die with the old op).
  // Visiting users before the ops they use erases whole dead chains at once.
  SmallVector<Operation *> bodyOps;
  for (Operation &bodyOp : newBlock->without_terminator())
    bodyOps.push_back(&bodyOp);
  for (Operation *bodyOp : llvm::reverse(bodyOps))
    if (bodyOp->use_empty() && isMemoryEffectFree(bodyOp))
      rewriter.eraseOp(bodyOp);
  for (BlockArgument arg : oldBlock.getArguments())
    if (!arg.use_empty()) {
      rewriter.setInsertionPointToStart(newBlock);
      rewriter.replaceAllUsesWith(
          arg, ub::PoisonOp::create(rewriter, loc, arg.getType()));
    }

  // Results.
  unsigned r = 0;
  auto takeResult = [&](Value &result) {
    Value fresh = newOp.getResult(r++);
    if (result)
      rewriter.replaceAllUsesWith(result, fresh);
    result = fresh;
  };
  for (MitMot &m : mitmots)
    takeResult(m.result);
  for (State &s : mitsots)
    takeResult(s.result);
  for (State &s : sitsots)
    takeResult(s.result);
  for (NitSot &n : nitsots)
    takeResult(n.result);

  // Whatever still uses the old op belongs to items the caller dropped, which
  // callers only do for dead results; never leave a dangling use behind.
  rewriter.setInsertionPoint(newOp);
  for (OpResult result : op->getResults())
    if (!result.use_empty())
      rewriter.replaceAllUsesWith(
          result, ub::PoisonOp::create(rewriter, loc, result.getType()));
  rewriter.eraseOp(op);
  op = newOp;
  return newOp;
}

Value mlir::scan::extractSliceOrEmpty(OpBuilder &b, Location loc, Value value,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes,
                                      ArrayRef<OpFoldResult> strides) {
  auto type = cast<RankedTensorType>(value.getType());
  if (llvm::is_contained(type.getShape(), 0))
    return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes,
                                        strides);
}

Value mlir::scan::outerNonSequence(ScanOp op, Value inner) {
  auto arg = dyn_cast<BlockArgument>(inner);
  Block &body = op.getBodyBlock();
  unsigned first = body.getNumArguments() - op.getNumNonSequences();
  if (!arg || arg.getOwner() != &body || arg.getArgNumber() < first)
    return Value();
  return op.getNonSequences()[arg.getArgNumber() - first];
}

Value mlir::scan::destinationRoot(Value v) {
  while (auto dps = v.getDefiningOp<DestinationStyleOpInterface>())
    v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
  return v;
}
