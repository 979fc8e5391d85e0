"""The gradient of a scan: backpropagation through time as a backward ``scan.scan``.

:func:`scan_L_op` is :meth:`ScanOp.L_op <mlir_scan.builder.ops.scan.ScanOp.L_op>`.
It builds one new scan that runs over the forward steps in reverse
(``go_backwards``) and whose step is the gradient (vector-Jacobian product) of
the forward step, as in Theano (``reference/*internals*``):

* the forward values a step read are fed back as **sequences**: the forward
  sequences with their taps mirrored, and each recurrent state's rows
  ``concat(init, outputs)``, tap ``k`` becoming tap ``-k`` (only the outputs,
  no concatenated copy, when the step reads nothing but the current row);
* the gradient of each recurrent state (SITSOT, MITSOT, and MITMOT of a
  forward scan that is itself a gradient) is a **MITMOT** buffer, in reverse
  row order, that starts as zeros: in-tap 0 reads what later steps added to
  the state's gradient at this step, to which the step adds the gradient
  arriving at the output row (a sequence, or one row for all steps); the
  out-taps ``-k`` add the step's contribution to the rows the step read
  (their own gradients, complete only when the loop reaches them). (A zero
  buffer whose final value is unused costs two rows after the lowering.)
* the gradient of each output without state (NITSOT) is a sequence, and so
  are the forward outputs themselves (the step reads ``tanh(a_t)`` from the
  forward results instead of recomputing the forward step);
* the gradients of the non-sequences are sums over the steps: terms that are
  outer products of two per-step vectors (``dW += outer(h_{t-1}, da_t)``)
  leave the loop as one matmul of the two stacked vectors (NITSOT outputs, or
  rows of the forward values read in place through views), the other terms
  accumulate in SITSOT states (only the last row is kept);
* the gradients of the sequences are NITSOT outputs, one per tap, added into
  zeros of the sequence's shape after the loop.

Steps: the backward scan runs over the steps the forward one ran (an
``until`` scan's output rows), or over the last ``truncate_gradient`` of
them. In the comments, ``t`` is a forward step, ``u = N - 1 - t`` the
backward step that handles it, ``N`` the forward step count, ``Nb`` the
backward one and ``D = N - Nb`` the number of truncated steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Apply, Constant, TensorType, Variable, clone_replace, graph_inputs, is_float
from .autodiff import SpecifyShape, alloc_to, backprop, elem, retype, zeros_like
from .basic import AddDotT, Alloc, Arange, DimShuffle, Dot, Join
from .elemwise import cast, elemwise_inputs
from .shape import Shape_i, shape_of
from .subtensor import IncSubtensor, RowsReversed, Subtensor

__all__ = ["scan_L_op"]


# -- small graph helpers (int64 scalars may be Python ints) ---------------------------------


def _i64(v) -> Variable:
    if isinstance(v, Variable):
        return cast(v, "int64")
    return Constant(np.asarray(int(v), dtype="int64"))


def _add(a, c):
    if isinstance(a, int) and isinstance(c, int):
        return a + c
    return elem("add", _i64(a), _i64(c))


def _sub(a, c):
    if isinstance(a, int) and isinstance(c, int):
        return a - c
    return elem("sub", _i64(a), _i64(c))


def _min(a, c):
    if isinstance(a, int) and isinstance(c, int):
        return min(a, c)
    return elem("minimum", _i64(a), _i64(c))


def _bound(v, syms: list) -> Any:
    if v is None or isinstance(v, int):
        return v
    syms.append(_i64(v))
    return "v"


def _rows(x: Variable, start, stop) -> Variable:
    """``x[start:stop]`` (bounds: ints, int scalars or None)."""
    if start in (0, None) and (stop is None or (isinstance(stop, int) and x.type.shape[0] == stop)):
        return x  # (also avoids an empty static slice, which MLIR rejects)
    syms: list = []
    entry = ("s", _bound(start, syms), _bound(stop, syms), None)
    return Subtensor((entry,))(x, *syms)


def _rev(x: Variable) -> Variable:
    return Subtensor((("s", None, None, -1),))(x)


def _row(x: Variable, i) -> Variable:
    syms: list = []
    return Subtensor((("i", _bound(i, syms)),))(x, *syms)


def _inc_rows(x: Variable, start, stop, y: Variable) -> Variable:
    syms: list = []
    entry = ("s", _bound(start, syms), _bound(stop, syms), None)
    return IncSubtensor((entry,), False)(x, y, *syms)


def _zeros(rows, row_dims: tuple, dtype: str) -> Variable:
    return alloc_to(Constant(np.asarray(0, dtype)), (rows,) + tuple(row_dims), dtype)


def _lead(x: Variable):
    d = shape_of(x)[0]
    return d


def _stack_rows(x: Variable, row_type: TensorType) -> Variable:
    """`x` (rows of `row_type`) retyped to exactly ``(?,) + row_type.shape``."""
    return retype(x, (None,) + row_type.shape)


class _Placeholder(Variable):
    """An input of a backward scan's step (a gradient read from a buffer or a sequence)."""


