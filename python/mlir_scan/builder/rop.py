"""Forward mode: ``Rop`` (Jacobian-vector products) and ``Lop`` (vector-Jacobian products).

``Rop(f, wrt, eval_points)`` is Theano's R-operator: the directional
derivative ``J_f(wrt) @ eval_points`` of `f`, computed forward through the
graph: every node on the way from `wrt` to `f` is asked for the tangents of
its outputs given the tangents of its inputs (an *R_op rule*, kept in
:data:`R_OP_RULES` by op class, next to nothing else). ``Lop(f, wrt,
eval_points)`` is the reverse-mode product ``eval_points @ J_f(wrt)``: the
gradient with the output cotangents given (:func:`~mlir_scan.builder.gradient.grad`
with ``known_grads``).

The rules:

* element-wise ops: ``sum_i d out / d x_i * v_i``, each partial derivative
  taken from the op's gradient rule (``GRAD_RULES`` are element-wise and
  linear in the output gradient, so the rule applied to `v_i` is the i-th
  term);
* ``dot``: ``dot(vx, y) + dot(x, vy)``; ``max``/``min``/``prod`` reductions:
  the sum of the tangent times the local derivative;
* ops linear in their data inputs (``sum``, ``dimshuffle``, ``reshape``,
  ``join``, basic and integer-array indexing, ``set/inc_subtensor``, ``alloc``, ``ifelse``,
  ``cumsum``, ``diag``, ``specify_shape``...): the op itself applied to the
  tangents (zeros for inputs without one; sizes and indices unchanged);
* **scan**: a scan that carries the tangents beside the states: the same
  steps, with every sequence, state (SITSOT, MITSOT, and the MITMOT buffers
  of a gradient scan), NITSOT output and non-sequence that has a tangent
  getting a tangent of the same kind and taps, the step computing the
  tangents of its outputs forward from the tangents of its inputs (this
  rule, applied to the inner graph), the same ``until`` condition and
  direction. The tangent of a scan is therefore a forward scan, never a
  backward (gradient) one.
* any other op with a gradient (``L_op``): the "double L_op" trick. The
  node's vector-Jacobian product ``L(u) = u @ J`` is linear in `u`, so
  ``J @ v = grad(sum(L(u) * v), u)``, exact for any `u` (zeros are used).

Example: a Gauss-Newton matrix-vector product ``G v = J^T J v`` of a small
RNN whose outputs ``y`` fit targets by squared error (the product Hessian-free
optimisers need; ``J`` is the Jacobian of ``y`` with respect to ``W``)::

    >>> import numpy as np, mlir_scan as theano, mlir_scan.tensor as T
    >>> xs, W, V = T.dmatrix("xs"), T.dmatrix("W"), T.dmatrix("V")
    >>> def step(x_t, h_prev, W):
    ...     return T.tanh(x_t + T.dot(h_prev, W))
    >>> hs, _ = theano.scan(step, sequences=xs, outputs_info=T.zeros((3,)), non_sequences=W)
    >>> Jv = T.Rop(hs, W, V)              # forward: a scan carrying dh beside h
    >>> Gv = T.Lop(hs, W, Jv)             # reverse: J^T (J v)
    >>> f = theano.function([xs, W, V], [Jv, Gv])
    >>> rng = np.random.default_rng(0)
    >>> x, w, v = rng.normal(size=(4, 3)), rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3, 3))
    >>> jv, gv = f(x, w, v)
    >>> def h_of(w):                      # the same RNN in NumPy, for finite differences
    ...     h, out = np.zeros(3), []
    ...     for x_t in x:
    ...         h = np.tanh(x_t + h @ w)
    ...         out.append(h)
    ...     return np.array(out)
    >>> eps = 1e-6
    >>> bool(np.allclose(jv, (h_of(w + eps * v) - h_of(w - eps * v)) / (2 * eps), atol=1e-7))
    True
    >>> J = np.stack([((h_of(w + eps * e) - h_of(w - eps * e)) / (2 * eps)).ravel()
    ...               for e in np.eye(9).reshape(9, 3, 3)], axis=1)
    >>> bool(np.allclose(gv.ravel(), J.T @ J @ v.ravel(), atol=1e-6))
    True
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .gradient import DisconnectedInputError, grad
from .graph import Apply, Constant, NullTypeGradError, Variable, clone_replace, is_float, toposort
from .ops.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor
from .ops.autodiff import (
    SpecifyShape as _GradSpecifyShape,
    add_all,
    alloc_to,
    backprop,
    conform,
    elem,
    one_like,
    retype,
    zeros_like,
)
from .ops.basic import AddDotT, Alloc, CollapseLeading, Copy, DimShuffle, Dot, Join, Reduce, Reshape
from .ops.disconnected import DisconnectedGrad, GradClip, GradScale, ZeroGrad
from .ops.elemwise import GRAD_RULES, Cast, Elemwise, cast
from .ops.extra import CumOp
from .ops.ifelse import IfElse
from .ops.misc import AllocDiag, Assert, ExtractDiag, SpecifyShape, Unbroadcast
from .ops.random import Take
from .ops.scan import ScanOp
from .ops.shape import MakeVector, symbolic_shape
from .ops.subtensor import IncSubtensor, Subtensor

__all__ = ["Rop", "Lop", "R_op", "R_OP_RULES", "register_R_op"]

#: A rule: (node, tangents of its inputs) -> tangents of its outputs.
#: Tangents are variables or ``None`` (zero); a rule gets at least one tangent.
Rule = Callable[[Apply, list], list]

#: Op class -> its forward-mode rule (looked up along the class's MRO).
R_OP_RULES: dict[type, Rule] = {}


def register_R_op(*op_types: type) -> Callable[[Rule], Rule]:
    """Decorator: `rule` is the forward-mode rule of `op_types` (and their subclasses)."""

    def deco(rule: Rule) -> Rule:
        for t in op_types:
            R_OP_RULES[t] = rule
        return rule

    return deco


def _rule_for(op: Any) -> Rule | None:
    for cls in type(op).__mro__:
        rule = R_OP_RULES.get(cls)
        if rule is not None:
            return rule
    return None


def R_op(node: Apply, tangents: list) -> list:
    """The tangents of `node`'s outputs given those of its inputs (``None``: zero).

    The op's rule from :data:`R_OP_RULES`, or the double-L_op fallback for
    an op with a gradient and no rule. Tangents of integer outputs are None.
    """
    if all(t is None for t in tangents):
        return [None] * len(node.outputs)
    rule = _rule_for(node.op) or _via_lop
    outs = rule(node, list(tangents))
    if len(outs) != len(node.outputs):
        raise RuntimeError(f"internal error: the R_op rule of {node.op} gave {len(outs)} tangents "
                           f"for {len(node.outputs)} outputs")
    return [t if t is not None and is_float(o.dtype) else None for o, t in zip(node.outputs, outs)]


# -- helpers ---------------------------------------------------------------------------------


def _fit(t: Variable, var: Variable) -> Variable:
    """The tangent `t` with exactly `var`'s type: cast, broadcast where `var` is bigger, static sizes."""
    if t.dtype != var.dtype:
        t = cast(t, var.dtype)
    if t.ndim > var.ndim:
        raise RuntimeError(f"internal error: tangent of rank {t.ndim} for {var} of rank {var.ndim}")
    lead = var.ndim - t.ndim
    if lead or any(a == 1 and b != 1 for a, b in zip(t.type.shape, var.type.shape[lead:])):
        t = alloc_to(t, symbolic_shape(var), var.dtype)
    if t.type.shape != var.type.shape:
        t = retype(t, var.type.shape)
    return t


