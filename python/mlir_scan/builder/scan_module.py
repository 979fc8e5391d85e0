"""Theano's ``scan`` and its friends: ``map``, ``reduce``, ``foldl``, ``foldr``, ``until``.

``scan`` traces the step function `fn` once on placeholders (in the guide's
argument order: sequence taps, output taps, non-sequences), finds the outer
variables `fn` uses without receiving them and passes them as extra
non-sequences, threads the shared variables `fn` updates (random states
included) through the loop as extra states, and builds one
:class:`~mlir_scan.builder.ops.scan.ScanOp` node. Every mistake the guide describes is
a Python exception raised here, naming the argument, before any MLIR exists.

Example (the guide's first example)::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> k, A = T.iscalar("k"), T.vector("A")
    >>> result, updates = theano.scan(fn=lambda prior, A: prior * A,
    ...                               outputs_info=T.ones_like(A),
    ...                               non_sequences=A, n_steps=k)
    >>> power = theano.function(inputs=[A, k], outputs=result[-1], updates=updates)
    >>> power(range(10), 2)
    array([ 0.,  1.,  4.,  9., 16., 25., 36., 49., 64., 81.])
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import numpy as np

from .graph import (
    Constant,
    MissingInputError,
    TensorType,
    Variable,
    clone_replace,
    depends_on,
    graph_inputs,
    is_int,
    toposort,
    upcast,
)
from . import tensor as T
from .ops.scan import ScanOp
from .ops.shape import Shape_i, shape_of, symbolic_shape
from .sharedvar import SharedVariable

__all__ = ["scan", "map", "reduce", "foldl", "foldr", "until", "scan_checkpoints", "clone", "OrderedUpdates"]


class until:  # noqa: N801 - Theano's name
    """The stopping condition of a scan step: ``return out, until(out > 45)``."""

    def __init__(self, condition: Any):
        cond = T.as_tensor_variable(condition)
        if cond.ndim != 0:
            raise TypeError(f"until: the condition must be a scalar, got {cond.type}")
        self.condition = cond


class OrderedUpdates(dict):
    """The updates returned by scan: shared variable -> new value (keys are checked)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if not isinstance(key, SharedVariable):
            raise TypeError(f"updates: keys must be shared variables, got {key!r}")
        if key in self and self[key] is not value:
            raise KeyError(f"updates: {key} already has an update")
        super().__setitem__(key, value)

    def update(self, other=(), **kwargs) -> None:  # type: ignore[override]
        items = other.items() if isinstance(other, dict) else other
        for k, v in items:
            self[k] = v

    def __add__(self, other: dict) -> "OrderedUpdates":
        out = OrderedUpdates()
        out.update(self)
        out.update(other)
        return out


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _taps(value: Any, what: str) -> list[int]:
    taps = [value] if isinstance(value, (int, np.integer)) else list(value)
    out = []
    for t in taps:
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise TypeError(f"scan: {what}: taps must be integers, got {t!r}")
        out.append(int(t))
    if not out:
        raise ValueError(f"scan: {what}: taps must not be empty")
    if len(set(out)) != len(out):
        raise ValueError(f"scan: {what}: repeated tap in {out}")
    return out


def _outer_value(x: Any, what: str) -> Variable:
    try:
        return T.as_tensor_variable(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"scan: {what}: expected a tensor variable or value, got {x!r} ({exc})") from exc


def _parse_return(ret: Any, what: str) -> tuple[list, dict, Any]:
    """Theano's rules for what `fn` returns: outputs, updates and/or ``until``.

    Every form Theano and PyTensor accept: outputs (a variable or a list or
    tuple of them), updates (a dict or a list of ``(shared, value)`` pairs),
    ``until(cond)``, and the tuples ``(outputs, updates)``,
    ``(outputs, until)``, ``(updates, until)`` and ``(outputs, updates,
    until)``. An empty list or tuple is read by its position, as Theano does:
    the middle item of a 3-tuple is the updates, the item after the outputs
    of a pair is the updates. ``(updates, outputs)`` (the order Theano's
    guide once allowed) is accepted too.
    """
    def is_updates(x):
        if isinstance(x, dict):
            return True
        return (isinstance(x, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], SharedVariable) for p in x))

    def is_outputs(x):
        if isinstance(x, (Variable, int, float, np.ndarray, np.generic)) and not isinstance(x, bool):
            return True
        return isinstance(x, (list, tuple)) and all(
            isinstance(v, (Variable, int, float, np.ndarray, np.generic)) and not isinstance(v, bool) for v in x)

    def as_list(x):
        return list(x) if isinstance(x, (list, tuple)) else [x]

    if isinstance(ret, until):
        return [], {}, ret
    if ret is None:
        return [], {}, None
    if is_outputs(ret):
        return as_list(ret), {}, None
    if is_updates(ret):
        return [], dict(ret), None
    if not isinstance(ret, (list, tuple)):
        raise TypeError(
            f"{what}: fn must return outputs (a variable or a list), an updates dict, an until "
            f"condition or a tuple of those; got {ret!r}"
        )
    items = list(ret)
    cond = None
    for i, item in enumerate(items):
        if isinstance(item, until) and i != len(items) - 1:
            raise ValueError(f"{what}: the until condition must be the last thing fn returns")
    if items and isinstance(items[-1], until):
        cond = items.pop()
    for item in items:
        if not (is_outputs(item) or is_updates(item)):
            raise TypeError(f"{what}: fn returned {item!r}, which is neither outputs, updates nor until")
    if len(items) > 2:
        raise ValueError(
            f"{what}: fn returned {len(ret)} items; return outputs, then updates, then an until condition "
            "(each optional)")
    if len(items) == 1:
        item = items[0]
        if is_outputs(item):  # (outputs, until); an empty list is no outputs
            return as_list(item), {}, cond
        return [], dict(item), cond
    if len(items) == 0:
        return [], {}, cond
    first, second = items
    # Theano's order is (outputs, updates); an empty list or tuple takes the
    # meaning of its position. (updates, outputs) is read too when unambiguous.
    if is_outputs(first) and is_updates(second):
        return as_list(first), dict(second), cond
    if is_updates(first) and is_outputs(second):
        return as_list(second), dict(first), cond
    if is_outputs(first) and is_outputs(second):
        raise ValueError(f"{what}: fn returned outputs in two places; return one list of outputs")
    raise ValueError(f"{what}: fn returned two sets of updates")