# -- the rule ------------------------------------------------------------------------------


def scan_L_op(op, node: Apply, output_grads: list, needed: list | None = None) -> list:
    """The gradients of `node`'s inputs (see the module docstring)."""
    if needed is None:
        needed = [is_float(v.dtype) for v in node.inputs]
    groups = op.outer_groups(node)
    n_in = len(node.inputs)
    result: list = [None] * n_in
    pos_of = {}  # group name -> index of its first input
    i = 0
    for name in ("n_steps", "sequences", "mitmot", "mitsot", "sitsot", "nonseqs", "nitsot_dims", "state_dims"):
        pos_of[name] = i
        i += len(groups[name])
    nm = op.n_mitmot
    trunc = op.truncate_gradient
    if nm and trunc != -1:  # pragma: no cover - mitmots come from gradients, never truncated
        raise NotImplementedError("grad: truncate_gradient on a scan with mitmot states")

    # -- forward values: the node's outputs, or a copy keeping every row -----------------
    rec_taps = [t for t, _ in op.mitmot_taps]
    needs_copy = any(op.keep) or nm > 0
    if needs_copy:
        rec_node, rec_first = _recording_copy(op, node)
    else:
        rec_node, rec_first = node, None
    full_out = rec_node.outputs[nm:nm + op.n_outputs]
    if op.until:
        steps = shape_of(full_out[0])[0] if op.n_outputs else _i64(node.inputs[0])
    else:
        steps = node.inputs[0]
        if isinstance(steps, Constant):
            steps = int(steps.data)
    N = steps if isinstance(steps, int) else _i64(steps)
    Nb = N if trunc == -1 else _min(N, trunc)
    D = 0 if trunc == -1 else _sub(N, Nb)

    # -- the forward step's inputs and outputs, by group ----------------------------------
    ins = list(op.inner_inputs)
    k = 0
    seq_phs = []
    for taps in op.seq_taps:
        seq_phs.append(list(zip(taps, ins[k:k + len(taps)])))
        k += len(taps)
    mm_phs = []
    for in_taps, _ in op.mitmot_taps:
        mm_phs.append(list(zip(in_taps, ins[k:k + len(in_taps)])))
        k += len(in_taps)
    mit_phs = []
    for taps in op.mitsot_taps:
        mit_phs.append(list(zip(taps, ins[k:k + len(taps)])))
        k += len(taps)
    sit_phs = []
    for _ in range(op.n_sitsot):
        sit_phs.append([(-1, ins[k])])
        k += 1
    non_phs = ins[k:k + op.n_nonseqs]
    outs = list(op.inner_outputs)
    mm_outs = []
    k = 0
    for _, out_taps in op.mitmot_taps:
        mm_outs.append(list(zip(out_taps, outs[k:k + len(out_taps)])))
        k += len(out_taps)
    reg_outs = outs[k:k + op.n_outputs]

    # States: (kind, index among the regular outputs, taps -> placeholders, init, K, state row type).
    states = []
    for j, taps in enumerate(op.mitsot_taps):
        init = groups["mitsot"][j]
        states.append(("mitsot", j, mit_phs[j], init, -min(taps), init.type.row()))
    for j in range(op.n_sitsot):
        init = groups["sitsot"][j]
        states.append(("sitsot", op.n_mitsot + j, sit_phs[j], init, 1, init.type))
    n_states = len(states)
    first_nit = op.n_mitsot + op.n_sitsot

    # -- gradients arriving at the outputs ------------------------------------------------------
    g_reg = list(output_grads[nm:])
    g_mm = list(output_grads[:nm])
    # Rows of kept outputs (the last `keep` rows) -> gradients of all the rows.
    g_state_out: list = [None] * n_states  # gradient of the N output rows
    g_state_init: list = [None] * n_states  # direct gradient of the init rows (keep)
    for s, (kind, r, _, init, K, row_t) in enumerate(states):
        g = g_reg[r]
        if g is None:
            continue
        keep = op.keep[r]
        if not keep:
            g_state_out[s] = g
            continue
        init_rows = init if kind == "mitsot" else DimShuffle(init.ndim, ("x",) + tuple(range(init.ndim)))(init)
        total = _add(K, N)
        m = _min(keep, total)
        full = _inc_rows(_zeros(total, shape_of(init_rows)[1:], g.dtype), _sub(total, m), None,
                         _rows(g, _sub(keep, m), None))
        g_state_init[s] = _rows(full, 0, K)
        g_state_out[s] = _rows(full, K, None)
    g_nit: list = []
    for j in range(op.n_nitsot):
        r = first_nit + j
        g = g_reg[r]
        keep = op.keep[r]
        if g is not None and keep:
            m = _min(keep, N)
            g = _inc_rows(_zeros(N, shape_of(full_out[r])[1:], g.dtype), _sub(N, m), None, _rows(g, _sub(keep, m), None))
        g_nit.append(g)

    # -- which states carry a gradient: those with one at their outputs, and those read by
    #    a step whose outputs carry one (to a fixed point) ---------------------------------------
    live_state = [g_state_out[s] is not None or g_state_init[s] is not None for s in range(n_states)]
    live_mm = [True] * nm
    live_nit = [g is not None for g in g_nit]
    state_of_ph = {}
    for s, (_, _, phs, _, _, _) in enumerate(states):
        for _, ph in phs:
            state_of_ph[ph.id] = s
    changed = True
    while changed:
        changed = False
        live_outs = [reg_outs[states[s][1]] for s in range(n_states) if live_state[s]]
        live_outs += [reg_outs[first_nit + j] for j in range(op.n_nitsot) if live_nit[j]]
        live_outs += [v for j in range(nm) for _, v in mm_outs[j]]
        for v in graph_inputs(live_outs):
            s = state_of_ph.get(v.id)
            if s is not None and not live_state[s] and is_float(states[s][3].dtype):
                live_state[s] = True
                changed = True
    live_state = [live and is_float(states[s][3].dtype) for s, live in enumerate(live_state)]

    # -- the backward step: the vector-Jacobian product of the forward step ---------------------
    seeds = []
    delta_phs: dict[int, Variable] = {}  # state -> placeholder of its gradient at this step
    for s, (kind, r, phs, init, K, row_t) in enumerate(states):
        if not live_state[s]:
            continue
        d = _Placeholder(row_t, name=f"d_{init.name}" if init.name else None)
        delta_phs[s] = d
        seeds.append((reg_outs[r], d))
    nit_delta = {}
    for j in range(op.n_nitsot):
        if not live_nit[j]:
            continue
        out = reg_outs[first_nit + j]
        d = _Placeholder(TensorType(out.dtype, op.nitsot_shapes[j]))
        nit_delta[j] = d
        seeds.append((out, d))
    mm_delta = []  # per mitmot group: out tap -> placeholder of the gradient of the written row
    for j, (in_taps, out_taps) in enumerate(op.mitmot_taps):
        row_t = groups["mitmot"][j].type.row()
        ds = {}
        for o, out in mm_outs[j]:
            ds[o] = _Placeholder(row_t)
            seeds.append((out, ds[o]))
        mm_delta.append(ds)
    if not seeds:
        return result

    want_seq = [needed[pos_of["sequences"] + i] for i in range(op.n_seqs)]
    want_non = [needed[pos_of["nonseqs"] + i] for i in range(op.n_nonseqs)]
    wrt = []
    for i, phs in enumerate(seq_phs):
        if want_seq[i]:
            wrt.extend(ph for _, ph in phs)
    for phs in mm_phs:
        wrt.extend(ph for _, ph in phs)
    for s, (_, _, phs, _, _, _) in enumerate(states):
        if live_state[s]:
            wrt.extend(ph for _, ph in phs)
    wrt.extend(ph for i, ph in enumerate(non_phs) if want_non[i] and is_float(ph.dtype))
    grads = dict(zip((w.id for w in wrt), backprop(seeds, wrt)))

    # The forward step's outputs at step t are rows of the forward results: the backward
    # step reads them (tap 0 of the state rows, the NITSOT results) instead of recomputing
    # them (tanh's derivative needs tanh(a), not a).
    replace: dict[Variable, Variable] = {}
    cur_state: dict[int, Variable] = {}
    cur_nit: dict[int, Variable] = {}
    for s_, (_, r, _, _, _, row_t) in enumerate(states):
        out = reg_outs[r]
        if out.owner is not None and out not in replace:
            cur_state[s_] = replace[out] = _Placeholder(row_t)
    for j in range(op.n_nitsot):
        out = reg_outs[first_nit + j]
        if out.owner is not None and out not in replace:
            cur_nit[j] = replace[out] = _Placeholder(TensorType(out.dtype, op.nitsot_shapes[j]))
    # A state's complete gradient at step t is what later steps added into its MITMOT
    # row (in-tap 0, the buffer starts as zeros) plus the gradient arriving at output
    # row t, read as a row of a sequence, or as one row when all rows are the same
    # (the gradient of hs.sum()). The buffer then holds nothing but zeros before the
    # loop, which lets the lowering keep only the rows the step touches.
    mm_in0: dict[int, Variable] = {}  # state -> placeholder of in-tap 0
    g_rows_seq: dict[int, Variable] = {}  # state -> placeholder of the output gradient row
    g_rows_non: list[tuple[Variable, Variable]] = []  # (outer row, placeholder)
    step_rows: list = []  # sequences of the forward step index (outer, [(0, placeholder)])
    for s_, d in delta_phs.items():
        row_t = states[s_][5]
        g = g_state_out[s_]
        if g is None:
            mm_in0[s_] = d
            continue
        acc0 = mm_in0[s_] = _Placeholder(row_t)
        same_row = _row_constant(g)
        one_row = _single_row(g) if same_row is None else None
        if one_row is not None:
            # Zeros but one row k (the gradient of a cost on hs[k]): the step
            # adds that row when its forward step is k, and reads no T x S array.
            k, row = one_row
            if row.dtype != row_t.dtype:
                row = cast(row, row_t.dtype)
            t_ph = _Placeholder(TensorType("int64", ()))
            step_rows.append((_stack_rows(Arange("int64")(_i64(D), _i64(N), _i64(1)), t_ph.type), [(0, t_ph)]))
            # k as a forward step: arange(N)[k] (negative k counts from the end; an
            # index out of bounds is the IndexError the output's gradient raised).
            k_in = _Placeholder(TensorType("int64", ()))
            g_rows_non.append((_row(Arange("int64")(_i64(0), _i64(N), _i64(1)), k), k_in))
            row_in = row if isinstance(row, Constant) else _Placeholder(row.type)
            if row_in is not row:
                g_rows_non.append((row, row_in))
            g_ph = elem("switch", elem("eq", t_ph, k_in), row_in, Constant(np.asarray(0, row_t.dtype)))
        elif same_row is None:
            g_ph = g_rows_seq[s_] = _Placeholder(row_t)
        else:
            if same_row.dtype != row_t.dtype:
                same_row = cast(same_row, row_t.dtype)
            if isinstance(same_row, Constant):
                g_ph = same_row
            else:
                g_ph = _Placeholder(same_row.type)
                g_rows_non.append((same_row, g_ph))
        replace[d] = retype(elem("add", acc0, g_ph), row_t.shape)
    if replace:
        keys = [k for k, v in grads.items() if v is not None]
        grads.update(zip(keys, clone_replace([grads[k] for k in keys], replace)))

    # -- the backward scan's groups ------------------------------------------------------------
    b_seqs: list[tuple[Variable, list[tuple[int, Variable]]]] = []  # outer, [(tap, placeholder)]
    b_mm: list[tuple[Variable, list, list]] = []  # buffer, [(in tap, ph)], [(out tap, inner output)]
    b_sit: list[tuple[Variable, Variable, Variable]] = []  # init, placeholder, inner output
    b_nit: list[tuple[Variable, tuple, tuple]] = []  # inner output, row shape, outer row dims
    b_non: list[tuple[Variable, Variable]] = []  # outer, placeholder

    # Forward sequences, mirrored: forward tap k reads S[t + k - lo]; the backward scan
    # reads the reversal of Q = S[D : N + span] at u + (hi - k).
    for i, taps in enumerate(op.seq_taps):
        S = groups["sequences"][i]
        if op.go_backwards:
            S = _rev(S)
        lo, hi = min(0, min(taps)), max(0, max(taps))
        Q = _rows(S, D, _add(N, hi - lo))
        b_seqs.append((_stack_rows(Q, seq_phs[i][0][1].type), [(hi - t, ph) for t, ph in seq_phs[i]]))
    # Recorded mitmot in-tap values: one row per step, tap 0.
    if nm:
        for j, phs in enumerate(mm_phs):
            for q, (_, ph) in enumerate(phs):
                rec = rec_node.outputs[rec_first[j] + q]
                b_seqs.append((_stack_rows(_rows(rec, D, N), ph.type), [(0, ph)]))
    # Recurrent states' rows: Xf = concat(init rows, outputs); tap k reads Xf[t + K + k],
    # the reversal of Xf[D : N + K] at u - k.
    # (`Xf` is a copy; when the loop reads only tap 0, the outputs are read instead,
    # below, and outer products read the init and the outputs apart: no copy.)
    state_init_rows = {}
    state_seq_pos = {}  # position in b_seqs -> state
    for s, (kind, r, phs, init, K, row_t) in enumerate(states):
        init_rows = init if kind == "mitsot" else DimShuffle(init.ndim, ("x",) + tuple(range(init.ndim)))(init)
        state_init_rows[s] = init_rows
        Xf = Join(0)(_stack_rows(init_rows, row_t), _stack_rows(full_out[r], row_t))
        taps = [(-t, ph) for t, ph in phs] + ([(0, cur_state[s])] if s in cur_state else [])
        state_seq_pos[len(b_seqs)] = s
        b_seqs.append((_stack_rows(_rows(Xf, D, _add(N, K)), phs[0][1].type), taps))
    for j, ph in cur_nit.items():
        b_seqs.append((_stack_rows(_rows(full_out[first_nit + j], D, N), ph.type), [(0, ph)]))
    # Output gradients without state: sequences read at tap 0.
    for j, d in nit_delta.items():
        b_seqs.append((_stack_rows(_rows(g_nit[j], D, N), d.type), [(0, d)]))

    # State gradients: MITMOT buffers, R[u] = gradient of Xf[K + N - 1 - u].
    state_buf = {}
    for s, (kind, r, phs, init, K, row_t) in enumerate(states):
        if not live_state[s]:
            continue
        row_dims = _row_dims(init, kind)
        R = _zeros(_add(Nb, K), row_dims, row_t.dtype)
        if s in g_rows_seq:
            b_seqs.append((_stack_rows(_rows(g_state_out[s], D, N), row_t), [(0, g_rows_seq[s])]))
        in_list = [(0, mm_in0[s])]
        out_list = []
        for t, ph in sorted(phs, key=lambda p: -p[0]):
            acc = _Placeholder(row_t)
            in_list.append((-t, acc))
            contrib = grads.get(ph.id)
            out_list.append((-t, acc if contrib is None else elem("add", acc, contrib)))
        state_buf[s] = len(b_mm)
        b_mm.append((_stack_rows(R, row_t), in_list, out_list))
    # Forward mitmot buffers: the gradient of the final buffer, reversed over the rows
    # the loop touched; a step zeroes the gradient of the rows it overwrote and adds its
    # contribution to the rows it read.
    mm_buf = []
    for j, (in_taps, out_taps) in enumerate(op.mitmot_taps):
        B = groups["mitmot"][j]
        row_t = B.type.row()
        lo = min(0, min(in_taps + out_taps))
        hi = max(0, max(in_taps + out_taps))
        span = hi - lo
        GB = g_mm[j] if g_mm[j] is not None else zeros_like(B)
        RB = _rev(_rows(GB, 0, _add(N, span)))
        rows_all = sorted({hi - t for t in in_taps + out_taps})
        in_ph = {}
        for r in rows_all:
            if r in {hi - o for o in out_taps}:
                in_ph[r] = mm_delta[j][hi - r]
            else:
                in_ph[r] = _Placeholder(row_t)
        new_val = {}
        for r in rows_all:
            base = None if r in {hi - o for o in out_taps} else in_ph[r]
            terms = [] if base is None else [base]
            for t, ph in mm_phs[j]:
                if hi - t == r and grads.get(ph.id) is not None:
                    terms.append(grads[ph.id])
            if not terms:
                new_val[r] = zeros_like(in_ph[r])
            else:
                total = terms[0]
                for term in terms[1:]:
                    total = elem("add", total, term)
                new_val[r] = total
        mm_buf.append((len(b_mm), GB, span))
        b_mm.append((_stack_rows(RB, row_t), [(r, in_ph[r]) for r in rows_all],
                     [(r, new_val[r]) for r in rows_all]))

    b_seqs.extend(step_rows)
    seq_tap_of = {ph.id: (outer, tap, state_seq_pos.get(q)) for q, (outer, taps) in enumerate(b_seqs)
                  for tap, ph in taps}
    # Non-sequences: their gradients are sums over the steps. A term that is an outer
    # product of two per-step vectors (dW += outer(h_{t-1}, da_t)) is pushed out of the
    # loop: the loop stacks both vectors (NITSOT outputs) and one matmul sums the
    # products after it (PyTensor's rewrite); other terms accumulate in a SITSOT.
    non_acc = {}
    non_outer: dict[int, list[tuple[int, int]]] = {}
    for i, ph in enumerate(non_phs):
        contrib = grads.get(ph.id)
        if contrib is None:
            continue
        outer_terms, rest = _split_outer_terms(contrib) if ph.ndim == 2 else ([], [contrib])
        dims = shape_of(groups["nonseqs"][i])
        for a, c in outer_terms:
            # Each factor's rows in backward step order: a sequence the step reads
            # already has them (rows u + tap of its reversal, read through a view);
            # others are stacked.
            pair = []
            for v, d in ((a, dims[:1]), (c, dims[1:])):
                if v.id in seq_tap_of:
                    outer, tap, st = seq_tap_of[v.id]
                    pieces = None
                    if st is not None and not any(k == "pieces" for k, _ in pair):
                        pieces = _state_pieces(states[st], state_init_rows[st], full_out, tap, N, trunc)
                    if pieces is not None:
                        pair.append(("pieces", pieces))
                    else:
                        pair.append(("rows", _rows(RowsReversed()(outer), tap, _add(Nb, tap))))
                else:
                    pair.append(("nit", len(b_nit)))
                    b_nit.append((v, v.type.shape, d))
            non_outer.setdefault(i, []).append(tuple(pair))
        if not rest:
            continue
        acc = _Placeholder(ph.type)
        non_acc[i] = len(b_sit)
        b_sit.append((retype(zeros_like(groups["nonseqs"][i]), ph.type.shape), acc,
                      elem("add", acc, _add_vars(rest))))
    # Sequences: one row per step and tap.
    seq_nit = {}
    for i, phs in enumerate(seq_phs):
        for t, ph in phs:
            contrib = grads.get(ph.id)
            if contrib is None:
                continue
            seq_nit.setdefault(i, []).append((t, len(b_nit)))
            b_nit.append((contrib, ph.type.shape, shape_of(groups["sequences"][i])[1:]))

    # Forward non-sequences used by the backward step.
    inner_out_vars = [v for _, _, outs_ in b_mm for _, v in outs_] + [v for _, _, v in b_sit] + [v for v, _, _ in b_nit]
    used = {v.id for v in graph_inputs(inner_out_vars)}
    for i, ph in enumerate(non_phs):
        if ph.id in used:
            b_non.append((groups["nonseqs"][i], ph))
    b_non.extend((outer, ph) for outer, ph in g_rows_non if ph.id in used)
    # Drop sequence taps the step does not read.
    kept_seqs = []
    for q, (outer, taps) in enumerate(b_seqs):
        taps = [(t, ph) for t, ph in taps if ph.id in used]
        if q in state_seq_pos and [t for t, _ in taps] == [0]:
            # Only the state's own rows: the outputs, without the init rows.
            r = states[state_seq_pos[q]][1]
            outer = _stack_rows(_rows(full_out[r], D, N), taps[0][1].type)
        if taps:
            kept_seqs.append((outer, taps))
    b_seqs = kept_seqs
    if not b_mm and not b_sit and not b_nit:
        return result

    back = _build(op, b_seqs, b_mm, b_sit, b_nit, b_non, Nb, node)
    n_bmm = len(b_mm)
    bm_out = back.outputs[:n_bmm]
    sit_out = back.outputs[n_bmm:n_bmm + len(b_sit)]
    nit_out = back.outputs[n_bmm + len(b_sit):]

    # -- the inputs' gradients -------------------------------------------------------------------
    for s, (kind, r, phs, init, K, row_t) in enumerate(states):
        pos = pos_of[kind] + (s if kind == "mitsot" else s - op.n_mitsot)
        g = None
        if s in state_buf:
            Rf = bm_out[state_buf[s]]
            tail = _rev(_rows(Rf, Nb, _add(Nb, K)))  # gradients of Xf[D .. D + K - 1]
            if trunc == -1:
                g = tail
            else:
                Dk = _min(D, K)
                g = _inc_rows(_zeros(K, _row_dims(init, kind), row_t.dtype), Dk, None, _rows(tail, 0, _sub(K, Dk)))
            if kind == "sitsot":
                g = _row(g, 0)
        if g_state_init[s] is not None:
            direct = g_state_init[s] if kind == "mitsot" else _row(g_state_init[s], 0)
            g = direct if g is None else elem("add", g, direct)
        if needed[pos]:
            result[pos] = g
    for j, (b_idx, GB, span) in enumerate(mm_buf):
        pos = pos_of["mitmot"] + j
        if not needed[pos]:
            continue
        B = groups["mitmot"][j]
        used_rows = _rev(bm_out[b_idx])
        result[pos] = IncSubtensor((("s", None, "v", None),), True)(GB, used_rows, _i64(_add(N, span)))
    for i, b_idx in non_acc.items():
        result[pos_of["nonseqs"] + i] = _row(sit_out[b_idx], 0)
    for i, pairs in non_outer.items():
        # Each product of stacked rows (A^T B) accumulates into the previous sum.
        total = result[pos_of["nonseqs"] + i]
        for pair in pairs:
            (ka, xa), (kb, xb) = pair
            if ka == "pieces" or kb == "pieces":
                # One factor comes in pieces of rows: one product per piece.
                split_first = ka == "pieces"
                pieces, (k_other, x_other) = (xa, pair[1]) if split_first else (xb, pair[0])
                other = nit_out[x_other] if k_other == "nit" else x_other
                products = []
                for start, stop, rows in pieces:
                    part = _rows(other, start, stop)
                    products.append((rows, part) if split_first else (part, rows))
            else:
                products = [tuple(nit_out[x] if kind == "nit" else x for kind, x in pair)]
            for A, Bm in products:
                if total is None:
                    total = Dot()(DimShuffle(2, (1, 0))(A), Bm)
                elif A.dtype == Bm.dtype == total.dtype:
                    total = AddDotT()(total, A, Bm)
                else:
                    total = elem("add", total, Dot()(DimShuffle(2, (1, 0))(A), Bm))
        result[pos_of["nonseqs"] + i] = total
    for i, items in seq_nit.items():
        S = groups["sequences"][i]
        taps = op.seq_taps[i]
        lo = min(0, min(taps))
        G = zeros_like(S)
        for t, b_idx in items:
            rows = _rev(nit_out[b_idx])  # forward order, steps D .. N - 1
            start = _add(D, t - lo)
            G = _inc_rows(G, start, _add(start, Nb), rows)
        if op.go_backwards:
            G = _rev(G)
        result[pos_of["sequences"] + i] = G
    return result


