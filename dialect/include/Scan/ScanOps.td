//===- ScanOps.td - scan.scan and scan.yield ---------------*- tablegen -*-===//
//
// The operations of the Scan dialect. The semantics below is the contract of
// SPEC §4; the verifier enforces every static part of it.
//
//===----------------------------------------------------------------------===//

#ifndef SCAN_OPS_TD
#define SCAN_OPS_TD

include "Scan/ScanDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// One list of taps per item of an operand group.
def Scan_TapsListAttr
    : TypedArrayAttrBase<DenseI64ArrayAttr, "one list of taps per item">;

//===----------------------------------------------------------------------===//
// scan.scan
//===----------------------------------------------------------------------===//

def Scan_ScanOp : Scan_Op<"scan", [
    AttrSizedOperandSegments,
    IsolatedFromAbove,
    RecursiveMemoryEffects,
    SingleBlock
  ]> {
  let summary = "Theano's scan: a loop over sequences with recurrent state";
  let description = [{
    `scan.scan` runs its single-block region (the *inner function*) once per
    step `t = 0 .. n_steps-1`. Everything the body uses is an explicit
    operand (the op is `IsolatedFromAbove`, like Theano's inner graph). The
    operands come in groups, each group variadic:

    | group | operand | per item | block arguments | yields | result |
    |---|---|---|---|---|---|
    | `steps` | one `index` | | | | |
    | `sequences` | `tensor<L x E>` | taps (any sign) | one per tap, `E` | | |
    | `mitmot` | buffer `tensor<B x S>` | in taps, out taps | one per in tap, `S` | one per out tap, `S` | final buffer |
    | `mitsot` | init `tensor<K x S>` | taps, all negative | one per tap, `S` | one, `S` | `tensor<N x S>` |
    | `sitsot` | init `S` | | one, `S` | one, `S` | `tensor<N x S>` |
    | `nitsot` | none (result type only) | | | one, `S` | `tensor<N x S>` |
    | `nonsequences` | any type | | one, same type | | |

    `E` and `S` are the type of one row: `tensor<D... x T>` for a row of rank
    >= 1 and the scalar `T` itself for a row of rank 0 (rank-0 tensors are not
    used). Block arguments come in group order; the yield lists mitmot out
    taps, mitsot, sitsot, nitsot rows and then, when the op carries `until`,
    the `i1` stop condition.

    Step semantics:

    * sequence `s` with taps `T`, `lo = min(0, min T)`, `hi = max(0, max T)`:
      tap `k` reads `s[t + k - lo]`; requires `len(s) >= n_steps + hi - lo`.
      With `go_backwards` every sequence is reversed first.
    * sitsot: `x[-1] = init`; the argument is `x[t-1]`, the yield `x[t]`.
    * mitsot with `K = -min T`: `x[i] = init[K + i]` for `i < 0`; tap `k`
      reads `x[t + k]`.
    * mitmot with in taps `I` and out taps `O`, `lo = min(0, min(I ∪ O))`,
      `hi = max(0, max(I ∪ O))`: in tap `k` reads the buffer's current row
      `t + k - lo`, out tap `k` overwrites row `t + k - lo`; requires
      `B >= n_steps + hi - lo`. The result is the buffer after the last step.
    * nitsot: the yield is `y[t]`. Its rows may have dynamic sizes
      (`tensor<?xf32>`, e.g. a row of `%k` elements with `%k` a
      non-sequence): every step's row must then have the sizes of the first
      step's row (a run-time error otherwise), and a result of zero steps
      has size 0 in each of those dimensions (`tensor<0x0xf32>`).
    * `until`: the trailing `i1` yield is evaluated after step `t`'s outputs
      are stored; when true the loop stops after step `t`. Results then have
      `?` leading size (the number of steps run).
    * `keep = [k0, k1, ...]` (one per result, `0` = all rows; never on a
      mitmot): a result with `k > 0` is only its last `k` rows, in
      chronological order, `tensor<k x S>`. For sitsot/mitsot the rows are
      taken from the init rows followed by the computed ones; rows that do
      not exist are zero.

    Negative `n_steps`, too-short sequences or mitmot buffers and nitsot
    rows of different sizes are run-time errors (checked by the lowering);
    every static fact is checked by the verifier.

    Syntax: `steps(%n)`, the flags `go_backwards` and `until`, then one
    clause per non-empty group, in group order, each item followed by its
    taps (if the group has any) and its type:

    ```mlir
    sequences(%u[-4, 0] : tensor<?x8xf32>, %v : tensor<?xf64>)  // taps optional ([0])
    mitmot(%g[0] -> [0, 1] : tensor<?x4xf32>)                    // [in taps] -> [out taps]
    mitsot(%x0[-3, -1] : tensor<3x16xf32>, %z0[-2] : tensor<2xi64>)
    sitsot(%y0 : tensor<4xf32>, %c0 : f64)
    nonsequences(%W : tensor<16x16xf32>, %Win : tensor<8x16xf32>)
    ```

    then `keep [k, ...]`, `attributes {...}`, the region and `-> (result
    types)`. The parser also reads runs of items sharing one type list, in
    any group: `sitsot(%y0, %c0 : tensor<4xf32>, f64)`,
    `sequences(%u[-4, 0], %v : tensor<?x8xf32>, tensor<?xf64>)`.

    Example: a sequence with taps, a mitsot, a sitsot and non-sequences
    (Theano's `outputs_info=[dict(initial=x0, taps=[-3, -1]), y0]`):

    ```mlir
    %xs, %ys = scan.scan steps(%n)
        sequences(%u[-4, 0] : tensor<?x8xf32>)
        mitsot(%x0[-3, -1] : tensor<3x16xf32>)
        sitsot(%y0 : tensor<4xf32>)
        nonsequences(%W : tensor<16x16xf32>, %Win : tensor<8x16xf32>) {
    ^bb0(%u_tm4: tensor<8xf32>, %u_t: tensor<8xf32>,
         %x_tm3: tensor<16xf32>, %x_tm1: tensor<16xf32>,
         %y_tm1: tensor<4xf32>, %w: tensor<16x16xf32>, %win: tensor<8x16xf32>):
      ...
      scan.yield %x_t, %y_t : tensor<16xf32>, tensor<4xf32>
    } -> (tensor<?x16xf32>, tensor<?x4xf32>)
    ```

    Example: a nitsot (Theano's `map`, `outputs_info=None`) over a reversed
    sequence of scalars:

    ```mlir
    %sq = scan.scan steps(%n) go_backwards
        sequences(%v : tensor<?xf64>) {
    ^bb0(%x: f64):
      %y = arith.mulf %x, %x : f64
      scan.yield %y : f64
    } -> (tensor<?xf64>)
    ```

    Example: a sitsot whose last value only is kept, stopping early
    (`until`): powers of two until the value exceeds 45.

    ```mlir
    %last = scan.scan steps(%c1024) until
        sitsot(%one : i64) nonsequences(%max : i64) keep [1] {
    ^bb0(%prev: i64, %m: i64):
      %two = arith.constant 2 : i64
      %next = arith.muli %prev, %two : i64
      %stop = arith.cmpi sgt, %next, %m : i64
      scan.yield %next, %stop : i64, i1
    } -> (tensor<1xi64>)
    ```

    Example: a mitmot, as produced by the gradient of a scan: in tap 0 is
    read and out tap 0 accumulated into the buffer's current row.

    ```mlir
    %g = scan.scan steps(%n)
        sequences(%x : tensor<?x4xf32>)
        mitmot(%gbuf[0] -> [0] : tensor<?x4xf32>) {
    ^bb0(%xt: tensor<4xf32>, %gt: tensor<4xf32>):
      %s = arith.addf %gt, %xt : tensor<4xf32>
      scan.yield %s : tensor<4xf32>
    } -> (tensor<?x4xf32>)
    ```
  }];

  let arguments = (ins
    Index:$n_steps,
    Variadic<AnyRankedTensor>:$sequences,
    Variadic<AnyRankedTensor>:$mitmot,
    Variadic<AnyRankedTensor>:$mitsot_inits,
    Variadic<AnyType>:$sitsot_inits,
    Variadic<AnyType>:$non_sequences,
    DefaultValuedAttr<Scan_TapsListAttr, "{}">:$sequence_taps,
    DefaultValuedAttr<Scan_TapsListAttr, "{}">:$mitmot_in_taps,
    DefaultValuedAttr<Scan_TapsListAttr, "{}">:$mitmot_out_taps,
    DefaultValuedAttr<Scan_TapsListAttr, "{}">:$mitsot_taps,
    OptionalAttr<DenseI64ArrayAttr>:$keep,
    UnitAttr:$go_backwards,
    UnitAttr:$until
  );
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The kinds of outputs, in result order.
    enum class OutputKind { MitMot, MitSot, SitSot, NitSot };

    //===------------------------------------------------------------------===//
    // Group sizes.
    //===------------------------------------------------------------------===//
    unsigned getNumSequences() { return getSequences().size(); }
    unsigned getNumMitMot() { return getMitmot().size(); }
    unsigned getNumMitSot() { return getMitsotInits().size(); }
    unsigned getNumSitSot() { return getSitsotInits().size(); }
    unsigned getNumNonSequences() { return getNonSequences().size(); }
    /// Nitsot outputs have no operand: they are the results after the others.
    unsigned getNumNitSot() {
      unsigned withInit = getNumMitMot() + getNumMitSot() + getNumSitSot();
      return getNumResults() > withInit ? getNumResults() - withInit : 0;
    }

    //===------------------------------------------------------------------===//
    // Taps.
    //===------------------------------------------------------------------===//
    ::llvm::ArrayRef<int64_t> getSequenceTapsAt(unsigned i);
    ::llvm::ArrayRef<int64_t> getMitMotInTapsAt(unsigned i);
    ::llvm::ArrayRef<int64_t> getMitMotOutTapsAt(unsigned i);
    ::llvm::ArrayRef<int64_t> getMitSotTapsAt(unsigned i);

    //===------------------------------------------------------------------===//
    // Block arguments of the inner function, per group and item.
    //===------------------------------------------------------------------===//
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    ::mlir::Block::BlockArgListType getSequenceArgs(unsigned i);
    ::mlir::Block::BlockArgListType getMitMotArgs(unsigned i);
    ::mlir::Block::BlockArgListType getMitSotArgs(unsigned i);
    ::mlir::BlockArgument getSitSotArg(unsigned i);
    ::mlir::BlockArgument getNonSequenceArg(unsigned i);
    /// Number of block arguments the groups require (sum over all taps).
    unsigned getExpectedNumBlockArgs();

    //===------------------------------------------------------------------===//
    // Yield operands, per output.
    //===------------------------------------------------------------------===//
    ::mlir::Operation *getYieldOp() { return getBodyBlock().getTerminator(); }
    ::mlir::OperandRange getMitMotYields(unsigned i);
    ::mlir::Value getMitSotYield(unsigned i);
    ::mlir::Value getSitSotYield(unsigned i);
    ::mlir::Value getNitSotYield(unsigned i);
    /// The `until` condition, or null when the op has no `until`.
    ::mlir::Value getUntilCondition();
    /// Number of yield operands the groups require.
    unsigned getExpectedNumYields();

    //===------------------------------------------------------------------===//
    // Results, per group, and the mapping result -> kind / init / keep.
    //===------------------------------------------------------------------===//
    ::mlir::ResultRange getMitMotResults() {
      return getOutputs().slice(0, getNumMitMot());
    }
    ::mlir::ResultRange getMitSotResults() {
      return getOutputs().slice(getNumMitMot(), getNumMitSot());
    }
    ::mlir::ResultRange getSitSotResults() {
      return getOutputs().slice(getNumMitMot() + getNumMitSot(), getNumSitSot());
    }
    ::mlir::ResultRange getNitSotResults() {
      unsigned first = getNumMitMot() + getNumMitSot() + getNumSitSot();
      return getOutputs().slice(first, getNumResults() - first);
    }
    /// Kind of result `resultIdx` and its index inside its group.
    std::pair<OutputKind, unsigned> getOutputKind(unsigned resultIdx);
    /// The outer operand holding the initial state of result `resultIdx`
    /// (mitmot buffer, mitsot or sitsot init), or null for a nitsot.
    ::mlir::Value getOutputInit(unsigned resultIdx);
    /// Rows kept for result `resultIdx` (0 means every row).
    int64_t getKeepAt(unsigned resultIdx);

    /// The static number of steps if `n_steps` is a constant, else nullopt.
    std::optional<int64_t> getStaticNumSteps();

    /// The type of one row of a `tensor<L x ...>` value: the scalar element
    /// type for rank 1, the trailing tensor type otherwise.
    static ::mlir::Type getRowType(::mlir::RankedTensorType type);
  }];
}

//===----------------------------------------------------------------------===//
// scan.yield
//===----------------------------------------------------------------------===//

def Scan_YieldOp : Scan_Op<"yield", [
    HasParent<"ScanOp">, Pure, ReturnLike, Terminator
  ]> {
  let summary = "Produces the rows of one step of a scan";
  let description = [{
    Terminates the inner function of `scan.scan`. Its operands are, in order,
    the rows of the mitmot out taps, the mitsot, sitsot and nitsot outputs of
    the current step, followed by the `i1` stop condition when the enclosing
    op has `until`.

    ```mlir
    scan.yield %x_t, %y_t, %stop : tensor<16xf32>, f32, i1
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

//===----------------------------------------------------------------------===//
// scan.check
//===----------------------------------------------------------------------===//

// What a run-time check writes: the call's error record, and nothing else.
// Memory ops do not alias it, so checks do not order them; checks stay
// ordered with one another and with calls.
def Scan_CheckResource
    : Resource<"::mlir::scan::ScanCheckResource">;

def Scan_CheckOp : Scan_Op<"check", [
    MemoryEffects<[MemWrite<Scan_CheckResource>]>
  ]> {
  let summary = "Fails the call when a run-time condition holds";
  let description = [{
    When `condition` is true, `scan.check` ends the call of the compiled
    function with the error `code` (see `passes/include/Scan/ErrorCodes.h`:
    100 raises `ValueError`, 101 `IndexError` with the message the graph
    builder keeps for check `id`; `have` and `need` fill the message). It
    does not return in that case, so the ops after it may assume that
    `condition` is false: this is how the graph builder guards shapes that
    must agree (`T.dot` operands, broadcast elementwise operands, slice
    bounds) without clamping the values the ops see.

    ```mlir
    %bad = arith.cmpi ne, %k_h, %k_w : index
    scan.check %bad code 100 id 3 (%k_h, %k_w : index, index)
    %y = linalg.vecmat ins(%h, %w : tensor<?xf64>, tensor<?x?xf64>)
                       outs(%init : tensor<?xf64>) -> tensor<?xf64>
    ```

    Its only effect is a write to a resource of its own (the call's error
    record): memory ops do not alias it, pure ops are not ordered with it,
    and the scan rewrites understand it. `scan-push-out-non-seq` moves a
    check whose operands are the same in every step before the scan, where
    it runs once, guarded by `n_steps > 0`; a check that stays in the loop
    blocks only the ops that rely on it (see `docs/ScanDialect.md`).
    `scan-lower-checks` lowers it to `scf.if` and a call of the run-time
    library's `__mlir_scan_fail(code, id, have, need)`.
  }];
  let arguments = (ins I1:$condition,
                       ConfinedAttr<I64Attr, [IntPositive]>:$code,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$id,
                       AnyTypeOf<[Index, I64]>:$have,
                       AnyTypeOf<[Index, I64]>:$need);
  let assemblyFormat = [{
    $condition `code` $code `id` $id ` ` `(` $have `,` $need `:` type($have)
    `,` type($need) `)` attr-dict
  }];
  let hasCanonicalizeMethod = 1;
  let hasVerifier = 1;
}

#endif // SCAN_OPS_TD