def _check_arity(fn: Callable, n_args: int, description: str, what: str) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*range(n_args))
    except TypeError:
        params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        raise TypeError(
            f"{what}: fn takes {len(params)} positional argument(s) but scan passes {n_args}: "
            f"{description}"
        ) from None


class _Placeholder(Variable):
    """An input of a scan's inner function (one slice, state or non-sequence)."""


def scan(
    fn: Callable,
    sequences: Any = None,
    outputs_info: Any = None,
    non_sequences: Any = None,
    n_steps: Any = None,
    truncate_gradient: int = -1,
    go_backwards: bool = False,
    mode: Any = None,
    name: str | None = None,
    profile: Any = False,
    allow_gc: Any = None,
    strict: bool = False,
    return_list: bool = False,
    return_updates: bool = True,
) -> tuple[Any, OrderedUpdates]:
    """Theano's scan: applies `fn` step by step; returns ``(outputs, updates)``.

    See the module docstring and Theano's scan guide for the arguments. The
    outputs have one row per step (the initial state is not included);
    `updates` maps each shared variable `fn` updates to its value after the
    last step and must be given to :func:`mlir_scan.function`.
    ``return_updates=False`` (PyTensor 3) returns the outputs alone; a scan
    that updates shared variables then raises ``ValueError``.
    """
    return _returned(_scan(fn, sequences, outputs_info, non_sequences, n_steps, truncate_gradient, go_backwards,
                           name, strict, return_list, keep_last=False), return_updates)


def _returned(result: tuple[Any, OrderedUpdates], return_updates: bool) -> Any:
    """PyTensor's ``return_updates``: ``(outputs, updates)``, or the outputs alone."""
    if return_updates:
        return result
    outputs, updates = result
    if updates:
        raise ValueError(
            f"return_updates=False but Scan produced updates {dict(updates)}. Make sure to use outputs_info to "
            "handle all recurrent states, and not rely on shared variable updates.")
    return outputs