def _forward(outputs: list[Variable], seeds: dict[int, Variable]) -> dict[int, Variable]:
    """Tangents (by variable id) of every variable between the seeded ones and `outputs`.

    The seeded variables are not walked through (their own inputs do not
    matter); variables without a tangent are absent (zero).
    """
    tangents = dict(seeds)
    for node in toposort(outputs, stop=set(seeds)):
        if not any(is_float(o.dtype) for o in node.outputs):
            continue
        ts = [tangents.get(i.id) if is_float(i.dtype) else None for i in node.inputs]
        if all(t is None for t in ts):
            continue
        for o, t in zip(node.outputs, R_op(node, ts)):
            if t is not None:
                tangents[o.id] = _fit(t, o)
    return tangents


def _sum_all(x: Variable) -> Variable:
    return Reduce("sum", tuple(range(x.ndim)))(x) if x.ndim else x


# -- the generic fallback: the double L_op ------------------------------------------------------


def _via_lop(node: Apply, tangents: list) -> list:
    """``J v`` as ``grad(sum(L(u) * v), u)``: exact, since the node's ``L(u) = u J`` is linear in `u`."""
    op = node.op
    us = [Variable(o.type, name="u") if is_float(o.dtype) else None for o in node.outputs]
    needed = [t is not None and is_float(x.dtype) for x, t in zip(node.inputs, tangents)]
    try:
        if getattr(op, "L_op_wants_needed", False):
            igrads = op.L_op(node, us, needed=needed)
        else:
            igrads = op.L_op(node, us)
    except NullTypeGradError as exc:
        raise NullTypeGradError(f"Rop: {op} has no derivative (no R_op rule and no gradient), and a tangent "
                                f"reaches it (node {node}): {exc}") from exc
    terms = []
    for x, t, g, need in zip(node.inputs, tangents, igrads, needed):
        if need and g is not None:
            terms.append(_sum_all(elem("mul", conform(g, x), t)))
    live = [(u, o) for u, o in zip(us, node.outputs) if u is not None]
    if not terms or not live:
        return [None] * len(node.outputs)
    cost = add_all(terms)
    grads = backprop([(cost, one_like(cost))], [u for u, _ in live])
    zeros = {u: zeros_like(o) for u, o in live}
    by_u = {}
    for (u, _), g in zip(live, grads):
        # (linear in u: u only remains through sizes, which its zeros have too)
        by_u[u.id] = None if g is None else clone_replace([g], zeros)[0]
    return [by_u.get(u.id) if u is not None else None for u in us]


