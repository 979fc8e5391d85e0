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

from .. import _native, cuda
from ..compiler import compile as compile_mlir
from ..runtime import tiers_enabled
from . import config
from . import tensor as T
from .emitter import ModuleEmitter
from .ops.shape import fold_shapes
from .mode import Mode, get_mode
from .graph import (
    Constant, MissingInputError, UnusedInputError, Variable, clone_replace, graph_inputs, toposort, upcast,
)
from .scan_module import _Placeholder
from .sharedvar import SharedVariable, filter_value

__all__ = ["function", "Function", "In", "Out"]

_CACHE: "OrderedDict[tuple, Any]" = OrderedDict()
_CACHE_SIZE = 64


def _compile(text: str, optimize: bool, target: str = "cpu", **cuda_options: Any):
    """Compiles `text`, reusing the program of an identical module (Theano's compile cache)."""
    key = (text, optimize, target, tuple(sorted(cuda_options.items())), tiers_enabled())
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    program = compile_mlir(text, optimize=optimize, target=target, **cuda_options)
    _CACHE[key] = program
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return program


def _optimizes(mode: Any) -> bool:
    """Whether `mode` runs the scan rewrites: all modes but ``FAST_COMPILE``, and
    ``Mode`` (the default) with ``config.optimizer`` one of Theano's unoptimized
    settings (``"fast_compile"``, ``"merge"``, ``"None"``); a :class:`~.mode.Mode`
    object by its ``optimizer``. Names no mode knows (the GPU modes, checked
    by the caller) run them."""
    if isinstance(mode, Mode) or mode is None or (isinstance(mode, str) and mode in config._MODES):
        return get_mode(mode).optimizes
    return True


class FunctionGraph:
    """Theano's ``f.maker.fgraph``: the graph of a compiled function as it was built, its
    inputs (the function's, then the shared variables it reads) and outputs (the function's,
    then the updates). The scan rewrites run on the emitted MLIR module, so they do not show
    here: ``toposort()`` lists the nodes the user's graph has."""

    def __init__(self, inputs: list[Variable], outputs: list[Variable]):
        self.inputs, self.outputs = inputs, outputs

    def toposort(self) -> list:
        return toposort(self.outputs)

    @property
    def apply_nodes(self) -> set:
        return set(self.toposort())


class FunctionMaker:
    """Theano's ``f.maker``: ``fgraph``, and ``inputs``/``expanded_inputs`` (an :class:`In` per
    input, then per shared variable read; ``value`` is None: the values live in the shared
    variables)."""

    def __init__(self, function: "Function"):
        shared = list(function.shared)
        self.fgraph = FunctionGraph(list(function.inputs) + shared,
                                    list(function.outputs) + list(function.updates.values()))
        self.expanded_inputs = [In(v) for v in function.inputs] + [In(s) for s in shared]
        for spec in self.expanded_inputs:
            spec.value = None
        self.inputs = self.expanded_inputs
        self.mode = function.mode