def _scan(fn, sequences, outputs_info, non_sequences, n_steps, truncate_gradient, go_backwards, name,
          strict, return_list, keep_last: bool):
    what = f"scan{'(' + name + ')' if name else ''}"
    if not callable(fn):
        raise TypeError(f"{what}: fn must be callable, got {fn!r}")
    if not isinstance(truncate_gradient, (int, np.integer)) or (truncate_gradient != -1 and truncate_gradient <= 0):
        raise ValueError(f"{what}: truncate_gradient must be -1 or a positive int, got {truncate_gradient!r}")

    # -- sequences ---------------------------------------------------------------
    seqs: list[tuple[Variable, list[int]]] = []
    for i, s in enumerate(_as_list(sequences)):
        label = f"sequences[{i}]"
        if isinstance(s, dict):
            unknown = set(s) - {"input", "taps"}
            if unknown:
                raise ValueError(f"{what}: {label}: unknown keys {sorted(unknown)} (expected 'input' and 'taps')")
            if "input" not in s:
                raise ValueError(f"{what}: {label}: a sequence dict needs an 'input'")
            var = _outer_value(s["input"], label)
            taps = _taps(s["taps"], label) if s.get("taps") is not None else [0]
        else:
            var, taps = _outer_value(s, label), [0]
        if var.ndim == 0:
            raise ValueError(f"{what}: {label} is a scalar ({var}); a sequence needs a leading dimension to iterate over")
        seqs.append((var, taps))

    # -- outputs_info ------------------------------------------------------------
    infos: list[tuple[str, Variable | None, list[int]]] = []  # kind, init, taps
    for i, o in enumerate(_as_list(outputs_info)):
        label = f"outputs_info[{i}]"
        if o is None:
            infos.append(("nitsot", None, []))
            continue
        if isinstance(o, dict):
            unknown = set(o) - {"initial", "taps", "return_steps", "inplace"}
            if unknown:
                raise ValueError(f"{what}: {label}: unknown keys {sorted(unknown)} (expected 'initial' and 'taps')")
            if o.get("initial") is None:
                infos.append(("nitsot", None, []))
                continue
            init = _outer_value(o["initial"], label)
            taps = _taps(o["taps"], label) if o.get("taps") is not None else [-1]
            # Theano tests ``taps == [-1]`` for the one-previous-step form:
            # taps given as the tuple (-1,) make a state with taps (init[0]
            # is output[-1]), as in Theano and PyTensor.
            tuple_taps = isinstance(o.get("taps"), tuple)
        else:
            init, taps, tuple_taps = _outer_value(o, label), [-1], False
        if any(t >= 0 for t in taps):
            raise ValueError(f"{what}: {label}: output taps must be negative (past steps), got {taps}")
        if taps == [-1] and not tuple_taps:
            infos.append(("sitsot", init, taps))
        else:
            if init.ndim == 0:
                raise ValueError(
                    f"{what}: {label}: taps {taps} need an initial state with one extra leading dimension "
                    f"of {-min(taps)} rows (init[0] is output[{min(taps)}]); got a scalar"
                )
            k = -min(taps)
            rows = init.type.shape[0]
            if rows is not None and rows < k:
                raise ValueError(
                    f"{what}: {label}: taps {taps} need an initial state with {k} rows "
                    f"(init[0] is output[{min(taps)}], init[{k - 1}] is output[-1]); got {rows}"
                )
            if rows is None or rows > k:
                # Theano and PyTensor read the first k rows of a longer
                # initial value (``initial[:k]``): init[0] is output[-k].
                # Fewer rows than k are an error when the scan runs.
                first = init[:k]
                first.name = init.name
                init = first
            infos.append(("mitsot", init, taps))

    nonseqs = [_outer_value(v, f"non_sequences[{i}]") for i, v in enumerate(_as_list(non_sequences))]

    # -- n_steps -------------------------------------------------------------------
    if n_steps is None:
        if not seqs:
            raise ValueError(f"{what}: n_steps must be given when there are no sequences")
        n_var = None
        for var, taps in seqs:
            span = max(0, max(taps)) - min(0, min(taps))
            avail = symbolic_shape(var)[0] - span
            if n_var is None:
                n_var = avail
            elif isinstance(n_var, int) and isinstance(avail, int):
                n_var = min(n_var, avail)
            else:
                n_var = T.minimum(n_var, avail)
        if isinstance(n_var, int):
            if n_var < 0:
                raise ValueError(f"{what}: the sequences are too short for their taps ({n_var} steps)")
            n_var = T.constant(n_var, dtype="int64")
    elif isinstance(n_steps, Variable):
        if n_steps.ndim != 0 or not is_int(n_steps.dtype):
            raise TypeError(f"{what}: n_steps must be an integer scalar, got {n_steps} ({n_steps.type})")
        n_var = n_steps
        if isinstance(n_var, Constant) and int(n_var.data) < 0:
            raise ValueError(f"{what}: n_steps is {int(n_var.data)}, must be >= 0")
    else:
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)):
            raise TypeError(f"{what}: n_steps must be an int or an integer scalar variable, got {n_steps!r}")
        if n_steps < 0:
            raise ValueError(f"{what}: n_steps is {n_steps}, must be >= 0 (negative n_steps are not supported)")
        n_var = T.constant(int(n_steps), dtype="int64")

    if isinstance(n_var, Constant):
        for i, (var, taps) in enumerate(seqs):
            span = max(0, max(taps)) - min(0, min(taps))
            length = var.type.shape[0]
            if length is not None and length < int(n_var.data) + span:
                raise ValueError(
                    f"{what}: sequences[{i}] has {length} rows but {int(n_var.data)} steps with taps {taps} "
                    f"need {int(n_var.data) + span}"
                )

    # -- placeholders and the call to fn ----------------------------------------------
    seq_phs: list[dict[int, Variable]] = []
    fn_args: list[Variable] = []
    for var, taps in seqs:
        phs = {}
        for t in taps:
            label = f"{var.name}[t{t:+d}]" if var.name else None
            phs[t] = _Placeholder(var.type.row(), name=label)
            fn_args.append(phs[t])
        seq_phs.append(phs)
    out_phs: list[dict[int, Variable]] = []
    for kind, init, taps in infos:
        phs = {}
        if kind == "sitsot":
            phs[-1] = _Placeholder(init.type, name=f"{init.name}[t-1]" if init.name else None)
            fn_args.append(phs[-1])
        elif kind == "mitsot":
            for t in taps:
                phs[t] = _Placeholder(init.type.row(), name=f"{init.name}[t{t:+d}]" if init.name else None)
                fn_args.append(phs[t])
        out_phs.append(phs)
    non_phs = [_Placeholder(v.type, name=v.name) for v in nonseqs]
    for p, v in zip(non_phs, nonseqs):
        p.tag["scan_outer"] = v  # grad() inside fn differentiates through the outer value
    fn_args.extend(non_phs)

    n_seq_args = sum(len(t) for _, t in seqs)
    n_out_args = sum(len(p) for p in out_phs)
    _check_arity(
        fn, len(fn_args),
        f"{n_seq_args} sequence slice(s), {n_out_args} previous output(s) and {len(nonseqs)} non-sequence(s), "
        "in that order", what,
    )
    ret = fn(*fn_args)
    raw_outputs, raw_updates, cond = _parse_return(ret, what)

    if infos and len(raw_outputs) != len(infos):
        raise ValueError(
            f"{what}: fn returned {len(raw_outputs)} output(s) but outputs_info has {len(infos)} entries; "
            "give one entry per output (None for outputs that are not fed back)"
        )
    if not infos:
        infos = [("nitsot", None, [])] * len(raw_outputs)
    outputs = []
    for i, o in enumerate(raw_outputs):
        try:
            outputs.append(T.as_tensor_variable(o))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what}: output #{i} of fn is not a tensor: {o!r}") from exc

    # -- states: check the outputs against their initial values --------------------------
    # With n_steps = 1, fn is called once and its outputs are never fed back
    # (Theano and PyTensor build no loop then): a state whose output does
    # not fit it is read once, as a non-sequence, and the output is stacked
    # as is (a nitsot).
    one_step = isinstance(n_var, Constant) and int(n_var.data) == 1
    type_error: str | None = None
    for i, ((kind, init, taps), out) in enumerate(zip(infos, outputs)):
        label = f"outputs_info[{i}]"
        if kind == "nitsot":
            continue
        state_t = init.type if kind == "sitsot" else init.type.row()
        fits = (out.ndim == state_t.ndim
                and all(a is None or c is None or a == c for a, c in zip(state_t.shape, out.type.shape))
                and not any(a == 1 and c != 1 for a, c in zip(state_t.shape, out.type.shape))
                and upcast(out.dtype, init.dtype) == init.dtype)
        if one_step and not fits:
            k = -min(taps)
            for t, ph in out_phs[i].items():
                nonseqs.append(init if kind == "sitsot" else init[k + t])
                non_phs.append(ph)
            out_phs[i] = {}
            infos[i] = ("nitsot", None, [])
            continue
        if out.ndim != state_t.ndim:
            extra = " (plus one leading dimension for taps other than [-1])" if kind == "mitsot" else ""
            raise ValueError(
                f"{what}: {label} has shape {_shape(init.type.shape)} but fn's output #{i} has rank "
                f"{out.ndim} ({_shape(out.type.shape)}); the initial state must have the shape of one "
                f"step's output{extra}"
            )
        # Theano's broadcast-pattern check: a dimension the initial state
        # fixes to 1 (broadcastable) must be 1 in fn's output too, or the
        # state would change type from one step to the next. As in Theano and
        # PyTensor, the scan builds; compiling or differentiating it raises
        # TypeError (ScanOp.type_error).
        for d, (a, c) in enumerate(zip(state_t.shape, out.type.shape)):
            if a == 1 and c != 1:
                axis = d + (1 if kind == "mitsot" else 0)
                type_error = type_error or (
                    f"{what}: the broadcast pattern of fn's output #{i} ({_shape(out.type.shape)}, "
                    f"broadcastable {_bcast(out.type.shape)}) is inconsistent with the one of its initial state "
                    f"{label} ({_shape(init.type.shape)}, broadcastable {_bcast(state_t.shape)}): dimension {d} is "
                    f"fixed to 1 (broadcastable) in the initial state but "
                    f"{'of unknown size' if c is None else f'of size {c}'} in the output. Make them consistent, "
                    f"e.g. T.unbroadcast(init, {axis}) for the initial state, or T.addbroadcast(output, {d}) "
                    "for fn's output"
                )
                out = outputs[i] = T.addbroadcast(out, d)
        for d, (a, c) in enumerate(zip(state_t.shape, out.type.shape)):
            if a is not None and c is not None and a != c:
                raise ValueError(
                    f"{what}: {label} has shape {_shape(init.type.shape)} but fn's output #{i} has shape "
                    f"{_shape(out.type.shape)} (dimension {d}: {a} != {c})"
                )
        if out.dtype != init.dtype:
            if upcast(out.dtype, init.dtype) != init.dtype:
                raise TypeError(
                    f"{what}: {label} has dtype {init.dtype} but fn's output #{i} has dtype {out.dtype}; "
                    f"using the output as the next state would be an implicit downcast from {out.dtype} to "
                    f"{init.dtype}. Give the initial state the output's dtype, e.g. "
                    f"T.as_tensor_variable(np.asarray(0, '{out.dtype}')) or T.cast(init, '{out.dtype}'), "
                    f"or cast fn's output with .astype('{init.dtype}')"
                )
            outputs[i] = T.cast(out, init.dtype)

    # -- updates: those fn returned plus the default updates of what it uses ---------------
    updates: dict[SharedVariable, Variable] = {}
    for key, value in raw_updates.items():
        if not isinstance(key, SharedVariable):
            raise TypeError(f"{what}: updates returned by fn must have shared variables as keys, got {key!r}")
        updates[key] = _update_value(key, value, what)
    while True:
        roots = graph_inputs(outputs + list(updates.values()) + ([cond.condition] if cond else []))
        new = [r for r in roots if isinstance(r, SharedVariable) and r.default_update is not None and r not in updates]
        if not new:
            break
        for s in new:
            updates[s] = s.default_update

    # Theano compiles fn's outputs, with its updates, as a function of the
    # step's inputs, the non-sequences and what the outputs use: an update
    # that needs anything else is a missing input (never a hidden argument).
    known = {p.id for d in seq_phs + out_phs for p in d.values()} | {p.id for p in non_phs}
    known |= {v.id for v in nonseqs}
    known |= {r.id for r in graph_inputs(outputs + ([cond.condition] if cond else []))}
    for s, expr in updates.items():
        for r in graph_inputs([expr]):
            if isinstance(r, (Constant, SharedVariable)) or r.id in known:
                continue
            raise MissingInputError(
                f"{what}: the update of {s} uses {r!r}, which is neither an input of fn, a non-sequence nor "
                "used by fn's outputs. Please pass this variable to the scan's inner function, and to the "
                "non_sequences of scan.")

    state_phs = {s: _Placeholder(s.type, name=s.name) for s in updates}
    inner = outputs + list(updates.values()) + ([cond.condition] if cond else [])
    inner = clone_replace(inner, dict(state_phs)) if state_phs else inner

    # -- free variables become non-sequences ------------------------------------------------
    placeholders = [p for d in seq_phs for p in d.values()] + [p for d in out_phs for p in d.values()]
    placeholders += non_phs + list(state_phs.values())
    inner_ids = {p.id for p in placeholders}
    dependent = depends_on(inner, inner_ids)
    free: list[Variable] = []
    free_ids: set[int] = set()
    consumers: dict[int, Any] = {}

    def consider(v: Variable, node: Any = None) -> None:
        if v.id in dependent or isinstance(v, Constant) or v.id in free_ids:
            return
        if all(isinstance(r, Constant) for r in graph_inputs([v])):
            return  # computable from constants: recomputed inside the loop
        free_ids.add(v.id)
        free.append(v)
        consumers[v.id] = node

    for node in toposort(inner):
        if any(v.id in dependent for v in node.outputs):
            for v in node.inputs:
                consider(v, node)
    for v in inner:
        consider(v)
    if free and strict:
        v = free[0]
        node = consumers[v.id]
        used_for = f"{node.op}({', '.join(str(i) for i in node.inputs)})" if node is not None else str(v)
        roots = [r for r in graph_inputs([v]) if not isinstance(r, Constant)]
        raise MissingInputError(
            f"{what} (strict=True): an input of the graph, used to compute {used_for}, was not provided "
            f"and not given a value: fn uses {', '.join(str(r) for r in roots)} without receiving it. "
            "Pass it in non_sequences (and as an argument of fn)."
        )
    free_phs = [_Placeholder(v.type, name=v.name) for v in free]
    if free:
        inner = clone_replace(inner, dict(zip(free, free_phs)))
    n_user = len(outputs)
    n_upd = len(updates)
    inner_outs = inner[:n_user]
    inner_upds = inner[n_user:n_user + n_upd]
    inner_cond = inner[-1] if cond else None
    all_nonseqs = nonseqs + free
    all_non_phs = non_phs + free_phs

    # -- nitsot row shapes (the rows of a map output must be sized before the loop) ----------
    outer_of = {}  # placeholder id -> (outer variable, dimension offset) for shape translation
    for (var, _), phs in zip(seqs, seq_phs):
        for p in phs.values():
            outer_of[p.id] = (var, 1)
    for (kind, init, _), phs in zip(infos, out_phs):
        for p in phs.values():
            outer_of[p.id] = (init, 1 if kind == "mitsot" else 0)
    for s, p in state_phs.items():
        outer_of[p.id] = (s, 0)
    value_of = {p.id: v for p, v in zip(all_non_phs, all_nonseqs)}

    nitsot_shapes, nitsot_dims, nitsot_runtime = [], [], []
    for i, ((kind, _, _), out) in enumerate(zip(infos, inner_outs)):
        if kind != "nitsot":
            continue
        shape = list(out.type.shape)
        dims_here: list[Variable] = []
        runtime = False
        if None in shape:
            dims = shape_of(out)
            for d, size in enumerate(shape):
                if size is not None:
                    continue
                dim = dims[d]
                if isinstance(dim, int):
                    shape[d] = dim
                    continue
                outer = _outer_dim(dim, outer_of, value_of, inner_ids | {p.id for p in free_phs})
                if outer is None:
                    # Known only when a step runs: the lowering sizes the rows
                    # from the first step (and checks the others against it).
                    runtime = True
                    continue
                if isinstance(outer, Constant):
                    shape[d] = int(outer.data)
                else:
                    dims_here.append(outer if outer.dtype == "int64" else T.cast(outer, "int64"))
        if not runtime:
            nitsot_dims.extend(dims_here)
        nitsot_runtime.append(runtime)
        nitsot_shapes.append(tuple(shape))

    order_mit = [i for i, (k, _, _) in enumerate(infos) if k == "mitsot"]
    order_sit = [i for i, (k, _, _) in enumerate(infos) if k == "sitsot"]
    order_nit = [i for i, (k, _, _) in enumerate(infos) if k == "nitsot"]

    # -- states: fn's output must keep the state's shape -----------------------------------------
    state_checks, state_dims = [], []
    all_inner_ids = inner_ids | {p.id for p in free_phs}

    def check_state(pos: int, out: Variable, state_t: TensorType, init: Variable, offset: int, label: str) -> None:
        for d in range(out.ndim):
            if state_t.shape[d] is not None and out.type.shape[d] is not None:
                continue  # equal, checked above
            dim = shape_of(out)[d]
            if isinstance(dim, int):
                if state_t.shape[d] is not None:
                    if dim != state_t.shape[d]:
                        raise ValueError(f"{what}: {label}: size {dim} != {state_t.shape[d]} along dimension {d}")
                    continue
                outer = T.constant(dim, dtype="int64")
            else:
                outer = _outer_dim(dim, outer_of, value_of, all_inner_ids)
            msg = (f"{what}: {label} along dimension {d}: the output has size {{have}}, the state has size "
                   "{need}")
            if outer is None:
                state_checks.append((pos, d, False, msg))
                continue
            if (outer.owner is not None and isinstance(outer.owner.op, Shape_i)
                    and outer.owner.inputs[0] is init and outer.owner.op.i == d + offset):
                continue  # the state's own size
            state_checks.append((pos, d, True, msg))
            state_dims.append(outer if outer.dtype == "int64" else T.cast(outer, "int64"))

    pos = 0
    for i in order_mit + order_sit:
        kind, init, _ = infos[i]
        state_t = init.type if kind == "sitsot" else init.type.row()
        check_state(pos, inner_outs[i], state_t, init, 1 if kind == "mitsot" else 0,
                    f"fn's output #{i} must have the shape of its initial state (outputs_info[{i}])")
        pos += 1
    for s, expr in zip(updates, inner_upds):
        check_state(pos, expr, s.type, s, 0,
                    f"the update of {s} inside the scan must keep its shape")
        pos += 1

    # -- the op ---------------------------------------------------------------------------------
    inner_inputs: list[Variable] = []
    # Theano cuts each tap's slice out of the sequence, then reverses the
    # slices when going backwards: step i reads seq[N - 1 - i - (max - k)]
    # for tap k (max = max(taps, 0)). The op reverses the sequence first and
    # then applies its taps, so Theano's tap k is the op's tap -k.
    seq_taps = [sorted(-t for t in taps) if go_backwards else sorted(taps) for _, taps in seqs]
    for op_taps, phs in zip(seq_taps, seq_phs):
        inner_inputs.extend(phs[-t if go_backwards else t] for t in op_taps)
    for i in order_mit:
        inner_inputs.extend(out_phs[i][t] for t in sorted(infos[i][2]))
    for i in order_sit:
        inner_inputs.append(out_phs[i][-1])
    inner_inputs.extend(state_phs.values())
    inner_inputs.extend(all_non_phs)
    op_outputs = [inner_outs[i] for i in order_mit] + [inner_outs[i] for i in order_sit] + list(inner_upds)
    op_outputs += [inner_outs[i] for i in order_nit]
    if inner_cond is not None:
        op_outputs.append(inner_cond)
    keep_user = 1 if keep_last else 0
    keep = [keep_user] * (len(order_mit) + len(order_sit)) + [1] * n_upd + [0] * len(order_nit)
    op = ScanOp(
        inner_inputs=inner_inputs,
        inner_outputs=op_outputs,
        seq_taps=[tuple(t) for t in seq_taps],
        mitsot_taps=[tuple(sorted(infos[i][2])) for i in order_mit],
        n_sitsot=len(order_sit) + n_upd,
        n_nitsot=len(order_nit),
        n_nonseqs=len(all_nonseqs),
        until=cond is not None,
        go_backwards=bool(go_backwards),
        keep=keep,
        nitsot_shapes=nitsot_shapes,
        nitsot_runtime=nitsot_runtime,
        name=name,
        truncate_gradient=int(truncate_gradient),
        kinds=["output"] * len(order_sit) + ["update"] * n_upd,
        state_checks=state_checks,
        type_error=type_error,
    )
    if not op_outputs or (len(op_outputs) == 1 and inner_cond is not None):
        return (None if not return_list else []), OrderedUpdates()
    node = op.make_node(
        n_var if n_var.dtype == "int64" else T.cast(n_var, "int64"),
        *[v for v, _ in seqs],
        *[infos[i][1] for i in order_mit],
        *[infos[i][1] for i in order_sit],
        *updates.keys(),
        *all_nonseqs,
        *nitsot_dims,
        *state_dims,
    )
    results: list[Variable | None] = [None] * n_user
    pos = 0
    for i in order_mit + order_sit:
        results[i] = node.outputs[pos]
        pos += 1
    new_updates = OrderedUpdates()
    for s in updates:
        new_updates[s] = node.outputs[pos][0]
        pos += 1
    for i in order_nit:
        results[i] = node.outputs[pos]
        pos += 1
    for r in node.outputs:
        if name and not r.name:
            r.name = name
    if keep_last:
        results = [r[0] if infos[i][0] != "nitsot" else r[-1] for i, r in enumerate(results)]
    if len(results) == 1 and not return_list:
        return results[0], new_updates
    if not results:
        return ([] if return_list else None), new_updates
    return results, new_updates