# -- linear ops: the op applied to the tangents ----------------------------------------------------


def _linear(positions: Callable[[Apply], range | tuple]) -> Rule:
    """The rule of an op linear in the inputs at `positions` (the others, sizes, indices and
    conditions, are kept): the op applied to their tangents (zeros where they have none)."""

    def rule(node: Apply, tangents: list) -> list:
        lin = set(positions(node))
        if all(tangents[i] is None for i in lin):
            return [None] * len(node.outputs)
        ins = []
        for i, (x, t) in enumerate(zip(node.inputs, tangents)):
            if i not in lin:
                ins.append(x)
            elif t is None or not is_float(x.dtype):
                ins.append(zeros_like(x))
            else:
                ins.append(_fit(t, x))
        outs = node.op.make_node(*ins).outputs
        return list(outs)

    return rule


_first = _linear(lambda node: (0,))
_all = _linear(lambda node: range(len(node.inputs)))

register_R_op(DimShuffle, CollapseLeading, Reshape, Copy, Alloc, Subtensor, Take, SpecifyShape, _GradSpecifyShape,
              Assert, Unbroadcast, ExtractDiag, AllocDiag)(_first)
register_R_op(Join, MakeVector)(_all)
register_R_op(IncSubtensor)(_linear(lambda node: (0, 1)))
register_R_op(IfElse)(_linear(lambda node: range(1, len(node.inputs))))
# integer-array indexing: linear in the data, like basic indexing
register_R_op(AdvancedSubtensor)(_first)
register_R_op(AdvancedIncSubtensor)(_linear(lambda node: (0, 1)))


@register_R_op(GradClip, GradScale)
def _view(node: Apply, tangents: list) -> list:
    # The identity on values (Theano's ViewOp): the tangent passes unchanged.
    return [tangents[0]]