def _target_options(target: Any, mode: Any, chip: Any, format: Any) -> tuple[Any, dict]:  # noqa: A002
    """(Theano mode, options of ``compile(..., target="cuda")``) of `function`'s
    arguments, checked before anything is built: with ``target="cuda"``,
    `mode` may also be the GPU mode (``"auto"``, ``"host"``, ``"kernel"``;
    the scan rewrites then run as in ``FAST_RUN``)."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"function: target must be 'cpu' or 'cuda', not {target!r}")
    gpu_mode = isinstance(mode, str) and mode in cuda.MODES
    if target == "cpu":
        given = [name for name, value in (("chip", chip), ("format", format)) if value is not None]
        if given:
            raise TypeError(f"function: {' and '.join(given)} only appl{'y' if len(given) > 1 else 'ies'} "
                            "to target='cuda'")
        if gpu_mode:
            raise ValueError(f"function: mode={mode!r} is a GPU mode; it needs target='cuda'")
        return mode, {}
    options: dict[str, Any] = {}
    if chip is not None:
        if chip not in cuda.CHIPS:
            raise ValueError(f"function: chip must be one of the NVIDIA architectures {', '.join(cuda.CHIPS)}, "
                             f"not {chip!r}")
        options["chip"] = chip
    if format is not None:
        if format not in cuda.FORMATS:
            raise ValueError(f"function: format must be one of {', '.join(cuda.FORMATS)}, not {format!r}")
        options["format"] = format
    if gpu_mode:
        options["mode"] = mode
        mode = None
    return mode, options


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


class In:
    """Theano's ``In``: a function input with options (``theano.In(x, value=..., ...)``).

    `value` is the argument's default (the argument may then be omitted);
    `name` the keyword it is passed by (the variable's name by default);
    `update` an expression whose value becomes the default after each call
    (the input then holds a state, as in Theano); `strict` accepts only
    arrays of exactly the input's type; `allow_downcast` overrides the
    function's. `mutable` and `borrow` are accepted: compiled functions never
    modify their arguments in place.
    """

    def __init__(self, variable, name=None, value=None, update=None, mutable=None, strict=False,
                 allow_downcast=None, autoname=True, implicit=None, borrow=None, shared=False):
        if not isinstance(variable, Variable):
            raise TypeError(f"In: expected a symbolic variable, got {variable!r}")
        self.variable = variable
        self.name = name if name is not None else (variable.name if autoname else None)
        self.value = value
        self.update = update
        self.mutable = bool(mutable)
        self.borrow = bool(borrow)
        self.strict = bool(strict)
        self.allow_downcast = allow_downcast
        if implicit:
            raise NotImplementedError("In: implicit inputs are not supported (use a shared variable)")

    def __repr__(self) -> str:
        return f"In({self.variable})" if self.update is None else f"In({self.variable} -> {self.update})"


class Out:
    """Theano's ``Out(variable, borrow=False)``: an output (results are always fresh arrays)."""

    def __init__(self, variable, borrow: bool = False):
        self.variable = variable
        self.borrow = bool(borrow)


class Function(_native.Function):
    """A compiled function (see :func:`function`).

    A call goes straight to the native call path (python/native/ScanNative.cpp)
    when the function has no shared variables, updates or strict inputs and is
    compiled for the CPU: arguments that need no conversion are passed as they
    are, the others go through :meth:`_coerce_argument` (Theano's conversion
    rules and messages), and calls with keywords or missing arguments through
    :meth:`_call_python`, which handles everything else.
    """

    def __init__(self, inputs, outputs, updates=None, givens=None, mode=None, name=None,
                 allow_input_downcast=None, on_unused_input=None, no_default_updates=False,
                 target="cpu", chip=None, format=None):  # noqa: A002
        if mode is None:
            mode = config.mode  # Theano's default mode ("Mode")
        mode, cuda_options = _target_options(target, mode, chip, format)
        #: The Theano mode the program was compiled for ("FAST_COMPILE" skips
        #: the scan rewrites).
        self.mode = mode
        self.name = name
        self._allow_downcast = allow_input_downcast
        if isinstance(inputs, (Variable, In)):
            inputs = [inputs]
        specs = [i if isinstance(i, In) else None for i in list(inputs or [])]
        self.inputs: list[Variable] = [i.variable if isinstance(i, In) else i for i in list(inputs or [])]
        for i, v in enumerate(self.inputs):
            if not isinstance(v, Variable):
                raise TypeError(f"function: inputs[{i}] is not a symbolic variable: {v!r}")
            if isinstance(v, SharedVariable):
                raise TypeError(
                    f"function: inputs[{i}] ({v}) is a shared variable; shared variables are implicit "
                    "inputs and must not be listed")
            if isinstance(v, Constant):
                raise TypeError(f"function: inputs[{i}] ({v}) is a constant, not an input")
            if any(v is w for w in self.inputs[:i]):
                raise ValueError(f"function: inputs[{i}] ({v}) is given twice")
        self._names = [spec.name if spec is not None else v.name for spec, v in zip(specs, self.inputs)]
        self._strict = [bool(spec is not None and spec.strict) for spec in specs]
        self._input_downcast = [spec.allow_downcast if spec is not None and spec.allow_downcast is not None
                                else allow_input_downcast for spec in specs]
        #: Default values of the inputs (In(value=...)); _MISSING where none.
        self._defaults: list[Any] = []
        for i, (spec, v) in enumerate(zip(specs, self.inputs)):
            if spec is None or spec.value is None:
                self._defaults.append(_MISSING)
            else:
                what = f"In({v}): value"
                self._defaults.append(filter_value(spec.value, v.type, what, self._input_downcast[i]))
        in_updates = [(k, spec.update) for k, spec in enumerate(specs) if spec is not None and spec.update is not None]
        for k, _ in in_updates:
            if self._defaults[k] is _MISSING:
                raise ValueError(f"function: In({self.inputs[k]}) has an update but no value to start from")

        # An input computed from other variables cuts the graph there: the
        # outputs are computed from the value given for it (Theano's rule).
        self._cut = {v: Variable(v.type, name=v.name) for v in self.inputs if v.owner is not None}
        self._single = not isinstance(outputs, (list, tuple))
        if isinstance(outputs, Out):
            outputs = outputs.variable
        outs = [] if outputs is None else ([outputs] if self._single else list(outputs))
        if outputs is None:
            self._single = False
            self._none = True
        else:
            self._none = False
        self.outputs = []
        for i, o in enumerate(outs):
            if isinstance(o, Out):
                o = o.variable
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

        self._in_updates = []
        for k, expr in in_updates:
            v = self.inputs[k]
            try:
                expr = T.as_tensor_variable(expr)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"function: the update of In({v}) is not a tensor: {expr!r}") from exc
            if expr.ndim != v.ndim or upcast(expr.dtype, v.dtype) != v.dtype:
                raise TypeError(f"function: the update of In({v}) ({expr.type}) does not fit its type ({v.type})")
            self._in_updates.append((k, expr if expr.dtype == v.dtype else T.cast(expr, v.dtype)))

        if self._cut:
            n_out, n_upd = len(self.outputs), len(upd)
            exprs = self.outputs + list(upd.values()) + [e for _, e in self._in_updates]
            replaced = clone_replace(exprs, self._cut)
            self.outputs = replaced[:n_out]
            upd = dict(zip(upd.keys(), replaced[n_out:n_out + n_upd]))
            self._in_updates = [(k, e) for (k, _), e in zip(self._in_updates, replaced[n_out + n_upd:])]
            self.inputs = [self._cut.get(v, v) for v in self.inputs]

        if givens is not None:
            repl = {}
            for k, v in _as_pairs(givens, "givens"):
                if not isinstance(k, Variable):
                    raise TypeError(f"function: givens: {k!r} is not a symbolic variable")
                v = T.as_tensor_variable(v)
                if v.type.dtype != k.type.dtype or v.ndim != k.ndim:
                    raise TypeError(f"function: givens: {k} ({k.type}) cannot be replaced by {v} ({v.type})")
                repl[k] = v
            n_out, n_upd = len(self.outputs), len(upd)
            replaced = clone_replace(self.outputs + list(upd.values()) + [e for _, e in self._in_updates], repl)
            self.outputs = replaced[:n_out]
            upd = dict(zip(upd.keys(), replaced[n_out:n_out + n_upd]))
            self._in_updates = [(k, e) for (k, _), e in zip(self._in_updates, replaced[n_out + n_upd:])]

        in_exprs = [e for _, e in self._in_updates]
        if not no_default_updates:
            while True:
                roots = graph_inputs(self.outputs + list(upd.values()) + in_exprs)
                new = [r for r in roots
                       if isinstance(r, SharedVariable) and r.default_update is not None and r not in upd
                       and not _inside_a_scan_step(r.default_update)]
                if not new:
                    break
                for s in new:
                    upd[s] = s.default_update
        # Sizes read from computed variables become sizes computed from the
        # graph's inputs, now that the graph is cut and the givens applied.
        n_out, n_upd = len(self.outputs), len(upd)
        # (an input counts as used when the graph as given reads it, if only
        # its shape, as in Theano: the gradient of a bias the folding below
        # leaves out, d/db sum(W x + b) = ones of W's rows)
        used = {r.id for r in graph_inputs(self.outputs + list(upd.values()) + in_exprs)}
        folded = fold_shapes(self.outputs + list(upd.values()) + in_exprs)
        self.outputs = folded[:n_out]
        upd = dict(zip(upd.keys(), folded[n_out:n_out + n_upd]))
        in_exprs = folded[n_out + n_upd:]
        self._in_updates = [(k, e) for (k, _), e in zip(self._in_updates, in_exprs)]
        self.updates = upd

        roots = graph_inputs(self.outputs + list(upd.values()) + in_exprs)
        input_ids = {v.id for v in self.inputs}
        for r in roots:
            if isinstance(r, (Constant, SharedVariable)) or r.id in input_ids:
                continue
            raise MissingInputError(
                f"function: an input of the graph, used to compute the outputs, was not provided: {r!r}. "
                "Add it to the inputs of the function.")
        used |= {r.id for r in roots}
        policy = on_unused_input or config.on_unused_input
        if policy not in ("raise", "warn", "ignore"):
            raise ValueError(f"function: on_unused_input must be 'raise', 'warn' or 'ignore', not {policy!r}")
        for i, v in enumerate(self.inputs):
            if v.id not in used:
                msg = (f"function: inputs[{i}] ({v}) is not used to compute the outputs; pass "
                       "on_unused_input='ignore' to allow it")
                if policy == "raise":
                    raise UnusedInputError(msg)
                if policy == "warn":
                    warnings.warn(msg, stacklevel=3)
        self.shared: list[SharedVariable] = [r for r in roots if isinstance(r, SharedVariable)]

        self.ir, self._checks, self._check_exceptions = self._emit()
        #: What compiles the program again (a copy, an unpickled function).
        self._compile_options = (_optimizes(mode), target, cuda_options)
        self.program = _compile(self.ir, optimize=_optimizes(mode), target=target, **cuda_options)
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
        #: Calls of a function without shared variables or updates whose
        #: arguments need no conversion go straight to the native code.
        self._plain = bool(self.outputs) and not (self.shared or self.updates or self._in_updates or self._none)
        self._native_calls = self._plain and target == "cpu" and not any(self._strict)
        self._bind_native()

    def _bind_native(self) -> None:
        """Sets up the native part of this object: the compiled entry point
        for the calls it takes, `_call_python` for the others."""
        if self._native_calls:
            _native.Function.__init__(self, *self._fn._signature, self._coerce_argument, self._raise_error,
                                      fallback=self._call_python, float32_from_python=False,
                                      result_list=not self._single, scalar_arrays=True,
                                      entry_slot=self._fn._entry_slot)
        else:
            self._fallback_only(self._call_python)

    @property
    def maker(self) -> FunctionMaker:
        """Theano's ``f.maker``: the function's graph (``maker.fgraph``) and inputs."""
        return FunctionMaker(self)

    def __copy__(self) -> "Function":
        """A shallow copy: the same compiled program and defaults, callable alike."""
        other = type(self).__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._bind_native()
        return other

    def __reduce__(self) -> tuple:
        """Pickling and ``copy.deepcopy``: the function is saved as its MLIR module and
        what a call needs (input types and defaults, its shared variables); loading
        compiles the module again, or takes the program from the compile cache.

        The shared variables are saved with the function (a deep copy copies them:
        the copy computes with their values at copy time, and one of its updates
        changes the copy's variables only; ``copy.deepcopy`` of an object holding
        both a function and its shared variables gives the copied function the
        copied variables). The outputs and update expressions of the loaded function
        are placeholders of their types: its graph is not saved.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in _UNSAVED}
        state["outputs"] = [Variable(o.type, name=o.name) for o in self.outputs]
        state["updates"] = {s: Variable(v.type) for s, v in self.updates.items()}
        state["_in_updates"] = [(k, Variable(e.type)) for k, e in self._in_updates]
        return (_load_function, (type(self), state))

    # -- MLIR ---------------------------------------------------------------------------
    def _emit(self) -> tuple[str, list[str], dict[int, type]]:
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
        exprs = self.outputs + list(self.updates.values()) + [e for _, e in self._in_updates]
        body.plan(exprs)
        for v in exprs:
            results.append((body.value(v), v.type.mlir))
        body.stmt(f"return {', '.join(s for s, _ in results)}" + (
            f" : {', '.join(t for _, t in results)}" if results else ""))
        sig = ", ".join(t for _, t in results)
        head = f"  func.func @f({', '.join(params)}) -> ({sig}) {{"
        text = module.module_text([head + "\n" + body.text() + "\n  }"])
        return text, list(module.checks), dict(module.check_exceptions)

    # -- calls ----------------------------------------------------------------------------
    def _call_python(self, *args: Any, **kwargs: Any) -> Any:
        """A call the native path does not take (keywords, defaults, shared
        variables, updates, strict inputs, a GPU program)."""
        if self._plain and not kwargs and len(args) == len(self.inputs) and self._all_exact(args):
            raw = self._invoke(args)
            if self._single:
                return np.asarray(raw)
            return [np.asarray(r) for r in (raw if len(self.outputs) > 1 else (raw,))]
        if kwargs or len(args) != len(self.inputs):
            args = self._complete_arguments(args, kwargs)
        values = []
        for i, (v, a) in enumerate(zip(self.inputs, args)):
            # Values that need no conversion go straight to the native call.
            dtype, ndim, shape, bounds = self._exact[i]
            if ndim:
                if type(a) is np.ndarray and a.dtype == dtype and a.ndim == ndim and (
                        shape is None or all(w is None or w == h for w, h in zip(shape, a.shape))):
                    values.append(a)
                    continue
            elif not self._strict[i] and (
                    (type(a) is float and dtype.kind == "f" and dtype.itemsize == 8) or (
                    type(a) is int and bounds is not None and bounds[0] <= a <= bounds[1])):
                values.append(a)
                continue
            what = f"argument #{i}" + (f" ({self._names[i]})" if self._names[i] else "")
            if self._strict[i] and not (isinstance(a, np.ndarray) and a.dtype == np.dtype(v.dtype)):
                raise TypeError(f"{what}: strict input: expected an array of dtype {v.dtype}, got {a!r}")
            array = filter_value(a, v.type, what, self._input_downcast[i])
            values.append(array[()] if array.ndim == 0 else array)
        for s in self.shared:
            value = s.get_value(borrow=True)
            values.append(value[()] if value.ndim == 0 else value)
        raw = self._invoke(values)
        n_out, n_upd = len(self.outputs), len(self.updates)
        n = n_out + n_upd + len(self._in_updates)
        if n == 0:
            raw = ()
        elif n == 1:
            raw = (raw,)
        outs = [np.asarray(r) for r in raw[:n_out]]
        for s, r in zip(self.updates, raw[n_out:n_out + n_upd]):
            s._store(np.asarray(r))
        for (k, _), r in zip(self._in_updates, raw[n_out + n_upd:]):
            self._defaults[k] = np.asarray(r)
        if self._none:
            return []
        if self._single:
            return outs[0]
        return outs

    def _all_exact(self, args: tuple) -> bool:
        """Whether every argument can be passed to the native code as it is: an
        ndarray of the input's dtype, rank and static sizes, or a scalar of the
        input's exact NumPy type (or a Python float/int where it fits)."""
        for a, (dtype, ndim, shape, bounds), strict in zip(args, self._exact, self._strict):
            kind = type(a)
            if ndim:
                if not (kind is np.ndarray and a.dtype == dtype and a.ndim == ndim and (
                        shape is None or all(w is None or w == h for w, h in zip(shape, a.shape)))):
                    return False
            elif strict or not (kind is dtype.type or (
                    kind is float and dtype.kind == "f" and dtype.itemsize == 8) or (
                    kind is int and bounds is not None and bounds[0] <= a <= bounds[1])):
                return False
        return True

    def _invoke(self, values: Sequence[Any]) -> Any:
        """Calls the native code; a failed check of the builder raises its message."""
        try:
            return self._fn(*values)
        except (ValueError, IndexError) as exc:
            failure = getattr(exc, "scan_check", None)
            if failure is None:
                raise  # a scan's own check (n_steps, sequence lengths...)
            raise self._check_error(type(exc), failure) from None

    def _complete_arguments(self, args: tuple, kwargs: dict) -> tuple:
        """The positional arguments of a call: keywords placed, defaults filled in."""
        n_in = len(self.inputs)
        if len(args) > n_in:
            raise TypeError(f"function: expected {n_in} argument(s), got {len(args)}")
        full = list(args) + [_MISSING] * (n_in - len(args))
        names = self._names
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"function: unexpected keyword argument {key!r}")
            k = names.index(key)
            if full[k] is not _MISSING:
                raise TypeError(f"function: argument {key!r} given twice")
            full[k] = value
        for k, a in enumerate(full):
            if a is _MISSING and self._defaults[k] is not _MISSING:
                full[k] = self._defaults[k]
        missing = [names[k] or f"#{k}" for k, a in enumerate(full) if a is _MISSING]
        if missing:
            if not kwargs and all(d is _MISSING for d in self._defaults):
                raise TypeError(f"function: expected {n_in} argument(s), got {len(args)}")
            raise TypeError(f"function: missing argument(s) {', '.join(missing)}")
        return tuple(full)

    def _coerce_argument(self, i: int, value: Any) -> Any:
        """Argument `i` of a native call, converted by Theano's rules (or the
        error that names it), then into what the native path takes."""
        v = self.inputs[i]
        what = f"argument #{i}" + (f" ({self._names[i]})" if self._names[i] else "")
        array = filter_value(value, v.type, what, self._input_downcast[i])
        if array.ndim == 0:
            # A NumPy scalar of the input's exact type is what the native
            # path packs (a Python float would be one for float64 only).
            scalar = array[()]
            return int(scalar) if array.dtype.kind in "iu" else scalar
        return self._fn._coerce(i, array)

    def _raise_error(self, *record: Any) -> Exception:
        """The exception of a failed native call: the builder's own message for
        a failed check of the builder, the run-time library's otherwise."""
        exc = self._fn._raise_error(*record)
        failure = getattr(exc, "scan_check", None)
        if failure is None or not isinstance(exc, (ValueError, IndexError)):
            return exc
        return self._check_error(type(exc), failure)

    def _check_error(self, kind: type, failure) -> Exception:
        """The exception of the builder's check that failed in a call."""
        check = failure.check
        if 0 <= check < len(self._checks):
            kind = self._check_exceptions.get(check, kind)
            return kind(self._checks[check].format(have=failure.have, need=failure.need))
        return kind(f"run-time check {check} failed")

    def __repr__(self) -> str:
        ins = ", ".join(str(v) for v in self.inputs)
        return f"<mlir_scan.Function {self.name or 'f'}({ins})>"


