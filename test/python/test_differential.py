"""Differential tests: random scan programs, compiled vs. the reference interpreter.

Hypothesis generates random ``scan.scan`` programs as MLIR text together with
their arguments; each program runs natively through ``mlir_scan.compile`` (the
whole CPU pipeline and the JIT) and through ``mlir_scan.reference.run`` (the
pure-NumPy interpreter of SPEC §4, the oracle). Results must agree exactly for
integers and booleans, and within a tight tolerance for floats (see
``assert_same``). Inputs must be unchanged after the native call.

The generator (section "Program generator") is a tiny MLIR text builder, one
function per kind of scan variable: sequences (1-3, any taps, default tap),
mitmot (in/out taps, overlapping and empty in taps), mitsot, sitsot (scalar and
tensor rows), nitsot (also ``i1`` rows of comparisons), non-sequences (scalars,
tensors, matrices for contractions), ``go_backwards``, ``until`` (a value
crossing a threshold, or a step counter), ``keep`` on every non-mitmot output
(0, 1, 2, more rows than exist), static/dynamic leading dims, static and
dynamic ``n_steps`` (0 and 1 included), ``f32``/``f64``/``i32``/``i64``
elements (``i1`` now and then), rows with ``?`` sizes, arith/math/linalg
bodies, nested scans, a second scan over a result of the first, a mitmot
buffer that is also a sequence argument, results returned twice and
arguments returned as is. Every generated program
is parsed and verified before it is run: a generator bug fails as
``GENERATOR BUG``, never as a compiler mismatch.

The native side runs in a persistent worker subprocess (``_Worker``), so an
LLVM assertion or a segfault in the compiler fails one test with the program
that caused it instead of killing pytest.

Cases run (derandomized: the same programs on every run):

* ``test_random_programs``: 400 random programs (every kind, nested and
  chained scans);
* targeted (one kind of variable at a time, in many shapes): ``test_taps`` 50, ``test_keep`` 50, ``test_until`` 50,
  ``test_mitmot`` 50, ``test_go_backwards`` 40, ``test_nested`` 40,
  ``test_zero_and_one_steps`` 30 programs;
* hand-written: a regression test for every bug found (7 tests, ~16
  programs, several with and without scan-optimize), the ``scan-opt``
  survival checks (4), the
  run-time errors of SPEC §7 (6 cases, the same Program reused after each),
  argument errors, an error inside a nested scan, and a check that the
  generator covers every feature (200 programs generated, not run).

``optimize`` is drawn per generated program: ``False`` compiles without the scan
rewrites, ``True`` with ``scan-optimize`` (SPEC §8: "with and without").

About 720 compiled programs; the file takes about 90 s on the 2-core CI
machine (compilation dominates: 50-150 ms per program).
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlir_scan
from mlir import ir
from mlir_scan import reference

# --------------------------------------------------------------------------- #
# Types
# --------------------------------------------------------------------------- #

ELEMS = ("f32", "f64", "i32", "i64")
DIMS = (2, 3, 4)
BIG_DIMS = (5, 8, 9, 17)
NP_DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "i64": np.int64,
    "i1": np.bool_,
    "index": np.int64,
}


@dataclass(frozen=True)
class Ty:
    """A scalar (`shape == ()`) or a ranked tensor type; `None` dims are `?`."""

    elem: str
    shape: tuple = ()

    @property
    def text(self) -> str:
        if not self.shape:
            return self.elem
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"tensor<{dims}x{self.elem}>"

    @property
    def is_float(self) -> bool:
        return self.elem.startswith("f")

    @property
    def is_int(self) -> bool:
        return self.elem in ("i32", "i64")

    def stacked(self, lead: int | None) -> "Ty":
        """`tensor<lead x S>` for this row type S."""
        return Ty(self.elem, (lead, *self.shape))

    def row(self) -> "Ty":
        """The row type of a stacked tensor type."""
        return Ty(self.elem, tuple(self.shape[1:]))


def np_dtype(elem: str) -> np.dtype:
    return np.dtype(NP_DTYPES[elem])


# --------------------------------------------------------------------------- #
# Program generator: a tiny MLIR text builder
# --------------------------------------------------------------------------- #


@dataclass
class Config:
    """What the generator may produce (the targeted tests narrow it)."""

    n_values: tuple = (0, 1, 2, 3, 4, 5, 6, 9)
    n_static: tuple = (False, True)
    n_seq: tuple = (0, 3)  # inclusive range
    n_mitmot: tuple = (0, 1)
    n_mitsot: tuple = (0, 2)
    n_sitsot: tuple = (0, 2)
    n_nitsot: tuple = (0, 2)
    until: tuple = (False, False, True)
    go_backwards: tuple = (False, True)
    keep_pct: int = 15  # chance that an output gets keep > 0
    nested_pct: int = 25  # chance that a tensor value is made by a nested scan
    depth: int = 2  # expression depth of the yields
    elems: tuple = ELEMS
    row_ranks: tuple = (0, 0, 1, 1, 2)
    seq_taps: tuple = (-3, 3, 3)  # tap range and most taps per sequence
    mitmot_taps: tuple = (-2, 2, 2)
    mitsot_taps: tuple = (-4, 3)  # lowest tap, most taps
    dynamic_rows_pct: int = 12  # chance that a state/sequence row type has `?` dims
    big_dim_pct: int = 6  # chance that a dimension is larger (vectorized loops, remainders)
    i1_pct: int = 6  # chance that a state/sequence row has i1 elements
    chain_pct: int = 12  # chance of a second scan over a result of the first
    extra_return_pct: int = 15  # chance of returning a result twice / an argument


@dataclass
class Arg:
    """A function argument and how to make its value."""

    name: str
    ty: Ty
    role: str = "value"  # value | matrix:<N> | threshold | limit | counter | n
    shape: tuple = ()  # concrete shape (for tensors)
    value: Any = None  # fixed value (n_steps, counters)


@dataclass
class Case:
    source: str
    func: str
    args: tuple
    note: str = ""

    def __repr__(self) -> str:
        args = "\n".join(f"  arg #{i}: {a!r}" for i, a in enumerate(self.args))
        return f"--- {self.note}\n{self.source}\n--- arguments:\n{args}"


class Gen:
    """Random choices (through hypothesis `draw`) and fresh SSA names."""

    def __init__(self, draw, cfg: Config):
        self.draw = draw
        self.cfg = cfg
        self.counter = 0
        self.args: list[Arg] = []
        # The concrete sizes of `?` row dims, one shape per rank for the whole
        # program, so that values of one dynamic type always agree.
        self.dyn_shape = {1: (draw(st.sampled_from(DIMS)),),
                          2: (draw(st.sampled_from(DIMS)), draw(st.sampled_from(DIMS)))}

    def concrete(self, shape: tuple) -> tuple:
        """A row shape with its `?` dims replaced by the program's sizes."""
        if None not in shape:
            return tuple(shape)
        return tuple(self.dyn_shape[len(shape)][i] if d is None else d
                     for i, d in enumerate(shape))

    def static_twin(self, ty: Ty) -> Ty:
        return Ty(ty.elem, self.concrete(ty.shape))

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def choice(self, seq):
        seq = list(seq)
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def pct(self, p: int) -> bool:
        return self.draw(st.integers(0, 99)) < p

    def int_in(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def weighted(self, options: list[tuple[str, int]]) -> str:
        options = [(k, w) for k, w in options if w > 0]
        total = sum(w for _, w in options)
        x = self.draw(st.integers(0, total - 1))
        for k, w in options:
            if x < w:
                return k
            x -= w
        raise AssertionError

    def taps(self, lo: int, hi: int, min_len: int, max_len: int) -> list[int]:
        """A strictly increasing list of distinct taps in [lo, hi]."""
        pool = list(range(lo, hi + 1))
        size = self.int_in(min_len, min(max_len, len(pool)))
        chosen = self.draw(
            st.lists(st.sampled_from(pool), min_size=size, max_size=size, unique=True)
        )
        return sorted(chosen)

    def dim(self) -> int:
        if self.pct(self.cfg.big_dim_pct):
            return self.choice(BIG_DIMS)
        return self.choice(DIMS)

    def row_type(self, elems=None, ranks=None, state: bool = False) -> Ty:
        """A row type; `state` rows (not nitsot) may have i1 elements or `?` dims."""
        elem = self.choice(elems or self.cfg.elems)
        if state and self.pct(self.cfg.i1_pct):
            elem = "i1"
        rank = self.choice(ranks if ranks is not None else self.cfg.row_ranks)
        if rank and state and self.pct(self.cfg.dynamic_rows_pct):
            return Ty(elem, (None,) * rank)
        return Ty(elem, tuple(self.dim() for _ in range(rank)))

    def new_arg(self, ty: Ty, role: str = "value", shape: tuple = (), value=None) -> str:
        name = self.fresh("arg")
        if not shape and ty.shape:
            shape = self.concrete(ty.shape)
        self.args.append(Arg(name, ty, role, shape, value))
        return name


class Body:
    """The ops of one region, and the values (`pool`) they may use."""

    def __init__(self, gen: Gen, parent: "Body | None" = None, scan: "ScanPlan | None" = None,
                 nesting: int = 0):
        self.gen = gen
        self.parent = parent
        self.scan = scan
        self.nesting = nesting
        self.lines: list[str] = []
        self.pool: list[tuple[str, Ty]] = []

    def emit(self, rhs: str, ty: Ty | None = None, pool: bool = True, prefix: str = "v") -> str:
        name = self.gen.fresh(prefix)
        self.lines.append(f"{name} = {rhs}")
        if ty is not None and pool:
            self.pool.append((name, ty))
        return name

    def of_type(self, ty: Ty) -> list[str]:
        return [n for n, t in self.pool if t == ty]

    def external(self, ty: Ty, role: str = "value") -> str:
        """A value of type `ty` from outside: a function argument, or a new
        non-sequence of the enclosing scan (taken from the parent's values)."""
        if self.scan is None:
            name = self.gen.new_arg(ty, role)
            if role == "value":
                self.pool.append((name, ty))
            return name
        outer = self.parent.of_type(ty)
        if outer and role == "value" and self.gen.pct(60):
            source = self.gen.choice(outer)
        else:
            source = self.parent.external(ty, role)
        arg = self.gen.fresh("ns")
        self.scan.nonseqs.append((source, ty, arg))
        self.pool.append((arg, ty))
        return arg

    def index(self, i: int) -> str:
        return self.emit(f"arith.constant {i} : index", pool=False, prefix="c")


def float_literal(x: float) -> str:
    return repr(float(x))


def const(body: Body, ty: Ty) -> str:
    """An `arith.constant` of type `ty` (dyadic floats: exact in f32)."""
    g = body.gen
    if ty.elem == "i1":
        vals = [g.choice(["true", "false"])]
    elif ty.is_float:
        vals = [float_literal(g.int_in(-8, 8) / 8) for _ in range(1)]
    else:
        vals = [str(g.int_in(-5, 5))]
    if not ty.shape:
        if ty.elem == "i1":
            return body.emit(f"arith.constant {vals[0]}", ty)
        return body.emit(f"arith.constant {vals[0]} : {ty.text}", ty)
    if g.pct(50):  # splat
        return body.emit(f"arith.constant dense<{vals[0]}> : {ty.text}", ty)
    count = int(np.prod(ty.shape))
    if ty.elem == "i1":
        flat = [g.choice(["true", "false"]) for _ in range(count)]
    elif ty.is_float:
        flat = [float_literal(g.int_in(-8, 8) / 8) for _ in range(count)]
    else:
        flat = [str(g.int_in(-5, 5)) for _ in range(count)]
    return body.emit(f"arith.constant dense<{nest_list(flat, ty.shape)}> : {ty.text}", ty)


def nest_list(flat: list[str], shape: tuple) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(flat) + "]"
    step = len(flat) // shape[0]
    return "[" + ", ".join(nest_list(flat[i * step:(i + 1) * step], shape[1:])
                           for i in range(shape[0])) + "]"


FLOAT_BIN = ("arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf",
             "arith.maxnumf")
INT_BIN = ("arith.addi", "arith.subi", "arith.muli", "arith.maxsi", "arith.minsi",
           "arith.xori")
FLOAT_PRED = ("olt", "ogt", "ole", "oge", "one", "oeq", "ult", "ugt")
INT_PRED = ("slt", "sgt", "sle", "sge", "eq", "ne", "ult", "ugt")


def i1_like(ty: Ty) -> Ty:
    return Ty("i1", ty.shape)


def value(body: Body, ty: Ty, depth: int) -> str:
    """A value of type `ty` computed in `body` (an expression of depth <= `depth`)."""
    g = body.gen
    have = body.of_type(ty)
    tensors_of_elem = [(n, t) for n, t in body.pool if t.elem == ty.elem and t.shape
                       and None not in t.shape]
    leaf = depth <= 0
    if None in ty.shape:
        return dynamic_value(body, ty, depth)
    dyn_sources = [n for n, t in body.pool if None in t.shape and t.elem == ty.elem
                   and len(t.shape) == len(ty.shape) and g.static_twin(t) == ty]
    options = [
        ("pool", 12 if have else 0),
        ("uncast", 4 if dyn_sources else 0),
        ("const", 2),
        ("ext", 1 if ty.elem != "i1" else 0),
        ("extract", 3 if not ty.shape and tensors_of_elem else 0),
        ("fill", 1 if ty.shape and leaf else 0),
    ]
    if not leaf:
        is_num = ty.elem != "i1"
        options += [
            ("bin", 6 if is_num else 0),
            ("logic", 2 if ty.elem == "i1" else 0),
            ("cmp", 6 if ty.elem == "i1" else 0),
            ("select", 2),
            ("tanh", 2 if ty.is_float else 0),
            ("fill", 2 if ty.shape else 0),
            ("dot", 2 if (not ty.shape and is_num) else 0),
            ("matvec", 3 if len(ty.shape) == 1 and is_num else 0),
            ("vecmat", 2 if len(ty.shape) == 1 and is_num else 0),
            ("matmul", 3 if len(ty.shape) == 2 and is_num else 0),
            ("sitofp", 1 if ty.is_float else 0),
            ("nested", 5 if (ty.shape and is_num and body.nesting < 1
                             and g.pct(g.cfg.nested_pct)) else 0),
        ]
    kind = g.weighted(options)
    d = depth - 1
    if kind == "pool":
        return g.choice(have)
    if kind == "const":
        return const(body, ty)
    if kind == "ext":
        return body.external(ty)
    if kind == "uncast":
        src = g.choice(dyn_sources)
        dyn = Ty(ty.elem, (None,) * len(ty.shape))
        return body.emit(f"tensor.cast {src} : {dyn.text} to {ty.text}", ty)
    if kind == "extract":
        name, t = g.choice(tensors_of_elem)
        idx = [body.index(g.int_in(0, dim - 1)) for dim in t.shape]
        return body.emit(f"tensor.extract {name}[{', '.join(idx)}] : {t.text}", ty)
    if kind == "fill":
        scalar = value(body, Ty(ty.elem), d)
        empty = body.emit(f"tensor.empty() : {ty.text}", pool=False, prefix="e")
        return body.emit(
            f"linalg.fill ins({scalar} : {ty.elem}) outs({empty} : {ty.text}) -> {ty.text}", ty)
    if kind == "bin":
        op = g.choice(FLOAT_BIN if ty.is_float else INT_BIN)
        a, b = value(body, ty, d), value(body, ty, d)
        return body.emit(f"{op} {a}, {b} : {ty.text}", ty)
    if kind == "logic":
        op = g.choice(("arith.andi", "arith.ori", "arith.xori"))
        a, b = value(body, ty, d), value(body, ty, d)
        return body.emit(f"{op} {a}, {b} : {ty.text}", ty)
    if kind == "cmp":
        src = Ty(g.choice(g.cfg.elems), ty.shape)
        a, b = value(body, src, d), value(body, src, d)
        if src.is_float:
            return body.emit(f"arith.cmpf {g.choice(FLOAT_PRED)}, {a}, {b} : {src.text}", ty)
        return body.emit(f"arith.cmpi {g.choice(INT_PRED)}, {a}, {b} : {src.text}", ty)
    if kind == "select":
        scalar_cond = not ty.shape or g.pct(40)
        cond = value(body, Ty("i1") if scalar_cond else i1_like(ty), d)
        a, b = value(body, ty, d), value(body, ty, d)
        if scalar_cond:
            return body.emit(f"arith.select {cond}, {a}, {b} : {ty.text}", ty)
        return body.emit(f"arith.select {cond}, {a}, {b} : {i1_like(ty).text}, {ty.text}", ty)
    if kind == "tanh":
        return body.emit(f"math.tanh {value(body, ty, d)} : {ty.text}", ty)
    if kind == "sitofp":
        src = Ty(g.choice(("i32", "i64")), ty.shape)
        a = value(body, src, d)
        f = body.emit(f"arith.sitofp {a} : {src.text} to {ty.text}", pool=False)
        # Scale into [-1, 1] by an exact power of two.
        scale = float_literal(2.0 ** -(31 if src.elem == "i32" else 63))
        if ty.shape:
            c = body.emit(f"arith.constant dense<{scale}> : {ty.text}", pool=False, prefix="c")
        else:
            c = body.emit(f"arith.constant {scale} : {ty.text}", pool=False, prefix="c")
        return body.emit(f"arith.mulf {f}, {c} : {ty.text}", ty)
    if kind in ("dot", "matvec", "vecmat", "matmul"):
        return contraction(body, kind, ty, d)
    if kind == "nested":
        return nested_scan(body, ty, d)
    raise AssertionError(kind)


def dynamic_value(body: Body, ty: Ty, depth: int) -> str:
    """A value of a type with `?` dims: elementwise ops, or a cast of a static value."""
    g = body.gen
    have = body.of_type(ty)
    options = [("pool", 12 if have else 0), ("ext", 1 if ty.elem != "i1" else 0), ("cast", 3)]
    if depth > 0:
        options += [
            ("bin", 5 if ty.elem != "i1" else 0),
            ("logic", 2 if ty.elem == "i1" else 0),
            ("cmp", 5 if ty.elem == "i1" else 0),
            ("select", 2),
            ("tanh", 2 if ty.is_float else 0),
        ]
    kind = g.weighted(options)
    d = depth - 1
    if kind == "pool":
        return g.choice(have)
    if kind == "ext":
        return body.external(ty)
    if kind == "cast":
        twin = g.static_twin(ty)
        src = value(body, twin, d)
        return body.emit(f"tensor.cast {src} : {twin.text} to {ty.text}", ty)
    if kind == "bin":
        op = g.choice(FLOAT_BIN if ty.is_float else INT_BIN)
        a, b = value(body, ty, d), value(body, ty, d)
        return body.emit(f"{op} {a}, {b} : {ty.text}", ty)
    if kind == "logic":
        op = g.choice(("arith.andi", "arith.ori", "arith.xori"))
        a, b = value(body, ty, d), value(body, ty, d)
        return body.emit(f"{op} {a}, {b} : {ty.text}", ty)
    if kind == "cmp":
        src = Ty(g.choice(g.cfg.elems), ty.shape)
        a, b = value(body, src, d), value(body, src, d)
        if src.is_float:
            return body.emit(f"arith.cmpf {g.choice(FLOAT_PRED)}, {a}, {b} : {src.text}", ty)
        return body.emit(f"arith.cmpi {g.choice(INT_PRED)}, {a}, {b} : {src.text}", ty)
    if kind == "select":
        scalar_cond = g.pct(40)
        cond = value(body, Ty("i1") if scalar_cond else i1_like(ty), d)
        a, b = value(body, ty, d), value(body, ty, d)
        if scalar_cond:
            return body.emit(f"arith.select {cond}, {a}, {b} : {ty.text}", ty)
        return body.emit(f"arith.select {cond}, {a}, {b} : {i1_like(ty).text}, {ty.text}", ty)
    if kind == "tanh":
        return body.emit(f"math.tanh {value(body, ty, d)} : {ty.text}", ty)
    raise AssertionError(kind)


def zero_filled(body: Body, ty: Ty) -> str:
    """`linalg.fill` of zeros into a `tensor.empty` (a contraction destination)."""
    zero = "0.0" if ty.is_float else "0"
    z = body.emit(f"arith.constant {zero} : {ty.elem}", pool=False, prefix="z")
    e = body.emit(f"tensor.empty() : {ty.text}", pool=False, prefix="e")
    return body.emit(f"linalg.fill ins({z} : {ty.elem}) outs({e} : {ty.text}) -> {ty.text}",
                     pool=False, prefix="f")


def matrix(body: Body, elem: str, rows: int, cols: int, contracted: int) -> str:
    """A matrix operand: an existing one, or a new non-sequence scaled by 1/contracted."""
    ty = Ty(elem, (rows, cols))
    have = body.of_type(ty)
    if have and body.gen.pct(50):
        return body.gen.choice(have)
    return body.external(ty, f"matrix:{contracted}")


def contraction(body: Body, kind: str, ty: Ty, d: int) -> str:
    g = body.gen
    elem = ty.elem

    def pick_dim(rank: int) -> int:
        dims = [t.shape[0] for _, t in body.pool if t.elem == elem and len(t.shape) == rank
                and None not in t.shape]
        return g.choice(dims) if dims and g.pct(70) else g.dim()

    if kind == "dot":
        n = pick_dim(1)
        vt = Ty(elem, (n,))
        a, b = value(body, vt, d), value(body, vt, d)
        r0 = f"tensor<{elem}>"
        zero = "0.0" if ty.is_float else "0"
        zc = body.emit(f"arith.constant {zero} : {elem}", pool=False, prefix="z")
        e = body.emit(f"tensor.empty() : {r0}", pool=False, prefix="e")
        f = body.emit(f"linalg.fill ins({zc} : {elem}) outs({e} : {r0}) -> {r0}", pool=False,
                      prefix="f")
        r = body.emit(f"linalg.dot ins({a}, {b} : {vt.text}, {vt.text}) outs({f} : {r0}) -> {r0}",
                      pool=False)
        return body.emit(f"tensor.extract {r}[] : {r0}", ty)
    if kind == "matvec":
        m = ty.shape[0]
        n = pick_dim(1)
        A = matrix(body, elem, m, n, n)
        x = value(body, Ty(elem, (n,)), d)
        f = zero_filled(body, ty)
        return body.emit(
            f"linalg.matvec ins({A}, {x} : tensor<{m}x{n}x{elem}>, tensor<{n}x{elem}>) "
            f"outs({f} : {ty.text}) -> {ty.text}", ty)
    if kind == "vecmat":
        n = ty.shape[0]
        m = pick_dim(1)
        x = value(body, Ty(elem, (m,)), d)
        A = matrix(body, elem, m, n, m)
        f = zero_filled(body, ty)
        return body.emit(
            f"linalg.vecmat ins({x}, {A} : tensor<{m}x{elem}>, tensor<{m}x{n}x{elem}>) "
            f"outs({f} : {ty.text}) -> {ty.text}", ty)
    if kind == "matmul":
        m, n = ty.shape
        k = g.dim()
        if g.pct(50):
            a = value(body, Ty(elem, (m, k)), d)
            b = matrix(body, elem, k, n, k)
        else:
            a = matrix(body, elem, m, k, k)
            b = value(body, Ty(elem, (k, n)), d)
        f = zero_filled(body, ty)
        return body.emit(
            f"linalg.matmul ins({a}, {b} : tensor<{m}x{k}x{elem}>, tensor<{k}x{n}x{elem}>) "
            f"outs({f} : {ty.text}) -> {ty.text}", ty)
    raise AssertionError(kind)


def bounded(body: Body, name: str, ty: Ty) -> str:
    """Recurrent float values go through tanh so they stay in [-1, 1]."""
    if not ty.is_float:
        return name
    return body.emit(f"math.tanh {name} : {ty.text}", ty)


def state_yield(body: Body, ty: Ty, prev: list[str], depth: int) -> str:
    """The next row of a recurrent output: usually a function of its own past."""
    g = body.gen
    expr = value(body, ty, depth)
    if prev and g.pct(70):
        if ty.is_float:
            ops = ("arith.addf", "arith.mulf", "arith.subf")
        elif ty.elem == "i1":
            ops = ("arith.xori", "arith.andi", "arith.ori", "arith.addi")
        else:
            ops = ("arith.addi", "arith.muli", "arith.subi", "arith.xori")
        op = g.choice(ops)
        expr = body.emit(f"{op} {g.choice(prev)}, {expr} : {ty.text}", ty)
    return bounded(body, expr, ty)


@dataclass
class ScanPlan:
    """Everything needed to print one `scan.scan`."""

    n: str = ""
    go_backwards: bool = False
    until: bool = False
    seqs: list = field(default_factory=list)  # (outer, stacked Ty, taps | None, arg names)
    mitmots: list = field(default_factory=list)  # (outer, stacked Ty, ins, outs, arg names)
    mitsots: list = field(default_factory=list)  # (outer, stacked Ty, taps, arg names)
    sitsots: list = field(default_factory=list)  # (outer, row Ty, arg name)
    nitsots: list = field(default_factory=list)  # row Ty
    nonseqs: list = field(default_factory=list)  # (outer, Ty, arg name)
    keep: list = field(default_factory=list)  # per result
    result_types: list = field(default_factory=list)
    result_tys: list = field(default_factory=list)
    yields: list = field(default_factory=list)  # (name, Ty)
    body: Body | None = None

    def block_args(self) -> list[tuple[str, Ty]]:
        args = []
        for _, sty, _, names in self.seqs:
            args += [(a, sty.row()) for a in names]
        for _, bty, _, _, names in self.mitmots:
            args += [(a, bty.row()) for a in names]
        for _, ity, _, names in self.mitsots:
            args += [(a, ity.row()) for a in names]
        args += [(a, ty) for _, ty, a in self.sitsots]
        args += [(a, ty) for _, ty, a in self.nonseqs]
        return args

    def render(self, results: list[str], indent: str) -> list[str]:
        head = f"scan.scan steps({self.n})"
        if self.go_backwards:
            head += " go_backwards"
        if self.until:
            head += " until"
        parts = []
        if self.seqs:
            items = []
            for outer, sty, taps, _ in self.seqs:
                tap = "" if taps is None else "[" + ", ".join(map(str, taps)) + "]"
                items.append(f"{outer}{tap} : {sty.text}")
            parts.append("sequences(" + ", ".join(items) + ")")
        if self.mitmots:
            items = [f"{outer}[{', '.join(map(str, ins))}] -> [{', '.join(map(str, outs))}] : "
                     f"{bty.text}" for outer, bty, ins, outs, _ in self.mitmots]
            parts.append("mitmot(" + ", ".join(items) + ")")
        if self.mitsots:
            items = [f"{outer}[{', '.join(map(str, taps))}] : {ity.text}"
                     for outer, ity, taps, _ in self.mitsots]
            parts.append("mitsot(" + ", ".join(items) + ")")
        if self.sitsots:
            parts.append("sitsot(" + ", ".join(o for o, _, _ in self.sitsots) + " : "
                         + ", ".join(t.text for _, t, _ in self.sitsots) + ")")
        if self.nonseqs:
            parts.append("nonsequences(" + ", ".join(o for o, _, _ in self.nonseqs) + " : "
                         + ", ".join(t.text for _, t, _ in self.nonseqs) + ")")
        if any(self.keep):
            parts.append("keep [" + ", ".join(map(str, self.keep)) + "]")
        if len(results) == 1:
            lhs = f"{results[0]} = "
        elif results:
            lhs = ", ".join(results) + " = "
        else:
            lhs = ""
        lines = [indent + lhs + head]
        lines += [indent + "    " + p for p in parts]
        lines[-1] += " {"
        args = ", ".join(f"{a}: {t.text}" for a, t in self.block_args())
        lines.append(indent + f"^bb0({args}):")
        lines += [indent + "  " + line for line in self.body.lines]
        ys = self.yields
        if ys:
            lines.append(indent + "  scan.yield " + ", ".join(n for n, _ in ys) + " : "
                         + ", ".join(t.text for _, t in ys))
        else:
            lines.append(indent + "  scan.yield")
        lines.append(indent + "} -> (" + ", ".join(self.result_types) + ")")
        return lines


def gen_body_yields(plan: ScanPlan, body: Body, depth: int, until_mode: str | None,
                    counter: int | None) -> None:
    """Fills `plan.yields`: mitmot out taps, mitsot, sitsot, nitsot, until."""
    g = body.gen
    for _, bty, ins, outs, names in plan.mitmots:
        row = bty.row()
        for _ in outs:
            plan.yields.append((state_yield(body, row, names, depth), row))
    for _, ity, _, names in plan.mitsots:
        row = ity.row()
        plan.yields.append((state_yield(body, row, names, depth), row))
    for i, (_, row, arg) in enumerate(plan.sitsots):
        if i == counter:  # the step counter of `until`: prev + 1
            one = body.emit(f"arith.constant 1 : {row.elem}", pool=False, prefix="c")
            plan.yields.append((body.emit(f"arith.addi {arg}, {one} : {row.elem}", row), row))
            continue
        plan.yields.append((state_yield(body, row, [arg], depth), row))
    for row in plan.nitsots:
        y = value(body, row, depth)
        if row.is_float and g.pct(50):
            y = bounded(body, y, row)
        plan.yields.append((y, row))
    if until_mode == "counter":
        cnt, row = plan.yields[len(plan.yields) - len(plan.nitsots)
                               - (len(plan.sitsots) - counter)]
        limit = body.external(row, "limit")
        pred = g.choice(("sge", "sgt", "eq"))
        plan.yields.append((body.emit(f"arith.cmpi {pred}, {cnt}, {limit} : {row.elem}",
                                      Ty("i1")), Ty("i1")))
    elif until_mode == "value":
        # A state-derived scalar against a threshold.
        candidates = [(n, t) for n, t in plan.yields + plan.block_args()
                      if t.elem != "i1"]
        if candidates:
            name, t = g.choice(candidates)
        else:  # only i1 states: compare a non-sequence instead
            t = Ty(g.choice(g.cfg.elems))
            name = body.external(t)
        if t.shape:
            idx = [body.index(g.int_in(0, dim - 1)) for dim in g.concrete(t.shape)]
            name = body.emit(f"tensor.extract {name}[{', '.join(idx)}] : {t.text}", Ty(t.elem))
            t = Ty(t.elem)
        thr = body.external(t, "threshold")
        if t.is_float:
            cond = body.emit(f"arith.cmpf {g.choice(FLOAT_PRED[:4])}, {name}, {thr} : {t.elem}",
                             Ty("i1"))
        else:
            cond = body.emit(f"arith.cmpi {g.choice(INT_PRED)}, {name}, {thr} : {t.elem}",
                             Ty("i1"))
        plan.yields.append((cond, Ty("i1")))


def gen_top_scan(g: Gen, fbody: Body) -> tuple[ScanPlan, int]:
    """The scan of the tested function: every operand is a function argument."""
    cfg = g.cfg
    n = g.choice(cfg.n_values)
    n_static = g.choice(cfg.n_static)
    plan = ScanPlan()
    if n_static:
        plan.n = fbody.emit(f"arith.constant {n} : index", pool=False, prefix="n")
    else:
        plan.n = g.new_arg(Ty("index"), "n", value=n)
    plan.go_backwards = g.choice(cfg.go_backwards)
    plan.until = g.choice(cfg.until)
    body = Body(g, parent=fbody, scan=plan)
    plan.body = body

    def lead(rows: int) -> int | None:
        return None if g.pct(50) else rows

    seq_args = []  # (argument, type, rows)
    for _ in range(g.int_in(*cfg.n_seq)):
        row = g.row_type(state=True)
        lo_tap, hi_tap, most = cfg.seq_taps
        taps = g.taps(lo_tap, hi_tap, 1, most)
        if taps == [0] and g.pct(50):
            default = True
        else:
            default = False
        lo, hi = min(0, taps[0]), max(0, taps[-1])
        rows = n + hi - lo + g.int_in(0, 2)
        sty = row.stacked(lead(rows))
        outer = g.new_arg(sty, shape=(rows, *g.concrete(row.shape)))
        seq_args.append((outer, sty, rows))
        names = [g.fresh("s") for _ in taps]
        plan.seqs.append((outer, sty, None if default else taps, names))
    for _ in range(g.int_in(*cfg.n_mitmot)):
        row = g.row_type(state=True)
        lo_tap, hi_tap, most = cfg.mitmot_taps
        ins = g.taps(lo_tap, hi_tap, 0, most)
        outs = g.taps(lo_tap, hi_tap, 1, most)
        if ins and g.pct(30):
            outs = sorted(set(outs) | {ins[0]})  # an in tap overwritten by the same step
        lo, hi = min(0, *ins, *outs), max(0, *ins, *outs)
        rows = n + hi - lo + g.int_in(0, 2)
        # Sometimes the buffer is a sequence's argument (long enough): the
        # scan updates a copy, the sequence reads the original.
        shared = [(o, t, r) for o, t, r in seq_args
                  if t.row() == row and r >= n + hi - lo and t.shape[0] in (None, r)]
        if shared and g.pct(30):
            outer, bty, _ = g.choice(shared)
            names = [g.fresh("m") for _ in ins]
            plan.mitmots.append((outer, bty, ins, outs, names))
            continue
        bty = row.stacked(lead(rows))
        outer = g.new_arg(bty, shape=(rows, *g.concrete(row.shape)))
        names = [g.fresh("m") for _ in ins]
        plan.mitmots.append((outer, bty, ins, outs, names))
    for _ in range(g.int_in(*cfg.n_mitsot)):
        row = g.row_type(state=True)
        taps = g.taps(cfg.mitsot_taps[0], -1, 1, cfg.mitsot_taps[1])
        k = -taps[0]
        ity = row.stacked(lead(k))
        outer = g.new_arg(ity, shape=(k, *g.concrete(row.shape)))
        names = [g.fresh("x") for _ in taps]
        plan.mitsots.append((outer, ity, taps, names))
    until_mode = None
    if plan.until:
        until_mode = g.choice(("counter", "value"))
    counter = None
    n_sitsot = g.int_in(*cfg.n_sitsot)
    for i in range(n_sitsot):
        row = g.row_type(state=True)
        init = g.new_arg(row)
        fbody.pool.append((init, row))  # the body may also take it as a non-sequence
        plan.sitsots.append((init, row, g.fresh("y")))
    if until_mode == "counter":
        row = Ty(g.choice(("i32", "i64")))
        counter = len(plan.sitsots)
        plan.sitsots.append((g.new_arg(row, "counter"), row, g.fresh("y")))
    for _ in range(g.int_in(*cfg.n_nitsot)):
        elems = cfg.elems + ("i1",)
        plan.nitsots.append(g.row_type(elems=elems))
    if not (plan.mitmots or plan.mitsots or plan.sitsots or plan.nitsots):
        plan.nitsots.append(g.row_type())
    # A few non-sequences up front (more are added on demand by the body).
    for _ in range(g.int_in(0, 2)):
        body.external(g.row_type())

    body.pool = list(plan.block_args())
    gen_body_yields(plan, body, cfg.depth, until_mode, counter)

    # Result types and keep.
    for _, bty, _, _, _ in plan.mitmots:
        plan.result_types.append(bty.text)
        plan.result_tys.append(bty)
        plan.keep.append(0)
    rows_of = ([(ity.row(), -taps[0]) for _, ity, taps, _ in plan.mitsots]
               + [(row, 1) for _, row, _ in plan.sitsots]
               + [(row, 0) for row in plan.nitsots])
    for row, init_rows in rows_of:
        keep = 0
        if g.pct(cfg.keep_pct):
            keep = g.choice((1, 1, 2, 3, n + init_rows + g.int_in(1, 2)))
        plan.keep.append(keep)
        if keep:
            plan.result_tys.append(row.stacked(keep))
        elif plan.until or not n_static or g.pct(30):
            plan.result_tys.append(row.stacked(None))
        else:
            plan.result_tys.append(row.stacked(n))
        plan.result_types.append(plan.result_tys[-1].text)
    return plan, n


def nested_scan(outer: Body, ty: Ty, depth: int) -> str:
    """A value of tensor type `ty` = (M, *R) made by a scan over rows of another value."""
    g = outer.gen
    m = ty.shape[0]
    row = ty.row()
    seq = value(outer, ty, depth)
    plan = ScanPlan()
    dynamic_n = g.pct(50)
    if dynamic_n:
        c0 = outer.index(0)
        plan.n = outer.emit(f"tensor.dim {seq}, {c0} : {ty.text}", pool=False, prefix="n")
    else:
        plan.n = outer.index(m)
    plan.go_backwards = g.pct(40)
    body = Body(g, parent=outer, scan=plan, nesting=outer.nesting + 1)
    plan.body = body
    taps = [0] if g.pct(60) else g.taps(-1, 1, 1, 2)
    lo, hi = min(0, taps[0]), max(0, taps[-1])
    names = [g.fresh("s") for _ in taps]
    plan.seqs.append((seq, ty, None if taps == [0] else taps, names))
    steps = m - (hi - lo)
    if steps != m:  # wider taps: fewer steps (n via a constant then)
        plan.n = outer.index(steps)
        dynamic_n = False
    if g.pct(25):  # an extra scalar mitsot, its result unused
        taps = g.taps(-2, -1, 1, 2)
        init_ty = Ty(ty.elem, (-taps[0],))
        init = value(outer, init_ty, depth)
        plan.mitsots.append((init, init_ty, taps, [g.fresh("x") for _ in taps]))
    if g.pct(60):
        init = value(outer, row, depth)
        plan.sitsots.append((init, row, g.fresh("y")))
    else:
        plan.nitsots.append(row)
    plan.until = g.pct(25)
    body.pool = list(plan.block_args())
    gen_body_yields(plan, body, max(1, depth), "value" if plan.until else None, None)
    for _, ity, taps, _ in plan.mitsots:
        keep = g.choice((0, 1, 3))
        plan.keep.append(keep)
        lead = keep or (None if dynamic_n or plan.until else steps)
        plan.result_types.append(ity.row().stacked(lead).text)
    if steps != m or plan.until:
        # Fewer rows than the value (wider taps, or stopped early): keep
        # exactly `m` rows, the missing leading ones are zero.
        plan.keep.append(m)
        plan.result_types.append(ty.text)
    else:
        plan.keep.append(0)
        plan.result_types.append(row.stacked(None if dynamic_n else m).text)
    results = [g.fresh("r") for _ in plan.result_types]
    outer.lines += plan.render(results, "")
    r, rtype = results[-1], plan.result_types[-1]
    if rtype != ty.text:
        return outer.emit(f"tensor.cast {r} : {rtype} to {ty.text}", ty)
    outer.pool.append((r, ty))
    return r


def gen_chained_scan(g: Gen, fbody: Body, source: str, sty: Ty) -> ScanPlan:
    """A second scan over a result of the first; its n_steps is that result's
    length minus the tap window (negative -> a run-time error on both sides)."""
    plan = ScanPlan()
    body = Body(g, parent=fbody, scan=plan)
    plan.body = body
    taps = [0] if g.pct(50) else g.taps(-2, 2, 1, 2)
    lo, hi = min(0, taps[0]), max(0, taps[-1])
    if sty.shape[0] is not None and sty.shape[0] < hi - lo:
        taps, lo, hi = [0], 0, 0  # the verifier rejects a static length below the window
    c0 = fbody.index(0)
    dim = fbody.emit(f"tensor.dim {source}, {c0} : {sty.text}", pool=False, prefix="d")
    if hi - lo:
        w = fbody.index(hi - lo)
        plan.n = fbody.emit(f"arith.subi {dim}, {w} : index", pool=False, prefix="n")
    else:
        plan.n = dim
    plan.go_backwards = g.pct(30)
    plan.seqs.append((source, sty, None if taps == [0] else taps, [g.fresh("s") for _ in taps]))
    if g.pct(60):
        row = g.row_type(state=True)
        init = g.new_arg(row)
        plan.sitsots.append((init, row, g.fresh("y")))
    for _ in range(g.int_in(0 if plan.sitsots else 1, 1)):
        plan.nitsots.append(g.row_type(elems=g.cfg.elems + ("i1",)))
    body.pool = list(plan.block_args())
    gen_body_yields(plan, body, g.cfg.depth, None, None)
    for row in [r for _, r, _ in plan.sitsots] + plan.nitsots:
        keep = g.choice((1, 2)) if g.pct(20) else 0
        plan.keep.append(keep)
        plan.result_tys.append(row.stacked(keep or None))
        plan.result_types.append(plan.result_tys[-1].text)
    return plan


@st.composite
def programs(draw, cfg: Config = Config()) -> Case:
    g = Gen(draw, cfg)
    fbody = Body(g)
    plan, n = gen_top_scan(g, fbody)
    results = [g.fresh("r") for _ in plan.result_types]
    body_lines = ["  " + line for line in fbody.lines] + plan.render(results, "  ")
    returned = list(zip(results, plan.result_tys))
    if g.pct(cfg.chain_pct):
        fbody.lines = []
        source, sty = g.choice(returned)
        plan2 = gen_chained_scan(g, fbody, source, sty)
        results2 = [g.fresh("r") for _ in plan2.result_types]
        body_lines += ["  " + line for line in fbody.lines] + plan2.render(results2, "  ")
        returned += list(zip(results2, plan2.result_tys))
    if g.pct(cfg.extra_return_pct):
        returned.append(g.choice(returned))  # one result returned twice
    tensor_args = [(a.name, a.ty) for a in g.args if a.ty.shape]
    if tensor_args and g.pct(cfg.extra_return_pct):
        returned.append(g.choice(tensor_args))  # an argument returned as is
    sig = ", ".join(f"{a.name}: {a.ty.text}" for a in g.args)
    res = ", ".join(t.text for _, t in returned)
    lines = [f"func.func @f({sig}) -> ({res}) {{"]
    lines += body_lines
    lines.append(f"  return {', '.join(r for r, _ in returned)} : {res}")
    lines.append("}")
    source = "\n".join(lines) + "\n"
    seed = draw(st.integers(0, 2**32 - 1))
    args = make_args(g.args, np.random.default_rng(seed), n)
    return Case(source, "f", args, note=f"n_steps={n}")


def make_args(specs: list[Arg], rng: np.random.Generator, n: int) -> tuple:
    out = []
    for a in specs:
        if a.role == "n":
            out.append(a.value)
            continue
        shape = tuple(a.shape) if a.ty.shape else ()
        dtype = np_dtype(a.ty.elem)
        if a.role == "limit":
            v = rng.integers(-1, n + 3)
            out.append(dtype.type(v))
            continue
        if a.role == "counter":
            out.append(dtype.type(rng.integers(-2, 2)))
            continue
        if a.ty.elem == "i1":
            arr = rng.random(size=shape) < 0.5
        elif a.ty.is_float:
            data = rng.uniform(-1.0, 1.0, size=shape)
            if a.role.startswith("matrix:"):
                data = data / int(a.role.split(":")[1])
            arr = np.asarray(data, dtype=dtype)
        else:
            if a.role.startswith("matrix:"):
                data = rng.integers(-3, 4, size=shape)
            elif a.role == "threshold":
                data = rng.integers(-6, 7, size=shape)
            else:
                data = rng.integers(-9, 10, size=shape)
                if rng.random() < 0.15:  # extremes: integers wrap on both sides
                    info = np.iinfo(dtype)
                    mask = rng.random(size=shape) < 0.3
                    big = rng.choice([info.min, info.max, info.min // 3, info.max // 2],
                                     size=shape)
                    data = np.where(mask, big, data)
            arr = np.asarray(data).astype(dtype)
        out.append(arr if shape else dtype.type(arr))
    return tuple(out)


# --------------------------------------------------------------------------- #
# Running: reference in process, native code in a worker subprocess
# --------------------------------------------------------------------------- #

_WORKER = r"""
import pickle, struct, sys, traceback
import numpy as np
import mlir_scan

inp, out = sys.stdin.buffer, sys.stdout.buffer
sys.stdout = sys.stderr  # nothing else may write to the protocol pipe

def send(obj):
    data = pickle.dumps(obj)
    out.write(struct.pack("<Q", len(data)) + data)
    out.flush()

while True:
    head = inp.read(8)
    if len(head) < 8:
        break
    source, func, args, optimize = pickle.loads(inp.read(struct.unpack("<Q", head)[0]))
    # `optimize` is compile()'s argument, or all its keyword arguments.
    options = optimize if isinstance(optimize, dict) else {"optimize": optimize}
    try:
        prog = mlir_scan.compile(source, **options)
    except Exception as e:
        send(("compile-error", type(e).__name__, str(e)))
        continue
    copies = [np.array(a, copy=True) for a in args]
    try:
        result = getattr(prog, func)(*args)
    except Exception as e:
        send(("raise", type(e).__name__, str(e)))
        continue
    unchanged = all(
        np.array_equal(np.asarray(a), c, equal_nan=True) and np.asarray(a).dtype == c.dtype
        for a, c in zip(args, copies))
    results = result if isinstance(result, tuple) else (result,)
    send(("ok", tuple(np.array(r, copy=True) for r in results), unchanged))
"""


class _Worker:
    """A persistent subprocess that compiles and runs programs natively."""

    TIMEOUT = 120.0

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.stderr = None

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, cwd=tempfile.gettempdir())

    def _crash(self, why: str) -> tuple:
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace")[-3000:]
        return ("crash", f"{why}; exit code {code}", tail)

    def run(self, source: str, func: str, args: tuple, optimize: bool | str = True) -> tuple:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        data = pickle.dumps((source, func, args, optimize))
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._crash("worker died")
        stdout = self.proc.stdout
        ready, _, _ = select.select([stdout], [], [], self.TIMEOUT)
        if not ready:
            return self._crash(f"no answer in {self.TIMEOUT} s")
        head = stdout.read(8)
        if len(head) < 8:
            return self._crash("worker died")
        return pickle.loads(stdout.read(struct.unpack("<Q", head)[0]))

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def worker():
    w = _Worker()
    yield w
    w.close()


def verify(source: str) -> None:
    """The program parses and verifies; otherwise the generator is wrong."""
    with ir.Context(), ir.Location.unknown():
        try:
            module = ir.Module.parse(source)
        except Exception as e:  # noqa: BLE001 - any parse/verify error
            raise AssertionError(f"GENERATOR BUG: the program does not verify:\n{e}\n{source}")
        assert module.operation.verify()


# (rtol, atol). Float values stay in [-1, 1] or close (tanh on every recurrent
# float, contraction matrices scaled by 1/N), so an absolute floor is
# meaningful. The differences come from the expanded tanh (math-expand-ops)
# and from reductions marked reassociable (scan-order-linalg-loops); over the
# derandomized programs they stay below 5% of these bounds.
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)}