def _state_pieces(state, init_rows: Variable, full_out: list, tap: int, N, trunc: int):
    """The rows a backward step reads at `tap` of a state's rows ``Xf = concat(init
    rows, outputs)``, in backward step order, as pieces ``(start, stop, rows)`` that
    read the outputs and the init in place (no concatenated copy), or None.

    Backward step ``u`` (forward step ``t = N - 1 - u``) reads ``Xf[t + K - tap]``:
    the output row ``t - tap`` for ``u < N - tap``, an init row for the others.
    """
    kind, r, _, _, K, row_t = state
    if trunc != -1 or (isinstance(N, int) and N <= tap):
        return None
    out = full_out[r]
    split = _max0(_sub(N, tap))  # rows read from the outputs
    pieces = [(0, split, RowsReversed()(_stack_rows(_rows(out, 0, split), row_t)))]
    if tap > 0:
        n_init = _sub(N, split)  # min(N, tap)
        init_part = _rows(init_rows, K - tap, _add(K - tap, n_init))
        pieces.append((split, N, RowsReversed()(_stack_rows(init_part, row_t))))
    return pieces


def _single_row(g: Variable):
    """(k, row) when `g` is zeros with `row` added or set at row ``k`` (an int or an
    integer scalar): ``inc_subtensor(zeros[k], row)``, the gradient of a cost on
    one row of a scan's outputs. None otherwise."""
    node = g.owner
    while node is not None and isinstance(node.op, SpecifyShape):
        node = node.inputs[0].owner
    if node is None or not isinstance(node.op, IncSubtensor) or len(node.op.idx_list) != 1 \
            or node.op.idx_list[0][0] != "i":
        return None
    base, row, *syms = node.inputs
    if not _is_zeros(base) or row.ndim != g.ndim - 1:
        return None
    k = node.op.idx_list[0][1]
    return (syms[0] if k == "v" else k), row