@register_R_op(ZeroGrad)
def _zero_grad(node: Apply, tangents: list) -> list:
    # Theano's ZeroGrad.R_op: a zero tangent (the input stays connected).
    return [zeros_like(node.outputs[0])]


@register_R_op(DisconnectedGrad)
def _disconnected(node: Apply, tangents: list) -> list:
    return [None]  # nothing flows through (Theano's DisconnectedGrad.R_op)


@register_R_op(CumOp)
def _cum(node: Apply, tangents: list) -> list:
    if node.op.mode == "add":
        return _first(node, tangents)
    return _via_lop(node, tangents)  # cumprod: d(prod) needs the zero-safe rule of its gradient


# -- element-wise ------------------------------------------------------------------------------------


@register_R_op(Elemwise)
def _elemwise(node: Apply, tangents: list) -> list:
    """``sum_i d out / d x_i * v_i``: the gradient rules are element-wise and linear in the gradient."""
    out = node.outputs[0]
    if not is_float(out.dtype):
        return [None]
    sop = node.op.scalar_op
    if isinstance(sop, Cast):
        return [cast(tangents[0], out.dtype)]
    rule = GRAD_RULES.get(sop.name)
    if rule is None:  # pragma: no cover - every float-valued scalar op has a gradient rule
        return _via_lop(node, tangents)
    xs = list(node.inputs)
    terms = []
    for i, (x, t) in enumerate(zip(xs, tangents)):
        if t is None or not is_float(x.dtype):
            continue
        term = rule(xs, out, t)[i]
        if term is not None:
            terms.append(term)
    if not terms:
        return [None]
    return [add_all(terms)]


# -- dot and reductions ----------------------------------------------------------------------------


@register_R_op(Dot)
def _dot(node: Apply, tangents: list) -> list:
    x, y = node.inputs
    vx, vy = tangents
    terms = []
    if vx is not None:
        terms.append(Dot()(_fit(vx, x), y))
    if vy is not None:
        terms.append(Dot()(x, _fit(vy, y)))
    return [add_all(terms)]


@register_R_op(AddDotT)
def _add_dot_t(node: Apply, tangents: list) -> list:
    # c + a.T @ b: vc + va.T @ b + a.T @ vb
    c, a, b = node.inputs
    vc, va, vb = tangents
    acc = _fit(vc, c) if vc is not None else zeros_like(c)
    if va is not None:
        acc = AddDotT()(acc, _fit(va, a), b)
    if vb is not None:
        acc = AddDotT()(acc, a, _fit(vb, b))
    return [acc]


@register_R_op(Reduce)
def _reduce(node: Apply, tangents: list) -> list:
    op = node.op
    if op.kind == "sum" or not op.axes:
        return _first(node, tangents)
    # max/min/prod: sum over the axes of v * d out / d x (the local
    # derivative is the gradient rule's, with an output gradient of ones).
    out = node.outputs[0]
    if not is_float(out.dtype):
        return [None]
    ones = one_like(out) if out.ndim == 0 else alloc_to(one_like(out), symbolic_shape(out), out.dtype)
    (local,) = op.L_op(node, [ones])
    x = node.inputs[0]
    return [Reduce("sum", op.axes)(elem("mul", _fit(tangents[0], x), local))]


# -- scan: the tangents are carried beside the states ---------------------------------------------------


