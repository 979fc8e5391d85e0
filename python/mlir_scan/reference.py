"""A pure-NumPy reference interpreter for MLIR modules containing ``scan.scan``.

It is the oracle of the differential tests: it runs a function of a module op by
op on NumPy values, with the semantics of SPEC §4 for ``scan.scan`` and the
upstream semantics for the ``func``, ``arith``, ``math``, ``tensor``,
``linalg``, ``scf``, ``affine`` (apply/min/max) and a few ``bufferization`` ops.
It is slow and simple on purpose; it never calls a compiler pass.

Example (runnable)::

    >>> import numpy as np
    >>> from mlir_scan import reference
    >>> SOURCE = '''
    ... func.func @cumsum(%n: index, %xs: tensor<?xf64>, %s0: f64) -> tensor<?xf64> {
    ...   %r = scan.scan steps(%n) sequences(%xs[0] : tensor<?xf64>) sitsot(%s0 : f64) {
    ...   ^bb0(%x: f64, %acc: f64):
    ...     %y = arith.addf %acc, %x : f64
    ...     scan.yield %y : f64
    ...   } -> (tensor<?xf64>)
    ...   return %r : tensor<?xf64>
    ... }'''
    >>> reference.run(SOURCE, "cumsum", 3, np.array([1.0, 2.0, 3.0]), 10.0)
    array([11., 13., 16.])

Values: tensors are NumPy arrays (never modified in place: every op that
"changes" a tensor makes a new array), scalars are NumPy scalars of the exact
dtype (``f32`` -> ``float32``, ``i1`` -> ``bool``, ``index`` -> ``int64``...).
Integer arithmetic wraps at the type's width; ``f32`` math is done in
``float32``. Integer division by zero raises ``ValueError`` (it is undefined
behaviour in MLIR). Ops the interpreter does not know raise
``NotImplementedError`` naming the op, before anything runs.

Design: each function is *compiled* once into a list of steps ``(kernel, input
slots, output slots)``; an op's handler (the ``_HANDLERS`` table, op name ->
handler) reads the op's attributes once and returns the kernel, a closure over
NumPy values. Ops with regions compile their blocks the same way. The bodies of
``linalg`` ops run once on whole index grids (vectorized) when they can, else
once per element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from mlir import ir
from mlir.dialects import linalg as _linalg

from . import _registration

_registration._register_everything()  # the Scan dialect parses in new Contexts (idempotent)

__all__ = ["run"]

Value = Any  # a NumPy scalar or array
Frame = dict  # slot -> Value, one per function activation
Kernel = Callable[[Frame, list], Sequence[Value]]

_DYNAMIC = ir.ShapedType.get_dynamic_size()

# --------------------------------------------------------------------------- #
# Types
# --------------------------------------------------------------------------- #

_SCALAR_DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "index": np.dtype(np.int64),
}


@dataclass(frozen=True)
class _Spec:
    """What the interpreter needs to know about an MLIR type."""

    text: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None  # None: a scalar; None dims: dynamic
    elem: str  # element type as text: "f32", "i1", "index"...

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"


def _spec(t: ir.Type) -> _Spec:
    if isinstance(t, ir.RankedTensorType):
        elem = str(t.element_type)
        shape = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
    else:
        elem, shape = str(t), None
    dtype = _SCALAR_DTYPES.get(elem)
    if dtype is None:
        raise NotImplementedError(f"reference interpreter: unsupported type {t}")
    return _Spec(str(t), dtype, shape, elem)


@dataclass(frozen=True)
class _Int:
    """A signless integer type: its storage dtype and its unsigned view."""

    width: int
    dtype: np.dtype
    udtype: np.dtype


_INTS: dict[str, _Int] = {
    "i1": _Int(1, np.dtype(np.bool_), np.dtype(np.uint8)),
    "i8": _Int(8, np.dtype(np.int8), np.dtype(np.uint8)),
    "i16": _Int(16, np.dtype(np.int16), np.dtype(np.uint16)),
    "i32": _Int(32, np.dtype(np.int32), np.dtype(np.uint32)),
    "i64": _Int(64, np.dtype(np.int64), np.dtype(np.uint64)),
    "index": _Int(64, np.dtype(np.int64), np.dtype(np.uint64)),
}


def _int(spec: _Spec) -> _Int:
    info = _INTS.get(spec.elem)
    if info is None:
        raise NotImplementedError(f"reference interpreter: {spec.text} is not an integer type")
    return info


def _s0(x: Any) -> Value:
    """A 0-d array as a NumPy scalar; anything else unchanged."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x


def _signed(x: Value, it: _Int) -> np.ndarray:
    a = np.asarray(x)
    if it.width == 1:
        return -(a.astype(np.int8))
    return a.astype(it.dtype, copy=False)


def _unsigned(x: Value, it: _Int) -> np.ndarray:
    a = np.asarray(x)
    if it.width == 1:
        return a.astype(np.uint8)
    return a.astype(it.dtype, copy=False).view(it.udtype)


def _wrap(x: Any, it: _Int) -> Value:
    """An integer value (any integer dtype) reduced modulo 2**width."""
    a = np.asarray(x)
    if it.width == 1:
        return _s0((a & 1).astype(np.bool_))
    return _s0(a.astype(it.udtype).view(it.dtype))


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------- #
# Compiled program
# --------------------------------------------------------------------------- #


class _NeedScalar(Exception):
    """Raised inside a vectorized region evaluation that needs scalar values."""


@dataclass
class _Block:
    arg_slots: tuple[int, ...]
    steps: list[tuple[Kernel, tuple[int, ...], tuple[int, ...], str]]
    term_slots: tuple[int, ...]


@dataclass
class _Func:
    name: str
    arg_specs: list[_Spec]
    result_specs: list[_Spec]
    body: _Block | None  # None while compiling and for an external declaration
    external: bool


_TERMINATORS = {
    "func.return", "scan.yield", "scf.yield", "scf.condition", "linalg.yield", "tensor.yield",
    "affine.yield",
}


def _annotate(exc: BaseException, where: str) -> None:
    if not getattr(exc, "_reference_located", False):
        exc.add_note(f"(reference interpreter, while running {where})")
        try:
            exc._reference_located = True  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - exceptions without __dict__
            pass


def _run_block(frame: Frame, block: _Block, args: Sequence[Value]) -> list[Value]:
    """Runs `block` with `args` bound to its arguments; returns the terminator operands."""
    for slot, value in zip(block.arg_slots, args):
        frame[slot] = value
    for kernel, ins, outs, where in block.steps:
        try:
            results = kernel(frame, [frame[s] for s in ins])
        except _NeedScalar:
            raise
        except Exception as exc:
            _annotate(exc, where)
            raise
        for slot, value in zip(outs, results):
            frame[slot] = value
    return [frame[s] for s in block.term_slots]