def _is_zeros(v: Variable) -> bool:
    """`v` is all zeros: ``switch(False, x, 0)`` (the builder's zeros of x's shape) or an
    ``Alloc`` of a zero constant."""
    node = v.owner
    if node is None:
        return False
    switch = elemwise_inputs(v, "switch")
    if switch is not None:
        cond, _, zero = switch
        return isinstance(cond, Constant) and not np.any(cond.data) and isinstance(zero, Constant) \
            and not np.any(zero.data)
    if isinstance(node.op, Alloc):
        value = node.inputs[0]
        return isinstance(value, Constant) and not np.any(value.data)
    return False


def _max0(a):
    if isinstance(a, int):
        return max(a, 0)
    return elem("maximum", _i64(a), _i64(0))


def _add_vars(terms: list[Variable]) -> Variable:
    total = terms[0]
    for t in terms[1:]:
        total = elem("add", total, t)
    return total


def _split_outer_terms(expr: Variable) -> tuple[list[tuple[Variable, Variable]], list[Variable]]:
    """`expr` as a sum: the terms ``outer(a, b)`` of two vectors as (a, b), and the others."""
    node = expr.owner
    if node is not None and isinstance(node.op, SpecifyShape):
        return _split_outer_terms(node.inputs[0])
    terms = elemwise_inputs(expr, "add")
    if terms is not None and all(v.ndim == 2 for v in terms):
        outer_terms, rest = [], []
        for v in terms:
            o, r = _split_outer_terms(v)
            outer_terms += o
            rest += r
        return outer_terms, rest
    factors = elemwise_inputs(expr, "mul")
    if factors is not None:
        x, y = factors
        if _is_column(x) and _is_row(y):
            a, c = x.owner.inputs[0], y.owner.inputs[0]
            if a.dtype == c.dtype == expr.dtype:
                return [(a, c)], []
    return [], [expr]