def assert_same(native: tuple, expected: tuple, case: Case) -> None:
    assert len(native) == len(expected), case
    for i, (got, want) in enumerate(zip(native, expected)):
        want = np.asarray(want)
        got = np.asarray(got)
        where = f"result #{i}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}\n{case!r}"
        assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}\n{case!r}"
        if want.dtype.kind == "f":
            rtol, atol = TOLERANCE[want.dtype]
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{where}\n{case!r}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{where}\n{case!r}")


def check(worker: _Worker, case: Case, optimize: bool | str = True) -> None:
    verify(case.source)
    try:
        expected = reference.run(case.source, case.func, *case.args)
        ref_error = None
    except ValueError as e:
        expected, ref_error = None, e
    status = worker.run(case.source, case.func, case.args, optimize)
    if status[0] == "crash":
        pytest.fail(f"the compiler crashed ({status[1]}):\n{status[2]}\n{case!r}")
    if status[0] == "compile-error":
        pytest.fail(f"compile failed: {status[1]}: {status[2]}\n{case!r}")
    if ref_error is not None:
        assert status[0] == "raise" and status[1] == "ValueError", (
            f"reference raised {ref_error!r} but native gave {status[:2]}\n{case!r}")
        return
    if status[0] == "raise":
        pytest.fail(f"native call raised {status[1]}: {status[2]}\n{case!r}")
    _, native, unchanged = status
    assert unchanged, f"the native call modified its inputs\n{case!r}"
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert_same(native, expected, case)