class _Program:
    """A parsed module: compiles functions on first use and calls them."""

    def __init__(self, module: ir.Module):
        self.module = module
        self._slots: dict[ir.Value, int] = {}
        self._func_ops: dict[str, ir.Operation] = {}
        self._funcs: dict[str, _Func] = {}
        self.index_stack: list[dict[int, Any]] = []  # linalg.index / generate context
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func":
                self._func_ops[ir.StringAttr(op.attributes["sym_name"]).value] = op

    # -- compilation ------------------------------------------------------- #

    def slot(self, value: ir.Value) -> int:
        slot = self._slots.get(value)
        if slot is None:
            slot = self._slots[value] = len(self._slots)
        return slot

    def compile_block(self, block: ir.Block, terminator: str | tuple[str, ...]) -> _Block:
        ops = [op.operation for op in block.operations]
        if not ops or ops[-1].name not in _TERMINATORS:
            raise NotImplementedError("reference interpreter: a block without a terminator")
        term = ops[-1]
        allowed = (terminator,) if isinstance(terminator, str) else terminator
        if term.name not in allowed:
            raise NotImplementedError(
                f"reference interpreter: unexpected terminator '{term.name}' at {term.location}"
            )
        steps = [self._compile_op(op) for op in ops[:-1]]
        return _Block(
            tuple(self.slot(a) for a in block.arguments),
            steps,
            tuple(self.slot(v) for v in term.operands),
        )

    def compile_region(self, region: ir.Region, terminator: str | tuple[str, ...]) -> _Block:
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise NotImplementedError(
                f"reference interpreter: regions with {len(blocks)} blocks are not supported"
            )
        return self.compile_block(blocks[0], terminator)

    def _compile_op(self, op: ir.Operation):
        name = op.name
        handler = _HANDLERS.get(name)
        if handler is None and name.startswith("linalg.") and _is_structured(op):
            handler = _structured
        if handler is None:
            raise NotImplementedError(
                f"reference interpreter: unsupported op '{name}' at {op.location}"
            )
        kernel = handler(self, op)
        return (
            kernel,
            tuple(self.slot(v) for v in op.operands),
            tuple(self.slot(v) for v in op.results),
            f"'{name}' at {op.location}",
        )

    def func(self, name: str) -> _Func:
        compiled = self._funcs.get(name)
        if compiled is not None:
            return compiled
        op = self._func_ops.get(name)
        if op is None:
            known = ", ".join(f"@{n}" for n in self._func_ops) or "none"
            raise ValueError(f"no func.func @{name} in the module (functions: {known})")
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        region = op.regions[0]
        compiled = _Func(
            name,
            [_spec(t) for t in ftype.inputs],
            [_spec(t) for t in ftype.results],
            None,
            not len(region.blocks),
        )
        # Registered before its body compiles, so recursive calls find it.
        self._funcs[name] = compiled
        if not compiled.external:
            compiled.body = self.compile_region(region, "func.return")
        return compiled

    def is_public(self, name: str) -> bool:
        op = self._func_ops[name]
        if "sym_visibility" not in op.attributes:
            return True
        return ir.StringAttr(op.attributes["sym_visibility"]).value == "public"

    def arg_names(self, name: str) -> list[str]:
        op = self._func_ops[name]
        if not len(op.regions[0].blocks):
            return [f"%arg{i}" for i in range(len(self.func(name).arg_specs))]
        return [a.get_name() for a in op.regions[0].blocks[0].arguments]

    # -- execution --------------------------------------------------------- #

    def call(self, name: str, args: Sequence[Value]) -> list[Value]:
        func = self.func(name)
        if func.external and name in _C_LIBRARY:
            return [_C_LIBRARY[name](*args)]
        if func.external or func.body is None:
            raise NotImplementedError(
                f"reference interpreter: @{name} is an external declaration without a body"
            )
        return _run_block({}, func.body, args)


def _elementwise_math(fn: Callable[..., np.ndarray], dtype: str) -> Callable[..., Value]:
    """The C function `fn` (a NumPy function of float64 arrays) applied to
    scalars or arrays, in `dtype` (the ``f``-suffixed float32 functions:
    computed in float64, rounded)."""

    def apply(*xs: Value) -> Value:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[np.asarray(x, dtype=np.float64) for x in xs])).astype(dtype)[()]

    return apply


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except ValueError:  # the poles 0, -1, -2, ...: C's lgamma gives inf
        return math.inf


def _scipy_special(name: str) -> Callable[..., np.ndarray]:
    def call(*args: np.ndarray) -> np.ndarray:
        try:
            import scipy.special  # noqa: PLC0415 - only programs that use these functions need SciPy
        except ImportError as e:  # pragma: no cover - SciPy comes with PyTensor
            raise NotImplementedError(f"reference interpreter: {name} needs SciPy (pip install scipy)") from e
        return getattr(scipy.special, name)(*args)

    return call


#: External functions the graph builder's programs call, by symbol: libm's
#: (`builder/ops/elemwise.py`'s `_libm`; NumPy's ufuncs follow C's results
#: outside the domain, atanh(1) = inf, acosh(0) = NaN) and the run-time
#: library's special functions (python/runtime/ScanSpecialFunctions.cpp:
#: lgamma by the Python standard library, digamma and polygamma by SciPy,
#: whose values it follows).
_C_LIBRARY: dict[str, Callable[..., Value]] = {}
for _name, _fn in (("erf", np.vectorize(math.erf, otypes=[np.float64])),
                   ("erfc", np.vectorize(math.erfc, otypes=[np.float64])),
                   ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
                   ("__mlir_scan_lgamma", np.vectorize(_lgamma, otypes=[np.float64])),
                   ("__mlir_scan_digamma", _scipy_special("psi")),
                   ("__mlir_scan_polygamma", _scipy_special("polygamma"))):
    _C_LIBRARY[_name] = _elementwise_math(_fn, "float64")
    _C_LIBRARY[_name + "f"] = _elementwise_math(_fn, "float32")


# --------------------------------------------------------------------------- #
# Handler table
# --------------------------------------------------------------------------- #

Handler = Callable[[_Program, ir.Operation], Kernel]
_HANDLERS: dict[str, Handler] = {}


def _handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            _HANDLERS[name] = fn
        return fn

    return register


def _result_spec(op: ir.Operation, i: int = 0) -> _Spec:
    return _spec(op.results[i].type)


def _operand_spec(op: ir.Operation, i: int = 0) -> _Spec:
    return _spec(op.operands[i].type)


def _int_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _i64_array(op: ir.Operation, name: str) -> list[int]:
    if name not in op.attributes:
        return []
    return [int(x) for x in op.attributes[name]]


def _segments(op: ir.Operation) -> list[int]:
    return [int(x) for x in op.attributes["operandSegmentSizes"]]


def _concrete_shape(spec: _Spec, dynamic: Sequence[Value], what: str) -> tuple[int, ...]:
    """The static shape of `spec` with its `?` dims taken from `dynamic`, in order."""
    values = iter(int(d) for d in dynamic)
    shape = tuple(next(values) if d is None else d for d in spec.shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"{what}: negative dimension in shape {shape}")
    return shape


def _check_scalar_operand(*values: Value) -> None:
    for v in values:
        if np.ndim(v) != 0:
            raise _NeedScalar()


# ---- func ------------------------------------------------------------------ #


@_handles("func.call")
def _func_call(p: _Program, op: ir.Operation) -> Kernel:
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    p.func(callee)  # compile it now: unknown ops fail before anything runs
    return lambda frame, args: p.call(callee, args)


# ---- arith: constants -------------------------------------------------------- #


