"""``function``: compile a graph to native code and call it on NumPy values.

:func:`function` emits ONE MLIR module for the whole graph (scans included):
a public ``func.func @f`` taking the inputs and the current values of the
shared variables the graph uses, and returning the outputs and the new values
of the updated shared variables. It is compiled by
:func:`mlir_scan.compile`; the returned :class:`Function` converts arguments
with Theano's rules, calls the native code, stores the updates and returns
the outputs.

Example (the guide's shared-variable example)::

    >>> import mlir_scan as theano
    >>> a = theano.shared(1)
    >>> values, updates = theano.scan(lambda: {a: a + 1}, n_steps=10)
    >>> b, c = a + 1, updates[a] + 1
    >>> f = theano.function([], [b, c], updates=updates)
    >>> f(), a.get_value()
    ([array(2), array(12)], array(11))
    >>> f(), a.get_value()
    ([array(12), array(22)], array(21))
    >>> print(f.ir)                             # doctest: +ELLIPSIS
    module {
      func.func @f(%in0: i64) -> (i64, i64, i64) {
    ...
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..runtime import compile as compile_mlir
from . import tensor as T
from .emitter import ModuleEmitter
from .graph import Constant, MissingInputError, UnusedInputError, Variable, clone_replace, graph_inputs, upcast
from .sharedvar import SharedVariable, filter_value

__all__ = ["function", "Function"]

_CACHE: "OrderedDict[tuple[str, bool, str], Any]" = OrderedDict()
_CACHE_SIZE = 64


def _compile(text: str, optimize: bool, target: str = "cpu"):
    """Compiles `text`, reusing the program of an identical module (Theano's compile cache)."""
    key = (text, optimize, target)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    program = compile_mlir(text, optimize=optimize, target=target)
    _CACHE[key] = program
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return program


def _as_pairs(updates: Any, what: str) -> list[tuple[Any, Any]]:
    if updates is None:
        return []
    if isinstance(updates, dict):
        return list(updates.items())
    try:
        pairs = [tuple(p) for p in updates]
    except TypeError as exc:
        raise TypeError(f"function: {what} must be a dict or a list of (variable, value) pairs") from exc
    if any(len(p) != 2 for p in pairs):
        raise TypeError(f"function: {what} must be a dict or a list of (variable, value) pairs")
    return pairs


class Function:
    """A compiled function (see :func:`function`)."""

    def __init__(self, inputs, outputs, updates=None, givens=None, mode=None, name=None,
                 allow_input_downcast=None, on_unused_input=None, no_default_updates=False,
                 target="cpu"):
        self.name = name
        self._allow_downcast = allow_input_downcast
        if isinstance(inputs, Variable):
            inputs = [inputs]
        self.inputs: list[Variable] = list(inputs or [])
        for i, v in enumerate(self.inputs):
            if not isinstance(v, Variable):
                raise TypeError(f"function: inputs[{i}] is not a symbolic variable: {v!r}")
            if isinstance(v, SharedVariable):
                raise TypeError(
                    f"function: inputs[{i}] ({v}) is a shared variable; shared variables are implicit "
                    "inputs and must not be listed")
            if isinstance(v, Constant):
                raise TypeError(f"function: inputs[{i}] ({v}) is a constant, not an input")
            if v.owner is not None:
                raise TypeError(
                    f"function: inputs[{i}] ({v}) is computed from other variables; inputs must be "
                    "placeholders such as T.vector()")
            if any(v is w for w in self.inputs[:i]):
                raise ValueError(f"function: inputs[{i}] ({v}) is given twice")

        self._single = not isinstance(outputs, (list, tuple))
        outs = [] if outputs is None else ([outputs] if self._single else list(outputs))
        if outputs is None:
            self._single = False
            self._none = True
        else:
            self._none = False
        self.outputs = []
        for i, o in enumerate(outs):
            try:
                self.outputs.append(T.as_tensor_variable(o))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"function: outputs[{i}] is not a tensor: {o!r}") from exc

        upd: dict[SharedVariable, Variable] = {}
        for key, value in _as_pairs(updates, "updates"):
            if not isinstance(key, SharedVariable):
                raise TypeError(f"function: updates: {key!r} is not a shared variable")
            if key in upd:
                raise ValueError(f"function: updates: {key} is updated twice")
            upd[key] = _update_expr(key, value)

        if givens is not None:
            repl = {}
            for k, v in _as_pairs(givens, "givens"):
                if not isinstance(k, Variable):
                    raise TypeError(f"function: givens: {k!r} is not a symbolic variable")
                v = T.as_tensor_variable(v)
                if v.type.dtype != k.type.dtype or v.ndim != k.ndim:
                    raise TypeError(f"function: givens: {k} ({k.type}) cannot be replaced by {v} ({v.type})")
                repl[k] = v
            replaced = clone_replace(self.outputs + list(upd.values()), repl)
            self.outputs = replaced[: len(self.outputs)]
            upd = dict(zip(upd.keys(), replaced[len(self.outputs):]))

        if not no_default_updates:
            while True:
                roots = graph_inputs(self.outputs + list(upd.values()))
                new = [r for r in roots
                       if isinstance(r, SharedVariable) and r.default_update is not None and r not in upd]
                if not new:
                    break
                for s in new:
                    upd[s] = s.default_update
        self.updates = upd

        roots = graph_inputs(self.outputs + list(upd.values()))
        input_ids = {v.id for v in self.inputs}
        for r in roots:
            if isinstance(r, (Constant, SharedVariable)) or r.id in input_ids:
                continue
            raise MissingInputError(
                f"function: an input of the graph, used to compute the outputs, was not provided: {r!r}. "
                "Add it to the inputs of the function.")
        used = {r.id for r in roots}
        policy = on_unused_input or "raise"
        for i, v in enumerate(self.inputs):
            if v.id not in used:
                msg = (f"function: inputs[{i}] ({v}) is not used to compute the outputs; pass "
                       "on_unused_input='ignore' to allow it")
                if policy == "raise":
                    raise UnusedInputError(msg)
                if policy == "warn":
                    warnings.warn(msg, stacklevel=3)
        self.shared: list[SharedVariable] = [r for r in roots if isinstance(r, SharedVariable)]

        self.ir, self._checks = self._emit()
        self.program = _compile(self.ir, optimize=(mode != "FAST_COMPILE"), target=target)
        self._fn = self.program.functions["f"]
        # Per input: dtype, rank, static sizes (None if all dynamic), the
        # range of an integer scalar: what a value must match to need no
        # conversion.
        self._exact = []
        for v in self.inputs:
            dtype = np.dtype(v.dtype)
            static = None if all(d is None for d in v.type.shape) else v.type.shape
            bounds = (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)) if dtype.kind in "iu" else None
            self._exact.append((dtype, v.ndim, static, bounds))

    # -- MLIR ---------------------------------------------------------------------------
    def _emit(self) -> tuple[str, list[str]]:
        module = ModuleEmitter()
        body = module.function_block()
        params = []
        for v in list(self.inputs) + list(self.shared):
            arg = module.fresh("in")
            body.bind(v, arg)
            # The caller's arrays are passed without a copy: never write into them.
            attr = " {bufferization.writable = false}" if v.ndim else ""
            params.append(f"{arg}: {v.type.mlir}{attr}")
        results = []
        body.plan(self.outputs + list(self.updates.values()))
        for v in self.outputs + list(self.updates.values()):
            results.append((body.value(v), v.type.mlir))
        body.stmt(f"return {', '.join(s for s, _ in results)}" + (
            f" : {', '.join(t for _, t in results)}" if results else ""))
        sig = ", ".join(t for _, t in results)
        head = f"  func.func @f({', '.join(params)}) -> ({sig}) {{"
        text = module.module_text([head + "\n" + body.text() + "\n  }"])
        return text, list(module.checks)

    # -- calls ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            if len(args) > len(self.inputs):
                raise TypeError(f"function: expected {len(self.inputs)} argument(s), got {len(args)}")
            full = list(args) + [_MISSING] * (len(self.inputs) - len(args))
            names = [v.name for v in self.inputs]
            for key, value in kwargs.items():
                if key not in names:
                    raise TypeError(f"function: unexpected keyword argument {key!r}")
                k = names.index(key)
                if full[k] is not _MISSING:
                    raise TypeError(f"function: argument {key!r} given twice")
                full[k] = value
            missing = [names[k] or f"#{k}" for k, a in enumerate(full) if a is _MISSING]
            if missing:
                raise TypeError(f"function: missing argument(s) {', '.join(missing)}")
            args = tuple(full)
        if len(args) != len(self.inputs):
            raise TypeError(f"function: expected {len(self.inputs)} argument(s), got {len(args)}")
        values = []
        for i, (v, a) in enumerate(zip(self.inputs, args)):
            # Values that need no conversion go straight to the native call.
            dtype, ndim, shape, bounds = self._exact[i]
            if ndim:
                if type(a) is np.ndarray and a.dtype == dtype and a.ndim == ndim and (
                        shape is None or all(w is None or w == h for w, h in zip(shape, a.shape))):
                    values.append(a)
                    continue
            elif (type(a) is float and dtype.kind == "f" and dtype.itemsize == 8) or (
                    type(a) is int and bounds is not None and bounds[0] <= a <= bounds[1]):
                values.append(a)
                continue
            what = f"argument #{i}" + (f" ({v.name})" if v.name else "")
            array = filter_value(a, v.type, what, self._allow_downcast)
            values.append(array[()] if array.ndim == 0 else array)
        for s in self.shared:
            value = s.get_value(borrow=True)
            values.append(value[()] if value.ndim == 0 else value)
        try:
            raw = self._fn(*values)
        except (ValueError, IndexError) as exc:
            failure = getattr(exc, "scan_check", None)
            if failure is None:
                raise  # a scan's own check (n_steps, sequence lengths...)
            raise self._check_error(type(exc), failure) from None
        n = len(self.outputs) + len(self.updates)
        if n == 0:
            raw = ()
        elif n == 1:
            raw = (raw,)
        outs = [np.asarray(r) for r in raw[: len(self.outputs)]]
        for s, r in zip(self.updates, raw[len(self.outputs):]):
            s._store(np.asarray(r))
        if self._none:
            return []
        if self._single:
            return outs[0]
        return outs

    def _check_error(self, kind: type, failure) -> Exception:
        """The exception of the builder's check that failed in a call."""
        check = failure.check
        if 0 <= check < len(self._checks):
            return kind(self._checks[check].format(have=failure.have, need=failure.need))
        return kind(f"run-time check {check} failed")

    def __repr__(self) -> str:
        ins = ", ".join(str(v) for v in self.inputs)
        return f"<mlir_scan.Function {self.name or 'f'}({ins})>"