# --------------------------------------------------------------------------- #
# Random programs
# --------------------------------------------------------------------------- #

COMMON = dict(deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])


@settings(max_examples=400, **COMMON)
@given(case=programs(), optimize=st.booleans())
def test_random_programs(worker, case, optimize):
    check(worker, case, optimize)


# Targeted: one kind of variable at a time, in many shapes.

TAPS = Config(n_seq=(1, 3), n_mitmot=(0, 0), n_mitsot=(1, 2), n_sitsot=(0, 1), n_nitsot=(0, 1),
              until=(False,), keep_pct=0, seq_taps=(-4, 4, 4), mitsot_taps=(-4, 4))
KEEP = Config(n_seq=(0, 1), n_mitmot=(0, 0), n_mitsot=(0, 2), n_sitsot=(1, 2), n_nitsot=(0, 2),
              keep_pct=100, until=(False, True))
UNTIL = Config(n_seq=(0, 2), until=(True,), keep_pct=30)
MITMOT = Config(n_seq=(0, 2), n_mitmot=(1, 2), n_mitsot=(0, 1), n_sitsot=(0, 1),
                n_nitsot=(0, 1), mitmot_taps=(-2, 2, 3))
BACKWARDS = Config(n_seq=(1, 3), go_backwards=(True,), n_mitmot=(0, 1), seq_taps=(-3, 3, 3))
NESTED = Config(n_seq=(0, 2), n_mitmot=(0, 0), n_mitsot=(0, 1), n_sitsot=(1, 2),
                row_ranks=(1, 1, 2), nested_pct=100)