def _is_column(v: Variable) -> bool:
    """`v` is ``a[:, None]`` of a *vector* `a` (pattern ``(0, 'x')`` on a matrix also drops an axis)."""
    return (v.owner is not None and isinstance(v.owner.op, DimShuffle) and v.owner.op.input_ndim == 1
            and v.owner.op.new_order == (0, "x"))


def _is_row(v: Variable) -> bool:
    """`v` is ``a[None, :]`` of a *vector* `a`."""
    return (v.owner is not None and isinstance(v.owner.op, DimShuffle) and v.owner.op.input_ndim == 1
            and v.owner.op.new_order == ("x", 0))


def _row_constant(g: Variable) -> Variable | None:
    """The row every row of `g` equals, when `g` is a broadcast (an ``Alloc`` of a row or a scalar)."""
    node = g.owner
    while node is not None and isinstance(node.op, SpecifyShape):
        node = node.inputs[0].owner
    if node is None or not isinstance(node.op, Alloc):
        return None
    value = node.inputs[0]
    out_rank = len(node.op.shape)
    if value.ndim < out_rank:
        return value
    if value.type.shape[0] == 1:
        return Subtensor((("i", 0),))(value)
    return None


def _row_dims(init: Variable, kind: str) -> tuple:
    dims = shape_of(init)
    return tuple(dims[1:]) if kind == "mitsot" else tuple(dims)