class _Missing:
    """The value of an argument without a default (one object, also after unpickling)."""

    def __reduce__(self) -> str:
        return "_MISSING"

    def __repr__(self) -> str:
        return "<no default>"


_MISSING = _Missing()

#: What :meth:`Function.__reduce__` does not save: the compiled program (rebuilt from
#: ``ir``) and the graph before it was cut (the saved inputs are the function's own).
_UNSAVED = ("program", "_fn", "_cut")


def _load_function(cls: type, state: dict) -> Function:
    """A :class:`Function` saved by :meth:`Function.__reduce__`, compiled again
    (or taken from the compile cache)."""
    f = cls.__new__(cls)
    f.__dict__.update(state)
    optimize, target, cuda_options = f._compile_options
    f.program = _compile(f.ir, optimize=optimize, target=target, **cuda_options)
    f._fn = f.program.functions["f"]
    f._bind_native()
    return f


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


def _inside_a_scan_step(update: Variable) -> bool:
    """True for the default update of a random stream drawn from inside a scan's step
    (it reads the step's placeholders): the scan returned it as its own update, and a
    function compiled without the scan's updates leaves the stream as it is (Theano)."""
    return any(isinstance(r, _Placeholder) for r in graph_inputs([update]))


def function(inputs: Sequence[Variable] | None = None, outputs: Any = None, mode: Any = None, updates: Any = None,
             givens: Any = None, no_default_updates: bool = False, accept_inplace: bool = False,
             name: str | None = None, rebuild_strict: bool = True, allow_input_downcast: bool | None = None,
             profile: Any = None, on_unused_input: str | None = None, target: str = "cpu",
             chip: str | None = None, format: str | None = None) -> Function:  # noqa: A002
    """Compiles `outputs` as a function of `inputs` (``theano.function``).

    `updates` (a dict or a list of pairs) gives shared variables new values
    after each call; shared variables with a default update (random
    streams) are updated too unless `no_default_updates`. ``mode=
    "FAST_COMPILE"`` skips the scan rewrites. The result's ``.ir`` is the
    emitted MLIR and ``.program.ir(stage)`` the compiled stages. ``target="cuda"``
    compiles for an NVIDIA GPU (see :mod:`mlir_scan.cuda`), with ``chip``
    (``"sm_80"`` by default), ``format`` (``"isa"``, ``"bin"``, ``"fatbin"``)
    and the GPU mode given as ``mode`` (``"auto"``, ``"host"`` or
    ``"kernel"``; any other `mode` is Theano's)::

        f = theano.function([A, k], result[-1], target="cuda", chip="sm_90", mode="kernel")
    """
    return Function(inputs, outputs, updates=updates, givens=givens, mode=mode, name=name,
                    allow_input_downcast=allow_input_downcast, on_unused_input=on_unused_input,
                    no_default_updates=no_default_updates, target=target, chip=chip, format=format)