SMALL_N = Config(n_values=(0, 1), keep_pct=30)


@settings(max_examples=50, **COMMON)
@given(case=programs(TAPS), optimize=st.booleans())
def test_taps(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=50, **COMMON)
@given(case=programs(KEEP), optimize=st.booleans())
def test_keep(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=50, **COMMON)
@given(case=programs(UNTIL), optimize=st.booleans())
def test_until(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=50, **COMMON)
@given(case=programs(MITMOT), optimize=st.booleans())
def test_mitmot(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=40, **COMMON)
@given(case=programs(BACKWARDS), optimize=st.booleans())
def test_go_backwards(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=40, **COMMON)
@given(case=programs(NESTED), optimize=st.booleans())
def test_nested(worker, case, optimize):
    check(worker, case, optimize)


@settings(max_examples=30, **COMMON)
@given(case=programs(SMALL_N), optimize=st.booleans())
def test_zero_and_one_steps(worker, case, optimize):
    check(worker, case, optimize)


def test_generator_covers_every_kind():
    """The random programs really contain every feature the tests claim."""
    sources: list[str] = []

    @settings(max_examples=200, **COMMON)
    @given(case=programs())
    def collect(case):
        sources.append(case.source)

    collect()
    text = "\n".join(sources)
    for needle in ("sequences(", "mitmot(", "[] ->", "mitsot(", "sitsot(", "nonsequences(",
                   "go_backwards", "until", "keep [", "tensor<?x", "linalg.matvec",
                   "linalg.vecmat", "linalg.matmul", "linalg.dot", "math.tanh",
                   "arith.select", "arith.cmpf", "arith.cmpi", "xi1>", "f32", "f64", "i32",
                   "i64", ": index"):
        assert needle in text, needle
    assert any(s.count("scan.scan") > 1 for s in sources), "no nested scan"
    assert any("sequences(%arg" in s and "[" not in s.split("sequences(")[1].split(":")[0]
               for s in sources), "no sequence with the default tap"