def _recording_copy(op, node: Apply) -> tuple[Apply, list[int]]:
    """A copy of the forward scan that keeps every row and records its mitmot in-tap reads.

    Returns the new node and, per mitmot group, the index of the output holding
    the values its first in-tap read at each step (the others follow).
    """
    groups = op.outer_groups(node)
    nm = op.n_mitmot
    extra_outs, extra_shapes, extra_dims = [], [], []
    k = sum(len(t) for t in op.seq_taps)
    for j, (in_taps, _) in enumerate(op.mitmot_taps):
        B = groups["mitmot"][j]
        row_dims = shape_of(B)[1:]
        for _ in in_taps:
            ph = op.inner_inputs[k]
            k += 1
            extra_outs.append(ph)
            extra_shapes.append(ph.type.shape)
            for static, d in zip(ph.type.shape, row_dims):
                if static is None:
                    extra_dims.append(_i64(d) if not isinstance(d, int) else _i64(d))
    n_mm_outs = op.n_mitmot_outs
    outs = list(op.inner_outputs)
    regular = outs[n_mm_outs:n_mm_outs + op.n_outputs]
    cond = outs[n_mm_outs + op.n_outputs:]
    copy = type(op)(
        inner_inputs=op.inner_inputs,
        inner_outputs=outs[:n_mm_outs] + regular + extra_outs + cond,
        seq_taps=op.seq_taps,
        mitsot_taps=op.mitsot_taps,
        n_sitsot=op.n_sitsot,
        n_nitsot=op.n_nitsot + len(extra_outs),
        n_nonseqs=op.n_nonseqs,
        until=op.until,
        go_backwards=op.go_backwards,
        keep=[0] * (op.n_outputs + len(extra_outs)),
        nitsot_shapes=op.nitsot_shapes + extra_shapes,
        nitsot_runtime=op.nitsot_runtime + [False] * len(extra_outs),
        name=op.name,
        truncate_gradient=op.truncate_gradient,
        kinds=op.kinds,
        state_checks=op.state_checks,
        mitmot_taps=op.mitmot_taps,
    )
    ins = list(node.inputs)
    dims_end = 1 + op.n_seqs + nm + op.n_mitsot + op.n_sitsot + op.n_nonseqs + op.n_dyn_dims()
    new_node = copy.make_node(*ins[:dims_end], *extra_dims, *ins[dims_end:])
    first = nm + op.n_outputs
    starts, pos = [], first
    for in_taps, _ in op.mitmot_taps:
        starts.append(pos)
        pos += len(in_taps)
    return new_node, starts