def _update_value(s: SharedVariable, value: Any, what: str) -> Variable:
    v = T.as_tensor_variable(value)
    if v.ndim != s.ndim:
        raise TypeError(f"{what}: the update of {s} has rank {v.ndim}, the shared variable has rank {s.ndim}")
    if v.dtype != s.dtype:
        if upcast(v.dtype, s.dtype) != s.dtype:
            raise TypeError(
                f"{what}: the update of {s} has dtype {v.dtype}, which cannot be stored in {s} "
                f"({s.dtype}) without a downcast; cast it with .astype('{s.dtype}')"
            )
        v = T.cast(v, s.dtype)
    return v


def _bcast(shape: tuple) -> str:
    """Theano's broadcastable pattern of a static shape: ``(True, False)`` for ``(1, ?)``."""
    return "(" + ", ".join(str(d == 1) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _shape(shape: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _outer_dim(dim: Variable, outer_of: dict, value_of: dict, inner_ids: set[int]) -> Variable | None:
    """An inner dimension expression rewritten over outer variables, or None.

    ``Shape_i`` of a slice/state placeholder becomes ``Shape_i`` of the outer
    sequence/init; non-sequence placeholders become their outer values.
    Anything else inside the loop makes the size unknowable before it runs.
    """
    replace: dict[Variable, Variable] = {}
    for node in toposort([dim]):
        if isinstance(node.op, Shape_i) and node.inputs[0].id in outer_of:
            outer, offset = outer_of[node.inputs[0].id]
            i = node.op.i + offset
            size = outer.type.shape[i]
            replace[node.outputs[0]] = T.constant(size, dtype="int64") if size is not None else Shape_i(i)(outer)
    roots = graph_inputs([dim], stop={v.id for v in replace})
    for r in roots:
        if r.id in value_of:
            replace[r] = value_of[r.id]
    if dim in replace:
        return replace[dim]
    (new,) = clone_replace([dim], replace) if replace else (dim,)
    if any(r.id in inner_ids for r in graph_inputs([new])):
        return None
    return new


# -- map, reduce, folds ---------------------------------------------------------------------------


def map(fn: Callable, sequences: Any, non_sequences: Any = None, truncate_gradient: int = -1,  # noqa: A001
        go_backwards: bool = False, mode: Any = None, name: str | None = None,
        return_updates: bool = True) -> tuple[Any, OrderedUpdates]:
    """``fn`` applied to each step of `sequences` (Python's ``map``)."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, mode=mode, name=name,
                return_updates=return_updates)


def reduce(fn: Callable, sequences: Any, outputs_info: Any, non_sequences: Any = None,  # noqa: A001
           go_backwards: bool = False, mode: Any = None, name: str | None = None,
           return_updates: bool = True) -> tuple[Any, OrderedUpdates]:
    """Only the last value of each output of a scan (Python's ``functools.reduce``).

    With zero steps an output with an initial value gives that initial value.
    """
    return _returned(_scan(fn, sequences, outputs_info, non_sequences, None, -1, go_backwards, name, False, False,
                           keep_last=True), return_updates)


def foldl(fn: Callable, sequences: Any, outputs_info: Any, non_sequences: Any = None, mode: Any = None,
          name: str | None = None, return_updates: bool = True) -> tuple[Any, OrderedUpdates]:
    """``reduce`` from the first element (Haskell's ``foldl``)."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=False, mode=mode, name=name,
                  return_updates=return_updates)


def foldr(fn: Callable, sequences: Any, outputs_info: Any, non_sequences: Any = None, mode: Any = None,
          name: str | None = None, return_updates: bool = True) -> tuple[Any, OrderedUpdates]:
    """``reduce`` from the last element (Haskell's ``foldr``)."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=True, mode=mode, name=name,
                  return_updates=return_updates)


# -- scan_checkpoints -----------------------------------------------------------------------------


def scan_checkpoints(fn: Callable, sequences: Any = None, outputs_info: Any = None, non_sequences: Any = None,
                     name: str = "checkpointscan_fn", n_steps: Any = None, save_every_N: int = 10,
                     padding: bool = True, return_updates: bool = True) -> tuple[Any, OrderedUpdates]:
    """Scan in chunks of `save_every_N` steps, returning the state after each chunk.

    An outer scan over ``ceil(n_steps / save_every_N)`` chunks runs an inner
    scan of `save_every_N` steps (fewer for the last chunk) and keeps only its
    last state, as Theano's ``scan_checkpoints`` does; the last row of every
    output is the final state of the plain scan. Outputs given ``None`` in
    `outputs_info` keep the row of the last step of each chunk too. Taps are
    not supported (``RuntimeError``, as in Theano).
    """
    what = "scan_checkpoints"
    seqs = []
    for i, s in enumerate(_as_list(sequences)):
        if isinstance(s, dict):
            if s.get("taps") is not None and _taps(s["taps"], f"sequences[{i}]") != [0]:
                raise RuntimeError("scan_checkpoints doesn't work with taps.")
            s = s.get("input")
        seqs.append(_outer_value(s, f"sequences[{i}]"))
    infos = _as_list(outputs_info)
    for i, o in enumerate(infos):
        if isinstance(o, dict) and o.get("taps") is not None and _taps(o["taps"], f"outputs_info[{i}]") != [-1]:
            raise RuntimeError("scan_checkpoints doesn't work with taps.")
    infos = [o.get("initial") if isinstance(o, dict) else o for o in infos]
    if not isinstance(save_every_N, (int, np.integer)) or save_every_N < 1:
        raise ValueError(f"{what}: save_every_N must be a positive int, got {save_every_N!r}")
    nonseqs = _as_list(non_sequences)
    N = int(save_every_N)
    for i, s in enumerate(seqs):
        if s.ndim == 0:
            raise ValueError(f"{what}: sequences[{i}] is a scalar")
    if n_steps is None:
        if not seqs:
            raise ValueError(f"{what}: n_steps must be given when there are no sequences")
        n_steps = seqs[0].shape[0]
    n = T.as_tensor_variable(n_steps)
    if not is_int(n.dtype) or n.ndim != 0:
        raise TypeError(f"{what}: n_steps must be an integer scalar")
    n = T.cast(n, "int64")
    o_n_steps = (n + (N - 1)) // N
    mod = n % N
    last = T.switch(T.eq(mod, 0), N, mod)
    i_n_steps = T.switch(T.eq(T.arange(o_n_steps), o_n_steps - 1), last, N)
    o_seqs = []
    for s in seqs:
        rows = s.shape[0]
        pad = (N - rows % N) % N if padding else 0
        if padding:
            z = T.zeros([pad] + [s.shape[d] for d in range(1, s.ndim)], dtype=s.dtype)
            s = T.concatenate([s, z], axis=0)
        o_seqs.append(T.reshape(s, [s.shape[0] // N, N] + [s.shape[d] for d in range(1, s.ndim)]))
    n_seqs = len(o_seqs)
    n_states = sum(1 for o in infos if o is not None)

    def outer_step(*args):
        i_seqs = list(args[:n_seqs])
        steps = args[n_seqs]
        states = iter(args[n_seqs + 1:n_seqs + 1 + n_states])
        i_non = list(args[n_seqs + 1 + n_states:])
        # Outputs without an initial state (None) are recomputed per chunk:
        # the outer scan keeps the last row of each chunk, as for the states.
        i_infos = [None if o is None else next(states) for o in infos]
        results, upd = scan(fn, sequences=i_seqs, outputs_info=i_infos, non_sequences=i_non,
                            n_steps=steps, name=name + "_inner", return_list=True)
        return [r[-1] for r in results], upd

    return scan(outer_step, sequences=o_seqs + [i_n_steps], outputs_info=infos, non_sequences=nonseqs,
                n_steps=o_n_steps, name=name + "_outer", return_updates=return_updates)


# -- clone ------------------------------------------------------------------------------------------


_DEPRECATED = object()


class _SharedCopy(SharedVariable):
    """A copy of a shared variable made by ``clone(..., share_inputs=False)``.

    A new variable of the same type and name that reads and writes the
    original's storage (Theano: "cloned shared variables still use the same
    underlying storage, so they will always have the same value").
    """

    def __init__(self, original: SharedVariable):
        Variable.__init__(self, original.type, name=original.name)
        self._origin = original._origin if isinstance(original, _SharedCopy) else original
        self._allow_downcast = original._allow_downcast
        self.default_update = None

    @property
    def _value(self) -> np.ndarray:  # type: ignore[override]
        return self._origin._value

    @_value.setter
    def _value(self, value: np.ndarray) -> None:
        self._origin._value = value

    def clone(self) -> "SharedVariable":
        return _SharedCopy(self)


def clone(output: Any, replace: Any = None, strict: bool = True, share_inputs: bool = True,
          copy_inputs: Any = _DEPRECATED) -> Any:
    """Theano's ``theano.clone``: `output` (a variable or a list) with `replace` applied.

    `replace` maps variables of the graph (inputs or intermediate ones) to
    their replacements (a dict or a list of pairs; values may be Python
    numbers). Nodes that depend on none of them are shared. ``strict=False``
    lets a replacement have another dtype (the graph is re-typed).
    ``share_inputs=False`` gives every input of the result a fresh copy, as
    Theano does: the graph's inputs, the inputs of the replacements and its
    shared variables, whose copies keep using the original's storage (they
    always have the same value; constants are shared). `copy_inputs` is
    Theano's deprecated name of `share_inputs` (with a warning).

    >>> from mlir_scan import tensor as T
    >>> x, y = T.scalar("x"), T.scalar("y")
    >>> z = clone(x * 2, replace={x: y})
    >>> z.owner.inputs[0] is y
    True
    """
    if copy_inputs is not _DEPRECATED:
        import warnings

        warnings.warn("In `clone()` function, the argument `copy_inputs` has been deprecated and renamed into "
                      "`share_inputs`", stacklevel=2)
        share_inputs = bool(copy_inputs)
    single = isinstance(output, Variable)
    outs = [output] if single else list(output)
    if isinstance(replace, dict):
        pairs = list(replace.items())
    elif isinstance(replace, (list, tuple)):
        pairs = list(replace)
    elif replace is None:
        pairs = []
    else:
        raise ValueError(f"clone: replace must be a dict, a list or tuple of pairs, or None; got {replace!r}")
    mapping: dict[Variable, Variable] = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"clone: replace must be a dict or a list of (variable, replacement) pairs; "
                            f"got the item {pair!r}")
        key, value = pair
        if not isinstance(key, Variable):
            raise TypeError(f"clone: replace keys must be symbolic variables, got {key!r}")
        mapping[key] = T.as_tensor_variable(value)
    if not share_inputs:
        # Fresh copies of every root: first of the replacements' roots (the
        # replacements are rebuilt on them), then of the graph's other roots.
        fresh: dict[Variable, Variable] = {}

        def copy_of(v: Variable) -> Variable:
            if v not in fresh:
                fresh[v] = _SharedCopy(v) if isinstance(v, SharedVariable) else Variable(v.type, name=v.name)
            return fresh[v]

        values = list(mapping.values())
        roots = [r for r in graph_inputs(values) if r.owner is None and not isinstance(r, Constant)]
        if roots:
            new_values = clone_replace(values, {r: copy_of(r) for r in roots})
            mapping = dict(zip(mapping, new_values))
        blocked = {k.id for k in mapping}
        for v in graph_inputs(outs, blocked):
            if v.id not in blocked and v.owner is None and not isinstance(v, Constant):
                mapping[v] = copy_of(v)
    result = clone_replace(outs, mapping, strict=strict) if mapping else outs
    return result[0] if single else list(result)


def clone_replace_public(output: Any, replace: Any = None, strict: bool = True, share_inputs: bool = True,
                         **rebuild_kwds: Any) -> Any:
    """Theano's and PyTensor's ``clone_replace(output, replace=None, **rebuild_kwds)``.

    :func:`clone` under its other name: `output` a variable or a list,
    `replace` a dict or a list of pairs. PyTensor's ``copy_inputs_over`` is
    `share_inputs`; ``copy_orphans`` is accepted (constants are always shared).

    >>> from mlir_scan import tensor as T
    >>> x, y = T.scalar("x"), T.scalar("y")
    >>> z = clone_replace_public(x * 2, [(x, y)])
    >>> z.owner.inputs[0] is y
    True
    """
    if "copy_inputs_over" in rebuild_kwds:
        share_inputs = bool(rebuild_kwds.pop("copy_inputs_over"))
    rebuild_kwds.pop("copy_orphans", None)
    if rebuild_kwds:
        raise TypeError(f"clone_replace: unexpected keyword arguments {sorted(rebuild_kwds)}")
    return clone(output, replace, strict=strict, share_inputs=share_inputs)


# ``theano.scan_module.until`` / ``aesara.scan.utils.until`` / ``aesara.scan.scan_checkpoints``.
scan.utils = types.SimpleNamespace(until=until)  # type: ignore[attr-defined]
scan.until = until  # type: ignore[attr-defined]
scan.scan_checkpoints = scan_checkpoints  # type: ignore[attr-defined]