# --------------------------------------------------------------------------- #
# Regressions: bugs the random programs found
# --------------------------------------------------------------------------- #


def run_case(worker, source: str, *args) -> None:
    check(worker, Case(source, "f", args, note="hand-written"))


def test_until_with_constant_zero_steps(worker):
    """Bug 1: `until` + the constant n_steps 0 did not compile ("offset 0 is
    out-of-bounds: 0 >= 0" on a memref.subview of the 0-row output buffer)."""
    source = """
    func.func @f(%y0: i32, %lim: i32) -> (tensor<?xi32>, tensor<?xf32>) {
      %n = arith.constant 0 : index
      %r:2 = scan.scan steps(%n) until sitsot(%y0 : i32) nonsequences(%lim : i32) {
      ^bb0(%y: i32, %l: i32):
        %c1 = arith.constant 1 : i32
        %next = arith.addi %y, %c1 : i32
        %f = arith.sitofp %next : i32 to f32
        %stop = arith.cmpi sge, %next, %l : i32
        scan.yield %next, %f, %stop : i32, f32, i1
      } -> (tensor<?xi32>, tensor<?xf32>)
      return %r#0, %r#1 : tensor<?xi32>, tensor<?xf32>
    }"""
    run_case(worker, source, np.int32(1), np.int32(1))
    # The same without `until`, the results typed `?` although n is static.
    run_case(worker, source.replace(" until", "").replace(", %stop : i32, f32, i1",
                                                          " : i32, f32"),
             np.int32(1), np.int32(1))