def _build(op, b_seqs, b_mm, b_sit, b_nit, b_non, Nb, node) -> Apply:
    """The backward ScanOp node."""
    inner_inputs: list[Variable] = []
    seq_taps = []
    seq_outer = []
    for outer, taps in b_seqs:
        taps = sorted(taps, key=lambda p: p[0])
        seq_taps.append(tuple(t for t, _ in taps))
        inner_inputs.extend(ph for _, ph in taps)
        seq_outer.append(outer)
    mm_taps = []
    mm_outer = []
    inner_outputs: list[Variable] = []
    for buf, in_list, out_list in b_mm:
        in_list = sorted(in_list, key=lambda p: p[0])
        out_list = sorted(out_list, key=lambda p: p[0])
        mm_taps.append((tuple(t for t, _ in in_list), tuple(t for t, _ in out_list)))
        inner_inputs.extend(ph for _, ph in in_list)
        inner_outputs.extend(v for _, v in out_list)
        mm_outer.append(buf)
    for init, ph, out in b_sit:
        inner_inputs.append(ph)
        inner_outputs.append(out)
    nit_shapes, nit_dims = [], []
    for out, shape, dims in b_nit:
        inner_outputs.append(out)
        nit_shapes.append(tuple(shape))
        # Dynamic row sizes: the outer sequence's (the rows are gradients of its slices).
        nit_dims.extend(_i64(d) for static, d in zip(shape, dims) if static is None)
    for outer, ph in b_non:
        inner_inputs.append(ph)
    back_op = type(op)(
        inner_inputs=inner_inputs,
        inner_outputs=inner_outputs,
        seq_taps=seq_taps,
        mitsot_taps=[],
        n_sitsot=len(b_sit),
        n_nitsot=len(b_nit),
        n_nonseqs=len(b_non),
        until=False,
        go_backwards=True,
        keep=[1] * len(b_sit) + [0] * len(b_nit),
        nitsot_shapes=nit_shapes,
        name=f"grad_of_{op.name}" if op.name else "grad_of_scan",
        mitmot_taps=mm_taps,
    )
    return back_op.make_node(_i64(Nb), *seq_outer, *mm_outer, *[init for init, _, _ in b_sit],
                             *[outer for outer, _ in b_non], *nit_dims)