def _eval(self: Variable, inputs_to_values: dict | None = None, **kwargs: Any) -> np.ndarray:
    """Theano's ``Variable.eval``: the value of this variable for the given input values.

    Keys are variables (or, as PyTensor allows, their names). The compiled
    function is cached on the variable for each set of inputs.

    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> (x * 2).eval({x: [1.0, 2.0]})
    array([2., 4.])
    """
    values = dict(inputs_to_values or {})
    values.update(kwargs)
    given: dict[Variable, Any] = {}
    for key, value in values.items():
        if isinstance(key, str):
            matches = [v for v in graph_inputs([self]) if v.name == key and not isinstance(v, (Constant, SharedVariable))]
            if len(matches) != 1:
                raise TypeError(f"eval: {len(matches)} inputs of the graph are named {key!r}")
            key = matches[0]
        if not isinstance(key, Variable):
            raise TypeError(f"eval: keys must be symbolic variables (or their names), got {key!r}")
        given[key] = value
    inputs = sorted(given, key=lambda v: v.id)
    cache = self.tag.setdefault("eval_functions", {})
    key = tuple(v.id for v in inputs)
    if key not in cache:
        cache[key] = function(inputs, self)
    return cache[key](*[given[v] for v in inputs])


Variable.eval = _eval  # type: ignore[attr-defined]