def test_mitsot_init_is_not_modified(worker):
    """Bug 2: an elementwise op on an init row (convert-elementwise-to-linalg
    reuses the operand as `outs`) was bufferized in place into the caller's
    array: function arguments were writable for one-shot-bufferize."""
    source = """
    func.func @f(%x0: tensor<4x2x3xf64>, %y0: tensor<2xf64>) -> (tensor<1x2x3xf64>, tensor<1x2xf64>) {
      %n = arith.constant 1 : index
      %r:2 = scan.scan steps(%n) mitsot(%x0[-4, -3] : tensor<4x2x3xf64>)
          sitsot(%y0 : tensor<2xf64>) {
      ^bb0(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %y: tensor<2xf64>):
        %t = math.tanh %a : tensor<2x3xf64>
        %u = arith.addf %y, %y : tensor<2xf64>
        scan.yield %t, %u : tensor<2x3xf64>, tensor<2xf64>
      } -> (tensor<1x2x3xf64>, tensor<1x2xf64>)
      return %r#0, %r#1 : tensor<1x2x3xf64>, tensor<1x2xf64>
    }"""
    rng = np.random.default_rng(7)
    run_case(worker, source, rng.uniform(-1, 1, (4, 2, 3)), rng.uniform(-1, 1, 2))


def test_row_read_by_another_output_after_the_writes(worker):
    """Bug 3: `s` yielded as a nitsot and `tanh(s)` as a sitsot: the nitsot got
    `tanh(s)` (eliminate-empty-tensors computed `s` in the sitsot row, which
    was written before `s` was copied out)."""
    source = """
    func.func @f(%n: index, %h0: tensor<2xf32>, %w: tensor<2x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
      %r:2 = scan.scan steps(%n) sitsot(%h0 : tensor<2xf32>) nonsequences(%w : tensor<2x2xf32>) {
      ^bb0(%h: tensor<2xf32>, %ww: tensor<2x2xf32>):
        %z = arith.constant 0.0 : f32
        %e = tensor.empty() : tensor<2xf32>
        %f = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
        %s = linalg.matvec ins(%ww, %h : tensor<2x2xf32>, tensor<2xf32>) outs(%f : tensor<2xf32>) -> tensor<2xf32>
        %t = math.tanh %s : tensor<2xf32>
        scan.yield %t, %s : tensor<2xf32>, tensor<2xf32>
      } -> (tensor<?x2xf32>, tensor<?x2xf32>)
      return %r#0, %r#1 : tensor<?x2xf32>, tensor<?x2xf32>
    }"""
    h0 = np.array([0.5, -0.7], np.float32)
    w = np.array([[1.0, 0.5], [0.25, 1.0]], np.float32)
    run_case(worker, source, 3, h0, w)
    # Several readers and the chain through two yielded values.
    source2 = source.replace(
        "scan.yield %t, %s : tensor<2xf32>, tensor<2xf32>\n      } -> (tensor<?x2xf32>, tensor<?x2xf32>)",
        "%u = arith.mulf %t, %t : tensor<2xf32>\n"
        "        scan.yield %u, %s, %t : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>\n"
        "      } -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>)").replace(
        "%r:2", "%r:3").replace(
        "-> (tensor<?x2xf32>, tensor<?x2xf32>) {\n      %r",
        "-> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {\n      %r").replace(
        "return %r#0, %r#1 : tensor<?x2xf32>, tensor<?x2xf32>",
        "return %r#0, %r#1, %r#2 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>")
    run_case(worker, source2, 4, h0, w)


