"""Element-wise operations with NumPy broadcasting and dtype promotion.

An :class:`Elemwise` op applies a :class:`ScalarOp` to every element of its
broadcast inputs. Scalars (rank 0) emit plain ``arith``/``math`` ops; tensors
emit one ``linalg.generic`` whose body holds the scalar ops.

Example::

    >>> from mlir_scan import tensor as T
    >>> y = T.fvector("x") + T.ivector("i")
    >>> y.dtype, y.owner.op
    ('float64', Elemwise(add))
"""

from __future__ import annotations


import numpy as np

from ..emitter import Block
from ..graph import DTYPES, Apply, Constant, Op, TensorType, Variable, is_float, is_int, upcast

__all__ = ["ScalarOp", "Elemwise", "broadcast_shapes", "SCALAR_OPS", "float_dtype_for", "elemwise_inputs"]


def float_dtype_for(dtype: str) -> str:
    """The float dtype math functions compute in for `dtype` (Theano's rule).

    >>> float_dtype_for("int16"), float_dtype_for("int32"), float_dtype_for("float32")
    ('float32', 'float64', 'float32')
    """
    if is_float(dtype):
        return dtype
    return "float32" if dtype in ("bool", "int8", "int16") else "float64"


def broadcast_shapes(shapes: list[tuple[int | None, ...]], what: str = "") -> tuple[int | None, ...]:
    """NumPy broadcasting of static shapes (None = unknown, assumed compatible).

    >>> broadcast_shapes([(None, 3), (3,)]), broadcast_shapes([(1, None), (4, 1)])
    ((None, 3), (4, None))
    """
    rank = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for i in range(rank):
        dims = [s[i - (rank - len(s))] for s in shapes if i - (rank - len(s)) >= 0]
        static = {d for d in dims if d is not None and d != 1}
        if len(static) > 1:
            raise ValueError(
                f"{what}shapes {', '.join(_fmt(s) for s in shapes)} cannot be broadcast "
                f"together (dimension {i}: {sorted(static)})"
            )
        if static:
            out.append(static.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _fmt(shape: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class ScalarOp:
    """A scalar function: its output dtype and how to emit it."""

    name = "?"
    nin = 2

    def out_dtype(self, dtypes: list[str]) -> str:
        return _nobool(upcast(*dtypes))

    def emit(self, b: Block, args: list[str], dtypes: list[str], out: str) -> str:
        raise NotImplementedError  # pragma: no cover - every subclass defines it

    def __repr__(self) -> str:
        return self.name


def _nobool(dtype: str) -> str:
    """Arithmetic on booleans is done on int8 (Theano's ``upcast_out_nobool``)."""
    return "int8" if dtype == "bool" else dtype


def _cast_all(b: Block, args: list[str], dtypes: list[str], to: str) -> list[str]:
    return [b.cast(a, d, to) for a, d in zip(args, dtypes)]


class _Arith(ScalarOp):
    """A binary op with one float and one integer ``arith`` form."""

    def __init__(self, name: str, fop: str, iop: str, bool_op: str | None = None):
        self.name, self.fop, self.iop, self.bool_op = name, fop, iop, bool_op

    def out_dtype(self, dtypes):
        d = upcast(*dtypes)
        if d == "bool" and self.bool_op:
            return "bool"
        return _nobool(d)

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        opname = self.bool_op if out == "bool" else (self.fop if is_float(out) else self.iop)
        return b.op(f"arith.{opname} {x}, {y} : {DTYPES[out]}")


class _TrueDiv(ScalarOp):
    name = "true_div"

    def out_dtype(self, dtypes):
        d = upcast(*dtypes)
        return d if is_float(d) else "float64"

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        return b.op(f"arith.divf {x}, {y} : {DTYPES[out]}")


def _int_guarded_div(b: Block, x: str, y: str, dtype: str, want: str) -> str:
    """Python's ``x // y`` (`want` = "div") or ``x % y`` (`want` = "mod") on ints.

    Division by zero gives 0 (as NumPy, without the warning) and the
    ``INT_MIN // -1`` overflow wraps, instead of trapping the process.
    """
    t = DTYPES[dtype]
    zero, one, minus1 = b.const(0, dtype), b.const(1, dtype), b.const(-1, dtype)
    is_zero = b.op(f"arith.cmpi eq, {y}, {zero} : {t}")
    is_m1 = b.op(f"arith.cmpi eq, {y}, {minus1} : {t}")
    unsafe = b.op(f"arith.ori {is_zero}, {is_m1} : i1")
    safe_y = b.select(unsafe, one, y, t)
    q = b.op(f"arith.divsi {x}, {safe_y} : {t}")
    r = b.op(f"arith.remsi {x}, {safe_y} : {t}")
    r_nz = b.op(f"arith.cmpi ne, {r}, {zero} : {t}")
    r_neg = b.op(f"arith.cmpi slt, {r}, {zero} : {t}")
    y_neg = b.op(f"arith.cmpi slt, {safe_y}, {zero} : {t}")
    signs = b.op(f"arith.xori {r_neg}, {y_neg} : i1")
    fix = b.op(f"arith.andi {r_nz}, {signs} : i1")
    if want == "div":
        q1 = b.op(f"arith.subi {q}, {one} : {t}")
        res = b.select(fix, q1, q, t)
        neg_x = b.op(f"arith.subi {zero}, {x} : {t}")
        res = b.select(is_m1, neg_x, res, t)
    else:
        r1 = b.op(f"arith.addi {r}, {safe_y} : {t}")
        res = b.select(fix, r1, r, t)
        res = b.select(is_m1, zero, res, t)
    return b.select(is_zero, zero, res, t)


class _FloorDiv(ScalarOp):
    name = "int_div"

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        t = DTYPES[out]
        if is_float(out):
            q = b.op(f"arith.divf {x}, {y} : {t}")
            return b.op(f"math.floor {q} : {t}")
        return _int_guarded_div(b, x, y, out, "div")


class _Mod(ScalarOp):
    name = "mod"

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        t = DTYPES[out]
        if is_int(out):
            return _int_guarded_div(b, x, y, out, "mod")
        zero = b.const(0.0, out)
        r = b.op(f"arith.remf {x}, {y} : {t}")
        r_nz = b.op(f"arith.cmpf one, {r}, {zero} : {t}")
        r_neg = b.op(f"arith.cmpf olt, {r}, {zero} : {t}")
        y_neg = b.op(f"arith.cmpf olt, {y}, {zero} : {t}")
        signs = b.op(f"arith.xori {r_neg}, {y_neg} : i1")
        fix = b.op(f"arith.andi {r_nz}, {signs} : i1")
        r1 = b.op(f"arith.addf {r}, {y} : {t}")
        return b.select(fix, r1, r, t)


_IPOW = """\
  func.func private @{name}(%base: {t}, %exp: {t}) -> {t} {{
    %zero = arith.constant 0 : {t}
    %one = arith.constant 1 : {t}
    %neg = arith.cmpi slt, %exp, %zero : {t}
    %e0 = arith.select %neg, %zero, %exp : {t}
    %r:3 = scf.while (%acc = %one, %b = %base, %e = %e0) : ({t}, {t}, {t}) -> ({t}, {t}, {t}) {{
      %more = arith.cmpi sgt, %e, %zero : {t}
      scf.condition(%more) %acc, %b, %e : {t}, {t}, {t}
    }} do {{
    ^bb0(%acc: {t}, %b: {t}, %e: {t}):
      %bit = arith.andi %e, %one : {t}
      %odd = arith.cmpi ne, %bit, %zero : {t}
      %prod = arith.muli %acc, %b : {t}
      %acc2 = arith.select %odd, %prod, %acc : {t}
      %b2 = arith.muli %b, %b : {t}
      %e2 = arith.shrsi %e, %one : {t}
      scf.yield %acc2, %b2, %e2 : {t}, {t}, {t}
    }}
    // A negative exponent: 1 for base 1, +-1 for base -1, else 0 (C's rule).
    %m1 = arith.constant -1 : {t}
    %is1 = arith.cmpi eq, %base, %one : {t}
    %ism1 = arith.cmpi eq, %base, %m1 : {t}
    %bit = arith.andi %exp, %one : {t}
    %odd = arith.cmpi ne, %bit, %zero : {t}
    %sgn = arith.select %odd, %m1, %one : {t}
    %negm1 = arith.select %ism1, %sgn, %zero : {t}
    %negres = arith.select %is1, %one, %negm1 : {t}
    %res = arith.select %neg, %negres, %r#0 : {t}
    return %res : {t}
  }}"""


class _Pow(ScalarOp):
    name = "pow"

    def emit(self, b, args, dtypes, out):
        t = DTYPES[out]
        if is_float(out):
            x = b.cast(args[0], dtypes[0], out)
            if is_int(dtypes[1]) or dtypes[1] == "bool":
                y = b.cast(args[1], dtypes[1], out)
            else:
                y = b.cast(args[1], dtypes[1], out)
            return b.op(f"math.powf {x}, {y} : {t}")
        x, y = _cast_all(b, args, dtypes, out)
        name = f"__mlir_scan_ipow_{t}"
        b.module.helper(name, _IPOW.format(name=name, t=t))
        return b.op(f"func.call @{name}({x}, {y}) : ({t}, {t}) -> {t}")


class _Cmp(ScalarOp):
    def __init__(self, name: str, fpred: str, ipred: str, upred: str):
        self.name, self.fpred, self.ipred, self.upred = name, fpred, ipred, upred

    def out_dtype(self, dtypes):
        return "bool"

    def emit(self, b, args, dtypes, out):
        common = upcast(*dtypes)
        x, y = _cast_all(b, args, dtypes, common)
        t = DTYPES[common]
        if is_float(common):
            return b.op(f"arith.cmpf {self.fpred}, {x}, {y} : {t}")
        pred = self.upred if common == "bool" else self.ipred
        return b.op(f"arith.cmpi {pred}, {x}, {y} : {t}")


class _Bitwise(ScalarOp):
    def __init__(self, name: str, opname: str):
        self.name, self.opname = name, opname

    def out_dtype(self, dtypes):
        d = upcast(*dtypes)
        if is_float(d):
            raise TypeError(f"{self.name}: bitwise operations need integer or bool inputs, got {', '.join(dtypes)}")
        return d

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        return b.op(f"arith.{self.opname} {x}, {y} : {DTYPES[out]}")


class _Invert(ScalarOp):
    name, nin = "invert", 1

    def out_dtype(self, dtypes):
        if is_float(dtypes[0]):
            raise TypeError(f"invert (~): needs an integer or bool input, got {dtypes[0]}")
        return dtypes[0]

    def emit(self, b, args, dtypes, out):
        ones = b.const(True if out == "bool" else -1, out)
        return b.op(f"arith.xori {args[0]}, {ones} : {DTYPES[out]}")


class _Neg(ScalarOp):
    name, nin = "neg", 1

    def out_dtype(self, dtypes):
        if dtypes[0] == "bool":
            raise TypeError("neg (unary -): not defined on bool; use ~ (invert) or cast first")
        return dtypes[0]

    def emit(self, b, args, dtypes, out):
        t = DTYPES[out]
        if is_float(out):
            return b.op(f"arith.negf {args[0]} : {t}")
        return b.op(f"arith.subi {b.const(0, out)}, {args[0]} : {t}")


class _Abs(ScalarOp):
    name, nin = "abs", 1

    def out_dtype(self, dtypes):
        return dtypes[0]

    def emit(self, b, args, dtypes, out):
        t = DTYPES[out]
        if out == "bool":
            return args[0]
        if is_float(out):
            return b.op(f"math.absf {args[0]} : {t}")
        return b.op(f"math.absi {args[0]} : {t}")


class _MinMax(ScalarOp):
    def __init__(self, name: str, fop: str, iop: str, uop: str):
        self.name, self.fop, self.iop, self.uop = name, fop, iop, uop

    def out_dtype(self, dtypes):
        return upcast(*dtypes)

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        opname = self.fop if is_float(out) else (self.uop if out == "bool" else self.iop)
        return b.op(f"arith.{opname} {x}, {y} : {DTYPES[out]}")


class _Switch(ScalarOp):
    name, nin = "switch", 3

    def out_dtype(self, dtypes):
        return upcast(dtypes[1], dtypes[2])

    def emit(self, b, args, dtypes, out):
        cond = b.cast(args[0], dtypes[0], "bool")
        x = b.cast(args[1], dtypes[1], out)
        y = b.cast(args[2], dtypes[2], out)
        return b.select(cond, x, y, DTYPES[out])


class _FloatFn(ScalarOp):
    """A unary function computed in floating point (``math.*``)."""

    nin = 1

    def __init__(self, name: str, emit_fn):
        self.name, self._emit = name, emit_fn

    def out_dtype(self, dtypes):
        return float_dtype_for(dtypes[0])

    def emit(self, b, args, dtypes, out):
        x = b.cast(args[0], dtypes[0], out)
        return self._emit(b, x, out)


def _math(opname: str):
    return lambda b, x, out: b.op(f"math.{opname} {x} : {DTYPES[out]}")


def _sigmoid(b: Block, x: str, out: str) -> str:
    t = DTYPES[out]
    neg = b.op(f"arith.negf {x} : {t}")
    e = b.op(f"math.exp {neg} : {t}")
    one = b.const(1.0, out)
    den = b.op(f"arith.addf {one}, {e} : {t}")
    return b.op(f"arith.divf {one}, {den} : {t}")


def _softplus(b: Block, x: str, out: str) -> str:
    """``max(x, 0) + log1p(exp(-|x|))``: ``log1p(exp(x))`` without its overflow
    (``exp(710)`` is inf in f64, ``exp(89)`` in f32)."""
    t = DTYPES[out]
    ax = b.op(f"math.absf {x} : {t}")
    e = b.op(f"math.exp {b.op(f'arith.negf {ax} : {t}')} : {t}")
    tail = b.op(f"math.log1p {e} : {t}")
    pos = b.op(f"arith.maxnumf {x}, {b.const(0.0, out)} : {t}")
    return b.op(f"arith.addf {pos}, {tail} : {t}")


class _Sqr(ScalarOp):
    name, nin = "sqr", 1

    def out_dtype(self, dtypes):
        return _nobool(dtypes[0])

    def emit(self, b, args, dtypes, out):
        x = b.cast(args[0], dtypes[0], out)
        return b.op(f"arith.{'mulf' if is_float(out) else 'muli'} {x}, {x} : {DTYPES[out]}")


class Cast(ScalarOp):
    """NumPy's ``astype`` to `dtype`."""

    nin = 1

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.name = f"cast_{dtype}"

    def out_dtype(self, dtypes):
        return self.dtype

    def emit(self, b, args, dtypes, out):
        return b.cast(args[0], dtypes[0], out)


class _Identity(ScalarOp):
    name, nin = "identity", 1

    def out_dtype(self, dtypes):
        return dtypes[0]

    def emit(self, b, args, dtypes, out):
        return args[0]


def _call_c(b: Block, fn: str, args: list[str], types: list[str], result: str) -> str:
    """A call of the C function `fn` (libm's, or the run-time library's), declared once
    per module."""
    signature = ", ".join(types)
    b.module.helper(f"__libm_{fn}", f"  func.func private @{fn}({signature}) -> {result}")
    return b.op(f"func.call @{fn}({', '.join(args)}) : ({signature}) -> {result}")


def _libm(name: str, prefix: str = ""):
    """A unary function computed by libm's `name` (``erf``...), or by the run-time
    library's `prefix` + `name` (``__mlir_scan_lgamma``...); float32 calls the
    ``f``-suffixed variant."""

    def emit(b: Block, x: str, out: str) -> str:
        t = DTYPES[out]
        return _call_c(b, prefix + (name if out == "float64" else name + "f"), [x], [t], t)

    return emit


class _Polygamma(ScalarOp):
    """``polygamma(n, x)``: the n-th derivative of the digamma function (SciPy's
    ``polygamma``; n = 0 is the digamma function, a negative n gives NaN), computed by the
    run-time library in double precision; `n` is truncated to an integer."""

    name, nin = "polygamma", 2

    def out_dtype(self, dtypes):
        return float_dtype_for(dtypes[1])

    def emit(self, b, args, dtypes, out):
        n = b.cast(args[0], dtypes[0], "int64")
        x = b.cast(args[1], dtypes[1], out)
        t = DTYPES[out]
        fn = "__mlir_scan_polygamma" + ("" if out == "float64" else "f")
        return _call_c(b, fn, [n, x], ["i64", t], t)


class _FloatFn2(ScalarOp):
    """A binary function computed in floating point (``arctan2``)."""

    nin = 2

    def __init__(self, name: str, opname: str):
        self.name, self.opname = name, opname

    def out_dtype(self, dtypes):
        return float_dtype_for(upcast(*dtypes))

    def emit(self, b, args, dtypes, out):
        x, y = _cast_all(b, args, dtypes, out)
        return b.op(f"math.{self.opname} {x}, {y} : {DTYPES[out]}")


class _Round(ScalarOp):
    """Rounding to an integral value: floats round (`opname`: ``roundeven``, NumPy's
    half to even, or ``round``, half away from zero); integers are unchanged."""

    nin = 1

    def __init__(self, name: str, opname: str):
        self.name, self.opname = name, opname

    def out_dtype(self, dtypes):
        return _nobool(dtypes[0])

    def emit(self, b, args, dtypes, out):
        x = b.cast(args[0], dtypes[0], out)
        if is_float(out):
            return b.op(f"math.{self.opname} {x} : {DTYPES[out]}")
        return x


class _Sgn(ScalarOp):
    """The sign: -1, 0 or 1 in the input's dtype (NaN stays NaN)."""

    name, nin = "sgn", 1

    def out_dtype(self, dtypes):
        return _nobool(dtypes[0])

    def emit(self, b, args, dtypes, out):
        x = b.cast(args[0], dtypes[0], out)
        t = DTYPES[out]
        one, minus1 = b.const(1, out), b.const(-1, out)
        if is_float(out):
            zero = b.const(0.0, out)
            pos = b.op(f"arith.cmpf ogt, {x}, {zero} : {t}")
            neg = b.op(f"arith.cmpf olt, {x}, {zero} : {t}")
            # Zeros and NaN are returned as they are (NumPy's sign(nan) is nan).
            return b.select(pos, one, b.select(neg, minus1, x, t), t)
        zero = b.const(0, out)
        pos = b.op(f"arith.cmpi sgt, {x}, {zero} : {t}")
        neg = b.op(f"arith.cmpi slt, {x}, {zero} : {t}")
        return b.select(pos, one, b.select(neg, minus1, zero, t), t)


class _FloatTest(ScalarOp):
    """A boolean test of a float (``isnan``, ``isinf``); false for integers."""

    nin = 1

    def __init__(self, name: str):
        self.name = name

    def out_dtype(self, dtypes):
        return "bool"

    def emit(self, b, args, dtypes, out):
        src = dtypes[0]
        if not is_float(src):
            return b.const(False, "bool")
        t, x = DTYPES[src], args[0]
        if self.name == "isnan":
            return b.op(f"arith.cmpf uno, {x}, {x} : {t}")
        a = b.op(f"math.absf {x} : {t}")
        return b.op(f"arith.cmpf oeq, {a}, {b.const(float('inf'), src)} : {t}")


SCALAR_OPS: dict[str, ScalarOp] = {
    "add": _Arith("add", "addf", "addi", "ori"),
    "sub": _Arith("sub", "subf", "subi"),
    "mul": _Arith("mul", "mulf", "muli", "andi"),
    "true_div": _TrueDiv(),
    "int_div": _FloorDiv(),
    "mod": _Mod(),
    "pow": _Pow(),
    "eq": _Cmp("eq", "oeq", "eq", "eq"),
    "neq": _Cmp("neq", "une", "ne", "ne"),
    "lt": _Cmp("lt", "olt", "slt", "ult"),
    "le": _Cmp("le", "ole", "sle", "ule"),
    "gt": _Cmp("gt", "ogt", "sgt", "ugt"),
    "ge": _Cmp("ge", "oge", "sge", "uge"),
    "and": _Bitwise("and", "andi"),
    "or": _Bitwise("or", "ori"),
    "xor": _Bitwise("xor", "xori"),
    "invert": _Invert(),
    "neg": _Neg(),
    "abs": _Abs(),
    "maximum": _MinMax("maximum", "maximumf", "maxsi", "maxui"),
    "minimum": _MinMax("minimum", "minimumf", "minsi", "minui"),
    "switch": _Switch(),
    "exp": _FloatFn("exp", _math("exp")),
    "log": _FloatFn("log", _math("log")),
    "log1p": _FloatFn("log1p", _math("log1p")),
    "sqrt": _FloatFn("sqrt", _math("sqrt")),
    "tanh": _FloatFn("tanh", _math("tanh")),
    "sin": _FloatFn("sin", _math("sin")),
    "cos": _FloatFn("cos", _math("cos")),
    "floor": _FloatFn("floor", _math("floor")),
    "ceil": _FloatFn("ceil", _math("ceil")),
    "sigmoid": _FloatFn("sigmoid", _sigmoid),
    "softplus": _FloatFn("softplus", _softplus),
    "sqr": _Sqr(),
    "identity": _Identity(),
    "log2": _FloatFn("log2", _math("log2")),
    "log10": _FloatFn("log10", _math("log10")),
    "expm1": _FloatFn("expm1", _math("expm1")),
    "exp2": _FloatFn("exp2", _math("exp2")),
    "sinh": _FloatFn("sinh", _math("sinh")),
    "cosh": _FloatFn("cosh", _math("cosh")),
    "tan": _FloatFn("tan", _math("tan")),
    "arcsin": _FloatFn("arcsin", _math("asin")),
    "arccos": _FloatFn("arccos", _math("acos")),
    "arctan": _FloatFn("arctan", _math("atan")),
    "arcsinh": _FloatFn("arcsinh", _libm("asinh")),
    "arccosh": _FloatFn("arccosh", _libm("acosh")),
    "arctanh": _FloatFn("arctanh", _libm("atanh")),
    "erf": _FloatFn("erf", _libm("erf")),
    "erfc": _FloatFn("erfc", _libm("erfc")),
    # python/runtime/ScanSpecialFunctions.cpp
    "gammaln": _FloatFn("gammaln", _libm("lgamma", prefix="__mlir_scan_")),
    "psi": _FloatFn("psi", _libm("digamma", prefix="__mlir_scan_")),
    "polygamma": _Polygamma(),
    "arctan2": _FloatFn2("arctan2", "atan2"),
    "round_half_to_even": _Round("round_half_to_even", "roundeven"),
    "round_half_away_from_zero": _Round("round_half_away_from_zero", "round"),
    "sgn": _Sgn(),
    "isnan": _FloatTest("isnan"),
    "isinf": _FloatTest("isinf"),
}


class Elemwise(Op):
    """`scalar_op` applied element-wise to broadcast inputs."""

    __props__ = ("scalar_op",)
    elementwise = True

    def __init__(self, scalar_op: ScalarOp):
        self.scalar_op = scalar_op

    def __str__(self) -> str:
        return f"Elemwise({self.scalar_op.name})"

    __repr__ = __str__

    def make_node(self, *inputs: Variable) -> Apply:
        if len(inputs) != self.scalar_op.nin:
            raise TypeError(f"{self.scalar_op.name}: expected {self.scalar_op.nin} inputs, got {len(inputs)}")
        dtypes = [v.type.dtype for v in inputs]
        out_dtype = self.scalar_op.out_dtype(dtypes)
        shape = broadcast_shapes([v.type.shape for v in inputs], f"{self.scalar_op.name}: ")
        return Apply(self, inputs, [TensorType(out_dtype, shape)])

    def infer_shape(self, node: Apply, input_shapes: list[tuple]) -> list[tuple]:
        out_type = node.outputs[0].type
        rank = out_type.ndim
        dims: list = []
        for i, size in enumerate(out_type.shape):
            if size is not None:
                dims.append(size)
                continue
            for inp, shp in zip(node.inputs, input_shapes):
                k = i - (rank - inp.ndim)
                if k >= 0 and inp.type.shape[k] != 1:
                    dims.append(shp[k])
                    break
        return [tuple(dims)]

    def emit(self, b: Block, node: Apply, inputs: list) -> list[str]:
        # Inputs given as None are element-wise nodes fused into this one:
        # their leaves become operands and their scalar ops go in the body.
        out = node.outputs[0].type
        operands: list[tuple[str, TensorType]] = []
        variables: list[Variable] = []

        def operand(v: Variable):
            s = b.lookup(v)
            if s is not None:
                return s
            if v.owner is not None and id(v.owner) in b.fused:
                return None
            return b.value(v)

        def tree(n: Apply, ssas: list) -> tuple:
            children = []
            for v, s in zip(n.inputs, ssas):
                if s is None:
                    children.append(tree(v.owner, [operand(i) for i in v.owner.inputs]))
                else:
                    operands.append((s, v.type))
                    variables.append(v)
                    children.append(len(operands) - 1)
            return (n, children)

        root = tree(node, list(inputs))
        what = self.scalar_op.name
        _read_allocs_broadcast(b, operands, variables, out, what)

        def compute(bb: Block, args: list[str], t: tuple) -> str:
            n, children = t
            vals = [args[c] if isinstance(c, int) else compute(bb, args, c) for c in children]
            dtypes = [v.type.dtype for v in n.inputs]
            return n.op.scalar_op.emit(bb, vals, dtypes, n.outputs[0].type.dtype)

        return [b.elementwise(out, operands, lambda bb, args: compute(bb, args, root), what=what)]

    def L_op(self, node: Apply, output_grads: list) -> list:
        """Gradients by the scalar op's rule (:data:`GRAD_RULES`), of the output's shape.

        Inputs that were broadcast get the full-shape gradient: the caller
        (:func:`~mlir_scan.builder.ops.autodiff.conform`) sums it back to the
        input's shape and dtype. Integer and boolean inputs get none.
        """
        (g,) = output_grads
        out = node.outputs[0]
        if g is None or not is_float(out.dtype):
            return [None] * len(node.inputs)
        name = self.scalar_op.name
        if isinstance(self.scalar_op, Cast):
            return [g]
        rule = GRAD_RULES.get(name)
        if rule is None:  # pragma: no cover - every float-valued scalar op has a rule
            return Op.L_op(self, node, output_grads)
        grads = rule(list(node.inputs), out, g)
        return [gr if is_float(x.dtype) else None for x, gr in zip(node.inputs, grads)]


def _read_allocs_broadcast(b: Block, operands: list[tuple[str, TensorType]], variables: list[Variable],
                           out: TensorType, what: str) -> None:
    """Replaces, in `operands`, each tensor filled by broadcasting a value
    (``Alloc``: the gradient of a ``sum``) by the value itself, read through
    a broadcasting map, where the other operands give every dimension of the
    output: the filled tensor is then never written (it was as large as the
    output) unless something else reads it. Its sizes are checked against
    the output's, as the filled operand's would have been."""
    rank = out.ndim

    def giving(i: int, skip: int) -> tuple[str, TensorType, int] | None:
        """An operand other than `skip` that has output dimension i, and its axis."""
        for j, (ssa, t) in enumerate(operands):
            k = i - (rank - t.ndim)
            if j != skip and k >= 0 and t.shape[k] != 1:
                return ssa, t, k
        return None

    for j, ((ssa, t), var) in enumerate(zip(operands, variables)):
        node = var.owner
        if node is None or not getattr(node.op, "fills_by_broadcast", False) or t.ndim != rank:
            continue
        value = node.inputs[0]
        source = b.lookup(value)
        if source is None or value.dtype != t.dtype or value.type.shape == t.shape:
            continue
        refs = [giving(i, j) for i in range(rank)]
        if any(ref is None for ref in refs):
            continue
        for i, (ref_ssa, ref_t, k) in enumerate(refs):
            if t.shape[i] is not None and ref_t.shape[k] is not None:
                continue  # static sizes: make_node checked them
            b.check_broadcast_size(b.dim(ssa, t, i), b.dim(ref_ssa, ref_t, k), i, what)
        operands[j] = (source, value.type)


def elemwise(name: str, *inputs: Variable) -> Variable:
    """Applies the scalar op `name` of :data:`SCALAR_OPS` element-wise."""
    return Elemwise(SCALAR_OPS[name])(*inputs)


def cast(x: Variable, dtype: str) -> Variable:
    if x.type.dtype == dtype:
        return x
    return Elemwise(Cast(dtype))(x)


#: Constant exponents computed by multiplications (Theano's and PyTensor's
#: ``local_pow_specialize``): ``math.powf`` is a call of libm's ``pow`` per
#: element, which neither LLVM nor the vectorizer turns into products.
_MULTIPLIED_EXPONENTS = (2, 3, 4, -1)


def power(x: Variable, y: Variable) -> Variable:
    """``x ** y``; by multiplications where `y` is a constant scalar in
    2, 3, 4 or -1 and `x` is a float tensor of the result's dtype
    (``x ** 2`` is ``x * x``, ``x ** -1`` is ``1 / x``)."""
    n = _constant_exponent(x, y)
    if n not in _MULTIPLIED_EXPONENTS:
        return elemwise("pow", x, y)
    if n == -1:
        return elemwise("true_div", _k(1.0, x), x)
    square = elemwise("mul", x, x)
    return {2: square, 3: elemwise("mul", square, x), 4: elemwise("mul", square, square)}[n]


def _constant_exponent(x: Variable, y: Variable) -> float | None:
    """The value of `y` when ``x ** y`` may be computed from `x` by products:
    `y` a constant scalar, `x` a float tensor of the result's dtype."""
    if not (isinstance(y, Constant) and y.ndim == 0 and is_float(x.dtype)):
        return None
    if _nobool(upcast(x.dtype, y.dtype)) != x.dtype:
        return None
    return float(np.asarray(y.data))


# -- gradients ---------------------------------------------------------------------


def _k(value, like: Variable) -> Constant:
    """A scalar constant of `like`'s dtype."""
    return Constant(np.asarray(value, dtype=like.dtype))


def elemwise_inputs(v: Any, name: str) -> list[Variable] | None:
    """The inputs of `v` when it is computed by the element-wise scalar op
    `name` (``"add"``, ``"switch"``...), else None."""
    node = v.owner if isinstance(v, Variable) else None
    if node is not None and isinstance(node.op, Elemwise) and node.op.scalar_op.name == name:
        return list(node.inputs)
    return None


def _zero_branch_switch(v: Variable) -> tuple[Variable, Variable, Variable, bool] | None:
    """(cond, zero, other, zero_if_true) when `v` is ``switch(cond, 0, other)``
    or ``switch(cond, other, 0)`` with a constant 0: the gradient a switch
    sends each of its branches."""
    inputs = elemwise_inputs(v, "switch")
    if inputs is None:
        return None
    cond, a, b = inputs
    for zero, other, zero_if_true in ((a, b, True), (b, a, False)):
        if isinstance(zero, Constant) and np.asarray(zero.data).size and not np.any(zero.data):
            return cond, zero, other, zero_if_true
    return None


def _e(name: str, *xs: Variable) -> Variable:
    """`name` applied element-wise, in a gradient rule.

    A product or quotient of the gradient a switch sends one branch
    (``switch(c, 0, g)``) is computed inside the switch:
    ``switch(c, 0, g * d)``. The untaken branch's local derivative `d` may be
    infinite or NaN (``sqrt`` at a negative number), and ``0 * NaN`` would
    make the gradient NaN where Theano's and PyTensor's rewrites
    (``local_mul_switch_sink``) give 0.
    """
    if name in ("mul", "true_div"):
        for i, x in enumerate(xs if name == "mul" else xs[:1]):
            sunk = _zero_branch_switch(x)
            if sunk is None:
                continue
            # (the same zero constant: the result's shape and dtype are unchanged)
            cond, zero, other, zero_if_true = sunk
            inner = _e(name, *xs[:i], other, *xs[i + 1:])
            branches = (zero, inner) if zero_if_true else (inner, zero)
            return Elemwise(SCALAR_OPS["switch"])(cond, *branches)
    return Elemwise(SCALAR_OPS[name])(*xs)


def _sign(x: Variable, like: Variable) -> Variable:
    pos = _e("switch", _e("gt", x, _k(0, x)), _k(1, like), _k(0, like))
    return _e("switch", _e("lt", x, _k(0, x)), _k(-1, like), pos)


def _g_pow(xs, o, g):
    x, y = xs
    if isinstance(y, Constant):
        # (a constant exponent: x ** (y - 1) is x itself or products of x
        # where it can be, as the forward x ** y is)
        less = Constant(np.asarray(np.asarray(y.data) - 1, dtype=y.dtype))
        x_less = x if _constant_exponent(x, less) == 1 else power(x, less)
    else:
        x_less = _e("pow", x, _e("sub", y, _k(1, y) if not is_float(y.dtype) else _k(1.0, y)))
    gx = _e("mul", g, _e("mul", y, x_less))
    # (0 ** y: the log of the base is -inf, its product with 0 NaN; PyTensor
    # takes 0 there)
    log_x = _e("switch", _e("eq", x, _k(0, x)), _k(0, o), _e("log", x)) if is_float(y.dtype) else None
    gy = _e("mul", g, _e("mul", log_x, o)) if is_float(y.dtype) else None
    return [gx, gy]


#: scalar op name -> rule(inputs, output, output gradient) -> input gradients.
GRAD_RULES = {
    "add": lambda xs, o, g: [g, g],
    "sub": lambda xs, o, g: [g, _e("neg", g)],
    "mul": lambda xs, o, g: [_e("mul", g, xs[1]), _e("mul", g, xs[0])],
    "true_div": lambda xs, o, g: [_e("true_div", g, xs[1]), _e("neg", _e("true_div", _e("mul", g, o), xs[1]))],
    "int_div": lambda xs, o, g: [None, None],
    "mod": lambda xs, o, g: [g, _e("neg", _e("mul", g, _e("int_div", xs[0], xs[1])))],
    "pow": _g_pow,
    "neg": lambda xs, o, g: [_e("neg", g)],
    "abs": lambda xs, o, g: [_e("mul", g, _sign(xs[0], g))],
    # At a tie the first input takes the gradient (Theano/PyTensor): the two
    # must not both get it (d maximum(x, x) / dx is 1, not 2).
    "maximum": lambda xs, o, g: [_e("mul", g, _e("eq", o, xs[0])),
                                 _e("mul", g, _e("and", _e("eq", o, xs[1]), _e("neq", o, xs[0])))],
    "minimum": lambda xs, o, g: [_e("mul", g, _e("eq", o, xs[0])),
                                 _e("mul", g, _e("and", _e("eq", o, xs[1]), _e("neq", o, xs[0])))],
    "switch": lambda xs, o, g: [None, _e("switch", xs[0], g, _k(0, g)), _e("switch", xs[0], _k(0, g), g)],
    "exp": lambda xs, o, g: [_e("mul", g, o)],
    "log": lambda xs, o, g: [_e("true_div", g, xs[0])],
    "log1p": lambda xs, o, g: [_e("true_div", g, _e("add", _k(1, o), xs[0]))],
    "sqrt": lambda xs, o, g: [_e("true_div", _e("mul", g, _k(0.5, o)), o)],
    "tanh": lambda xs, o, g: [_e("mul", g, _e("sub", _k(1, o), _e("mul", o, o)))],
    "sin": lambda xs, o, g: [_e("mul", g, _e("cos", xs[0]))],
    "cos": lambda xs, o, g: [_e("neg", _e("mul", g, _e("sin", xs[0])))],
    "floor": lambda xs, o, g: [None],
    "ceil": lambda xs, o, g: [None],
    "sigmoid": lambda xs, o, g: [_e("mul", g, _e("mul", o, _e("sub", _k(1, o), o)))],
    "softplus": lambda xs, o, g: [_e("mul", g, _e("sigmoid", xs[0]))],
    "sqr": lambda xs, o, g: [_e("mul", g, _e("mul", _k(2, o), xs[0]))],
    "identity": lambda xs, o, g: [g],
    "log2": lambda xs, o, g: [_e("true_div", g, _e("mul", xs[0], _k(np.log(2.0), o)))],
    "log10": lambda xs, o, g: [_e("true_div", g, _e("mul", xs[0], _k(np.log(10.0), o)))],
    "expm1": lambda xs, o, g: [_e("mul", g, _e("add", o, _k(1, o)))],
    "exp2": lambda xs, o, g: [_e("mul", g, _e("mul", o, _k(np.log(2.0), o)))],
    "sinh": lambda xs, o, g: [_e("mul", g, _e("cosh", xs[0]))],
    "cosh": lambda xs, o, g: [_e("mul", g, _e("sinh", xs[0]))],
    "tan": lambda xs, o, g: [_e("mul", g, _e("add", _k(1, o), _e("mul", o, o)))],
    "arcsin": lambda xs, o, g: [_e("true_div", g, _e("sqrt", _e("sub", _k(1, o), _e("sqr", xs[0]))))],
    "arccos": lambda xs, o, g: [_e("neg", _e("true_div", g, _e("sqrt", _e("sub", _k(1, o), _e("sqr", xs[0])))))],
    "arctan": lambda xs, o, g: [_e("true_div", g, _e("add", _k(1, o), _e("sqr", xs[0])))],
    "arcsinh": lambda xs, o, g: [_e("true_div", g, _e("sqrt", _e("add", _e("sqr", xs[0]), _k(1, o))))],
    "arccosh": lambda xs, o, g: [_e("true_div", g, _e("sqrt", _e("sub", _e("sqr", xs[0]), _k(1, o))))],
    "arctanh": lambda xs, o, g: [_e("true_div", g, _e("sub", _k(1, o), _e("sqr", xs[0])))],
    "erf": lambda xs, o, g: [_e("mul", g, _g_erf(xs[0], o, 2 / np.sqrt(np.pi)))],
    "erfc": lambda xs, o, g: [_e("mul", g, _g_erf(xs[0], o, -2 / np.sqrt(np.pi)))],
    "arctan2": lambda xs, o, g: _g_arctan2(xs, o, g),
    "gammaln": lambda xs, o, g: [_e("mul", g, _e("psi", xs[0]))],
    "psi": lambda xs, o, g: [_e("mul", g, _e("polygamma", _k(1, o), xs[0]))],
    "polygamma": lambda xs, o, g: [None, _e("mul", g, _e("polygamma", _e("add", xs[0], _k(1, xs[0])), xs[1]))],
    "round_half_to_even": lambda xs, o, g: [None],
    "round_half_away_from_zero": lambda xs, o, g: [None],
    "sgn": lambda xs, o, g: [None],
}


def _g_erf(x, o, scale):
    """``scale * exp(-x**2)``: d erf / dx for ``scale = 2 / sqrt(pi)``."""
    return _e("mul", _k(scale, o), _e("exp", _e("neg", _e("sqr", x))))


def _g_arctan2(xs, o, g):
    # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
    y, x = xs
    den = _e("add", _e("sqr", y), _e("sqr", x))
    return [_e("true_div", _e("mul", g, x), den), _e("neg", _e("true_div", _e("mul", g, y), den))]
