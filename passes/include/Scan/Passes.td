//===- Passes.td - Scan dialect passes ---------------------*- tablegen -*-===//
//
// The scan rewrites (SPEC §5) and the lowerings, by their scan-opt flags.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_PASSES_TD
#define SCAN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Scan rewrites (PyTensor's scan optimizations)
//===----------------------------------------------------------------------===//

def ScanRemoveUnused : Pass<"scan-remove-unused"> {
  let summary = "Drop unused scan inputs, outputs and taps; inline constant non-sequences";
  let description = [{
    Theano's `remove_constants_and_unused_inputs_scan`, extended to taps:

    * a non-sequence defined by a constant (`arith.constant`, any
      `ConstantLike` op) is cloned into the body and dropped;
    * a non-sequence, sequence tap or mitsot tap whose block argument is
      unused is dropped. Dropping the lowest tap of a sequence moves its
      read window, so the sequence operand is sliced to keep every other
      tap reading the same rows (from the end with `go_backwards`); dropping
      the lowest mitsot tap drops the matching leading init rows (not with
      `keep`, whose rows include the init rows);
    * a nitsot whose result is unused is dropped; so is a mitsot or sitsot
      whose result is unused and whose block arguments are unused.

    Mitmot buffers are never changed. Ops with side effects in the body
    keep what they read alive. A sequence that is dropped or read at fewer
    taps (and a dropped mitsot with a dynamic init) keeps its run-time check,
    emitted before the scan, so a too-short sequence is still an error. The
    body's dead ops are left to `canonicalize`.

    ```mlir
    %r = scan.scan steps(%n) sequences(%xs[-1, 0] : tensor<?xf64>)
        nonsequences(%c2 : f64) { ^bb0(%unused: f64, %x: f64, %two: f64): ... }
    // becomes
    %s = tensor.extract_slice %xs[1] [...] [1]
    %r = scan.scan steps(%n) sequences(%s : tensor<?xf64>) {
    ^bb0(%x: f64):  %two = arith.constant 2.0 : f64 ... }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect", "::mlir::ub::UBDialect"];
  let statistics = [
    Statistic<"numInlinedConstants", "inlined-constants", "Constant non-sequences moved into the body">,
    Statistic<"numRemovedInputs", "removed-inputs", "Sequences and non-sequences dropped">,
    Statistic<"numRemovedTaps", "removed-taps", "Sequence and mitsot taps dropped">,
    Statistic<"numRemovedOutputs", "removed-outputs", "Unused outputs dropped">
  ];
}

def ScanPushOutNonSeq : Pass<"scan-push-out-non-seq"> {
  let summary = "Hoist body work that depends only on non-sequences out of scans";
  let description = [{
    Theano's `PushOutNonSeqScan` (loop-invariant code motion): a pure op of
    the body whose operands are non-sequences, constants or results of other
    such ops computes the same value in every step. It is computed once
    before the scan (with the constants it needs) and its results still
    used in the body become new non-sequences.

    Not hoisted: ops with memory effects or that are not speculatable (an
    op must be safe to run even when the scan runs zero steps), ops that
    use no non-sequence (constants stay where they are), and values used as
    the destination (`outs`) of a destination-style op, which every step
    overwrites.

    The sizes of rows are the same in every step: `tensor.dim` of a
    sequence tap, mitmot, mitsot or sitsot block argument (constant index)
    becomes a new non-sequence, the dimension of the stacked outer value (of
    the init for a sitsot).

    Run-time checks (`scan.check`) whose operands are invariant are hoisted
    too, in body order, as long as no other op with effects (a check that
    stays, a call, a nested scan with effects) precedes them in the body:
    the first failing check is then the one the loop would have reported.
    A hoisted check is guarded by `n_steps > 0`, so a scan that runs no step
    fails where it failed before and nowhere else. A check that stays in the
    loop does not stop pure ops from leaving it, except the ops that may
    rely on it (linalg, tensor and elementwise ops on shaped values, whose
    result is undefined when sizes disagree or an index is out of bounds):
    those are hoisted only when every check before them is hoisted, under
    an `scf.if` on the same `n_steps > 0` guard.

    ```mlir
    %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%w : f64, %b : f64) {
    ^bb0(%h: f64, %ww: f64, %bb: f64):
      %wb = arith.mulf %ww, %bb : f64     // invariant
      %y = arith.addf %h, %wb : f64
      scan.yield %y : f64
    } -> (tensor<?xf64>)
    // becomes
    %wb = arith.mulf %w, %b : f64
    %r = scan.scan steps(%n) sitsot(%h0 : f64) nonsequences(%wb : f64) { ... }
    ```

    A check of non-sequences:

    ```mlir
    scan.scan steps(%n) ... nonsequences(%k1, %k2 : index, index) {
    ^bb0(..., %a: index, %b: index):
      %bad = arith.cmpi ne, %a, %b : index
      scan.check %bad code 100 id 0 (%a, %b : index, index)
      ...
    // becomes
    %c0 = arith.constant 0 : index
    %runs = arith.cmpi sgt, %n, %c0 : index
    %bad = arith.cmpi ne, %k1, %k2 : index
    %fails = arith.andi %runs, %bad : i1
    scan.check %fails code 100 id 0 (%k1, %k2 : index, index)
    scan.scan steps(%n) ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numHoisted", "hoisted", "Number of body ops moved out of scans">,
    Statistic<"numChecks", "hoisted-checks",
              "Number of scan.check ops moved before their scan">,
    Statistic<"numRowDims", "row-dims",
              "Number of tensor.dim ops of rows made non-sequences">
  ];
}

def ScanSaveMem : Pass<"scan-save-mem"> {
  let summary = "Keep only the last rows of scan outputs whose users read only those";
  let description = [{
    Theano's `ScanSaveMem`. For each mitsot, sitsot and nitsot output
    (never a mitmot) whose users all read rows at a fixed distance from its
    end, the output gets `keep = k` where `k` is the largest distance, and
    its type `tensor<k x S>`; after lowering it is a ring buffer of `k`
    rows, so memory no longer grows with `n_steps`.

    Recognized reads: `tensor.extract` and `tensor.extract_slice` (unit
    stride, static row count) whose first row is `rows - c`, written as
    `arith.subi %rows, %c` or `arith.addi %rows, %-c`, where `%rows` is
    `tensor.dim %result, 0` or the scan's `n_steps` (without `until`), or a
    constant row of a statically sized result. Any other use (the whole
    output, a row counted from the start) leaves the output alone. The
    users are rewritten to read row `k - c` of the kept rows; run
    `canonicalize` afterwards to drop the old index computations.
    `tensor.dim %result, 0` may also have other users (the bounds check of
    `result[-1]` that the graph builder emits): without `until` it becomes
    `n_steps`, which it always equals, so that memory stays constant when
    the number of steps is only known at run time. With `until` it is the
    number of steps taken, which the kept rows no longer tell: the scan
    gets a step counter, an `index` sitsot from 0 yielding `count + 1` with
    `keep = 1` (one per scan, shared by its outputs), and the row count
    becomes its kept row.

    The kept rows include the init rows of a state, so a read whose first
    row `rows - c` is before the output's first row (`result[-1]` of a scan
    that ran no step) would read them instead of failing: each rewritten
    read gets a `cf.assert` that `rows >= c` (`n_steps`, or the step counter
    with `until`, which such a scan then always gets), with the message
    scan-runtime-verification gives the read itself.

    ```mlir
    %r = scan.scan steps(%k) sitsot(%ones : tensor<?xf64>) ... -> (tensor<?x?xf64>)
    %last = arith.subi %k, %c1 : index
    %a = tensor.extract_slice %r[%last, 0] [1, %len] [1, 1] ...
    // becomes
    %r = scan.scan steps(%k) sitsot(%ones : tensor<?xf64>) ... keep [1] -> (tensor<1x?xf64>)
    %ok = arith.cmpi sge, %k, %c1 : index
    cf.assert %ok, "...: slice out of bounds along dimension 0 (...)"
    %a = tensor.extract_slice %r[0, 0] [1, %len] [1, 1] ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect", "::mlir::tensor::TensorDialect", "::mlir::ub::UBDialect"];
  let statistics = [
    Statistic<"numKept", "trimmed-outputs", "Number of outputs given a keep count">
  ];
}

def ScanMerge : Pass<"scan-merge"> {
  let summary = "Fuse independent scans that run the same steps into one";
  let description = [{
    Theano's `ScanMerge`. Two scans of the same block are merged when they
    have the same `n_steps` (the same value, or equal constants), the same
    direction, no `until` (their stop conditions would differ), bodies
    without side effects, and the later one does not use, directly or
    indirectly, a result of the earlier one (merging would create a cycle).
    The merged scan takes the items of both (first the earlier scan's, in
    each group) and its body runs both bodies; it is placed where the later
    scan was, and the side-effect-free ops in between that used the earlier
    scan's results move after it. Run `scan-merge-inouts` next: the two
    scans usually share inputs.

    ```mlir
    %a = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {...} -> (tensor<?xf64>)
    %b = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) {...} -> (tensor<?xf64>)
    // becomes
    %ab:2 = scan.scan steps(%n) sequences(%xs, %xs : ...) {...} -> (tensor<?xf64>, tensor<?xf64>)
    ```
  }];
  let statistics = [
    Statistic<"numMerged", "merged", "Number of scan pairs merged">
  ];
}

def ScanMergeInouts : Pass<"scan-merge-inouts"> {
  let summary = "Merge identical inputs and identical outputs of a scan";
  let description = [{
    Theano's `scan_merge_inouts`. Sequences with the same outer value and
    the same taps, and non-sequences with the same outer value, share one
    block argument; the body is then CSE'd. Nitsot outputs that yield the
    same value, and mitsot/sitsot outputs that start from the same init
    (with the same taps) and yield the same value, share one result (the
    states hold equal values at every step).
  }];
  let statistics = [
    Statistic<"numMergedInputs", "merged-inputs", "Duplicate inputs merged">,
    Statistic<"numMergedOutputs", "merged-outputs", "Duplicate outputs merged">
  ];
}

def ScanPushOutSeq : Pass<"scan-push-out-seq"> {
  let summary = "Compute body work that depends only on sequences for all rows, before the scan";
  let description = [{
    Theano's `PushOutSeqScan`. A pure body op whose operands are sequence
    taps, non-sequences, constants or results of other such ops (at least
    one coming from a sequence) computes the same row for step `t` whether
    it runs inside or outside the loop. It runs once before the scan on all
    the rows the loop will read, and its results still used in the body
    become new sequences (tap 0).

    Batched forms: elementwise `arith`/`math` ops become a `linalg.generic`
    over (row, element); linalg ops on tensors (named ones are generalized)
    get a leading parallel row dimension, non-sequence operands being
    broadcast by their indexing maps and `linalg.fill` / `tensor.empty`
    destinations re-created with the row dimension (their dynamic sizes
    must be step-invariant values). So `U·x_t`
    (`linalg.vecmat ins(%x_t, %U)`) becomes one matmul-shaped
    `linalg.generic` over all the rows of `xs`.

    An op that may rely on a run-time check (`scan.check`) still in the body
    before it -- a linalg, tensor or elementwise op on shaped values, whose
    result is undefined when sizes disagree -- is not batched: it would run
    on rows of steps whose check has not run. (`scan-push-out-non-seq` first
    moves the checks of invariant values out of the loop.) When no step
    runs, no row is batched.

    The rows computed are `max(0, min(n_steps, rows left after each tap's
    offset))`, from the end of the sequence with `go_backwards`, so that a
    too-short sequence still fails the scan's run-time check; the original
    sequences' length check is emitted before the scan (same error runtime
    as `convert-scan-to-scf`), so the error reports the user's lengths. Run
    `scan-remove-unused` afterwards to drop the sequences no longer read.

    A nitsot that yields a sequence's tap as it is (what a map's step is
    once its work is pushed out) needs no loop either: its result is
    replaced by the rows of that sequence the loop reads, a
    `tensor.extract_slice` after the scan (whose checks still run first),
    and `scan-remove-unused` drops the nitsot. A scan left with no output
    then does nothing but check its step count and lengths. Not with
    `until`, `go_backwards` or `keep`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numPushedOut", "pushed-out", "Number of body ops computed for all rows before the scan">,
    Statistic<"numForwarded", "forwarded", "Number of nitsot results replaced by rows of the sequence they yield">
  ];
}

def ScanPushOutOutput : Pass<"scan-push-out-output"> {
  let summary = "Compute nitsot rows that only need other outputs' rows after the scan";
  let description = [{
    Theano's `PushOutScanOutput` and `PushOutDot1`. A nitsot whose row is
    computed by pure, batchable ops (elementwise `arith`/`math`, linalg ops
    on tensors) from rows the scan stacks anyway — the yields of mitsot,
    sitsot and other nitsot outputs kept whole — and from non-sequences and
    constants, is dropped from the scan; the same ops run once after the
    loop on the stacked rows (a leading row dimension, as in
    `scan-push-out-seq`), and their result replaces the nitsot's.

    Typical effect: the readout `y_t = W_out·h_t` of an RNN becomes one
    matmul-shaped op on all of `h` after the loop. Work that reads a
    sequence or a state's previous value (a block argument) stays.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numPushedOut", "pushed-out", "Number of nitsot outputs computed after the scan">
  ];
}

def ScanPushOutAccumulation : Pass<"scan-push-out-accumulation"> {
  let summary = "Sum the outer products accumulated in a scan state with one contraction after the loop";
  let description = [{
    PyTensor's push-out of gradient accumulations. A sitsot matrix `acc` of
    which only the final value is used (`keep = 1`) and whose update is
    `acc + outer(a_t, b_t)` (nothing else reads `acc` but `tensor.dim`)
    holds, after the loop, `init + sum_t outer(a_t, b_t) = init + A^T B`,
    with `a_t` the rows of `A` and `b_t` those of `B`. The scan stacks `a_t`
    and `b_t` as two nitsot outputs instead, and one contraction over the
    rows after the loop, computed into the init, replaces the result: the
    loop no longer reads and writes the whole matrix every step. The
    factors may depend on anything in the step but `acc` (a state, a
    sequence, a mitmot row).

    Recognized updates, for `col` of shape `[M]` or `[M, 1]` and `row` of
    shape `[N]` or `[1, N]`: `linalg.matmul ins(col, row) outs(acc)`; an
    elementwise add (`arith.addf`/`addi` on tensors, or a `linalg.generic`
    adding two identically indexed inputs) of `acc` and a product that is a
    `linalg.matmul ins(col, row)` into zeros or a `linalg.generic`
    multiplying `col` broadcast along columns with `row` broadcast along
    rows; and one `linalg.generic` computing `acc + col * row`. Floating-
    point sums are reassociated (results change within rounding).

    ```mlir
    %r = scan.scan steps(%n) sequences(%xs, %ys : tensor<?x4xf64>, tensor<?x3xf64>)
        sitsot(%acc0 : tensor<4x3xf64>) keep [1] {
    ^bb0(%x: tensor<4xf64>, %y: tensor<3xf64>, %acc: tensor<4x3xf64>):
      %p = linalg.generic {(i, j) -> (i), (i, j) -> (j), (i, j) -> (i, j)}
          ins(%x, %y) outs(%e) { mulf }
      %next = arith.addf %acc, %p : tensor<4x3xf64>
      scan.yield %next : tensor<4x3xf64>
    } -> (tensor<1x4x3xf64>)
    // becomes
    %r:2 = scan.scan ... { scan.yield %x, %y } -> (tensor<?x4xf64>, tensor<?x3xf64>)
    %sum = linalg.generic {(i, j, t) -> (t, i), (i, j, t) -> (t, j), (i, j, t) -> (i, j)}
        ins(%r#0, %r#1) outs(%acc0) { acc + a * b }
    %res = tensor.expand_shape %sum [[0, 1], [2]] : tensor<4x3xf64> into tensor<1x4x3xf64>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numPushedOut", "pushed-out", "Number of accumulations summed after the scan">
  ];
}

def ScanReassociateAdds : Pass<"scan-reassociate-adds"> {
  let summary = "Group the step-independent terms of sums in scan bodies";
  let description = [{
    Rewrites `(r + s) + t` into `r + (s + t)` (`arith.addf`, `arith.addi`,
    same flags) in a scan body when `r` depends on a recurrent state and
    `s`, `t` do not (they come from sequences, non-sequences or constants).
    `tanh(W·h + U·x + b)` parses as `(W·h + U·x) + b`; regrouped as
    `W·h + (U·x + b)`, the bias handling becomes sequence-only work that
    `scan-push-out-seq` computes before the loop. Floating-point sums
    change within rounding.

    The same sum inside the body of an elementwise `linalg.generic` of the
    scan body (all loops parallel, the result written through the identity
    map; the graph builder fuses `tanh(W·h + U·x + b)` into one such loop)
    is split when `s` and `t` are inputs of the generic: `s + t` becomes a
    generic of its own before it, whose result is a new input.

    ```mlir
    %y = linalg.generic {...} ins(%wh, %ux, %b : ...) outs(%e : ...) {
    ^bb0(%a: f64, %c: f64, %d: f64, %o: f64):
      %0 = arith.addf %a, %c : f64
      %1 = arith.addf %0, %d : f64
      %2 = math.tanh %1 : f64
      linalg.yield %2 : f64
    }
    // becomes
    %uxb = linalg.generic {...} ins(%ux, %b : ...) outs(%e2 : ...) {
      ... arith.addf ...
    }
    %y = linalg.generic {...} ins(%wh, %ux, %b, %uxb : ...) outs(%e : ...) {
    ^bb0(%a: f64, %c: f64, %d: f64, %cd: f64, %o: f64):
      %1 = arith.addf %a, %cd : f64
      %2 = math.tanh %1 : f64
      linalg.yield %2 : f64
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numRegrouped", "regrouped", "Number of sums regrouped">
  ];
}

def ScanOptimize : Pass<"scan-optimize", "::mlir::ModuleOp"> {
  let summary = "All scan rewrites in PyTensor's order, repeated to a fixed point";
  let description = [{
    Runs, in rounds, `canonicalize`, `scan-remove-unused`,
    `scan-reassociate-adds`, `scan-push-out-non-seq`, `scan-push-out-seq`, `scan-push-out-output`,
    `scan-remove-unused`, `canonicalize`, `cse`, `scan-merge`,
    `scan-merge-inouts`, `scan-remove-unused`, `canonicalize`, `cse`,
    `scan-save-mem`, `canonicalize` — PyTensor's order: constant and unused
    inputs first, then the push-outs, then merging, and save-mem last —
    until a round leaves the module unchanged (or `max-iterations` rounds
    ran). This is what `mlir_scan.compile(optimize=True)` and
    `mlir_scan.function` (mode `FAST_RUN`) run before lowering.

    With `--mlir-pass-statistics`, besides `rounds`, every statistic of the
    round's passes that counted something is reported as
    `<pass>: <statistic>` (e.g. `scan-save-mem: trimmed-outputs`), summed
    over the rounds.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", "4",
           "Maximum number of rounds">
  ];
  let statistics = [
    Statistic<"numRounds", "rounds", "Number of rounds run">
  ];
}

def ConvertScanToSCF : Pass<"convert-scan-to-scf", "::mlir::ModuleOp"> {
  let summary = "Lower scan.scan to scf.for / scf.while, writing every output in place";
  let description = [{
    Replaces every `scan.scan` by an `scf.for` loop (an `scf.while` loop when
    the scan has `until`). The body stays on tensors; the outputs are
    buffers written row by row, so that after `one-shot-bufferize` the loop
    contains no allocation and no copy of a state or output (SPEC §5):

    * each mitsot/sitsot/nitsot output is a `memref.alloc` created before
      the loop. A step reads the rows it needs as `bufferization.to_tensor
      restrict` views of buffer rows (or of the init for rows before step
      0), runs the inlined body, and then writes each yielded row with
      `bufferization.materialize_in_destination` into a view of its row
      ("read first, write last"). `restrict` is what keeps it in place: the
      body's destination (after `eliminate-empty-tensors`) is row `t`
      itself, even when it is filled before row `t-1` is read, because the
      lowering never has two live tensor views of the same row;
    * scalar sitsot/mitsot states are also carried as `iter_args` (a shift
      register of the last `K` values), so scalar recurrences stay in
      registers, when `K <= 8`; a wider window (a mitsot tap of -10**7
      would make that many loop-carried values) is read from the output
      buffer like a tensor state. The rows before step 0 are one copy of
      the whole init, and every other per-row loop the lowering emits
      (the first rows of a mitmot ring) is an `scf.for` beyond 8 rows, so
      the size of the lowered IR never depends on a tap's magnitude;
    * a mitmot buffer is copied once before the loop (the operand is never
      modified) and updated row by row; an in tap that reads the row an out
      tap of the same step overwrites is read from a one-row scratch copy;
    * `keep = k` outputs use a ring buffer of `k` rows (`max(k, K+1)` for
      tensor states, so the row being written is never a row being read)
      and are rotated into chronological order after the loop. A sitsot of
      `keep = 1` whose step reads its state only to compute the new one,
      element by element (an accumulator `acc + x_t`, such as the `dW` of a
      checkpointed gradient), is one row: the init is written into it
      before the loop and the step's element-wise op computes into it;
    * a large non-sequence (1 MiB to 64 MiB, and at most twice the bytes of
      the scan's outputs, so that it never dominates the loop's memory) is
      read from a private copy (option `private-nonsequences`). With
      dynamic sizes the choice is made at run time: for an argument of the
      function nothing writes (`bufferization.writable = false`, as
      `mlir_scan.compile` marks them), a buffer of all its rows or of none,
      filled when needed, and an `arith.select` of it and the argument's
      buffer, so that the copy is an allocation of the function's block that
      is freed after its last use; for any other value an `scf.if` that makes
      the copy (freed when the function returns);

    Steps in blocks (option `block-steps`, 64; 0 turns it off): when some
    work around the scan can be done a block of rows at a time inside the
    loop instead of whole before or after it, the loop of steps becomes an
    `scf.for` over blocks of `block-steps` steps around an `scf.for` over the
    block's steps. Two such cases, each of which saves an array of `T` rows
    that the push-out rewrites make (`RowBlockFusion.h`):

    * a sequence computed by a linalg op on tensors whose rows are
      independent (dimension 0 of its result is a parallel loop; maps that
      are projected permutations; no `linalg.index`) and that nothing but
      the scan reads (shape queries aside): each block first computes the
      rows it reads (its steps' rows plus the taps' window), recursively
      through the producers only that op reads (`x U + b`: the product and
      the bias, 64 rows at a time). Every block computes as many rows (the
      last one starts earlier), so the tiles' buffers are allocated once;
    * a nitsot (or a sitsot whose step never reads its state) read only by
      shape queries and by `linalg.generic`s that sum over its rows
      (`out + f(rows[r], ...)`, `r` a reduction loop over the rows of a
      unit-stride slice of it; the gradient's pushed-out `dW += H^T D`),
      chained through their inits, whose row sizes are known before the
      loop (constants, non-sequences, sizes of non-sequences, or a sitsot's
      init) and whose other operands can be computed before it (by ops that
      touch no memory and cannot trap, moved there; the program's checks
      stay in place and in order): its buffer holds one block's rows, and
      after each block every sum adds the rows of its slice that the block
      wrote into an accumulator carried by the loop over blocks. Nothing is
      read out of bounds before the checks after the loop: a moved generic
      runs only when its operands' sizes agree, and a block adds nothing
      when a moved slice is not in its source or the sums' extents
      disagree (those checks then fail after the loop).

    Sums over the rows are then added in a different order (by blocks).
    Not with `until` (the number of steps is unknown) nor, for sequences,
    with `go_backwards`; the GPU pipelines set `block-steps=0` (the
    kernel-forming passes expect one loop of steps).

    ```mlir
    // %xu = linalg.generic (X U, rows parallel) ; scan reads %xu as a sequence
    // lowered: scf.for %b = 0 to %n step 64 {
    //            %tile = (X[%b' : %b' + 64] U) ; %b' = min(%b, %n - min(64, %n))
    //            scf.for %t = %b to min(%b + 64, %n) { ... row %t - %b' of %tile ... } }
    ```

    Rows without elements (a static row size 0, `tensor<?x0xf32>`) are
    read as a `tensor.empty` and not written: MLIR's verifiers reject every
    slice of such a value, even of size 0. A module using a type whose
    static sizes multiply past 2**63 - 1 elements is refused with a located
    error (see `scan-check-lowerable`).

    Run-time checks (`n_steps >= 0`, sequences and mitmot buffers long
    enough, dynamic mitsot inits with `K` rows) are compiled in: a failed
    check calls the run-time library's `@__mlir_scan_fail(code, item, have,
    need)` (declared in the module), which ends the call before any step
    runs; `mlir_scan.compile` raises it as a Python `ValueError`. The rows
    a sequence or mitmot needs, `n_steps + window`, are compared unsigned:
    both terms are below 2**63, so the sum is exact where it wraps as a
    signed number (`n_steps = 2**63 - 1`), and the message gives it. (The loop
    also runs zero steps after a failed check, so nothing is read out of
    bounds even where the failure function returns.) Inside the loop, a
    yielded row with dynamic sizes is checked against its buffer's rows
    before it is written (the verifier only checks types: a state yielded
    longer than its init would be written past its row).

    With `until`, the number of steps taken is unknown and `n_steps` may be
    huge: each output without `keep` starts with a buffer of
    `min(n_steps, ~1 MiB of rows)` rows, and when a step finds it full, it
    moves the rows written so far into one twice as large (at most
    `n_steps` rows). The buffer is carried by the `scf.while`; the buffer
    deallocation pipeline frees the old one.

    A nitsot whose rows have dynamic sizes (a row's size computed by the
    step, known to no one before it runs) gets its buffer the way Theano
    allocates such an output: from the first step's row. The buffer is
    carried by the loop; it starts with those sizes 0, step 0 allocates one
    with the sizes of its row, and every later step checks that its row has
    the same sizes (`@__mlir_scan_fail` with code 8 otherwise: `ValueError`
    "a step's row has size ... where the first step's rows have ..."). With
    zero steps the result has zero rows and 0 for every dynamic row size;
    with `until` the buffer also grows; with `keep` its ring is allocated
    by the first step. Such a row is computed in its own buffer and copied
    into the output (the output's buffer does not exist before step 0).

    ```mlir
    // %k rows per step, %k a non-sequence: rows of type tensor<?xf32>
    %r = scan.scan steps(%n) nonsequences(%k : index) {
    ^bb0(%kk: index):
      %row = tensor.empty(%kk) : tensor<?xf32>
      ...
      scan.yield %filled : tensor<?xf32>
    } -> (tensor<?x?xf32>)
    // lowered: %buf0 = memref.alloc(%n, %c0) : memref<?x?xf32>
    //          scf.for ... iter_args(%buf = %buf0) {
    //            ... %b = scf.if (%t == 0) { memref.alloc(%n, dim(row)) }
    //                     else { check dim(row) == dim(%buf, 1); %buf }
    //            write the row into %b; scf.yield %b }
    ```

    Guard: after lowering, `arith.xori %x, %x` and `arith.cmpi <p>, %x, %x`
    on tensors with dynamic sizes (inlining makes them from a value passed
    twice as a non-sequence) are replaced by a `linalg.fill` of their value:
    the LLVM 22.1 folders of these ops abort on dynamically shaped tensors.

    Before a body is inlined, its elementwise `arith`/`math` ops on tensors
    become `linalg.generic` (as `convert-elementwise-to-linalg` does, without
    folding: the LLVM 22.1 folders of `arith.xori %x, %x` and `arith.cmpi <p>,
    %x, %x` abort on tensors with dynamic sizes, and inlining makes such ops
    from a value passed twice as a non-sequence), a `tensor.empty` (or
    `linalg.fill` of one) that several ops take as their destination is
    copied for each of them, and every `tensor.empty` whose destination
    family feeds more than one yielded row, or a yielded value that is
    computed into again, becomes
    `bufferization.alloc_tensor`: `eliminate-empty-tensors` would give it one
    output row, which the write of that row (a memref write one-shot-bufferize
    does not see) would clobber while another row still reads it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"blockSteps", "block-steps", "int64_t", /*default=*/"64",
           "Steps per block when the loop runs in blocks (a sequence computed "
           "by a row-wise linalg op used only by the scan, or a nitsot read "
           "only by sums over its rows); 0 never runs in blocks">,
    Option<"privateNonSequences", "private-nonsequences", "bool", /*default=*/"true",
           "Copy each non-sequence of 1 MiB to 64 MiB, and at most twice the "
           "bytes of the scan's outputs, into a fresh buffer before the loop "
           "(the run-time allocator's huge pages: a matrix every step reads, "
           "such as an RNN's W, then does not depend on where the caller's "
           "4 KiB pages fall in the L2 cache); decided at run time for "
           "dynamic sizes. The GPU pipelines turn it off">
  ];
  let statistics = [
    Statistic<"numScansLowered", "scans-lowered", "Number of scan.scan ops lowered">
  ];
}

def ScanContiguousCallBoundaries
    : Pass<"scan-contiguous-call-boundaries", "::mlir::ModuleOp"> {
  let summary = "Pass views into and out of private functions as contiguous copies";
  let description = [{
    Runs right after `one-shot-bufferize`. With
    `function-boundary-type-conversion=identity-layout-map`, a function's
    memref arguments and results have the identity layout, and
    one-shot-bufferize retypes a view returned by a function, or passed to
    one, with a `memref.cast` to that layout when the cast verifies: a view
    of run-time strides such as `memref<?x?xf64, strided<[?, 1]>>` (the
    first rows and columns of a matrix) becomes `memref<?x?xf64>`. The cast
    changes the type only; the buffer is still not contiguous, and code
    that relies on the identity layout (`memref.copy`'s `memcpy`,
    `memref.collapse_shape`) then reads the wrong elements.

    This pass replaces each such cast whose source is not provably
    contiguous (static strides and offset equal to the identity layout's)
    by a new buffer holding a copy of the view, when the cast feeds a
    `func.return` of a private function or a `func.call` operand; after a
    call whose callee may write that argument, the copy is written back to
    the view. A public function's results keep their views: the run-time
    library reads returned buffers through their strides.

    ```mlir
    %v = memref.subview %buf[0, 0] [%m, %k] [1, 1]
        : memref<?x?xf64> to memref<?x?xf64, strided<[?, 1]>>
    %c = memref.cast %v : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
    return %c : memref<?x?xf64>
    // becomes
    %new = memref.alloc(%m, %k) : memref<?x?xf64>
    memref.copy %v, %new : memref<?x?xf64, strided<[?, 1]>> to memref<?x?xf64>
    return %new : memref<?x?xf64>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numCopies", "boundary-copies",
              "Number of views copied at a function boundary">
  ];
}

def ScanOwnPublicResults : Pass<"scan-own-public-results", "::mlir::ModuleOp"> {
  let summary = "Make every memref returned by a public function a fresh allocation";
  let description = [{
    Runs after `one-shot-bufferize`, before the buffer deallocation
    pipeline. A public function's caller (the Python runtime) takes
    ownership of each returned memref and frees it. This pass copies into a
    new `memref.alloc` every returned memref that is not rooted in an
    allocation of the function itself: function arguments and their views,
    globals, and a buffer returned a second time. The deallocation pipeline
    then sees owned results only, and never needs a run-time ownership
    assertion.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numCopies", "result-copies", "Number of returned memrefs copied">
  ];
}

def ScanCheckLowerable : Pass<"scan-check-lowerable", "::mlir::ModuleOp"> {
  let summary = "Reject bufferized IR that the LLVM 22 lowering would abort on";
  let description = [{
    Some valid programs make upstream passes of LLVM 22.1 abort on an
    assertion (the process dies) instead of reporting an error. The CPU
    pipeline runs this check before them and reports a located error:

    * `memref.expand_shape` expanding one reassociation group into more
      than one dynamic size (`expand-strided-metadata` asserts "There must
      be at most one dynamic size per group");
    * `memref.expand_shape` expanding a group into a dynamic size beside a
      static size 0 (`expand-strided-metadata` then `lower-affine` divide by
      0: "division by non-positive value is not supported", an error they
      report without failing, on which the Python bindings' `PassManager.run`
      aborts; mlir_scan's runtime runs pipelines through its own runner,
      which turns any such report into an `MLIRError`);
    * a memref (or tensor) type whose static sizes multiply to more than
      2**63 - 1 elements (`memref<2305843009213693952x8xf64>`, the buffer
      of such a static tensor result): the lowering asserts "integer
      overflow in size computation" computing its strides, and no buffer
      can have that many elements anyway. `convert-scan-to-scf` makes the
      same check first (its row views would assert).
  }];
}

def ScanRuntimeVerification : Pass<"scan-runtime-verification", "::mlir::ModuleOp"> {
  let summary = "Check at run time what MLIR leaves undefined in a program's own ops";
  let description = [{
    MLIR leaves undefined what an op does with run-time sizes that do not
    match or indices out of bounds: `arith.mulf %row, %w : tensor<?xf64>`
    with `%w` of another length reads garbage, truncates or crashes. This
    pass makes such programs fail instead, with a message naming the op's
    location (`mlir_scan.compile` runs it unless `checks=False`; so does
    `scan-to-llvm` unless `checks=false`). It runs on the program's own ops,
    before `convert-scan-to-scf`, so that the lowering's ops (correct by
    construction) cost nothing:

    * elementwise `arith`/`math` ops on tensors first become `linalg.generic`
      (`convert-elementwise-to-linalg`, without folding);
    * every op with a `RuntimeVerifiableOpInterface` model then gets its
      upstream checks as `cf.assert` ops (linalg operand sizes against the
      loop ranges, `tensor.extract`/`insert` indices, `tensor.cast` sizes,
      memref accesses...), with the message `"<file>:<line>:<col>: <what>"`;
    * linalg ops whose indexing maps take every operand dimension from one
      loop or a constant (elementwise ops, broadcasts, transposes, matrix
      products) get the upstream model's checks in fewer ops: unless a loop
      is empty, each dimension equals its loop's size (the first operand
      dimension that is that loop) and a constant position is inside its
      dimension. A dimension that is its loop's own size (a `tensor.empty`
      init made from the inputs' sizes) needs no check. The upstream model
      adds, for every dimension, two asserts on `min`/`max` arithmetic that
      no canonicalization folds: they were 834 of the 944 asserts of the
      LSTM tutorial's training step. Other maps (`d0 + d1`) keep it.
    * `tensor.extract_slice` and `tensor.insert_slice` get this pass's own
      bounds check: a size >= 0 and, unless the size is 0, first and last
      position inside the dimension. (The upstream model of LLVM 22.1 checks
      the offset of an empty slice too, rejecting valid programs, and has no
      model for insert_slice.)
    * ops that take sizes on trust get this pass's own checks:
      `tensor.reshape` / `memref.reshape` (the shape operand's sizes >= 0,
      equal to the result type's static sizes, with as many elements as the
      source: 4 elements read as 3 x 3 read past the source),
      `tensor.expand_shape` / `memref.expand_shape` (each group's output
      sizes >= 0 and multiplying to the size they split; this replaces the
      upstream memref model, which only checks divisibility by the static
      sizes), `tensor.collapse_shape` / `memref.collapse_shape` (a dynamic
      group's product fits in 64 bits) and `tensor.pad` (padding >= 0, the
      padded size fits in 64 bits). Products are computed with
      `arith.mului_extended`: a size of 0 makes a product exact whatever the
      other sizes.
    * integer division and remainder (`divsi`, `divui`, `remsi`, `remui`,
      `ceildivsi`, `ceildivui`, `floordivsi`) on scalars, and so inside the
      linalg bodies of elementwise ops on tensors: a zero divisor, and for
      the signed ones the minimum value divided by -1, make the x86
      division trap (SIGFPE). No check where the divisor cannot be 0 (or
      -1): a constant, or the graph builder's guarded `//` and `%`,
      `select(y == 0 or y == -1, 1, y)`. Vector divisions are not checked.

    `scan-lower-asserts` later turns each `cf.assert` into a call of the
    run-time library, which ends the call with a `ValueError`.

    ```mlir
    %m = arith.mulf %row, %w : tensor<?xf64>
    // becomes (after folding)
    %d0 = tensor.dim %row, %c0 ...   %d1 = tensor.dim %w, %c0
    %same = arith.cmpi eq, ...
    cf.assert %same, "model.mlir:7:10: dimension #0 of input/output operand #1 is incompatible with inferred dimension size"
    %m = linalg.generic ... ins(%row, %w : ...) ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::index::IndexDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numVerified", "verified-ops", "Ops given run-time checks">
  ];
}

def ScanCheckAllocations : Pass<"scan-check-allocations", "::mlir::ModuleOp"> {
  let summary = "Check every buffer size at run time before it is allocated";
  let description = [{
    The LLVM lowering of `memref.alloc` multiplies the sizes by the element
    size without checking: a negative size, or a byte count that does not
    fit in 64 bits (`n_steps * row_bytes` for `n_steps = 2**61 + 1`), wraps
    into a small allocation that the program then writes past. This pass
    runs on bufferized IR and puts before every `memref.alloc` and
    `memref.alloca` whose byte count is not a known small constant the
    checked product

        bytes = element_bytes * size_0 * ... * size_{r-1}

    (each size >= 0, each product computed with `arith.mului_extended` and
    required to stay below 2**63 for `memref.alloc`, at most 1 MiB for
    `memref.alloca`, which would otherwise overflow the thread's stack). A
    bad size calls the run-time library's `@__mlir_scan_fail_alloc(
    element_bytes, rank, sizes, limit)`, which ends the call (`ValueError`
    for a negative size, `MemoryError` otherwise, naming the shape). An
    allocation whose constant byte count is over the limit fails
    unconditionally at the same place. A size that fits but cannot be
    served is the allocator's `MemoryError` (python/runtime/). A buffer
    with a size of 0 holds no byte, but NumPy's rule still applies to its
    shape: the element size times the sizes other than 0 must stay below
    2**63 (`np.empty((2**62, 0))` raises), else the call fails with
    `ValueError` before anything runs (a loop of `2**62` steps writing empty
    rows would otherwise run for as long as that size says).

    A *static* `memref.alloca` over the stack limit cannot be checked where
    it is: LLVM allocates static allocas in the function's prologue (the
    caller's, once inlined), before any check runs, and the frame alone
    runs past the thread's stack. Such an alloca becomes a `memref.alloc`
    (checked as above) with a `memref.dealloc` before the terminator of its
    block, when its buffer dies there: every use of it and of its views is
    in that block and none hands it on (the terminator, a call or loop
    returning a memref). An alloca in a loop body is then freed every
    iteration instead of piling up on the stack. One whose buffer outlives
    its block is a compile-time error naming the op and its byte count.

    ```mlir
    %buf = memref.alloc(%n) : memref<?x4xf64>
    // becomes
    %n64 = arith.index_cast %n : index to i64
    %lo, %hi = arith.mului_extended %c32, %n64 : i64   // 8 * 4 * n
    ...
    scf.if %bad { ... func.call @__mlir_scan_fail_alloc(%c8, %c2, %sizes) }
    %buf = memref.alloc(%n) : memref<?x4xf64>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numChecked", "checked-allocations", "Allocations given a size check">,
    Statistic<"numMovedToHeap", "allocas-moved-to-heap", "Static allocas too large for the stack made heap allocations">
  ];
}

def ScanLowerChecks : Pass<"scan-lower-checks", "::mlir::ModuleOp"> {
  let summary = "Lower scan.check to scf.if and a call of the run-time library";
  let description = [{
    Each `scan.check %bad code C id I (%have, %need)` becomes

    ```mlir
    scf.if %bad {
      func.call @__mlir_scan_fail(%C, %I, %have_i64, %need_i64)
          : (i64, i64, i64, i64) -> ()
    }
    ```

    (`index` operands cast to `i64`), and `@__mlir_scan_fail` is declared in
    the module if it is not. The call does not return: the run-time library
    ends the call of the compiled function with the error. The CPU and GPU
    pipelines run this pass after the scan rewrites (which understand
    `scan.check`, see `scan-push-out-non-seq`) and before
    `convert-scan-to-scf`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numLowered", "lowered-checks", "scan.check ops lowered">
  ];
}

def ScanLowerAsserts : Pass<"scan-lower-asserts", "::mlir::ModuleOp"> {
  let summary = "Turn cf.assert into a call of the run-time library that raises instead of aborting";
  let description = [{
    `cf.assert` lowers upstream to a print and `abort()`, which kills the
    Python process. `generate-runtime-verification` (which `mlir_scan.compile`
    runs on raw IR unless `checks=False`) emits one `cf.assert` per run-time
    condition of the ops it verifies (`linalg` operand sizes, slice and
    index bounds...). This pass rewrites each one into

    ```mlir
    scf.if %not_ok {
      func.call @__mlir_scan_fail_message(%message) : (!llvm.ptr) -> ()
    }
    ```

    where `%message` is a constant string: for a run-time verification
    failure, the verified op's location and what failed (e.g.
    `"model.mlir":6:10: dimension #0 of input/output operand #1 is
    incompatible with inferred dimension size`), otherwise the assertion's
    own message. The call ends the call of the compiled function: Python
    raises `ValueError` with the message. Asserts in device code (inside a
    `gpu.module`, or any symbol table nested in the module) are left to the
    GPU lowering.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numLowered", "lowered-asserts", "cf.assert ops lowered">
  ];
}

def ScanLowerI1Access : Pass<"scan-lower-i1-access", "::mlir::ModuleOp"> {
  let summary = "Lower memref.load/store of i1 to llvm.load/store (works around an LLVM 22 assertion)";
  let description = [{
    The LLVM 22.1 `memref.load`/`memref.store` lowerings assert (abort the
    process) on `i1` elements, which bufferized boolean tensors and the
    buffer deallocation helpers both produce. This pass lowers exactly those
    accesses to `llvm.load`/`llvm.store` (one byte per `i1`, as LLVM lays
    them out) with the same address computation; everything else is left to
    `convert-to-llvm`. Run it right before `convert-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ScanLowerSignedStrideAccess
    : Pass<"scan-lower-signed-stride-access", "::mlir::ModuleOp"> {
  let summary = "Lower memref.load/store of views whose strides may be negative without `nuw` (works around an LLVM 22 miscompile)";
  let description = [{
    The LLVM 22.1 `memref.load`/`memref.store` lowerings compute the address
    with `getelementptr inbounds|nuw` and `mul nuw`/`add nuw` for every
    `index * stride` term. A negative stride wraps as an unsigned number, so
    the address of an in-bounds element of a reversed view is poison, and
    LLVM's optimizer reads or writes whatever it then computes (the gradient
    of a scan reads its forward states backwards through such views). This
    pass lowers every load and store whose memref's strides are not all
    statically non-negative (a dynamic stride may be negative) with
    `getelementptr inbounds` and signed (`nsw`) index arithmetic, which hold
    for every in-bounds access; all others keep the upstream lowering. Vector
    loads and stores, `memref.copy` and the views themselves carry no such
    flags in LLVM 22.1. Run it before `finalize-memref-to-llvm`.

    ```mlir
    %r = memref.load %rev[%i, %j] : memref<?x4xf64, strided<[-4, 1], offset: ?>>
    // becomes llvm.load of llvm.getelementptr inbounds %base[%lin], where
    // %lin = %i * -4 + %j is computed with `mul nsw`/`add nsw` only
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ScanFreeBuffersEarly : Pass<"scan-free-buffers-early", "::mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use instead of at the end of its block";
  let description = [{
    Runs after the buffer deallocation pipeline (and
    `convert-bufferization-to-memref`), which frees a buffer at the end of
    the block that owns it: every temporary of a function lived until the
    function returned. A `memref.dealloc` of a `memref.alloc` moves up to
    just after the last operation of its block that uses the buffer or a
    view of it (`BufferViewFlowAnalysis`: subviews, casts, values yielded by
    loops and branches), so the next phase of the program reuses the memory
    (the run-time allocator keeps freed blocks). A dealloc stays where it is
    when a use is outside its block, or when a user derives a buffer or an
    address the analysis does not follow.

    On the gradient of an RNN, the forward loop's pushed-out `x U` (T x H)
    is freed when the forward loop ends, and the backward loop's stacked
    deltas take its place:

    ```mlir
    %xu = memref.alloc(%t, %h) : memref<?x?xf64>
    scf.for ... { ... reads %xu ... }      // the forward loop
    memref.dealloc %xu : memref<?x?xf64>   // moved here from the end
    %deltas = memref.alloc(%t, %h) : memref<?x?xf64>
    scf.for ... { ... }                    // the backward loop
    ```

    Part of the CPU lowering (`scan-bufferize`, `scan-bufferize-loops`,
    `scan-to-llvm`); not of the GPU one, whose deallocations become
    asynchronous device operations ordered by `scan-gpu-async`.
  }];
  let statistics = [
    Statistic<"numMoved", "moved", "Number of deallocations moved up to the last use">
  ];
}

def ScanOrderLinalgLoops : Pass<"scan-order-linalg-loops", "::mlir::func::FuncOp"> {
  let summary = "Order the loops of linalg ops so that the innermost one vectorizes";
  let description = [{
    `convert-linalg-to-loops` nests loops in the order of a linalg op's
    iteration dimensions. For the contractions of a scan body that order is
    often the worst one: `linalg.vecmat` (`h^T W`, the RNN step) iterates
    the reduction innermost over a column of `W`. This pass generalizes
    named contractions (matmul, matvec, vecmat, dot, batch_matmul) and
    interchanges every `linalg.generic` so that the innermost loop is the
    dimension that is the contiguous (last) dimension of the most operands,
    preferring a parallel one, so LLVM's loop vectorizer sees unit-stride
    loads and stores. The floating-point ops of an op with a reduction get
    `fastmath<contract>` (multiply-adds become FMAs); when the innermost
    dimension is a reduction (a row-major matvec or a dot product) they also
    get `reassoc` so the reduction may be vectorized. Both change results
    within rounding.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numInterchanged", "interchanged", "Number of linalg ops whose loops were reordered">,
    Statistic<"numReassociated", "reassociated", "Number of reductions marked reassociable">
  ];
}

def ScanCallBlas : Pass<"scan-call-blas", "::mlir::ModuleOp"> {
  let summary = "Run large f32/f64 matrix products through BLAS when their layout allows";
  let description = [{
    Runs on buffers, before `scan-order-linalg-loops`. A linalg contraction
    of `f32` or `f64` operands with one `k`, one `n` and one `m` dimension
    (a matrix product in any of its transposed forms: `linalg.matmul`, the
    `x.T @ y` and `x @ y.T` generics the builder emits), or several `m`
    dimensions that are consecutive in contiguous (identity-layout) `A` and
    `C` (`dot(tensor3, matrix)`: they are collapsed into one), becomes:

    * views that present the operands as `A` (m x k), `B` (k x n) and
      `C` (m x n) (`memref.collapse_shape`, then `memref.transpose` where
      the op reads an operand transposed), cast to fully dynamic strided
      layouts;
    * when the op's work `m * n * k` reaches `min-work` (compared at run
      time when the sizes are dynamic; an op statically below it is left
      alone), a call of the run-time library's
      `@mlir_scan_blas_gemm_<f32|f64>(A, B, C, accumulate) -> i32`, which
      computes `C += A B` with BLAS's `?gemm` and returns 1 (`C = A B` when
      `accumulate` is 0: the op's output was filled with zeros by a
      `linalg.fill` right before it, which then runs only on the op's own
      path), or returns 0 without touching anything when the library has
      no BLAS, a layout is not one BLAS takes (a stride that is neither 1
      nor a leading dimension, negative or zero strides, sizes beyond
      32-bit BLAS integers, an output overlapping an input), or the product
      is thin (fewer than 16 rows, columns or terms);
    * the original op, run when the call returned 0 or was not made.

    A product outside the function's loops (a top-level `dot`, not a scan
    step's) runs once per call, and its generated loops (vector code for
    every layout and size tail) were most of the compile time of a program
    of products. Unless `keep-loops` is set, such a product is instead
    replaced (with the zero fill of its output right before it) by a call of
    `@mlir_scan_gemm_<f32|f64>(A, B, C, accumulate)`, which always computes
    it: through BLAS's `?gemm` whatever its size (once per call, the call
    costs nothing next to the product), on row-major copies of the operands
    whose layout BLAS cannot take (and of an output overlapping an
    operand); without BLAS, in the run-time library's own loops.

    The generated loops are fastest for the small and thin products of a
    scan step (no call, no packing); OpenBLAS's packed, cache-blocked kernels
    for large ones. Matrix-vector products stay loops: the generated ones
    stream the matrix as fast as `?gemv`. The summation order of BLAS
    differs from the loops', so results agree to rounding, not bit for bit.
    `mlir_scan.compile(..., blas=False)` leaves this pass out.

    Example (`A @ B` of dynamic sizes, f64):

    ```mlir
    linalg.matmul ins(%A, %B : memref<?x?xf64>, memref<?x?xf64>)
                  outs(%C : memref<?x?xf64>)
    // becomes
    %work = ... m * n * k ...
    %large = arith.cmpi sge, %work, %c65536 : index
    %done = scf.if %large -> (i32) {
      %r = func.call @mlir_scan_blas_gemm_f64(%a, %b, %c, %c1_i32) : (...) -> i32
      scf.yield %r : i32
    } else {
      scf.yield %c0_i32 : i32
    }
    %fallback = arith.cmpi eq, %done, %c0_i32 : i32
    scf.if %fallback {
      linalg.matmul ins(%A, %B : ...) outs(%C : ...)
    }
    ```

    (that form when the product is inside a loop, or with `keep-loops`;
    outside loops, by default:)

    ```mlir
    func.call @mlir_scan_gemm_f64(%a, %b, %c, %c1_i32) : (...) -> ()
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"1 << 16",
           "Products of fewer than this many multiply-adds (m * n * k) stay "
           "generated loops (compared at run time for dynamic sizes inside "
           "loops; statically outside)">,
    Option<"keepLoops", "keep-loops", "bool", /*default=*/"false",
           "Keep the op's generated loops as the fallback of every product, "
           "not only of those inside a loop">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numCalls", "calls", "Number of contractions given a BLAS call">,
    Statistic<"numLibraryProducts", "library-products",
              "Number of them left to the run-time library entirely (outside loops)">
  ];
}

def ScanParallelizeLinalg : Pass<"scan-parallelize-linalg", "::mlir::ModuleOp"> {
  let summary = "Run the iterations of large linalg ops on every core";
  let description = [{
    Runs on buffers, after `scan-order-linalg-loops` and before the linalg
    ops become loops. A `linalg.generic` whose work (the number of points of
    its iteration space) may reach `min-work` -- the `h^T W` of a scan step
    with a large `W`, the `x U` that `scan-push-out-seq` computes for all
    steps -- is split along a parallel dimension that indexes every output
    (so that the parts write disjoint elements): the op is outlined into a
    private function `@__mlir_scan_chunk<N>(%lo, %hi, operands...)` that
    runs it on the subviews for iterations `[lo, hi)` of that dimension, and
    replaced by a call of `@__mlir_scan_run_chunks<N>(0, size, work,
    operands...)`, a declaration with the meaning "call the chunk function
    on consecutive ranges covering [0, size)". `scan-lower-parallel-calls`
    turns those calls into calls of the run-time library's
    `__mlir_scan_parallel_for` (python/runtime/ScanParallel.cpp), which
    splits the range across the cores when the work is large enough and
    otherwise makes one call on the calling thread.

    A body that reads `linalg.index` of the split dimension gets the
    whole op's index (`lo` is added to it in the chunk function).

    An op that accumulates by addition into one output indexed by its
    innermost, parallel, dimension, which is also the contiguous dimension
    of a matrix read along a reduction (the `h^T W` of a scan step, with
    `W[k, j]`), is split along that reduction instead, when it has at least
    256 iterations and the rows of `W` are narrower than 8 KiB (tested at
    run time for dynamic sizes; else it is split along `j` as above). Split
    along `j` on two cores, each part would read less than a page of every
    row of `W`, which the cores' prefetchers stream from L3 slower than
    whole rows (the 1024 x 1024 f32 `W` of W5: 1.2-1.3x); rows of 8 KiB or
    more give each core whole pages. Part p of P = min(8, K / 128)
    parts sums iterations `[K p / P, K (p + 1) / P)` of the reduction into
    row p of a buffer of partial sums (rows padded to 16 elements); the
    caller then adds the rows to the output, in the order of p. The chunk
    function `@__mlir_scan_chunk<N>(%lo, %hi, ...)` runs parts [lo, hi), and
    the call is of `@__mlir_scan_run_parts<N>(0, P, work, ...)`, which
    `scan-lower-parallel-calls` connects to `__mlir_scan_parallel_parts`
    (ranges of whole parts). The parts depend on the sizes alone, so the
    results are the same on any number of cores; they differ from the
    unsplit op's in rounding (a sum in another order).

    Only ops whose body is free of side effects are split; an op whose
    static work is below `min-work` is left alone. A point whose body calls
    the C math library (`math.powf`, `math.exp`, ...) counts 1 + 16 per
    call, here and in the work passed to the run-time library: 100,000
    `pow` calls take a millisecond, 100,000 adds do not.

    A chunk function whose op's static work reaches `hot-work` gets the LLVM
    function attribute `"mlir-scan-hot"` (`passthrough`): the JIT's quick
    tier, which compiles the program at -O0 while the optimized code is
    compiled in the background, compiles such functions at -O1 (with -O2
    code generation; python/capi/ScanJIT.cpp). An op of that size with
    static sizes is the bulk of every step (W5's `h W` at 1024 x 1024 ran 4x
    slower at -O0); its function costs LLVM some 25 ms at -O1, on a thread
    of its own.

    Example (`h^T W`, `W` of 512 x 512):

    ```mlir
    linalg.generic {indexing_maps = [affine_map<(k, j) -> (k)>,
                                     affine_map<(k, j) -> (k, j)>,
                                     affine_map<(k, j) -> (j)>],
                    iterator_types = ["reduction", "parallel"]}
        ins(%h, %W : memref<512xf64>, memref<512x512xf64>)
        outs(%out : memref<512xf64>) {...}
    // becomes
    call @__mlir_scan_run_chunks0(%c0, %c512, %c262144, %h, %W, %out)
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"1 << 17",
           "Ops whose static work is below this many iteration points are "
           "not split (the run-time library applies the same threshold to "
           "dynamic sizes)">,
    Option<"hotWork", "hot-work", "int64_t", /*default=*/"1 << 18",
           "Chunk functions of ops whose static work reaches this many "
           "points are marked \"mlir-scan-hot\" (0: none are)">,
    Option<"splitReductions", "split-reductions", "bool", /*default=*/"true",
           "Split an accumulation by sum whose output is indexed by the "
           "contiguous dimension of a matrix along its reduction (false: "
           "along that dimension, as any other op)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numSplit", "split", "Number of linalg ops whose iterations may run on several cores">,
    Statistic<"numSplitReduction", "split-reduction",
              "Number of those split along a reduction (when it is long enough)">
  ];
}

def ScanLowerParallelCalls : Pass<"scan-lower-parallel-calls", "::mlir::ModuleOp"> {
  let summary = "Calls of the chunk functions of scan-parallelize-linalg -> the run-time library's parallel loop";
  let description = [{
    Runs on the LLVM dialect, after `convert-to-llvm`. Each call of a
    `@__mlir_scan_run_chunks<N>(lo, hi, work, args...)` declaration made by
    `scan-parallelize-linalg` becomes: `args` stored into a stack array (one
    8-byte slot each; memref descriptors are expanded into their fields by
    then), and a call of `__mlir_scan_parallel_for(lo, hi, work, @entry,
    array)` (of `__mlir_scan_parallel_parts` for a declaration
    `@__mlir_scan_run_parts<N>`), where `@__mlir_scan_chunk<N>_entry(ctx, a, b)` is a function
    this pass adds: it loads the arguments from the array and calls
    `@__mlir_scan_chunk<N>(a, b, args...)`. The declarations are removed.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ScanVectorizeLinalgLoops : Pass<"scan-vectorize-linalg-loops", "::mlir::func::FuncOp"> {
  let summary = "Lower linalg.generic ops on buffers to loops with a vector innermost loop";
  let description = [{
    Runs after `scan-order-linalg-loops` and before `convert-linalg-to-loops`,
    on buffers. A `linalg.generic` whose innermost dimension is the last,
    unit-stride, dimension of every operand it indexes, and whose body is
    elementwise `arith`/`math` ops on scalars, becomes scalar loops over the
    outer dimensions around a vector loop (`vector.load`, the body on
    vectors, `vector.store`) and a scalar loop for the remainder. Operands
    the innermost dimension does not index are loaded once per outer
    iteration and broadcast.

    This is the loop LLVM's vectorizer would write if it could: in a scan
    step the state read (`h_{t-1}`, a row of the output buffer or the init)
    and the row written may alias as far as LLVM can tell, so it leaves the
    loop scalar. Linalg's semantics say that an op's inputs are not written
    while it runs, which is what this pass relies on; an input that is also
    an output under a different indexing map is left alone.

    When the dimension outside the innermost one is a reduction (`k` of
    `h^T W` or of a matmul), it is unrolled and jammed by 4: each output
    vector is loaded once, updated for four `k` in order (results are
    unchanged) and stored once. When the dimension outside that is parallel
    and some operand does not depend on it (`B` of `C += A B`), four of its
    values run together and share each vector load of that operand (a 4x1
    register block of the matmul).

    An innermost reduction is vectorized only when the body is
    `yield %out + X` with `arith.addi`, or with `arith.addf` carrying
    `fastmath<reassoc>` (which `scan-order-linalg-loops` adds): the partial
    sums live in a vector (4 registers wide, for independent FMA chains)
    and are reduced with `vector.reduction` after the vector loop.

    Every loop the pass writes carries
    `loop_annotation = #llvm.loop_annotation<disableNonforced = true>`,
    which the upstream conversions move to the loop's latch branch
    (`llvm.loop.disable_nonforced` in LLVM IR): LLVM's vectorizer and unroller
    leave these loops alone. Left to them, they re-vectorized and unrolled the
    scalar tails and the jammed vector loops, which doubled the compile time
    of programs with dynamic sizes and made no loop faster.

    Example (`h^T W` on a 512x512 `W`, after `scan-order-linalg-loops`):

    ```mlir
    linalg.generic {indexing_maps = [affine_map<(j, k) -> (k)>,
                                     affine_map<(j, k) -> (k, j)>,
                                     affine_map<(j, k) -> (j)>],
                    iterator_types = ["reduction", "parallel"]} ...
    ```

    becomes an `scf.for` over `k` that loads `h[k]` once, and an inner
    `scf.for` over `j` in steps of 8 with `vector.load` of `W[k, j]` and of
    `y[j]`, an `arith.mulf`/`arith.addf` on `vector<8xf64>` and a
    `vector.store` to `y[j]`.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "256",
           "Width of the target's vector registers in bits (vectors are two "
           "or four registers wide)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
  let statistics = [
    Statistic<"numParallel", "parallel", "Number of ops with a parallel vector innermost loop">,
    Statistic<"numReductions", "reductions", "Number of ops with a vector reduction innermost loop">
  ];
}

def ScanExpandTanh : Pass<"scan-expand-tanh", "::mlir::func::FuncOp"> {
  let summary = "Expand f32/f64 math.tanh into arithmetic that vectorizes";
  let description = [{
    `tanh` is the activation of the RNN step; lowered as usual it becomes a
    libm call (or an `exp` libm call) per element, because LLVM has no
    vector `exp`. This pass replaces `math.tanh` on `f32` and `f64` scalars
    and vectors with arithmetic only:

    * `f64`: `x * P(x^2)` for `|x| < 0.625` (a degree-11 polynomial fit),
      otherwise `copysign(1 - 2 / (exp(2|x|) + 1), x)`, with `exp` reduced
      to `2^k * exp(r)`, `|r| <= ln(2)/2`, and `exp(r)` a degree-13
      polynomial. `|x| >= 20` gives `+-1`, NaN gives NaN. The relative
      error is below 1.4 ulp (checked against NumPy on 10^6 points in
      test_vectorize.py).
    * `f32`: the same in `f32` with its own constants (the polynomial on
      `|x| < 0.9`, degree 7; `exp(r)` degree 7), within 1.4 ulp; `|x| >= 9.5`
      gives `+-1`.

    Other element types (`f16`, `bf16`) get upstream's `exp`-based
    expansion (the `tanh` pattern of `math-expand-ops`), so that no `tanh`
    is left for `convert-math-to-llvm`, which has no lowering for it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def ScanCallVectorMath : Pass<"scan-call-vector-math", "::mlir::ModuleOp"> {
  let summary = "Vector math ops -> calls of glibc's vector math library (libmvec)";
  let description = [{
    LLVM has no vector `pow`, `exp` or `log`: `convert-math-to-llvm` turns
    `math.powf` on `vector<8xf64>` into `llvm.pow`, which the backend splits
    into eight calls of libm's scalar `pow` (10 ns each here). glibc ships
    these functions for whole registers in `libmvec.so.1`, under the names
    of the x86-64 vector function ABI, within 4 ulp. This pass replaces a
    `math` op on a 1-D `f32`/`f64` vector whose length is a multiple of the
    ISA's register width (`isa=avx2`: 4 `f64` or 8 `f32`) by calls of the
    matching function on register-wide slices (`vector.shuffle`s out and
    back in), declaring it privately in the module. Scalar ops, other
    lengths and other element types are left to `convert-math-to-llvm`.

    Functions: `pow`, `atan2` (two operands), `exp`, `exp2`, `log`, `log2`,
    `log10`, `sin`, `cos`, `tan`, `asin`, `acos`, `atan`, `sinh`, `cosh`,
    `asinh`, `acosh`, `atanh`, `erf`, `erfc`, `cbrt`. Not `log1p` and
    `expm1`: run before `scan-expand-log1p-expm1`, whose `log` and `exp`
    then stay libm's (with libmvec's, the f32 expansions lost 4-6 ulp). glibc
    2.22 has `sin`, `cos`, `exp`, `log` and `pow`, 2.35 all of them. `functions` restricts the rewrite to those named (the
    program's process must resolve their symbols: `mlir_scan.compile`
    loads libmvec and passes the functions it has); empty means all.
    `isa=none` rewrites nothing.

    Example (`isa=avx2`):

    ```mlir
    %y = math.powf %x, %p : vector<8xf64>
    // becomes
    %x0 = vector.shuffle %x, %x [0, 1, 2, 3] : vector<8xf64>, vector<8xf64>
    %p0 = vector.shuffle %p, %p [0, 1, 2, 3] : vector<8xf64>, vector<8xf64>
    %y0 = func.call @_ZGVdN4vv_pow(%x0, %p0) : (vector<4xf64>, vector<4xf64>) -> vector<4xf64>
    %x1 = vector.shuffle %x, %x [4, 5, 6, 7] : vector<8xf64>, vector<8xf64>
    %p1 = vector.shuffle %p, %p [4, 5, 6, 7] : vector<8xf64>, vector<8xf64>
    %y1 = func.call @_ZGVdN4vv_pow(%x1, %p1) : (vector<4xf64>, vector<4xf64>) -> vector<4xf64>
    %y = vector.shuffle %y0, %y1 [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf64>, vector<4xf64>
    ```
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"avx2\"",
           "The vector ISA whose functions to call: avx2 or none">,
    ListOption<"functions", "functions", "std::string",
               "The functions that may be called (libm names: pow, exp, "
               "...); empty: all the pass knows">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::vector::VectorDialect"];
  let statistics = [
    Statistic<"numCalls", "calls", "Number of vector math ops computed by libmvec calls">
  ];
}

def ScanExpandLog1pExpm1 : Pass<"scan-expand-log1p-expm1", "::mlir::func::FuncOp"> {
  let summary = "Expand f32/f64 math.log1p and math.expm1 without cancellation";
  let description = [{
    `convert-math-to-llvm` lowers `math.log1p(x)` as `log(1 + x)` and
    `math.expm1(x)` as `exp(x) - 1`, which lose every digit for small `|x|`
    (`expm1(1e-8)` is `0` in `f32`). This pass rewrites them on `f32` and
    `f64` scalars and vectors into the classical corrections, which keep `log`
    and `exp` as the only transcendental functions:

    * `log1p(x)`: `u = 1 + x`; `x` where `u == 1`, `+inf` where `u == +inf`,
      otherwise `log(u) * (x / (u - 1))` (Goldberg's theorem 4);
    * `expm1(x)`: `u = exp(x)`; `x` where `u == 1`, `-1` where `u - 1 == -1`,
      `+inf` where `u == +inf`, otherwise `(u - 1) * (x / log(u))` (Kahan).

    NaN gives NaN, `log1p(-1)` is `-inf` and `log1p(x < -1)` NaN, as in
    NumPy. Both are within a few ulp of NumPy over the whole range
    (test_vectorize.py checks tiny, moderate and huge arguments). Other
    element types are left to the usual lowering.

    Example:

    ```mlir
    %y = math.expm1 %x : f32
    // becomes
    %u = math.exp %x : f32
    %um1 = arith.subf %u, %c1 : f32
    %l = math.log %u : f32
    %q = arith.divf %x, %l : f32
    %r = arith.mulf %um1, %q : f32
    // ... selected with %x (u == 1), -1 and +inf
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def ScanFreshElementwiseInits : Pass<"scan-fresh-elementwise-inits", "::mlir::func::FuncOp"> {
  let summary = "Give elementwise linalg ops a tensor.empty destination instead of an input";
  let description = [{
    `convert-elementwise-to-linalg` turns `arith.addf %a, %b : tensor<8xf32>`
    into a `linalg.generic` whose destination (`outs`) is the operand `%a`
    itself. When `%a` is a row of a sequence (a read-only function
    argument) or of a recurrent state, one-shot-bufferize must then copy it
    before writing, in every step of a scan. This pass replaces a
    destination that the payload never reads, of an all-parallel op, by a
    `tensor.empty` of the same shape, which `eliminate-empty-tensors` then
    turns into the scan's output row: the step writes its result in place.
    A destination that is an intermediate used only by this op (the result
    of another destination-style op) is kept: writing over it is free. So is
    a state row the lowering hands the step to update in place (a writable
    `bufferization.to_tensor`, possibly behind `tensor.cast`s).

    First, every destination-style op gets its own copy of a `tensor.empty`
    (or `linalg.fill` of one) destination that several ops share: shared,
    one copy would become an output row and the other ops would write that
    same row.

    Last, the converse: an all-parallel op with one `tensor.empty`
    destination it never reads, and an input of the same type and indexing
    map that is such an intermediate (the graph builder's fused
    `tanh(h·W + u)` reads the matvec's result), gets that input as its
    destination. The intermediate's producer (the matvec) then writes the
    output row, and the elementwise op updates it in place: no buffer per
    step for the intermediate. Not when the op also reads a row updated in
    place: the producer would write that row before the op reads it.

    ```mlir
    %mv = linalg.vecmat ins(%h, %w : ...) outs(%fill : tensor<?xf64>) -> tensor<?xf64>
    %y = linalg.generic {...} ins(%mv, %u : ...) outs(%empty : tensor<?xf64>) {...}
    // becomes
    %y = linalg.generic {...} ins(%mv, %u : ...) outs(%mv : tensor<?xf64>) {...}
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numReplaced", "replaced-inits", "Number of destinations replaced by tensor.empty">,
    Statistic<"numReused", "reused-inputs", "Number of fresh destinations replaced by a temporary input">
  ];
}

def ScanGuardDimIndices : Pass<"scan-guard-dim-indices", "::mlir::func::FuncOp"> {
  let summary = "Make a dim op with a constant negative index fail at run time";
  let description = [{
    `tensor.dim %t, %i` with `%i` a negative constant is valid IR (an
    out-of-bounds index is undefined behaviour, which
    `scan-runtime-verification` checks at run time), but upstream code reads
    the index as an unsigned position: once bufferized, building or folding
    the `memref.dim` asserts (`isDynamicDim`), aborting the compiling
    process. This pass runs just before bufferization, after the last
    canonicalization that could fold an index to a constant, and replaces
    every `tensor.dim` / `memref.dim` whose index is a negative constant by
    an assertion that always fails, with the op's location (`"<file>:<line>:
    <col>: index is out of bounds"`, the message of the run-time check), and
    a 0 in place of its result. A call reaching it fails with a
    `ValueError`, as one with an index past the rank does.

    ```mlir
    %d = tensor.dim %t, %c-1 : tensor<?xf64>
    // becomes
    %false = arith.constant false
    cf.assert %false, "model.mlir:3:8: index is out of bounds"
    %d = arith.constant 0 : index
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numGuarded", "guarded-dims", "Dim ops with a negative constant index replaced">
  ];
}

//===----------------------------------------------------------------------===//
// GPU lowering (scan-to-nvvm)
//===----------------------------------------------------------------------===//

def ScanGpuDeviceMemory : Pass<"scan-gpu-device-memory", "::mlir::ModuleOp"> {
  let summary = "Move the buffers of public functions to device memory";
  let description = [{
    The first step of `scan-to-nvvm`, on bufferized IR. In every public
    function with a body:

    * each memref argument that is used is copied once, at entry, into a
      `gpu.alloc` buffer (`gpu.memcpy`), and so is each global the function
      reads (`memref.get_global`, e.g. the constants of a scan body); the
      function then works on the copies only. A copy that the function may
      write is copied back at the return; all are freed there;
    * its `memref.alloc` / `memref.alloca` become `gpu.alloc` and its
      `memref.dealloc` of them `gpu.dealloc`. Allocations handed to host
      functions (the index and `i1` arrays of the buffer-deallocation
      pipeline's helper, the buffer cast for a call of `printMemrefF64`)
      stay host memory;
    * `memref.copy` between device buffers becomes `linalg.copy` (a kernel
      after `convert-linalg-to-parallel-loops`), and one between a device
      and a host buffer (whole buffers only) a `gpu.memcpy`;
    * a call that passes device memory to a host function (one that
      inlining left: external, or recursive) passes a host copy of each such
      buffer (or of the buffer a `memref.cast` views, e.g. to `memref<*x..>`)
      instead, copied back into the device buffer after the call. A call
      that also returns a buffer is an error;
    * each returned memref (identity layout, rooted in the function's own
      allocations: run `scan-own-public-results` before) is copied into a
      new host buffer, which is returned, and its device buffer is freed.
      A result that is a view (the rows an `until` scan ran, of a buffer
      sized for all steps) is first copied into a contiguous device buffer
      (`gpu.memcpy` lowers for whole buffers only).

    Afterwards, device memory is exactly the memory rooted in `gpu.alloc`
    results: the later GPU passes tell host and device work apart by that.
    Memref arguments must have the identity layout.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect"];
}

def ScanGpuFormKernels : Pass<"scan-gpu-form-kernels", "::mlir::ModuleOp"> {
  let summary = "Wrap the device work of public functions in gpu.launch ops (host or single-kernel mode)";
  let description = [{
    The second step of `scan-to-nvvm`, after `scan-gpu-device-memory` and
    `convert-linalg-to-parallel-loops`. Each op of a public function is
    placed on the host or on the device:

    * the host runs allocations, copies, calls, the return, and the pure
      scalar ops whose operands it knows (loop bounds, sizes, views);
    * an `scf.parallel` the host would run (a linalg op: a matvec, the
      elementwise tail of a step, a fill, a copy) becomes a **grid kernel**,
      one iteration per thread, `block-size` threads per block;
    * a loop (`scf.for`, `scf.while`: a scan's time loop) whose body has
      parallel work is either run by the host, its steps' work becoming
      kernels (**host mode**), or run whole, time loop included, by one block
      of threads (**kernel mode**: a **block kernel**, mapped by
      `scan-gpu-map-kernels`). A loop that allocates memory in its body
      (a device allocation is a host call) runs on the host: `mode=auto` and
      `mode=host` do so silently; `mode=kernel` is an error when the loop
      allocates in every step (its body, not a branch of it: e.g. a nested
      scan whose buffers' sizes change from step to step).
      `scan-gpu-loop-allocations` has already taken the allocations it could
      out of loops (an `until` loop that grows its outputs' buffers keeps its
      growth, a rare branch, in an outer host loop around the loop of steps);
    * everything else that touches device memory (loads and stores, loops
      without parallel work such as scalar recurrences) runs in
      single-thread **serial kernels**, consecutive ops in one kernel: a
      scalar scan is one kernel in both modes.

    `mode=auto` puts a loop in one block kernel when every parallel loop in
    it has a static iteration count of at most `kernel-limit` (one thread per
    element: the state fits one block), and leaves it on the host otherwise;
    `mode=host` and `mode=kernel` force the choice. A block kernel has
    `min(1024, the widest parallel loop rounded up to 32)` threads (256 when
    the widths are not static).

    Values cross kernels through device memory cells (8-byte slots of one
    arena per call, allocated at entry). A value the host needs (a bound, an
    `until` condition, a call argument, a scalar result) is read back with a
    `gpu.memcpy` where it is used; an iteration value of a host-run loop that
    the device computes (a scalar state next to a vector one) lives in a cell
    for the whole loop instead, so a host-mode step has no copy unless the
    loop's condition itself comes from the device (`until`).

    A call reporting an error (`__mlir_scan_fail`, which the scan lowering's
    and the Python builder's checks call: GpuSupport.cpp names it) that must
    run in a kernel records its arguments in a device error word instead (the
    first report wins); before each return, the host reads the word back and
    makes the recorded call. Run-time checks before a loop stay on the host.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"auto\"",
           "auto, host or kernel (see the description)">,
    Option<"blockSize", "block-size", "int64_t", "128",
           "Threads per block of grid kernels">,
    Option<"kernelLimit", "kernel-limit", "int64_t", "1024",
           "mode=auto: largest parallel loop (iterations) of a time loop run "
           "as one block kernel">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

def ScanGpuMapKernels : Pass<"scan-gpu-map-kernels", "::mlir::ModuleOp"> {
  let summary = "Map the work of scan-gpu-form-kernels' launches onto blocks and threads";
  let description = [{
    Rewrites the body of every `gpu.launch` that `scan-gpu-form-kernels`
    made (attribute `scan.kernel`) with thread and block ids:

    * `grid`: iteration `i` of the `scf.parallel` (all its dimensions,
      linearized, the last one fastest) runs on thread
      `blockIdx.x * blockDim.x + threadIdx.x`, if `i` is in range;
    * `block` (kernel mode): the block's threads run the time loop together.
      Each `scf.parallel` in it becomes a loop from `threadIdx.x` by
      `blockDim.x` over its iterations and is followed by a `gpu.barrier`;
      the other ops that write memory run on thread 0 (`scf.if`), between
      barriers, and the values they produce that the other threads use are
      broadcast through workgroup memory. The loop control and the pure ops
      run on every thread, so all threads take the same branches and meet
      at every barrier. A barrier also precedes a write when some thread may
      still be reading (tracked through the loop, so a step usually needs one
      barrier per parallel loop);
    * `serial`: one thread; nested `scf.parallel` become `scf.for` nests.

    ```mlir
    gpu.launch blocks(...) in (1, 1, 1) threads(%tx, ...) in (128, 1, 1) {
      scf.for %t = %c0 to %n step %c1 {
        scf.for %i = %tx to %c128 step %c128 { ... h_t[i] = ... }
        gpu.barrier
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

def ScanGpuAsync : Pass<"scan-gpu-async", "::mlir::ModuleOp"> {
  let summary = "Put the host's GPU operations on one asynchronous stream";
  let description = [{
    Makes every `gpu.alloc`, `gpu.dealloc`, `gpu.memcpy`, `gpu.memset` and
    `gpu.launch` of host code asynchronous, each depending on the previous
    one: one chain of `!gpu.async.token` (one CUDA stream after
    `gpu-to-llvm`, which lowers an asynchronous op's token to the stream of
    its dependency). The chain is threaded through `scf.for` and `scf.while`
    (an extra iteration value) and `scf.if` (an extra result), so a host loop
    launches its steps' kernels without waiting for them.

    The host waits for the stream only where it must: before it reads or
    writes host memory that a `gpu.memcpy` wrote (a value read back, the
    results, a buffer handed to a host function such as `printMemrefF64`:
    an op of unknown effects that takes it), before it writes or frees host
    memory that a `gpu.memcpy` reads (the host copy of such a buffer, freed
    after the call), and before a return, where the stream is also
    destroyed. A
    wait is a call of the CUDA runtime wrapper `mgpuStreamSynchronize` on
    the stream (`mgpuStreamDestroy` at the return): `gpu-to-llvm` lowers a
    `gpu.wait` of a token that reached it through control flow as a wait for
    an event, which a stream is not.

    Upstream `gpu-async-region` would instead wait at the end of every block
    (every step of a host loop).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"];
}

def ScanGpuLoopAllocations : Pass<"scan-gpu-loop-allocations", "::mlir::func::FuncOp"> {
  let summary = "Keep allocations out of the loops of steps (so that they can run in one kernel)";
  let description = [{
    Part of `scan-gpu-bufferize-loops`, on bufferized loops before
    `buffer-loop-hoisting` and the deallocation pipeline. A device
    allocation is a host call, so `scan-gpu-form-kernels` runs a loop that
    allocates in its body on the host, in every mode. Two shapes of the scan
    lowering allocate rarely or never, and are rewritten:

    * a `memref.alloc` of static size inside `scf.if` ops of a loop body
      (the zero row of an inner scan's `keep` output for the case that no
      step ran) is made before the outermost of those ifs, so that
      `buffer-loop-hoisting` takes it out of the loop. Allocations with
      dynamic sizes stay in their branch (it may be what makes the size
      valid);
    * an `until` loop whose step count is known at run time only starts with
      buffers of at most 32768 rows for its stacked outputs, and grows them
      (twice the rows, a copy) at the start of a step that finds them full.
      Such an `scf.while` (a condition region free of effects; a step that
      begins with pure ops and `scf.if` growths whose `else` branch only
      passes values on, and allocates nothing after them) is split into an
      outer loop, one iteration per growth (the host allocates), and an inner
      do-while loop that runs steps until the scan stops or the next step
      would grow a buffer:

    ```mlir
    scf.while (%a = %init) { cond(%a) -> %c, %f } do { ^bb0(%f):
      %u = growths(%f)           // allocate and copy when a buffer is full
      %r = scf.while (%f1 = %f, ...) {
        %y = step(%f1, ...)
        %c2, %f2 = cond(%y)
        %go = %c2 and not (the next step grows a buffer)
        scf.condition(%go) %f2, ..., %y
      } do { ... }
      scf.yield %r#y             // the outer condition sees the last step
    }
    ```

    The inner loop carries no buffers (the canonicalizations of `scf.while`
    and `scf.if` drop the values that stay the same from step to step), so
    in kernel mode it is one block kernel (or one serial kernel for a
    scalar recurrence): a launch per growth, not per step, and none at all
    when the step bound is at most 32768.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def ScanGpuKernelBounds : Pass<"scan-gpu-kernel-bounds", "::mlir::ModuleOp"> {
  let summary = "Tell ptxas that single-block kernels are alone on the GPU";
  let description = [{
    Runs after `gpu-kernel-outlining`. A kernel whose launches are one block
    (`known_grid_size` 1x1x1: a block kernel running a whole time loop, or a
    serial kernel) gets `nvvm.minctasm = 1` (`.minnctapersm 1` in the PTX):
    ptxas may then give each thread as many registers as it needs instead of
    sizing them for many resident blocks. Without it, ptxas for sm_90 limits
    the block kernel of the W5 RNN (f64, hidden size 128, 128 threads) to 32
    registers and spills; with it, 48 registers and no spill.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def ScanGpuEmulate : Pass<"scan-gpu-emulate", "::mlir::ModuleOp"> {
  let summary = "Turn the kernels of scan-gpu-map-kernels into host loops (run the GPU program on the CPU)";
  let description = [{
    A testing aid for machines without a GPU: after `scan-gpu-map-kernels`
    (before `scan-gpu-async`), device memory becomes host memory
    (`gpu.alloc` / `gpu.dealloc` / `gpu.memcpy` / `gpu.memset` become
    `memref.alloc` / `memref.dealloc` / `memref.copy` / `linalg.fill`) and
    each `gpu.launch` becomes loops over its blocks and threads:

    * serial and grid kernels run every thread, one after the other (they
      have no barriers: any order is a valid schedule);
    * a block kernel runs one thread (`blockDim.x = 1`). Its code is uniform
      between barriers (every thread computes the same values, thread 0
      makes the serial writes, the parallel loops stride by `blockDim.x`),
      so one thread running every iteration in order is the lockstep
      schedule of the whole block. Barriers are dropped.

    `scan-buffers-to-llvm` then compiles the result for the CPU.
    `mlir_scan.compile(source, target="cuda", emulate=True)` runs programs
    this way: the differential tests check the GPU lowering's cells,
    read-backs, error words and kernel mapping against the reference
    interpreter. Races between threads of a block are not exercised.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

#endif // SCAN_PASSES_TD