def test_two_rows_computed_into_one_destination(worker):
    """Bug 4: `a = addi(k, f)` and `b = minsi(f, k)` both computed into the
    same `f = fill(empty)` and yielded to two mitmot rows: `b`'s row got `a`
    (the empty was given `a`'s row, where `b` was then computed in place)."""
    source = """
    func.func @f(%buf: tensor<?x2x3xi64>, %y: i64) -> tensor<?x2x3xi64> {
      %n = arith.constant 1 : index
      %r = scan.scan steps(%n) mitmot(%buf[] -> [-2, 1] : tensor<?x2x3xi64>)
          nonsequences(%y : i64) {
      ^bb0(%yy: i64):
        %k = arith.constant dense<4> : tensor<2x3xi64>
        %e = tensor.empty() : tensor<2x3xi64>
        %f = linalg.fill ins(%yy : i64) outs(%e : tensor<2x3xi64>) -> tensor<2x3xi64>
        %a = arith.addi %k, %f : tensor<2x3xi64>
        %b = arith.minsi %f, %k : tensor<2x3xi64>
        scan.yield %a, %b : tensor<2x3xi64>, tensor<2x3xi64>
      } -> (tensor<?x2x3xi64>)
      return %r : tensor<?x2x3xi64>
    }"""
    run_case(worker, source, np.zeros((4, 2, 3), np.int64), np.int64(9))
    run_case(worker, source.replace("[] -> [-2, 1]", "[] -> [0, 1]"),
             np.zeros((3, 2, 3), np.int64), np.int64(-9))


def test_destinations_merged_by_cse_after_the_lowering(worker):
    """Bug 5: like bug 4, but the two zero fills were distinct in the input and
    only merged by the `cse` after convert-scan-to-scf (optimize=False), after
    the destination check. Fixed by scan-fresh-elementwise-inits (main), which
    gives each op its own copy of a shared fill after the last CSE;
    convert-scan-to-scf checks the families of those copies."""
    source = """
    func.func @f(%n: index, %buf: tensor<12x3x4xi32>, %a: tensor<3x3xi32>, %b: tensor<3x4xi32>,
                 %c: tensor<4x4xi32>) -> tensor<12x3x4xi32> {
      %r = scan.scan steps(%n) mitmot(%buf[2] -> [-1, 1, 2] : tensor<12x3x4xi32>)
          nonsequences(%a, %b, %c : tensor<3x3xi32>, tensor<3x4xi32>, tensor<4x4xi32>) {
      ^bb0(%m: tensor<3x4xi32>, %aa: tensor<3x3xi32>, %bb: tensor<3x4xi32>, %cc: tensor<4x4xi32>):
        %d = arith.subi %m, %m : tensor<3x4xi32>
        %z = arith.constant 0 : i32
        %e1 = tensor.empty() : tensor<3x4xi32>
        %f1 = linalg.fill ins(%z : i32) outs(%e1 : tensor<3x4xi32>) -> tensor<3x4xi32>
        %p = linalg.matmul ins(%aa, %bb : tensor<3x3xi32>, tensor<3x4xi32>) outs(%f1 : tensor<3x4xi32>) -> tensor<3x4xi32>
        %e2 = tensor.empty() : tensor<3x4xi32>
        %f2 = linalg.fill ins(%z : i32) outs(%e2 : tensor<3x4xi32>) -> tensor<3x4xi32>
        %q = linalg.matmul ins(%m, %cc : tensor<3x4xi32>, tensor<4x4xi32>) outs(%f2 : tensor<3x4xi32>) -> tensor<3x4xi32>
        scan.yield %d, %p, %q : tensor<3x4xi32>, tensor<3x4xi32>, tensor<3x4xi32>
      } -> (tensor<12x3x4xi32>)
      return %r : tensor<12x3x4xi32>
    }"""
    rng = np.random.default_rng(0)
    args = (9, rng.integers(-9, 10, (12, 3, 4)).astype(np.int32),
            rng.integers(-3, 4, (3, 3)).astype(np.int32),
            rng.integers(-3, 4, (3, 4)).astype(np.int32),
            rng.integers(-3, 4, (4, 4)).astype(np.int32))
    for optimize in (False, True):
        check(worker, Case(source, "f", args, note="fills merged by cse"), optimize)


PUSH_OUT_DOT = """
func.func @f(%n: index, %xs: tensor<?x3xf32>, %y0: f32) -> tensor<?xf32> {
  %r = scan.scan steps(%n) sequences(%xs : tensor<?x3xf32>) sitsot(%y0 : f32) {
  ^bb0(%x: tensor<3xf32>, %y: f32):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %d = linalg.dot ins(%x, %x : tensor<3xf32>, tensor<3xf32>) outs(%f : tensor<f32>) -> tensor<f32>
    %s = tensor.extract %d[] : tensor<f32>
    %a = arith.addf %y, %s : f32
    %t = math.tanh %a : f32
    scan.yield %t : f32
  } -> (tensor<?xf32>)
  return %r : tensor<?xf32>
}
"""

PUSH_OUT_EMPTY = """
func.func @f(%xs: tensor<2xi32>, %y0: i32) -> tensor<?xi32> {
  %n = arith.constant 0 : index
  %r = scan.scan steps(%n) sequences(%xs[-1, 1] : tensor<2xi32>) sitsot(%y0 : i32) {
  ^bb0(%a: i32, %b: i32, %y: i32):
    %s = arith.addi %a, %b : i32
    %t = arith.addi %y, %s : i32
    scan.yield %t : i32
  } -> (tensor<?xi32>)
  return %r : tensor<?xi32>
}
"""


@pytest.mark.parametrize("optimize", [True, "scan-push-out-seq,canonicalize"])
def test_push_out_seq_rank0_rows_and_empty_slices(worker, optimize):
    """Bugs 6 and 7 (scan-push-out-seq, found once compile() ran scan-optimize):
    a pushed-out `linalg.dot` result (tensor<f32>) became a scalar sequence row
    under a `tensor.extract` (invalid IR; fixed on main: RowBatcher does not
    batch rank-0 rows); with the constant n_steps 0 and a tap past the end of
    a static sequence, the batched slice had a static out-of-bounds offset
    (verifier error; push-out-seq now leaves such scans alone)."""
    xs = np.random.default_rng(1).uniform(-1, 1, (4, 3)).astype(np.float32)
    check(worker, Case(PUSH_OUT_DOT, "f", (4, xs, np.float32(0.5)), note="dot"), optimize)
    check(worker, Case(PUSH_OUT_EMPTY, "f", (np.array([3, 4], np.int32), np.int32(1)),
                       note="empty slices"), optimize)


SELF_FOLDS = """
func.func @f(%n: index, %a: tensor<?xi64>, %y0: tensor<?xi64>, %b0: tensor<?x3xi1>,
             %c: tensor<?x3xi32>) -> (tensor<?x?xi64>, tensor<?x?x3xi1>) {
  %r:2 = scan.scan steps(%n) sitsot(%y0, %b0 : tensor<?xi64>, tensor<?x3xi1>)
      nonsequences(%a, %a, %c : tensor<?xi64>, tensor<?xi64>, tensor<?x3xi32>) {
  ^bb0(%y: tensor<?xi64>, %b: tensor<?x3xi1>, %p: tensor<?xi64>, %q: tensor<?xi64>,
       %cc: tensor<?x3xi32>):
    %x = arith.xori %p, %q : tensor<?xi64>
    %x2 = arith.xori %y, %y : tensor<?xi64>
    %s = arith.addi %x, %x2 : tensor<?xi64>
    %t = arith.addi %s, %p : tensor<?xi64>
    %u = arith.addi %t, %y : tensor<?xi64>
    %le = arith.cmpi sle, %cc, %cc : tensor<?x3xi32>
    %lt = arith.cmpi ult, %cc, %cc : tensor<?x3xi32>
    %o = arith.ori %le, %lt : tensor<?x3xi1>
    %d = arith.xori %o, %b : tensor<?x3xi1>
    scan.yield %u, %d : tensor<?xi64>, tensor<?x3xi1>
  } -> (tensor<?x?xi64>, tensor<?x?x3xi1>)
  return %r#0, %r#1 : tensor<?x?xi64>, tensor<?x?x3xi1>
}
"""


# The operands of the cmpi become one value only while canonicalize runs
# (`select %false, %x, %x` folds to `%x` first).
FOLDS_TO_SELF = """
func.func @f(%n: index, %y0: tensor<?xi1>, %k: tensor<2xi64>) -> tensor<?x?xi1> {
  %r = scan.scan steps(%n) sitsot(%y0 : tensor<?xi1>) nonsequences(%k : tensor<2xi64>) {
  ^bb0(%y: tensor<?xi1>, %kk: tensor<2xi64>):
    %false = arith.constant false
    %c = arith.constant dense<[-3, 5]> : tensor<2xi64>
    %a = arith.addi %c, %kk : tensor<2xi64>
    %d = tensor.cast %a : tensor<2xi64> to tensor<?xi64>
    %s = arith.select %false, %d, %d : tensor<?xi64>
    %gt = arith.cmpi sgt, %s, %d : tensor<?xi64>
    %x = arith.xori %y, %gt : tensor<?xi1>
    scan.yield %x : tensor<?xi1>
  } -> (tensor<?x?xi1>)
  return %r : tensor<?x?xi1>
}
"""


