//===- ScanArgs.h - Editable view of a scan.scan's groups -------*- C++ -*-===//
//
// The role of Theano's `ScanArgs`: a scan op decomposed into its items (one
// per sequence, mitmot, mitsot, sitsot, nitsot and non-sequence), each with
// its outer operand, taps, block arguments, yields and result. A rewrite
// edits the lists (drop an item, add a non-sequence, change taps or keep) and
// calls `rebuild`, which creates the new op, moves the body into it and
// rewires every surviving block argument, yield and result.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_SCANARGS_H
#define SCAN_SCANARGS_H

#include "Scan/ScanOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace scan {

struct ScanArgs {
  /// A sequence: one block argument per tap.
  struct Sequence {
    Value outer;
    SmallVector<int64_t> taps;
    SmallVector<Value> inner; // block argument per tap (null: new, see rebuild)
  };
  /// A mitmot buffer: in taps are read, out taps are yielded.
  struct MitMot {
    Value outer;
    SmallVector<int64_t> inTaps, outTaps;
    SmallVector<Value> inner;  // per in tap
    SmallVector<Value> yields; // per out tap
    Value result;
  };
  /// A mitsot (taps all negative) or sitsot (taps == {-1}, `outer` the init).
  struct State {
    Value outer;
    SmallVector<int64_t> taps;
    SmallVector<Value> inner; // per tap
    Value yield;
    Value result;
    Type resultType;
    int64_t keep = 0;
  };
  /// A nitsot output.
  struct NitSot {
    Value yield;
    Value result;
    Type resultType;
    int64_t keep = 0;
  };
  /// A non-sequence: one block argument.
  struct NonSequence {
    Value outer;
    Value inner;
  };

  explicit ScanArgs(ScanOp op);

  /// Creates the scan described by the lists right before `op`, moves the old
  /// body into it and replaces: old block arguments by the new ones (items
  /// whose `inner` value is null get a fresh block argument, written back
  /// into the item), old results by the new ones (items with a null
  /// `result` get theirs written back too). Body ops left without users
  /// (they fed dropped outputs) are erased. Items removed from the lists
  /// must be dead: their results unused, their block arguments only used by
  /// such dead ops. Erases `op`.
  /// The new op goes before `insertBefore` (default: before `op`); every
  /// operand must dominate that point.
  ScanOp rebuild(RewriterBase &rewriter, Operation *insertBefore = nullptr);

  /// Replaces `from` by `to` in the body and in the yields held by the
  /// items (and the until condition): a rewrite that replaces a body value
  /// before `rebuild` must use this, or the items keep yielding `from`.
  void replaceAllUsesWith(RewriterBase &rewriter, Value from, Value to);

  ScanOp op;
  Value nSteps;
  bool goBackwards = false;
  Value untilCondition; // null without `until`
  SmallVector<Sequence, 2> sequences;
  SmallVector<MitMot, 1> mitmots;
  SmallVector<State, 2> mitsots;
  SmallVector<State, 2> sitsots;
  SmallVector<NitSot> nitsots;
  SmallVector<NonSequence> nonSequences;
};

/// The ops of `op`'s body (top level) that the yield or an op with side
/// effects needs, directly or not. The others are the dead ops that
/// `ScanArgs::rebuild` erases: a rewrite that keeps a body value to replace
/// after `rebuild` must only keep values used by live ops.
DenseSet<Operation *> liveBodyOps(ScanOp op);

/// Whether `value` has a user in `live` (a nested user counts as its
/// ancestor in `block`) that is not in `except`.
bool hasLiveUserOutside(Value value, Block &block,
                        const DenseSet<Operation *> &live,
                        function_ref<bool(Operation *)> except);

/// Every scan under `root`, inner scans before the scans containing them
/// (post-order). Passes collect first and rewrite after: rewriting a scan
/// replaces it, which a running walk must not see.
SmallVector<ScanOp> collectScans(Operation *root);

/// `tensor.extract_slice %value[offsets] [sizes] [strides]`, or, when a
/// static size of `value` is 0 (it holds no element), a `tensor.empty` of
/// the slice's sizes: MLIR's verifier rejects every slice of such a value
/// ("offset 1 is out-of-bounds: 0 >= 0": a static offset must be below the
/// static size, even in a slice of size 0).
Value extractSliceOrEmpty(OpBuilder &b, Location loc, Value value,
                          ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes,
                          ArrayRef<OpFoldResult> strides);

/// The static row count of a stacked result: `keep` if set, else n_steps if
/// it is a constant and the scan has no `until`, else dynamic.
int64_t stackedRows(std::optional<int64_t> nSteps, bool until, int64_t keep);

/// The operand of `op` that `inner` stands for in its body when `inner` is
/// the block argument of a non-sequence; null otherwise.
Value outerNonSequence(ScanOp op, Value inner);

/// The value `v` is computed into: through the destination of each
/// destination-passing op computing it (`v` itself when none does).
Value destinationRoot(Value v);

} // namespace scan
} // namespace mlir

#endif // SCAN_SCANARGS_H