_MISSING = object()


def _update_expr(s: SharedVariable, value: Any) -> Variable:
    v = T.as_tensor_variable(value) if not isinstance(value, Variable) else value
    if v.ndim != s.ndim:
        raise TypeError(f"function: the update of {s} has rank {v.ndim}, the shared variable has rank {s.ndim}")
    if v.dtype != s.dtype:
        if upcast(v.dtype, s.dtype) != s.dtype:
            raise TypeError(
                f"function: the update of {s} has dtype {v.dtype}, which cannot be stored in a {s.dtype} "
                f"shared variable without a downcast; cast it with .astype('{s.dtype}')")
        v = T.cast(v, s.dtype)
    return v


def function(inputs: Sequence[Variable] | None = None, outputs: Any = None, mode: Any = None, updates: Any = None,
             givens: Any = None, no_default_updates: bool = False, accept_inplace: bool = False,
             name: str | None = None, rebuild_strict: bool = True, allow_input_downcast: bool | None = None,
             profile: Any = None, on_unused_input: str | None = None, target: str = "cpu") -> Function:
    """Compiles `outputs` as a function of `inputs` (``theano.function``).

    `updates` (a dict or a list of pairs) gives shared variables new values
    after each call; shared variables with a default update (random
    streams) are updated too unless `no_default_updates`. ``mode=
    "FAST_COMPILE"`` skips the scan rewrites. The result's ``.ir`` is the
    emitted MLIR and ``.program.ir(stage)`` the compiled stages. ``target="cuda"``
    compiles for an NVIDIA GPU (see :mod:`mlir_scan.cuda`).
    """
    return Function(inputs, outputs, updates=updates, givens=givens, mode=mode, name=name,
                    allow_input_downcast=allow_input_downcast, on_unused_input=on_unused_input,
                    no_default_updates=no_default_updates, target=target)