@register_R_op(ScanOp)
def _scan(node: Apply, tangents: list) -> list:
    """A scan computing the original outputs and their tangents, step by step, forward."""
    op: ScanOp = node.op
    groups = op.outer_groups(node)
    tg = op.split_inputs(list(tangents))

    # Inner inputs and outputs, by group.
    k = 0
    seq_phs, mm_phs, mit_phs, sit_phs, non_phs = [], [], [], [], []
    for taps in op.seq_taps:
        seq_phs.append(op.inner_inputs[k:k + len(taps)])
        k += len(taps)
    for in_taps, _ in op.mitmot_taps:
        mm_phs.append(op.inner_inputs[k:k + len(in_taps)])
        k += len(in_taps)
    for taps in op.mitsot_taps:
        mit_phs.append(op.inner_inputs[k:k + len(taps)])
        k += len(taps)
    for _ in range(op.n_sitsot):
        sit_phs.append([op.inner_inputs[k]])
        k += 1
    for _ in range(op.n_nonseqs):
        non_phs.append([op.inner_inputs[k]])
        k += 1
    outs = list(op.inner_outputs)
    mm_outs = []
    j = 0
    for _, out_taps in op.mitmot_taps:
        mm_outs.append(outs[j:j + len(out_taps)])
        j += len(out_taps)
    regular = outs[j:j + op.n_outputs]
    cond = outs[j + op.n_outputs:]
    mit_outs = [[v] for v in regular[:op.n_mitsot]]
    sit_outs = [[v] for v in regular[op.n_mitsot:op.n_mitsot + op.n_sitsot]]
    nit_outs = regular[op.n_mitsot + op.n_sitsot:]

    def has(t, x) -> bool:
        return t is not None and is_float(x.dtype)

    seq_on = [has(t, x) for t, x in zip(tg["sequences"], groups["sequences"])]
    non_on = [has(t, x) for t, x in zip(tg["nonseqs"], groups["nonseqs"])]
    # States: (group name, outer inputs, inner inputs, inner outputs).
    states = [("mitmot", groups["mitmot"], tg["mitmot"], mm_phs, mm_outs),
              ("mitsot", groups["mitsot"], tg["mitsot"], mit_phs, mit_outs),
              ("sitsot", groups["sitsot"], tg["sitsot"], sit_phs, sit_outs)]
    state_on = {name: [has(t, x) for t, x in zip(ts, xs)] for name, xs, ts, _, _ in states}

    # Tangent placeholders (one per inner input that gets a tangent), made once.
    t_ph: dict[int, Variable] = {}

    def tangent_ph(ph: Variable) -> Variable:
        if ph.id not in t_ph:
            t_ph[ph.id] = Variable(ph.type, name=f"d_{ph.name}" if ph.name else None)
        return t_ph[ph.id]

    # Which states carry a tangent: those given one, and those whose step output
    # gets one from the others (a fixed point).
    while True:
        seeds = {}
        for on, phs in zip(seq_on, seq_phs):
            if on:
                seeds.update({ph.id: tangent_ph(ph) for ph in phs})
        for on, phs in zip(non_on, non_phs):
            if on:
                seeds.update({ph.id: tangent_ph(ph) for ph in phs})
        for name, _, _, phs_list, _ in states:
            for on, phs in zip(state_on[name], phs_list):
                if on:
                    seeds.update({ph.id: tangent_ph(ph) for ph in phs})
        inner_t = _forward(regular + [v for vs in mm_outs for v in vs], seeds)
        changed = False
        for name, xs, _, _, outs_list in states:
            for i, (x, vs) in enumerate(zip(xs, outs_list)):
                if not state_on[name][i] and is_float(x.dtype) and any(v.id in inner_t for v in vs):
                    state_on[name][i] = True
                    changed = True
        if not changed:
            break
    nit_on = [is_float(v.dtype) and v.id in inner_t for v in nit_outs]

    if not (any(seq_on) or any(non_on) or any(nit_on) or any(any(v) for v in state_on.values())):
        return [None] * len(node.outputs)

    def inner_tangent(v: Variable) -> Variable:
        t = inner_t.get(v.id)
        return _fit(t, v) if t is not None else zeros_like(v)

    def outer_tangent(t, x: Variable) -> Variable:
        return _fit(t, x) if t is not None else zeros_like(x)

    def pick(flags, items):
        return [it for on, it in zip(flags, items) if on]

    # The new op: every group is its original items followed by the tangents of the items that have one.
    inner_inputs = [ph for phs in seq_phs for ph in phs]
    inner_inputs += [tangent_ph(ph) for phs in pick(seq_on, seq_phs) for ph in phs]
    for name, _, _, phs_list, _ in states:
        inner_inputs += [ph for phs in phs_list for ph in phs]
        inner_inputs += [tangent_ph(ph) for phs in pick(state_on[name], phs_list) for ph in phs]
    inner_inputs += [ph for phs in non_phs for ph in phs]
    inner_inputs += [tangent_ph(ph) for phs in pick(non_on, non_phs) for ph in phs]

    inner_outputs = [v for vs in mm_outs for v in vs]
    inner_outputs += [inner_tangent(v) for vs in pick(state_on["mitmot"], mm_outs) for v in vs]
    for name, outs_list in (("mitsot", mit_outs), ("sitsot", sit_outs)):
        inner_outputs += [vs[0] for vs in outs_list]
        inner_outputs += [inner_tangent(vs[0]) for vs in pick(state_on[name], outs_list)]
    inner_outputs += list(nit_outs) + [inner_tangent(v) for v in pick(nit_on, nit_outs)]
    inner_outputs += cond

    n_mit, n_sit = op.n_mitsot, op.n_sitsot
    keep_mit, keep_sit = op.keep[:n_mit], op.keep[n_mit:n_mit + n_sit]
    keep_nit = op.keep[n_mit + n_sit:]
    n_mit_t = sum(state_on["mitsot"])
    keep = (keep_mit + pick(state_on["mitsot"], keep_mit) + keep_sit + pick(state_on["sitsot"], keep_sit)
            + keep_nit + pick(nit_on, keep_nit))
    # State checks name outputs in mitsot + sitsot order: the sitsots moved by the tangent mitsots.
    checks = [(o if o < n_mit else o + n_mit_t, d, hoisted, msg) for o, d, hoisted, msg in op.state_checks]
    new_op = ScanOp(
        inner_inputs=inner_inputs,
        inner_outputs=inner_outputs,
        seq_taps=op.seq_taps + pick(seq_on, op.seq_taps),
        mitsot_taps=op.mitsot_taps + pick(state_on["mitsot"], op.mitsot_taps),
        n_sitsot=n_sit + sum(state_on["sitsot"]),
        n_nitsot=op.n_nitsot + sum(nit_on),
        n_nonseqs=op.n_nonseqs + sum(non_on),
        until=op.until,
        go_backwards=op.go_backwards,
        keep=keep,
        nitsot_shapes=op.nitsot_shapes + pick(nit_on, op.nitsot_shapes),
        nitsot_runtime=op.nitsot_runtime + pick(nit_on, op.nitsot_runtime),
        name=f"rop_of_{op.name}" if op.name else "rop_of_scan",
        truncate_gradient=op.truncate_gradient,
        kinds=op.kinds + ["output"] * sum(state_on["sitsot"]),
        state_checks=checks,
        mitmot_taps=op.mitmot_taps + pick(state_on["mitmot"], op.mitmot_taps),
        type_error=op.type_error,
    )

    # Outer inputs, in the same order.
    new_inputs = [node.inputs[0]]
    new_inputs += list(groups["sequences"])
    new_inputs += [outer_tangent(t, x) for t, x in pick(seq_on, list(zip(tg["sequences"], groups["sequences"])))]
    for name, xs, ts, _, _ in states:
        new_inputs += list(xs)
        new_inputs += [outer_tangent(t, x) for t, x in pick(state_on[name], list(zip(ts, xs)))]
    new_inputs += list(groups["nonseqs"])
    new_inputs += [outer_tangent(t, x) for t, x in pick(non_on, list(zip(tg["nonseqs"], groups["nonseqs"])))]
    dims = list(groups["nitsot_dims"])
    new_inputs += dims
    for j, on in enumerate(nit_on):
        if on and not op.nitsot_runtime[j]:
            new_inputs += dims[op._dyn_dims_before(j):op._dyn_dims_before(j + 1)]
    new_inputs += list(groups["state_dims"])
    new_node = new_op.make_node(*new_inputs)

    # The tangent of each original output: where its tangent output lands in the new node.
    res = new_node.outputs
    n_mm = op.n_mitmot
    n_mm_t = sum(state_on["mitmot"])
    n_sit_t = sum(state_on["sitsot"])
    result: list = []

    def place(flags: list[bool], start: int) -> list:
        out, r = [], 0
        for on in flags:
            out.append(res[start + r] if on else None)
            r += on
        return out

    result += place(state_on["mitmot"], n_mm)
    base = n_mm + n_mm_t
    result += place(state_on["mitsot"], base + n_mit)
    base += n_mit + n_mit_t
    result += place(state_on["sitsot"], base + n_sit)
    base += n_sit + n_sit_t
    result += place(nit_on, base + op.n_nitsot)
    return result