def _scalar_from_attr(attr: ir.Attribute, spec: _Spec) -> Value:
    if isinstance(attr, ir.BoolAttr):
        return np.bool_(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return spec.dtype.type(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return _wrap(np.asarray(attr.value % 2**64, np.uint64), _int(spec))
    raise NotImplementedError(f"reference interpreter: unsupported constant {attr}")


def _dense_to_array(attr: ir.DenseElementsAttr, spec: _Spec) -> np.ndarray:
    shape = tuple(spec.shape)
    if attr.is_splat:
        value = _scalar_from_attr(attr.get_splat_value(), _Spec(spec.elem, spec.dtype, None, spec.elem))
        return np.full(shape, value, dtype=spec.dtype)
    try:
        data = np.array(attr)
    except Exception:  # pragma: no cover - element types without a buffer
        data = np.array([attr[i] for i in range(len(attr))])
    if spec.dtype.kind in "iub" and data.dtype != spec.dtype:
        data = np.asarray(_wrap(data.astype(np.int64), _int(spec)))
    return data.astype(spec.dtype).reshape(shape)


@_handles("arith.constant")
def _arith_constant(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    attr = op.attributes["value"]
    if spec.shape is None:
        value = _scalar_from_attr(attr, spec)
    elif isinstance(attr, ir.DenseElementsAttr):
        value = _readonly(_dense_to_array(attr, spec))
    else:
        raise NotImplementedError(f"reference interpreter: unsupported constant {attr}")
    result = [value]
    return lambda frame, args: result


@_handles("ub.poison")
def _ub_poison(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    value = spec.dtype.type(0) if spec.shape is None else np.zeros(spec.shape, spec.dtype)
    return lambda frame, args: [value]


# ---- arith / math: floating point ------------------------------------------- #


def _round_half_away(x: Value) -> Value:
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(np.asarray(x).dtype)


def _vectorized_scalar_fn(fn: Callable[..., float]) -> Callable[..., Value]:
    vec = np.vectorize(fn, otypes=[np.float64])

    def apply(*xs: Value) -> Value:
        dtype = np.result_type(*xs)
        return _s0(np.asarray(vec(*[np.asarray(x, np.float64) for x in xs])).astype(dtype))

    return apply


def _fma(a: Value, b: Value, c: Value) -> Value:
    dtype = np.result_type(a, b, c)
    if dtype == np.float64 and hasattr(math, "fma"):
        return _vectorized_scalar_fn(math.fma)(a, b, c)
    wide = np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
    return _s0(wide.astype(dtype))


_FLOAT_UNARY: dict[str, Callable[[Value], Value]] = {
    "arith.negf": np.negative,
    "math.absf": np.abs,
    "math.tanh": np.tanh,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.expm1": np.expm1,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.log10": np.log10,
    "math.log1p": np.log1p,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "math.cbrt": np.cbrt,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.tan": np.tan,
    "math.asin": np.arcsin,
    "math.acos": np.arccos,
    "math.atan": np.arctan,
    "math.sinh": np.sinh,
    "math.cosh": np.cosh,
    "math.asinh": np.arcsinh,
    "math.acosh": np.arccosh,
    "math.atanh": np.arctanh,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.trunc": np.trunc,
    "math.round": _round_half_away,
    "math.roundeven": np.rint,
    "math.erf": _vectorized_scalar_fn(math.erf),
    "math.erfc": _vectorized_scalar_fn(math.erfc),
}

_FLOAT_BINARY: dict[str, Callable[[Value, Value], Value]] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "math.powf": np.power,
    "math.copysign": np.copysign,
    "math.atan2": np.arctan2,
}

_FLOAT_PREDICATES: dict[str, Callable[[Value], Value]] = {
    "math.isnan": np.isnan,
    "math.isinf": np.isinf,
    "math.isfinite": np.isfinite,
}


def _float_unary(p: _Program, op: ir.Operation) -> Kernel:
    fn = _FLOAT_UNARY[op.name]
    dtype = _result_spec(op).dtype
    return lambda frame, args: [_s0(np.asarray(fn(args[0])).astype(dtype, copy=False))]


def _float_binary(p: _Program, op: ir.Operation) -> Kernel:
    fn = _FLOAT_BINARY[op.name]
    dtype = _result_spec(op).dtype
    return lambda frame, args: [_s0(np.asarray(fn(args[0], args[1])).astype(dtype, copy=False))]


def _float_predicate(p: _Program, op: ir.Operation) -> Kernel:
    fn = _FLOAT_PREDICATES[op.name]
    return lambda frame, args: [_s0(np.asarray(fn(args[0])))]


for _name in _FLOAT_UNARY:
    _HANDLERS[_name] = _float_unary
for _name in _FLOAT_BINARY:
    _HANDLERS[_name] = _float_binary
for _name in _FLOAT_PREDICATES:
    _HANDLERS[_name] = _float_predicate


@_handles("math.fma")
def _math_fma(p: _Program, op: ir.Operation) -> Kernel:
    return lambda frame, args: [_fma(*args)]


@_handles("math.fpowi")
def _math_fpowi(p: _Program, op: ir.Operation) -> Kernel:
    dtype = _result_spec(op).dtype
    return lambda frame, args: [
        _s0(np.power(np.asarray(args[0]), np.asarray(args[1]).astype(dtype)).astype(dtype))
    ]


_CMPF: dict[int, Callable[[Any, Any], Any]] = {
    0: lambda a, b: np.zeros(np.broadcast(a, b).shape, np.bool_),
    1: lambda a, b: a == b,
    2: lambda a, b: a > b,
    3: lambda a, b: a >= b,
    4: lambda a, b: a < b,
    5: lambda a, b: a <= b,
    6: lambda a, b: (a != b) & ~(np.isnan(a) | np.isnan(b)),
    7: lambda a, b: ~(np.isnan(a) | np.isnan(b)),
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    9: lambda a, b: (a > b) | np.isnan(a) | np.isnan(b),
    10: lambda a, b: (a >= b) | np.isnan(a) | np.isnan(b),
    11: lambda a, b: (a < b) | np.isnan(a) | np.isnan(b),
    12: lambda a, b: (a <= b) | np.isnan(a) | np.isnan(b),
    13: lambda a, b: a != b,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
    15: lambda a, b: np.ones(np.broadcast(a, b).shape, np.bool_),
}


@_handles("arith.cmpf")
def _arith_cmpf(p: _Program, op: ir.Operation) -> Kernel:
    fn = _CMPF[_int_attr(op, "predicate")]
    return lambda frame, args: [_s0(np.asarray(fn(np.asarray(args[0]), np.asarray(args[1]))))]


# ---- arith / math: integers --------------------------------------------------- #


def _check_nonzero(divisor: np.ndarray, name: str) -> None:
    if np.any(divisor == 0):
        raise ValueError(f"{name}: integer division by zero (undefined behaviour)")


def _shift_amount(b: Value, it: _Int) -> tuple[np.ndarray, np.ndarray]:
    amount = _unsigned(b, it).astype(np.uint64)
    return amount >= it.width, np.minimum(amount, it.width - 1)


def _int_binary_fns(it: _Int, name: str) -> Callable[[Value, Value], Value]:
    s = lambda x: _signed(x, it)  # noqa: E731
    u = lambda x: _unsigned(x, it)  # noqa: E731

    def divsi(a, b):
        sa, sb = s(a), s(b)
        _check_nonzero(sb, name)
        r = np.fmod(sa, sb)
        return (sa - r) // sb

    def divui(a, b):
        ub = u(b)
        _check_nonzero(ub, name)
        return u(a) // ub

    def remsi(a, b):
        sb = s(b)
        _check_nonzero(sb, name)
        return np.fmod(s(a), sb)

    def remui(a, b):
        ub = u(b)
        _check_nonzero(ub, name)
        return u(a) % ub

    def floordivsi(a, b):
        sb = s(b)
        _check_nonzero(sb, name)
        return s(a) // sb

    def ceildivsi(a, b):
        sa, sb = s(a), s(b)
        _check_nonzero(sb, name)
        q = sa // sb
        return q + (sa - q * sb != 0)

    def shli(a, b):
        poison, amount = _shift_amount(b, it)
        return np.where(poison, 0, u(a).astype(np.uint64) << amount)

    def shrui(a, b):
        poison, amount = _shift_amount(b, it)
        return np.where(poison, 0, u(a).astype(np.uint64) >> amount)

    def shrsi(a, b):
        _, amount = _shift_amount(b, it)
        return s(a).astype(np.int64) >> amount.astype(np.int64)

    table: dict[str, Callable[[Value, Value], Value]] = {
        "arith.addi": lambda a, b: u(a) + u(b),
        "arith.subi": lambda a, b: u(a) - u(b),
        "arith.muli": lambda a, b: u(a) * u(b),
        "arith.andi": lambda a, b: u(a) & u(b),
        "arith.ori": lambda a, b: u(a) | u(b),
        "arith.xori": lambda a, b: u(a) ^ u(b),
        "arith.maxsi": lambda a, b: np.maximum(s(a), s(b)),
        "arith.minsi": lambda a, b: np.minimum(s(a), s(b)),
        "arith.maxui": lambda a, b: np.maximum(u(a), u(b)),
        "arith.minui": lambda a, b: np.minimum(u(a), u(b)),
        "arith.divsi": divsi,
        "arith.divui": divui,
        "arith.remsi": remsi,
        "arith.remui": remui,
        "arith.floordivsi": floordivsi,
        "arith.ceildivsi": ceildivsi,
        "arith.shli": shli,
        "arith.shrui": shrui,
        "arith.shrsi": shrsi,
    }
    return table[name]


_INT_BINARY = (
    "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.divsi", "arith.divui",
    "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.shli",
    "arith.shrui", "arith.shrsi",
)


@_handles(*_INT_BINARY)
def _int_binary(p: _Program, op: ir.Operation) -> Kernel:
    it = _int(_result_spec(op))
    fn = _int_binary_fns(it, op.name)
    return lambda frame, args: [_wrap(fn(args[0], args[1]), it)]


_CMPI: dict[int, tuple[bool, Callable[[Any, Any], Any]]] = {
    0: (True, np.equal),
    1: (True, np.not_equal),
    2: (True, np.less),
    3: (True, np.less_equal),
    4: (True, np.greater),
    5: (True, np.greater_equal),
    6: (False, np.less),
    7: (False, np.less_equal),
    8: (False, np.greater),
    9: (False, np.greater_equal),
}


@_handles("arith.cmpi")
def _arith_cmpi(p: _Program, op: ir.Operation) -> Kernel:
    it = _int(_operand_spec(op))
    signed, fn = _CMPI[_int_attr(op, "predicate")]
    view = _signed if signed else _unsigned
    return lambda frame, args: [_s0(np.asarray(fn(view(args[0], it), view(args[1], it))))]


@_handles("math.absi")
def _math_absi(p: _Program, op: ir.Operation) -> Kernel:
    it = _int(_result_spec(op))
    return lambda frame, args: [_wrap(np.abs(_signed(args[0], it).astype(np.int64)), it)]


def _ipow(base: int, exp: int, width: int) -> int:
    if exp < 0:
        if base == 1:
            return 1
        if base == -1:
            return 1 if exp % 2 == 0 else -1
        if base == 0:
            raise ValueError("math.ipowi: zero raised to a negative power (undefined behaviour)")
        return 0
    return pow(base, exp, 2**width)


@_handles("math.ipowi")
def _math_ipowi(p: _Program, op: ir.Operation) -> Kernel:
    it = _int(_result_spec(op))
    vec = np.vectorize(lambda a, b: _ipow(int(a), int(b), it.width), otypes=[object])

    def kernel(frame: Frame, args: list) -> list:
        raw = np.asarray(vec(_signed(args[0], it), _signed(args[1], it)))
        return [_wrap(np.asarray([x % 2**64 for x in raw.ravel()], np.uint64).reshape(raw.shape), it)]

    return kernel


@_handles("math.ctpop")
def _math_ctpop(p: _Program, op: ir.Operation) -> Kernel:
    it = _int(_result_spec(op))
    vec = np.vectorize(lambda x: int(x).bit_count(), otypes=[np.int64])
    return lambda frame, args: [_wrap(vec(_unsigned(args[0], it)), it)]


# ---- arith: select and casts ------------------------------------------------- #


@_handles("arith.select")
def _arith_select(p: _Program, op: ir.Operation) -> Kernel:
    def kernel(frame: Frame, args: list) -> list:
        cond, a, b = args
        if np.ndim(cond) == 0:
            return [a if cond else b]
        return [_s0(np.where(cond, a, b))]

    return kernel


def _cast_kernel(fn: Callable[[Value], Value]) -> Kernel:
    return lambda frame, args: [fn(args[0])]


@_handles("arith.extsi", "arith.trunci", "arith.index_cast")
def _arith_sext_trunc(p: _Program, op: ir.Operation) -> Kernel:
    src, dst = _int(_operand_spec(op)), _int(_result_spec(op))
    return _cast_kernel(lambda x: _wrap(_signed(x, src).astype(np.int64), dst))


@_handles("arith.extui", "arith.index_castui")
def _arith_zext(p: _Program, op: ir.Operation) -> Kernel:
    src, dst = _int(_operand_spec(op)), _int(_result_spec(op))
    return _cast_kernel(lambda x: _wrap(_unsigned(x, src).astype(np.uint64), dst))


@_handles("arith.sitofp")
def _arith_sitofp(p: _Program, op: ir.Operation) -> Kernel:
    src, dtype = _int(_operand_spec(op)), _result_spec(op).dtype
    return _cast_kernel(lambda x: _s0(_signed(x, src).astype(dtype)))


@_handles("arith.uitofp")
def _arith_uitofp(p: _Program, op: ir.Operation) -> Kernel:
    src, dtype = _int(_operand_spec(op)), _result_spec(op).dtype
    return _cast_kernel(lambda x: _s0(_unsigned(x, src).astype(dtype)))


@_handles("arith.fptosi")
def _arith_fptosi(p: _Program, op: ir.Operation) -> Kernel:
    dst = _int(_result_spec(op))
    return _cast_kernel(lambda x: _wrap(np.trunc(np.asarray(x)).astype(np.int64), dst))


@_handles("arith.fptoui")
def _arith_fptoui(p: _Program, op: ir.Operation) -> Kernel:
    dst = _int(_result_spec(op))
    return _cast_kernel(lambda x: _wrap(np.trunc(np.asarray(x)).astype(np.uint64), dst))


@_handles("arith.extf", "arith.truncf")
def _arith_float_cast(p: _Program, op: ir.Operation) -> Kernel:
    dtype = _result_spec(op).dtype
    return _cast_kernel(lambda x: _s0(np.asarray(x).astype(dtype)))


@_handles("arith.bitcast")
def _arith_bitcast(p: _Program, op: ir.Operation) -> Kernel:
    src, dst = _operand_spec(op), _result_spec(op)
    if src.dtype.itemsize != dst.dtype.itemsize or "i1" in (src.elem, dst.elem):
        raise NotImplementedError(f"reference interpreter: arith.bitcast {src.text} -> {dst.text}")
    return _cast_kernel(lambda x: _s0(np.asarray(x, src.dtype).view(dst.dtype)))


# ---- affine ------------------------------------------------------------------ #

AffineFn = Callable[[Sequence[Any], Sequence[Any]], Any]


def _affine_fn(e: ir.AffineExpr) -> AffineFn:
    """Compiles an affine expression into fn(dims, symbols) over ints or arrays."""
    if isinstance(e, ir.AffineDimExpr):
        pos = e.position
        return lambda d, s: d[pos]
    if isinstance(e, ir.AffineSymbolExpr):
        pos = e.position
        return lambda d, s: s[pos]
    if isinstance(e, ir.AffineConstantExpr):
        value = e.value
        return lambda d, s: value
    binary: dict[type, Callable[[Any, Any], Any]] = {
        ir.AffineAddExpr: lambda a, b: a + b,
        ir.AffineMulExpr: lambda a, b: a * b,
        ir.AffineModExpr: lambda a, b: a % b,
        ir.AffineFloorDivExpr: lambda a, b: a // b,
        ir.AffineCeilDivExpr: lambda a, b: -((-a) // b),
    }
    for cls, fn in binary.items():
        if isinstance(e, cls):
            lhs, rhs = _affine_fn(e.lhs), _affine_fn(e.rhs)
            return lambda d, s, fn=fn: fn(lhs(d, s), rhs(d, s))
    raise NotImplementedError(f"reference interpreter: unsupported affine expression {e}")


@dataclass
class _AffineMap:
    n_dims: int
    n_symbols: int
    fns: list[AffineFn]
    dim_results: list[int | None]  # result i is plain dim d -> d, else None

    @property
    def is_identity(self) -> bool:
        return len(self.fns) == self.n_dims and self.dim_results == list(range(self.n_dims))

    def __call__(self, dims: Sequence[Any], symbols: Sequence[Any] = ()) -> list[Any]:
        return [fn(dims, symbols) for fn in self.fns]


def _affine_map(attr: ir.Attribute) -> _AffineMap:
    amap = ir.AffineMapAttr(attr).value
    results = list(amap.results)
    return _AffineMap(
        amap.n_dims,
        amap.n_symbols,
        [_affine_fn(e) for e in results],
        [e.position if isinstance(e, ir.AffineDimExpr) else None for e in results],
    )


def _affine_kernel(op: ir.Operation, combine: Callable[[list[Any]], Any]) -> Kernel:
    amap = _affine_map(op.attributes["map"])

    def kernel(frame: Frame, args: list) -> list:
        ints = [int(a) for a in args]
        return [np.int64(combine(amap(ints[: amap.n_dims], ints[amap.n_dims:])))]

    return kernel


@_handles("affine.apply")
def _affine_apply(p: _Program, op: ir.Operation) -> Kernel:
    return _affine_kernel(op, lambda results: results[0])


@_handles("affine.min")
def _affine_min(p: _Program, op: ir.Operation) -> Kernel:
    return _affine_kernel(op, min)


@_handles("affine.max")
def _affine_max(p: _Program, op: ir.Operation) -> Kernel:
    return _affine_kernel(op, max)


# ---- scf --------------------------------------------------------------------- #


@_handles("scf.for")
def _scf_for(p: _Program, op: ir.Operation) -> Kernel:
    body = p.compile_region(op.regions[0], "scf.yield")
    iv_spec = _operand_spec(op, 0)
    it = _int(iv_spec)
    unsigned = "unsignedCmp" in op.attributes

    def kernel(frame: Frame, args: list) -> list:
        _check_scalar_operand(*args[:3])
        view = _unsigned if unsigned else _signed
        lb, ub, step = (int(view(x, it)) for x in args[:3])
        if step <= 0:
            raise ValueError(f"scf.for: step must be positive, got {step}")
        values = list(args[3:])
        for i in range(lb, ub, step):
            iv = _wrap(np.asarray(i % 2**64, np.uint64), it)
            values = _run_block(frame, body, [iv, *values])
        return values

    return kernel


@_handles("scf.while")
def _scf_while(p: _Program, op: ir.Operation) -> Kernel:
    before = p.compile_region(op.regions[0], "scf.condition")
    after = p.compile_region(op.regions[1], "scf.yield")

    def kernel(frame: Frame, args: list) -> list:
        values = list(args)
        while True:
            cond, *passed = _run_block(frame, before, values)
            _check_scalar_operand(cond)
            if not cond:
                return passed
            values = _run_block(frame, after, passed)

    return kernel


@_handles("scf.if")
def _scf_if(p: _Program, op: ir.Operation) -> Kernel:
    then = p.compile_region(op.regions[0], "scf.yield")
    otherwise = p.compile_region(op.regions[1], "scf.yield") if len(op.regions[1].blocks) else None

    def kernel(frame: Frame, args: list) -> list:
        _check_scalar_operand(args[0])
        if args[0]:
            return _run_block(frame, then, [])
        return _run_block(frame, otherwise, []) if otherwise is not None else []

    return kernel


@_handles("scf.execute_region")
def _scf_execute_region(p: _Program, op: ir.Operation) -> Kernel:
    body = p.compile_region(op.regions[0], "scf.yield")
    return lambda frame, args: _run_block(frame, body, [])


# ---- tensor ------------------------------------------------------------------ #


def _check_index(index: Sequence[Any], shape: tuple[int, ...], name: str) -> None:
    if len(index) != len(shape):
        raise ValueError(f"{name}: {len(index)} indices for a tensor of rank {len(shape)}")
    for i, (x, d) in enumerate(zip(index, shape)):
        if np.any(np.asarray(x) < 0) or np.any(np.asarray(x) >= d):
            raise ValueError(f"{name}: index {x} out of bounds for dimension {i} of size {d}")


@_handles("tensor.empty", "bufferization.alloc_tensor")
def _tensor_empty(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    n_dynamic = sum(d is None for d in spec.shape)
    name = op.name

    def kernel(frame: Frame, args: list) -> list:
        if name == "bufferization.alloc_tensor" and len(args) > n_dynamic:
            return [np.array(args[n_dynamic])]  # `copy(%t)`
        return [np.zeros(_concrete_shape(spec, args[:n_dynamic], name), spec.dtype)]

    return kernel


@_handles("tensor.splat")
def _tensor_splat(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    return lambda frame, args: [
        np.full(_concrete_shape(spec, args[1:], "tensor.splat"), args[0], spec.dtype)
    ]


@_handles("tensor.from_elements")
def _tensor_from_elements(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    return lambda frame, args: [np.array(args, spec.dtype).reshape(spec.shape)]


@_handles("tensor.extract")
def _tensor_extract(p: _Program, op: ir.Operation) -> Kernel:
    def kernel(frame: Frame, args: list) -> list:
        tensor, index = np.asarray(args[0]), args[1:]
        _check_index(index, tensor.shape, "tensor.extract")
        if all(np.ndim(i) == 0 for i in index):
            return [tensor[tuple(int(i) for i in index)]]
        return [tensor[tuple(np.asarray(i) for i in index)]]

    return kernel


@_handles("tensor.insert")
def _tensor_insert(p: _Program, op: ir.Operation) -> Kernel:
    def kernel(frame: Frame, args: list) -> list:
        scalar, tensor, index = args[0], args[1], args[2:]
        _check_scalar_operand(scalar, *index)
        _check_index(index, tensor.shape, "tensor.insert")
        out = np.array(tensor)
        out[tuple(int(i) for i in index)] = scalar
        return [out]

    return kernel


@_handles("tensor.dim")
def _tensor_dim(p: _Program, op: ir.Operation) -> Kernel:
    def kernel(frame: Frame, args: list) -> list:
        shape, i = np.shape(args[0]), int(args[1])
        if not 0 <= i < len(shape):
            raise ValueError(f"tensor.dim: dimension {i} out of range for rank {len(shape)}")
        return [np.int64(shape[i])]

    return kernel


@_handles("tensor.rank")
def _tensor_rank(p: _Program, op: ir.Operation) -> Kernel:
    return lambda frame, args: [np.int64(np.ndim(args[0]))]


@_handles("tensor.cast")
def _tensor_cast(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)

    def kernel(frame: Frame, args: list) -> list:
        _check_shape(args[0], spec, "tensor.cast")
        return [args[0]]

    return kernel


def _check_shape(value: Value, spec: _Spec, what: str) -> None:
    shape = np.shape(value)
    if len(shape) != len(spec.shape) or any(
        d is not None and d != s for d, s in zip(spec.shape, shape)
    ):
        raise ValueError(f"{what}: a value of shape {shape} does not fit {spec.text}")


def _mixed(static: list[int], dynamic: Sequence[Value]) -> list[int]:
    values = iter(int(d) for d in dynamic)
    return [next(values) if s == _DYNAMIC else s for s in static]


@dataclass
class _SliceSpec:
    """offsets/sizes/strides of tensor.extract_slice / insert_slice."""

    static_offsets: list[int]
    static_sizes: list[int]
    static_strides: list[int]
    n_offsets: int
    n_sizes: int

    @classmethod
    def of(cls, op: ir.Operation, first_segment: int) -> "_SliceSpec":
        segments = _segments(op)
        return cls(
            _i64_array(op, "static_offsets"),
            _i64_array(op, "static_sizes"),
            _i64_array(op, "static_strides"),
            segments[first_segment],
            segments[first_segment + 1],
        )

    def resolve(self, dynamic: Sequence[Value], shape: tuple[int, ...], name: str):
        offsets = _mixed(self.static_offsets, dynamic[: self.n_offsets])
        sizes = _mixed(self.static_sizes, dynamic[self.n_offsets: self.n_offsets + self.n_sizes])
        strides = _mixed(self.static_strides, dynamic[self.n_offsets + self.n_sizes:])
        if len(offsets) != len(shape):
            raise ValueError(f"{name}: {len(offsets)} offsets for a tensor of rank {len(shape)}")
        slices: list = []
        for dim, (o, s, st, d) in enumerate(zip(offsets, sizes, strides, shape)):
            # MLIR's rule (and its run-time verification's): every element
            # read lies in the dimension; strides may be negative (a reversed
            # view: the gradient reads its forward states backwards) or 0.
            last = o + (s - 1) * st
            if s < 0 or o < 0 or o > d or (s > 0 and not (o < d and 0 <= last < d)):
                raise ValueError(
                    f"{name}: slice offset {o}, size {s}, stride {st} out of bounds for "
                    f"dimension {dim} of size {d}"
                )
            if s == 0:
                slices.append(slice(0, 0))
            elif st > 0:
                slices.append(slice(o, last + 1, st))
            elif st < 0:
                slices.append(slice(o, last - 1 if last > 0 else None, st))
            else:
                slices.append(np.full(s, o))
        if any(isinstance(x, np.ndarray) for x in slices):
            # A stride of 0 repeats one index: index every dimension by an
            # array, combined as an outer product.
            ranges = [np.arange(d)[x] if isinstance(x, slice) else x for x, d in zip(slices, shape)]
            return np.ix_(*ranges), sizes
        return tuple(slices), sizes


def _reduced_shape(sizes: list[int], static_sizes: list[int], spec: _Spec) -> tuple[int, ...]:
    """The shape of a (possibly rank-reduced) slice of `sizes` typed `spec`.

    Only static unit sizes are dropped; a dynamic size gives a `?` result dim.
    Matched greedily like MLIR's rank-reduction mask (the data layout does
    not depend on which unit dims go).
    """
    if len(sizes) == len(spec.shape):
        return tuple(sizes)
    result, j = [], 0
    for s, static in zip(sizes, static_sizes):
        nxt = spec.shape[j] if j < len(spec.shape) else -1
        if (static == _DYNAMIC and nxt is None) or (static != _DYNAMIC and nxt == s):
            result.append(s)
            j += 1
        elif static != 1:
            raise ValueError(f"cannot rank-reduce sizes {sizes} to {spec.text}")
    if j != len(spec.shape):
        raise ValueError(f"cannot rank-reduce sizes {sizes} to {spec.text}")
    return tuple(result)


@_handles("tensor.extract_slice")
def _tensor_extract_slice(p: _Program, op: ir.Operation) -> Kernel:
    slicing = _SliceSpec.of(op, 1)
    spec = _result_spec(op)

    def kernel(frame: Frame, args: list) -> list:
        source = np.asarray(args[0])
        slices, sizes = slicing.resolve(args[1:], source.shape, "tensor.extract_slice")
        return [source[slices].reshape(_reduced_shape(sizes, slicing.static_sizes, spec))]

    return kernel


@_handles("tensor.insert_slice")
def _tensor_insert_slice(p: _Program, op: ir.Operation) -> Kernel:
    slicing = _SliceSpec.of(op, 2)

    def kernel(frame: Frame, args: list) -> list:
        source, dest = np.asarray(args[0]), args[1]
        slices, sizes = slicing.resolve(args[2:], dest.shape, "tensor.insert_slice")
        if math.prod(sizes) != source.size:
            raise ValueError(
                f"tensor.insert_slice: source of shape {source.shape} does not fit sizes {sizes}"
            )
        out = np.array(dest)
        out[slices] = source.reshape(sizes)
        return [out]

    return kernel


def _reassociation(op: ir.Operation) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in group] for group in op.attributes["reassociation"]]


@_handles("tensor.collapse_shape")
def _tensor_collapse_shape(p: _Program, op: ir.Operation) -> Kernel:
    groups = _reassociation(op)

    def kernel(frame: Frame, args: list) -> list:
        shape = np.shape(args[0])
        return [np.reshape(args[0], tuple(math.prod(shape[i] for i in g) for g in groups))]

    return kernel


@_handles("tensor.expand_shape")
def _tensor_expand_shape(p: _Program, op: ir.Operation) -> Kernel:
    static = _i64_array(op, "static_output_shape")
    spec = _result_spec(op)

    def kernel(frame: Frame, args: list) -> list:
        shape = tuple(_mixed(static, args[1:])) if static else _concrete_shape(spec, [], "")
        if math.prod(shape) != np.size(args[0]):
            raise ValueError(
                f"tensor.expand_shape: cannot expand shape {np.shape(args[0])} into {shape}"
            )
        return [np.reshape(args[0], shape)]

    return kernel


@_handles("tensor.reshape")
def _tensor_reshape(p: _Program, op: ir.Operation) -> Kernel:
    def kernel(frame: Frame, args: list) -> list:
        shape = tuple(int(d) for d in np.asarray(args[1]).ravel())
        if math.prod(shape) != np.size(args[0]) or any(d < 0 for d in shape):
            raise ValueError(f"tensor.reshape: cannot reshape {np.shape(args[0])} to {shape}")
        return [np.reshape(args[0], shape)]

    return kernel


@_handles("tensor.concat")
def _tensor_concat(p: _Program, op: ir.Operation) -> Kernel:
    dim = _int_attr(op, "dim")
    return lambda frame, args: [np.concatenate([np.asarray(a) for a in args], axis=dim)]


def _grid_eval(p: _Program, shape: tuple[int, ...], body: _Block, frame: Frame,
               dtype: np.dtype) -> np.ndarray:
    """Evaluates `body` (block args: one index per dim) at every point of `shape`.

    First once on open index grids (vectorized), else once per element.
    """
    if math.prod(shape) == 0:
        return np.zeros(shape, dtype)
    rank = len(shape)
    grids = [np.arange(n, dtype=np.int64).reshape([n if i == d else 1 for i in range(rank)])
             for d, n in enumerate(shape)]
    try:
        (value,) = _run_block(frame, body, grids)
        return np.array(np.broadcast_to(np.asarray(value, dtype), shape))
    except _NeedScalar:
        out = np.zeros(shape, dtype)
        for index in np.ndindex(*shape):
            (out[index],) = _run_block(frame, body, [np.int64(i) for i in index])
        return out


@_handles("tensor.generate")
def _tensor_generate(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    body = p.compile_region(op.regions[0], "tensor.yield")
    return lambda frame, args: [
        _grid_eval(p, _concrete_shape(spec, args, "tensor.generate"), body, frame, spec.dtype)
    ]


@_handles("tensor.pad")
def _tensor_pad(p: _Program, op: ir.Operation) -> Kernel:
    spec = _result_spec(op)
    body = p.compile_region(op.regions[0], "tensor.yield")
    static_low, static_high = _i64_array(op, "static_low"), _i64_array(op, "static_high")
    _, n_low, _ = _segments(op)

    def kernel(frame: Frame, args: list) -> list:
        source = np.asarray(args[0])
        low = _mixed(static_low, args[1: 1 + n_low])
        high = _mixed(static_high, args[1 + n_low:])
        if any(x < 0 for x in low + high):
            raise ValueError(f"tensor.pad: negative padding low={low} high={high}")
        shape = tuple(lo + d + hi for lo, d, hi in zip(low, source.shape, high))
        out = _grid_eval(p, shape, body, frame, spec.dtype)
        out[tuple(slice(lo, lo + d) for lo, d in zip(low, source.shape))] = source
        return [out]

    return kernel


# ---- bufferization / casts ------------------------------------------------- #


@_handles("bufferization.to_tensor", "builtin.unrealized_conversion_cast")
def _passthrough(p: _Program, op: ir.Operation) -> Kernel:
    if len(op.operands) != len(op.results):
        raise NotImplementedError(f"reference interpreter: {op.name} with "
                                  f"{len(op.operands)} operands and {len(op.results)} results")
    return lambda frame, args: list(args)


@_handles("bufferization.materialize_in_destination")
def _materialize(p: _Program, op: ir.Operation) -> Kernel:
    if len(op.results) != 1:
        raise NotImplementedError(
            "reference interpreter: bufferization.materialize_in_destination into a memref"
        )

    def kernel(frame: Frame, args: list) -> list:
        if np.shape(args[0]) != np.shape(args[1]):
            raise ValueError("bufferization.materialize_in_destination: shapes differ")
        return [np.array(args[0], dtype=np.asarray(args[1]).dtype)]

    return kernel


# ---- linalg ------------------------------------------------------------------ #


_NOT_STRUCTURED = {"linalg.index", "linalg.yield", "linalg.pack", "linalg.unpack"}


def _is_structured(op: ir.Operation) -> bool:
    if op.name in _NOT_STRUCTURED or len(op.regions) != 1 or not len(op.regions[0].blocks):
        return False
    return _linalg.get_indexing_maps(op) is not None


@_handles("linalg.index")
def _linalg_index(p: _Program, op: ir.Operation) -> Kernel:
    dim = _int_attr(op, "dim")

    def kernel(frame: Frame, args: list) -> list:
        if not p.index_stack:
            raise ValueError("linalg.index outside a linalg op")
        return [p.index_stack[-1][dim]]

    return kernel


@dataclass
class _Structured:
    maps: list[_AffineMap]
    parallel: list[bool]
    n_inputs: int
    body: _Block
    name: str


def _structured(p: _Program, op: ir.Operation) -> Kernel:
    """Any linalg structured op (generic and named) through its maps and body."""
    if len(op.results) == 0:
        raise NotImplementedError(f"reference interpreter: {op.name} on memrefs")
    maps = [_affine_map(a) for a in _linalg.get_indexing_maps(op)]
    n_outputs = len(op.results)
    n_inputs = len(op.operands) - n_outputs
    n_dims = maps[0].n_dims
    if "iterator_types" in op.attributes:
        parallel = ["parallel" in str(a) for a in op.attributes["iterator_types"]]
    else:  # named ops: a dim is a reduction iff no output map uses it
        used = {d for m in maps[n_inputs:] for d in m.dim_results if d is not None}
        parallel = [d in used for d in range(n_dims)]
    block = op.regions[0].blocks[0]
    if len(block.arguments) != len(op.operands):
        raise NotImplementedError(
            f"reference interpreter: {op.name} body with {len(block.arguments)} arguments for "
            f"{len(op.operands)} operands"
        )
    info = _Structured(maps, parallel, n_inputs, p.compile_block(block, "linalg.yield"), op.name)
    return lambda frame, args: _run_structured(p, info, frame, args)


def _loop_extents(info: _Structured, args: list) -> list[int]:
    extents: list[int | None] = [None] * len(info.parallel)
    for k, (value, amap) in enumerate(zip(args, info.maps)):
        shape = np.shape(value)
        if len(shape) != len(amap.fns):
            raise ValueError(f"{info.name}: operand #{k} has rank {len(shape)}, its map "
                             f"{len(amap.fns)} results")
        for size, d in zip(shape, amap.dim_results):
            if d is None:
                continue
            if extents[d] is None:
                extents[d] = size
            elif extents[d] != size:
                raise ValueError(f"{info.name}: loop dimension d{d} is {extents[d]} for one "
                                 f"operand and {size} for operand #{k}")
    if any(e is None for e in extents):
        raise NotImplementedError(f"reference interpreter: {info.name}: cannot infer loop bounds")
    return extents  # type: ignore[return-value]


def _run_structured(p: _Program, info: _Structured, frame: Frame, args: list) -> list:
    extents = _loop_extents(info, args)
    inputs, inits = args[: info.n_inputs], args[info.n_inputs:]
    if math.prod(extents) == 0:
        return [np.array(o) for o in inits]
    par = [d for d, is_par in enumerate(info.parallel) if is_par]
    grid_shape = tuple(extents[d] for d in par)
    grids = {
        d: np.arange(extents[d], dtype=np.int64).reshape(
            [extents[d] if j == i else 1 for j in range(len(par))])
        for i, d in enumerate(par)
    }
    outs = [np.array(o) for o in inits]
    try:
        _sweep(p, info, frame, inputs, outs, extents, grids, grid_shape, vectorized=True)
    except _NeedScalar:
        outs = [np.array(o) for o in inits]
        for point in np.ndindex(*grid_shape):
            scalar_idx = {d: np.int64(i) for d, i in zip(par, point)}
            _sweep(p, info, frame, inputs, outs, extents, scalar_idx, (), vectorized=False)
    return outs


def _read(value: Value, amap: _AffineMap, idx: dict, fast: bool) -> Value:
    if not amap.fns:
        return _s0(np.asarray(value)) if isinstance(value, np.ndarray) else value
    if fast and amap.is_identity:
        return value
    return _s0(np.asarray(value)[tuple(amap(idx))])


def _write(out: np.ndarray, amap: _AffineMap, idx: dict, value: Value,
           grid_shape: tuple[int, ...], fast: bool) -> None:
    if not amap.fns:
        out[()] = value
        return
    if fast and amap.is_identity:
        out[...] = value
        return
    index = [np.broadcast_to(np.asarray(i), grid_shape) for i in amap(idx)]
    out[tuple(index)] = np.broadcast_to(np.asarray(value), grid_shape)


def _sweep(p: _Program, info: _Structured, frame: Frame, inputs: list, outs: list,
           extents: list[int], par_idx: dict, grid_shape: tuple[int, ...],
           vectorized: bool) -> None:
    """Runs the body over the reduction dims in order, for the given parallel indices."""
    red = [d for d, is_par in enumerate(info.parallel) if not is_par]
    fast = vectorized and not red
    in_maps, out_maps = info.maps[: info.n_inputs], info.maps[info.n_inputs:]
    for point in np.ndindex(*[extents[d] for d in red]):
        idx = dict(par_idx)
        idx.update((d, np.int64(i)) for d, i in zip(red, point))
        args = [_read(v, m, idx, fast) for v, m in zip(inputs, in_maps)]
        args += [_read(o, m, idx, fast) for o, m in zip(outs, out_maps)]
        p.index_stack.append(idx)
        try:
            values = _run_block(frame, info.body, args)
        finally:
            p.index_stack.pop()
        # A yielded output argument must be read before any output is written.
        values = [np.array(v) if any(v is o for o in outs) else v for v in values]
        for out, amap, value in zip(outs, out_maps, values):
            _write(out, amap, idx, value, grid_shape, fast)


# ---- scan -------------------------------------------------------------------- #


def _taps(op: ir.Operation, name: str) -> list[list[int]]:
    if name not in op.attributes:
        return []
    return [[int(t) for t in item] for item in op.attributes[name]]


@dataclass
class _Scan:
    n_seq: int
    n_mitmot: int
    n_mitsot: int
    n_sitsot: int
    n_nitsot: int
    seq_taps: list[list[int]]
    mitmot_in: list[list[int]]
    mitmot_out: list[list[int]]
    mitsot_taps: list[list[int]]
    keep: list[int]
    go_backwards: bool
    until: bool
    result_specs: list[_Spec]
    body: _Block


@_handles("scan.check")
def _scan_check(p: _Program, op: ir.Operation) -> Kernel:
    code = ir.IntegerAttr(op.attributes["code"]).value
    check = ir.IntegerAttr(op.attributes["id"]).value
    kind = IndexError if code == 101 else ValueError

    def kernel(frame: Frame, args: list) -> list:
        _check_scalar_operand(args[0])
        if args[0]:
            raise kind(f"scan.check: check {check} failed (code {code}, have {int(args[1])}, "
                       f"need {int(args[2])})")
        return []

    return kernel


@_handles("scan.scan")
def _scan_scan(p: _Program, op: ir.Operation) -> Kernel:
    _, n_seq, n_mitmot, n_mitsot, n_sitsot, _ = _segments(op)
    n_results = len(op.results)
    seq_taps = _taps(op, "sequence_taps") or [[0] for _ in range(n_seq)]
    keep = _i64_array(op, "keep") or [0] * n_results
    info = _Scan(
        n_seq, n_mitmot, n_mitsot, n_sitsot, n_results - n_mitmot - n_mitsot - n_sitsot,
        seq_taps, _taps(op, "mitmot_in_taps"), _taps(op, "mitmot_out_taps"),
        _taps(op, "mitsot_taps"), keep, "go_backwards" in op.attributes,
        "until" in op.attributes, [_spec(r.type) for r in op.results],
        p.compile_region(op.regions[0], "scan.yield"),
    )
    return lambda frame, args: _run_scan(info, frame, args)


def _row_shape(spec: _Spec) -> tuple[int | None, ...] | None:
    """Shape of one row of a `tensor<N x S>` result (None for a scalar row)."""
    return spec.shape[1:] if len(spec.shape) > 1 else None


def _as_row(value: Value, spec: _Spec, what: str) -> Value:
    """Checks that `value` is a row of `spec` and returns it (scalars converted)."""
    row = _row_shape(spec)
    if row is None:
        if np.ndim(value) != 0:
            raise ValueError(f"{what}: expected a {spec.elem} scalar, got shape {np.shape(value)}")
        return spec.dtype.type(value)
    shape = np.shape(value)
    if len(shape) != len(row) or any(d is not None and d != s for d, s in zip(row, shape)):
        raise ValueError(f"{what}: a row of shape {shape} does not fit {spec.text}")
    return value


def _stack(rows: list[Value], spec: _Spec, what: str,
           hint: tuple[int, ...] | None = None) -> np.ndarray:
    """Rows as a `tensor<len(rows) x S>`; all rows must have one shape.

    Without rows, the row shape is `hint` (the shape of an init row), else the
    static row shape of `spec` with its `?` dims taken as 0.
    """
    row = _row_shape(spec)
    if not rows:
        if hint is None:
            hint = () if row is None else tuple(0 if d is None else d for d in row)
        return np.zeros((0, *hint), spec.dtype)
    shapes = {np.shape(r) for r in rows}
    if len(shapes) != 1:
        raise ValueError(f"{what}: steps produced rows of different shapes {sorted(shapes)}")
    return np.array([np.asarray(r, spec.dtype) for r in rows], spec.dtype).reshape(
        (len(rows), *shapes.pop()))


def _last_rows(rows: list[Value], k: int, spec: _Spec, what: str) -> np.ndarray:
    """The last `k` rows, chronological; missing leading rows are zero."""
    taken = _stack(rows[-k:], spec, what)
    missing = k - taken.shape[0]
    if missing <= 0:
        return taken
    zeros = np.zeros((missing, *taken.shape[1:]), spec.dtype)
    return np.concatenate([zeros, taken])


def _check_result(value: np.ndarray, spec: _Spec, what: str) -> np.ndarray:
    shape = value.shape
    if len(shape) != len(spec.shape) or any(
        d is not None and d != s for d, s in zip(spec.shape, shape)
    ):
        raise ValueError(f"{what}: produced shape {shape}, which does not fit {spec.text}")
    return value


def _rows_of(array: np.ndarray) -> list[Value]:
    return [array[i] for i in range(array.shape[0])]


def _run_scan(s: _Scan, frame: Frame, args: list) -> list:
    n = int(args[0])
    if n < 0:
        raise ValueError(f"scan.scan: n_steps must be >= 0, got {n}")
    pos = 1
    seqs, pos = args[pos: pos + s.n_seq], pos + s.n_seq
    bufs, pos = args[pos: pos + s.n_mitmot], pos + s.n_mitmot
    mitsot_inits, pos = args[pos: pos + s.n_mitsot], pos + s.n_mitsot
    sitsot_inits, pos = args[pos: pos + s.n_sitsot], pos + s.n_sitsot
    non_seqs = list(args[pos:])

    # Sequences: (array, [(tap offset - lo)]) with the length checked up front.
    seq_reads: list[tuple[np.ndarray, list[int]]] = []
    for i, (seq, taps) in enumerate(zip(seqs, s.seq_taps)):
        arr = np.asarray(seq)[::-1] if s.go_backwards else np.asarray(seq)
        lo, hi = min(0, *taps), max(0, *taps)
        if arr.shape[0] < n + hi - lo:
            raise ValueError(
                f"scan.scan: sequence #{i} has {arr.shape[0]} rows, but n_steps={n} with taps "
                f"{taps} needs at least {n + hi - lo}"
            )
        seq_reads.append((arr, [k - lo for k in taps]))

    # Mitmot: private copies of the buffers, updated in place step by step.
    mitmot: list[tuple[np.ndarray, list[int], list[int]]] = []
    for i, (buf, ins, outs) in enumerate(zip(bufs, s.mitmot_in, s.mitmot_out)):
        lo, hi = min(0, *ins, *outs), max(0, *ins, *outs)
        buf = np.array(buf)
        if buf.shape[0] < n + hi - lo:
            raise ValueError(
                f"scan.scan: mitmot #{i} buffer has {buf.shape[0]} rows, but n_steps={n} with "
                f"in taps {ins} and out taps {outs} needs at least {n + hi - lo}"
            )
        mitmot.append((buf, [k - lo for k in ins], [k - lo for k in outs]))

    # Histories of the recurrent outputs: init rows first (mitsot: K rows,
    # sitsot: one), then one row per step.
    first = s.n_mitmot
    mitsot_hist: list[list[Value]] = []
    for i, (init, taps) in enumerate(zip(mitsot_inits, s.mitsot_taps)):
        K = -min(taps)
        if np.shape(init)[0] != K:
            raise ValueError(
                f"scan.scan: mitsot #{i}: init has {np.shape(init)[0]} rows but taps {taps} "
                f"need {K}"
            )
        mitsot_hist.append(_rows_of(np.asarray(init)))
    sitsot_hist = [
        [_as_row(init, s.result_specs[first + s.n_mitsot + i], f"scan.scan: sitsot #{i} init")]
        for i, init in enumerate(sitsot_inits)
    ]
    nitsot_rows: list[list[Value]] = [[] for _ in range(s.n_nitsot)]

    steps_run = 0
    for t in range(n):
        block_args: list[Value] = []
        for arr, offsets in seq_reads:
            block_args += [arr[t + o] for o in offsets]
        for buf, ins, _ in mitmot:
            block_args += [_s0(np.array(buf[t + o])) for o in ins]
        for hist, taps in zip(mitsot_hist, s.mitsot_taps):
            K = -min(taps)
            block_args += [hist[K + t + k] for k in taps]
        block_args += [hist[-1] for hist in sitsot_hist]
        block_args += non_seqs

        ys = iter(_run_block(frame, s.body, block_args))
        for j, (buf, _, outs) in enumerate(mitmot):
            for o in outs:
                y = next(ys)
                if np.shape(y) != buf.shape[1:]:
                    raise ValueError(f"scan.scan: mitmot #{j} yields a row of shape "
                                     f"{np.shape(y)} for a buffer of shape {buf.shape}")
                buf[t + o] = y
        for j, hist in enumerate(mitsot_hist):
            hist.append(_as_row(next(ys), s.result_specs[first + j], f"scan.scan: mitsot #{j}"))
        for j, hist in enumerate(sitsot_hist):
            spec = s.result_specs[first + s.n_mitsot + j]
            hist.append(_as_row(next(ys), spec, f"scan.scan: sitsot #{j}"))
        for j, rows in enumerate(nitsot_rows):
            spec = s.result_specs[first + s.n_mitsot + s.n_sitsot + j]
            rows.append(_as_row(next(ys), spec, f"scan.scan: nitsot #{j}"))
        steps_run += 1
        if s.until and bool(next(ys)):
            break

    results: list[np.ndarray] = [buf for buf, _, _ in mitmot]
    n_inits = [len(mitsot_inits[j]) for j in range(s.n_mitsot)] + [1] * s.n_sitsot + \
        [0] * s.n_nitsot
    histories = mitsot_hist + sitsot_hist + nitsot_rows
    for j, (hist, skip) in enumerate(zip(histories, n_inits)):
        r = first + j
        spec, k, what = s.result_specs[r], s.keep[r], f"scan.scan: result #{r}"
        if k > 0:
            results.append(_last_rows(hist, k, spec, what))
        else:  # without rows, an init row (sitsot/mitsot) tells the row shape
            hint = np.shape(hist[0]) if hist else None
            results.append(_stack(hist[skip:], spec, what, hint))
    return [_check_result(v, spec, f"scan.scan: result #{r}")
            for r, (v, spec) in enumerate(zip(results, s.result_specs))]


# --------------------------------------------------------------------------- #
# Entry point
# --------------------------------------------------------------------------- #


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {value.shape}"
    if isinstance(value, np.generic):
        return f"{value.dtype} scalar {value!r}"
    return f"{type(value).__name__} {value!r}"


def _check_scalar_arg(where: str, spec: _Spec, value: Any) -> Value:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    is_bool = isinstance(value, (bool, np.bool_))
    is_int = isinstance(value, (int, np.integer)) and not is_bool
    is_float = isinstance(value, (float, np.floating))
    problem = f"{where}: expected {spec.text}, got {_describe(value)}"
    if spec.is_float:
        if not (is_int or is_float):
            raise TypeError(problem)
        return spec.dtype.type(value)
    it = _int(spec)
    if it.width == 1:
        if is_bool or (is_int and int(value) in (0, 1)):
            return np.bool_(bool(value))
        raise TypeError(problem)
    if not is_int:
        raise TypeError(problem)
    v = int(value)
    if not -(2 ** (it.width - 1)) <= v < 2**it.width:
        raise ValueError(f"{problem}, which does not fit in {it.width} bits")
    return _wrap(np.asarray(v % 2**it.width, np.uint64), it)


def _check_arg(index: int, name: str, spec: _Spec, value: Any) -> Value:
    where = f"argument #{index} ({name})"
    if spec.shape is None:
        return _check_scalar_arg(where, spec, value)
    problem = f"{where}: expected {spec.text}, got {_describe(value)}"
    if not isinstance(value, np.ndarray):
        raise TypeError(problem)
    if value.dtype != spec.dtype:
        raise TypeError(problem)
    if value.ndim != len(spec.shape) or any(
        d is not None and d != s for d, s in zip(spec.shape, value.shape)
    ):
        raise ValueError(problem)
    return _readonly(np.array(value, copy=True))


def _export(value: Value, spec: _Spec, what: str) -> Any:
    if spec.shape is None:
        if np.ndim(value) != 0:
            raise ValueError(f"{what}: expected a {spec.text} scalar, got shape {np.shape(value)}")
        return spec.dtype.type(value)
    out = np.array(value, dtype=spec.dtype)
    return _check_result(out, spec, what)


def _module_text(source: str | ir.Module) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, ir.Module):
        return source.operation.get_asm(print_generic_op_form=True)
    raise TypeError(f"source must be MLIR text or an mlir.ir.Module, got {type(source).__name__}")


def run(source: str | ir.Module, func_name: str, *args: Any) -> Any:
    """Runs the public ``func.func @func_name`` of `source` on `args`.

    `source` is MLIR text or an ``mlir.ir.Module`` (reparsed in a fresh
    Context). Tensor arguments are NumPy arrays of the exact dtype, rank and
    static dims; scalar arguments are Python or NumPy scalars. Returns one
    NumPy array / scalar, or a tuple for several results (``()`` for none).
    Inputs are never modified.
    """
    text = _module_text(source)
    with (context := ir.Context()), ir.Location.unknown():
        # MLIR's threads off: it verifies functions on them, and the bindings'
        # error capture then makes Python objects without the GIL (an abort).
        context.enable_multithreading(False)
        module = ir.Module.parse(text)
        program = _Program(module)
        func = program.func(func_name)
        if not program.is_public(func_name):
            raise ValueError(f"func.func @{func_name} is not public")
        if len(args) != len(func.arg_specs):
            types = ", ".join(s.text for s in func.arg_specs)
            raise TypeError(f"@{func_name} takes {len(func.arg_specs)} arguments ({types}), "
                            f"got {len(args)}")
        names = program.arg_names(func_name)
        values = [_check_arg(i, names[i], spec, a)
                  for i, (spec, a) in enumerate(zip(func.arg_specs, args))]
        with np.errstate(all="ignore"):
            results = program.call(func_name, values)
        outs = [_export(v, spec, f"result #{i} of @{func_name}")
                for i, (v, spec) in enumerate(zip(results, func.result_specs))]
    return outs[0] if len(outs) == 1 else tuple(outs)