def self_fold_args(n: int = 3) -> tuple:
    return (n, np.arange(3, dtype=np.int64), np.ones(3, np.int64),
            np.array([[1, 0, 1], [0, 0, 1]], bool), np.arange(6, dtype=np.int32).reshape(2, 3))


@pytest.mark.parametrize("optimize", [True, False])
def test_self_xor_and_cmpi_on_dynamic_tensors(worker, optimize):
    """Crash 1 (LLVM 22.1): canonicalize and convert-elementwise-to-linalg abort
    the process ("type must have static shape", in XOrIOp::fold / CmpIOp::fold)
    on `arith.xori %x, %x` or `arith.cmpi <p>, %x, %x` of a tensor with a
    dynamic size. Inlining makes them from a value passed twice as a
    non-sequence, and canonicalize itself from `select %false, %x, %x`.
    Guarded by mlir_scan.compile (these ops on dynamic tensors become
    linalg.generic before each stage) and convert-scan-to-scf (the body's
    elementwise ops become linalg.generic before it is inlined)."""
    check(worker, Case(SELF_FOLDS, "f", self_fold_args(), note="self folds"), optimize)
    check(worker, Case(FOLDS_TO_SELF, "f", (3, np.array([True, False]), np.arange(2)),
                       note="folds to self"), optimize)


def _scan_opt() -> str:
    scan_opt = os.path.join(os.path.dirname(sys.executable), "scan-opt")
    if not os.path.exists(scan_opt):
        pytest.skip("scan-opt is not installed next to this Python")
    return scan_opt


@pytest.mark.parametrize("pipeline", ["--scan-bufferize", "--scan-to-llvm"])
@pytest.mark.parametrize("name", ["SELF_FOLDS", "FOLDS_TO_SELF"])
def test_scan_opt_survives_self_folds(tmp_path, name, pipeline):
    """`scan-opt` used to abort on these programs, in convert-elementwise-to-
    linalg after inlining (`--scan-bufferize`), and in the canonicalize of
    scan-optimize (`--scan-to-llvm`, like `mlir-opt --canonicalize`). Both
    passes now turn dynamically shaped xori/cmpi into linalg.generic first."""
    path = tmp_path / "self_folds.mlir"
    path.write_text(globals()[name])
    proc = subprocess.run([_scan_opt(), str(path), pipeline], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


# --------------------------------------------------------------------------- #
# Errors at run time (SPEC §7), in this process: it must survive them
# --------------------------------------------------------------------------- #

ERRORS = """
func.func @f(%n: index, %xs: tensor<?x2xf32>, %g: tensor<?xf64>, %m0: tensor<?xi64>,
             %y0: f32) -> (tensor<?x2xf32>, tensor<?xf64>, tensor<?xi64>) {
  %r:4 = scan.scan steps(%n) sequences(%xs[-1, 1] : tensor<?x2xf32>)
      mitmot(%g[0] -> [0, 1] : tensor<?xf64>)
      mitsot(%m0[-3, -1] : tensor<?xi64>)
      sitsot(%y0 : f32) {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>, %gt: f64, %m3: i64, %m1: i64, %y: f32):
    %s = arith.addf %a, %b : tensor<2xf32>
    %g2 = arith.addf %gt, %gt : f64
    %m = arith.addi %m3, %m1 : i64
    %c0 = arith.constant 0 : index
    %e = tensor.extract %s[%c0] : tensor<2xf32>
    %yn = arith.addf %y, %e : f32
    scan.yield %g2, %gt, %m, %yn, %s : f64, f64, i64, f32, tensor<2xf32>
  } -> (tensor<?xf64>, tensor<?xi64>, tensor<?xf32>, tensor<?x2xf32>)
  return %r#3, %r#0, %r#1 : tensor<?x2xf32>, tensor<?xf64>, tensor<?xi64>
}
"""


def error_args(n: int, seq_rows: int | None = None, buf_rows: int | None = None,
               init_rows: int = 3) -> tuple:
    rng = np.random.default_rng(n)
    seq_rows = n + 2 if seq_rows is None else seq_rows
    buf_rows = n + 1 if buf_rows is None else buf_rows
    return (n, rng.uniform(-1, 1, (seq_rows, 2)).astype(np.float32),
            rng.uniform(-1, 1, buf_rows), rng.integers(-5, 5, init_rows), np.float32(0.5))


@pytest.fixture(scope="module")
def errors_program():
    return mlir_scan.compile(ERRORS)


def assert_good_call(prog, n: int) -> None:
    args = error_args(n)
    copies = [np.array(a) for a in args]
    got = prog.f(*args)
    want = reference.run(ERRORS, "f", *args)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("args, message", [
    ((-1,) + error_args(3)[1:], r"n_steps is -1, must be >= 0"),
    (error_args(4, seq_rows=5), r"sequence #0 has 5 rows but the steps and taps need 6"),
    (error_args(4, buf_rows=4), r"mitmot buffer #0 has 4 rows but the steps and taps need 5"),
    (error_args(2, init_rows=2), r"mitsot #0 init has 2 rows but its taps need 3"),
    (error_args(2, init_rows=4), r"mitsot #0 init has 4 rows but its taps need 3"),
    (error_args(0, seq_rows=1), r"sequence #0 has 1 rows but the steps and taps need 2"),
])
def test_runtime_errors_raise_and_the_program_still_works(errors_program, args, message):
    assert_good_call(errors_program, 3)
    copies = [np.array(a) for a in args]
    with pytest.raises(ValueError, match=message):
        errors_program.f(*args)
    for a, c in zip(args, copies):  # inputs unchanged, even on error
        np.testing.assert_array_equal(a, c)
    assert_good_call(errors_program, 3)  # the same Program, normal again
    assert_good_call(errors_program, 0)


def test_reference_raises_the_same_errors():
    for args in ((-1,) + error_args(3)[1:], error_args(4, seq_rows=5),
                 error_args(4, buf_rows=4), error_args(2, init_rows=2)):
        with pytest.raises(ValueError):
            reference.run(ERRORS, "f", *args)


def test_error_inside_a_nested_scan():
    """The inner scan's check fails at run time: ValueError after the call."""
    source = """
    func.func @f(%n: index, %m: index, %v: tensor<?xf64>) -> tensor<?xf64> {
      %r = scan.scan steps(%n) nonsequences(%m, %v : index, tensor<?xf64>) {
      ^bb0(%mm: index, %vv: tensor<?xf64>):
        %z = arith.constant 0.0 : f64
        %s = scan.scan steps(%mm) sequences(%vv : tensor<?xf64>) sitsot(%z : f64) keep [1] {
        ^bb0(%x: f64, %acc: f64):
          %a = arith.addf %acc, %x : f64
          scan.yield %a : f64
        } -> (tensor<1xf64>)
        %c0 = arith.constant 0 : index
        %e = tensor.extract %s[%c0] : tensor<1xf64>
        scan.yield %e : f64
      } -> (tensor<?xf64>)
      return %r : tensor<?xf64>
    }"""
    prog = mlir_scan.compile(source)
    v = np.arange(4.0)
    np.testing.assert_array_equal(prog.f(2, 3, v), reference.run(source, "f", 2, 3, v))
    with pytest.raises(ValueError, match=r"sequence #0 has 4 rows but the steps and taps need 5"):
        prog.f(2, 5, v)
    with pytest.raises(ValueError, match=r"n_steps is -2"):
        prog.f(2, -2, v)
    np.testing.assert_array_equal(prog.f(3, 4, v), [6.0, 6.0, 6.0])


def test_argument_errors_name_the_argument(errors_program):
    prog = errors_program
    good = list(error_args(2))
    cases = [
        (1, good[1].astype(np.float64), TypeError, r"argument #1 .*dtype float32"),
        (1, good[1][:, 0], ValueError, r"argument #1 .*rank 2"),
        (2, good[2].reshape(-1, 1), ValueError, r"argument #2 .*rank 1"),
        (3, good[3].astype(np.int32), TypeError, r"argument #3 .*int64"),
        (4, np.zeros(2, np.float32), TypeError, r"argument #4 .*scalar"),
        (0, 2.5, TypeError, r"argument #0 .*integer"),
        (0, "3", TypeError, r"argument #0"),
    ]
    for i, bad, exc, message in cases:
        args = list(good)
        args[i] = bad
        with pytest.raises(exc, match=message):
            prog.f(*args)
    with pytest.raises(TypeError, match=r"takes 5 arguments, got 4"):
        prog.f(*good[:4])
    assert_good_call(prog, 2)


def test_static_shape_mismatch_names_the_argument():
    source = """
    func.func @f(%xs: tensor<5x3xf32>, %y0: tensor<3xf32>) -> tensor<5x3xf32> {
      %n = arith.constant 5 : index
      %r = scan.scan steps(%n) sequences(%xs : tensor<5x3xf32>) sitsot(%y0 : tensor<3xf32>) {
      ^bb0(%x: tensor<3xf32>, %y: tensor<3xf32>):
        %s = arith.addf %x, %y : tensor<3xf32>
        scan.yield %s : tensor<3xf32>
      } -> (tensor<5x3xf32>)
      return %r : tensor<5x3xf32>
    }"""
    prog = mlir_scan.compile(source)
    with pytest.raises(ValueError, match=r"argument #0 .*dimension 0 must be 5"):
        prog.f(np.zeros((4, 3), np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"argument #1 .*dimension 0 must be 3"):
        prog.f(np.zeros((5, 3), np.float32), np.zeros(2, np.float32))
    xs = np.ones((5, 3), np.float32)
    np.testing.assert_array_equal(prog.f(xs, np.zeros(3, np.float32))[:, 0], [1, 2, 3, 4, 5])