# -- the public API ----------------------------------------------------------------------------------------


def _as_variable(x: Any, what: str) -> Variable:
    if isinstance(x, Variable):
        return x
    try:
        return Constant(np.asarray(x))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: expected a symbolic variable or an array, got {x!r}") from exc


def _format_as(use_list: bool, use_tuple: bool, outputs: list) -> Any:
    """Theano's ``format_as``: a list, a tuple or the single value, as the caller gave it."""
    if use_list:
        return list(outputs)
    if use_tuple:
        return tuple(outputs)
    if len(outputs) != 1:
        raise ValueError(f"expected a single output, got {len(outputs)}")
    return outputs[0]


def Rop(f: Any, wrt: Any, eval_points: Any, disconnected_outputs: str = "raise",
        return_disconnected: str = "zero") -> Any:
    """The R-operator: ``sum_j (d f[i] / d wrt[j]) @ eval_points[j]``, a Jacobian-vector product.

    Theano's ``theano.gradient.Rop`` / ``T.Rop``. `f`, `wrt` and
    `eval_points` are variables or lists (or tuples) of them; each eval
    point has its `wrt`'s rank (it is cast to its dtype; a NumPy array is
    a constant). The result is a list/tuple when `f` is one, else a single
    variable. It is computed forward through the graph (see the module
    docstring): the Rop of a scan is a scan carrying the tangents beside the
    states. As in Theano, the other variables of the graph have zero
    tangents: a float output computed without `wrt` (or only through
    integers) has a zero tangent; an integer output (``x.shape[0]``,
    ``argmax``), an output that is not computed at all (a variable outside
    `wrt`) or one whose last op stops tangents (``disconnected_grad``) raises ``DisconnectedInputError`` (``disconnected_outputs="raise"``;
    ``"warn"`` warns, ``"ignore"`` does not), and is then zeros
    (``return_disconnected="zero"``) or None (``"None"``).

    >>> import numpy as np, mlir_scan as theano, mlir_scan.tensor as T
    >>> W, V, x = T.dmatrix("W"), T.dmatrix("V"), T.dvector("x")
    >>> y = T.tanh(T.dot(x, W))
    >>> f = theano.function([W, V, x], T.Rop(y, W, V))  # (1 - y**2) * dot(x, V)
    >>> f(np.zeros((2, 2)), np.ones((2, 2)), np.array([0.0, 1.0]))
    array([1., 1.])
    """
    if disconnected_outputs not in ("raise", "warn", "ignore"):
        raise ValueError(f"Rop: disconnected_outputs must be 'raise', 'warn' or 'ignore', "
                         f"got {disconnected_outputs!r}")
    if str(return_disconnected).lower() not in ("zero", "none", "disconnected"):
        raise ValueError(f"Rop: return_disconnected must be 'zero', 'None' or 'Disconnected', "
                         f"got {return_disconnected!r}")
    using_list, using_tuple = isinstance(f, list), isinstance(f, tuple)
    wrt_list = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    ev_list = list(eval_points) if isinstance(eval_points, (list, tuple)) else [eval_points]
    f_list = list(f) if isinstance(f, (list, tuple)) else [f]
    if len(wrt_list) != len(ev_list):
        raise ValueError(f"Rop: wrt has {len(wrt_list)} element(s) but eval_points has {len(ev_list)}; "
                         "give one eval point per variable")
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError(f"Rop: wrt[{i}] must be a symbolic variable, got {w!r}")
    f_list = [_as_variable(o, f"Rop: f[{i}]") for i, o in enumerate(f_list)]
    seeds: dict[int, Variable] = {}
    for i, (w, e) in enumerate(zip(wrt_list, ev_list)):
        e = _as_variable(e, f"Rop: eval_points[{i}]")
        if w.ndim != e.ndim:
            raise ValueError(f"Element {i} of wrt/eval_point have mismatched dimensionality: "
                             f"{w.ndim} versus {e.ndim}")
        ev_list[i] = e
        if is_float(w.dtype) and w.id not in seeds:
            seeds[w.id] = _fit(e, w)
    tangents = _forward(f_list, seeds)
    result = []
    for i, out in enumerate(f_list):
        t = tangents.get(out.id)
        if (t is None and out.owner is not None and is_float(out.dtype)
                and not isinstance(out.owner.op, DisconnectedGrad)):
            # Theano: the other inputs of the graph have zero tangents, so a computed
            # float output that no tangent reaches has a zero one (PyTensor 3 raises).
            t = zeros_like(out)
        if t is None:
            msg = (f"Rop: output {i} of f ({out}) does not depend on any variable in wrt (it is not part of "
                   "their computational graph, or only through non-differentiable operations); pass "
                   "disconnected_outputs='ignore' to get zeros")
            if disconnected_outputs == "raise":
                raise DisconnectedInputError(msg)
            if disconnected_outputs == "warn":
                warnings.warn(msg, stacklevel=2)
            result.append(zeros_like(out) if str(return_disconnected).lower() == "zero" else None)
            continue
        result.append(t)
    return _format_as(using_list, using_tuple, result)


def Lop(f: Any, wrt: Any, eval_points: Any, consider_constant: Any = None,
        disconnected_inputs: str = "raise") -> Any:
    """The L-operator: ``sum_i eval_points[i] @ (d f[i] / d wrt[j])``, a vector-Jacobian product.

    Theano's ``theano.gradient.Lop`` / ``T.Lop``: the gradient of `f` with
    its output cotangents given (``grad(None, wrt, known_grads={f[i]:
    eval_points[i]})``, reverse mode: through a scan, a backward scan). One
    eval point per output of `f`, of its rank. The result is a list/tuple
    when `wrt` is one, else a single variable; `consider_constant` and
    `disconnected_inputs` are :func:`~mlir_scan.builder.gradient.grad`'s.

    >>> import numpy as np, mlir_scan as theano, mlir_scan.tensor as T
    >>> W, u, x = T.dmatrix("W"), T.dvector("u"), T.dvector("x")
    >>> f = theano.function([W, u, x], T.Lop(T.tanh(T.dot(x, W)), W, u))  # outer(x, (1 - y**2) * u)
    >>> f(np.zeros((2, 2)), np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array([[3., 6.],
           [4., 8.]])
    """
    ev_list = list(eval_points) if isinstance(eval_points, (list, tuple)) else [eval_points]
    using_list, using_tuple = isinstance(wrt, list), isinstance(wrt, tuple)
    f_list = list(f) if isinstance(f, (list, tuple)) else [f]
    wrt_list = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    if len(f_list) != len(ev_list):
        raise ValueError(f"Lop: f has {len(f_list)} element(s) but eval_points has {len(ev_list)}; "
                         "give one eval point per output")
    known = {}
    for i, (o, e) in enumerate(zip(f_list, ev_list)):
        if not isinstance(o, Variable):
            raise TypeError(f"Lop: f[{i}] must be a symbolic variable, got {o!r}")
        e = _as_variable(e, f"Lop: eval_points[{i}]")
        if e.ndim != o.ndim:
            raise ValueError(f"Element {i} of f/eval_point have mismatched dimensionality: {o.ndim} versus {e.ndim}")
        if o in known:
            known[o] = elem("add", known[o], e)
        else:
            known[o] = e
    ret = grad(None, wrt_list, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs,
               known_grads=known)
    return _format_as(using_list, using_tuple, list(ret))
