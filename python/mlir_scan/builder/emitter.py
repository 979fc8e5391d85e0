"""Writes MLIR text for a graph: SSA names, scopes, constants and common idioms.

A :class:`ModuleEmitter` owns the module-level state (fresh names, private
helper functions, run-time check messages). A :class:`Block` is one SSA scope
(a function body, a ``scan.scan`` region, a ``linalg.generic`` body): it binds
graph variables to SSA names and emits each node on demand, after its inputs.

Example::

    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> m = ModuleEmitter()
    >>> b = m.function_block()
    >>> b.bind(x, "%x")
    >>> b.value(x * 2.0)
    '%v1'
    >>> print("\\n".join(b.lines))
        %c0 = arith.constant 2.0 : f64
        %v1 = arith.mulf %x, %c0 : f64
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .graph import DTYPES, Constant, TensorType, Variable, is_float, is_int, toposort

__all__ = ["ModuleEmitter", "Block", "float_literal"]

#: The builder's checks are ``scan.check`` ops (lowered by ``scan-lower-checks`` to
#: calls of the run-time library's ``__mlir_scan_fail``): a failed check ends the
#: call. They pass code 100 (ValueError) or 101 (IndexError) and their check id;
#: the message stays here.
#: Builder error kinds (the `code` argument of Block.check) -> run-time codes.
_FAIL_CODES = {1: 100, 2: 101, 3: 100}


def float_literal(value: float, dtype: str) -> str:
    """An MLIR float literal that parses back to exactly `value` in `dtype`.

    >>> float_literal(1.0, "float64"), float_literal(1e-5, "float64"), float_literal(float("inf"), "float32")
    ('1.0', '1.0e-05', '0x7F800000')
    """
    v = float(np.asarray(value, dtype=dtype))
    if not np.isfinite(v):
        bits = np.asarray(v, dtype=dtype).view(np.uint32 if dtype == "float32" else np.uint64)
        width = 8 if dtype == "float32" else 16
        return f"0x{int(bits):0{width}X}"
    text = repr(v)
    if "e" in text:
        mant, exp = text.split("e")
        if "." not in mant:
            mant += ".0"
        return f"{mant}e{exp}"
    return text


def scalar_literal(value, dtype: str) -> str:
    """The literal of a scalar constant of `dtype`.

    >>> scalar_literal(True, "bool"), scalar_literal(-3, "int32"), scalar_literal(2, "float32")
    ('true', '-3', '2.0')
    """
    if dtype == "bool":
        return "true" if bool(value) else "false"
    if is_int(dtype):
        return str(int(value))
    return float_literal(value, dtype)


def signed64(value: int) -> int:
    """`value` modulo 2**64 as a signed 64-bit integer (for i64 literals)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= (1 << 63) else value


class ModuleEmitter:
    """Module-wide state: fresh SSA names, helper functions, run-time checks."""

    def __init__(self) -> None:
        self._counter = 0
        self._helpers: dict[str, str] = {}
        #: Messages of run-time checks, indexed by the check id stored in the
        #: error global; see :meth:`Block.check`.
        self.checks: list[str] = []
        #: Check id -> the exception class it raises, for checks that raise
        #: neither ValueError nor IndexError (``Assert``: AssertionError).
        self.check_exceptions: dict[int, type] = {}

    def fresh(self, hint: str = "v") -> str:
        name = f"%{hint}{self._counter}"
        self._counter += 1
        return name

    def helper(self, name: str, text: str) -> str:
        """Registers a private helper function once; returns its symbol."""
        self._helpers.setdefault(name, text)
        return f"@{name}"

    def add_check(self, message: str, exception: type | None = None) -> int:
        self.checks.append(message)
        if exception is not None:
            self.check_exceptions[len(self.checks) - 1] = exception
        return len(self.checks) - 1

    def function_block(self) -> "Block":
        return Block(self, indent=4)

    def module_text(self, functions: Sequence[str]) -> str:
        body = list(functions) + list(self._helpers.values())
        return "module {\n" + "\n".join(body) + "\n}\n"


class Block:
    """An SSA scope: binds variables to SSA names and emits nodes on demand.

    `parent` is the enclosing block whose values are visible here (a
    ``linalg.generic`` body); scopes that are isolated from above (function
    bodies, ``scan.scan`` regions) have none.
    """

    def __init__(self, module: ModuleEmitter, indent: int, parent: "Block | None" = None):
        self.module = module
        self.indent = indent
        self.parent = parent
        self.lines: list[str] = []
        self._values: dict[int, str] = {}
        self._consts: dict[tuple[str, str], str] = {}
        #: Nodes computed inside their only consumer's loop (see :meth:`plan`).
        self.fused: set[int] = set()

    # -- scopes --------------------------------------------------------------
    def child(self, inherit: bool) -> "Block":
        """A nested scope (`inherit`: outer values are visible, as in linalg bodies)."""
        return Block(self.module, self.indent + 4, self if inherit else None)

    def bind(self, var: Variable, ssa: str) -> None:
        self._values[var.id] = ssa

    def lookup(self, var: Variable) -> str | None:
        block: Block | None = self
        while block is not None:
            if var.id in block._values:
                return block._values[var.id]
            block = block.parent
        return None

    # -- text ----------------------------------------------------------------
    def stmt(self, text: str) -> None:
        for line in text.split("\n"):
            self.lines.append(" " * self.indent + line)

    def op(self, text: str, hint: str = "v") -> str:
        """Emits ``%new = text`` and returns ``%new``."""
        name = self.module.fresh(hint)
        self.stmt(f"{name} = {text}")
        return name

    def ops(self, text: str, count: int, hint: str = "r") -> list[str]:
        """Emits ``%new:count = text``; returns the result names."""
        if count == 1:
            return [self.op(text, hint)]
        name = self.module.fresh(hint)
        self.stmt(f"{name}:{count} = {text}")
        return [f"{name}#{i}" for i in range(count)]

    def text(self) -> str:
        return "\n".join(self.lines)

    # -- constants -------------------------------------------------------------
    def _cached(self, key: tuple[str, str], make: Callable[[], str]) -> str:
        block: Block | None = self
        while block is not None:
            if key in block._consts:
                return block._consts[key]
            block = block.parent
        ssa = make()
        self._consts[key] = ssa
        return ssa

    def const(self, value, dtype: str) -> str:
        """A scalar constant of `dtype` (``arith.constant``)."""
        lit = scalar_literal(value, dtype)
        mlir = DTYPES[dtype]
        text = f"arith.constant {lit}" if dtype == "bool" else f"arith.constant {lit} : {mlir}"
        return self._cached((lit, mlir), lambda: self.op(text, "c"))

    def index(self, value: int) -> str:
        """An ``index`` constant."""
        v = int(value)
        return self._cached((str(v), "index"), lambda: self.op(f"arith.constant {v} : index", "c"))

    def i64(self, value: int) -> str:
        return self.const(signed64(int(value)), "int64")

    def dense(self, array: np.ndarray, type_: TensorType) -> str:
        """A tensor constant."""
        if array.size and np.all(array == array.flat[0]) and not (
            is_float(type_.dtype) and np.isnan(array.flat[0])
        ):
            body = scalar_literal(array.flat[0].item(), type_.dtype)
        elif type_.dtype == "bool":
            body = _nested(array)
        else:
            raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
            body = '"0x' + raw.tobytes().hex().upper() + '"'
        key = (body, type_.mlir)
        return self._cached(key, lambda: self.op(f"arith.constant dense<{body}> : {type_.mlir}", "cst"))

    # -- values ----------------------------------------------------------------
    def plan(self, outputs: Sequence[Variable]) -> None:
        """Decides which nodes are fused into their consumer before emitting `outputs`.

        An element-wise node whose only use is another element-wise node of the
        same shape is computed inside that node's ``linalg.generic`` instead of
        in a loop (and a temporary tensor) of its own. Element-wise ops say so
        with ``Op.elementwise`` (see :mod:`mlir_scan.builder.graph`).
        """
        bound: set[int] = set()
        scope: Block | None = self
        while scope is not None:
            bound.update(scope._values)
            scope = scope.parent
        nodes = toposort(outputs, stop=bound)
        uses: dict[int, int] = {}
        for v in outputs:
            uses[v.id] = uses.get(v.id, 0) + 1
        for node in nodes:
            for v in node.inputs:
                uses[v.id] = uses.get(v.id, 0) + 1
        for node in nodes:
            if not node.op.elementwise or node.outputs[0].ndim == 0:
                continue
            out_shape = node.outputs[0].type.shape
            for v in node.inputs:
                producer = v.owner
                if (producer is None or not producer.op.elementwise or uses.get(v.id) != 1
                        or v.id in bound or v.ndim != len(out_shape)):
                    continue
                if any(a == 1 and c != 1 for a, c in zip(v.type.shape, out_shape)):
                    continue
                self.fused.add(id(producer))

    def value(self, var: Variable) -> str:
        """The SSA name of `var`, emitting whatever it needs first."""
        ssa = self.lookup(var)
        if ssa is not None:
            return ssa
        if isinstance(var, Constant):
            return self._constant(var)
        if var.owner is None:
            raise RuntimeError(
                f"internal error: {var!r} is not available in this scope "
                "(not an input of the function or of the scan body)"
            )
        bound: set[int] = set()
        scope: Block | None = self
        while scope is not None:
            bound.update(scope._values)
            scope = scope.parent
        nodes = toposort([var], stop=bound)
        lazy = _lazy_nodes(nodes, var)
        for node in nodes:
            if all(self.lookup(o) is not None for o in node.outputs):
                continue
            if id(node) in self.fused and node.outputs[0] is not var:
                continue  # emitted inside its consumer
            if id(node) in lazy:
                continue  # emitted in the branch of the lazy op that uses it
            args: list = []
            for inp in node.inputs:
                s = self.lookup(inp)
                if s is None and inp.owner is not None and (id(inp.owner) in self.fused or id(inp.owner) in lazy):
                    args.append(None)  # the consumer computes it
                    continue
                if s is None:
                    if isinstance(inp, Constant):
                        s = self._constant(inp)
                    else:
                        raise RuntimeError(
                            f"internal error: {inp!r} (input of {node.op}) is not "
                            "available in this scope"
                        )
                args.append(s)
            results = node.op.emit(self, node, args)
            if len(results) != len(node.outputs):
                raise RuntimeError(f"internal error: {node.op} emitted {len(results)} results")
            for out, ssa_out in zip(node.outputs, results):
                self.bind(out, ssa_out)
        ssa = self.lookup(var)
        assert ssa is not None
        return ssa

    def _constant(self, var: Constant) -> str:
        if var.type.ndim == 0:
            ssa = self.const(var.data.item(), var.type.dtype)
        else:
            ssa = self.dense(var.data, var.type)
        return ssa

    # -- index arithmetic and shapes --------------------------------------------
    def dim(self, ssa: str, type_: TensorType, d: int) -> str:
        """Dimension `d` of a tensor value, as an ``index``."""
        static = type_.shape[d]
        if static is not None:
            return self.index(static)
        return self.op(f"tensor.dim {ssa}, {self.index(d)} : {type_.mlir}", "dim")

    def dims(self, ssa: str, type_: TensorType) -> list[str]:
        return [self.dim(ssa, type_, d) for d in range(type_.ndim)]

    def to_index(self, ssa: str, dtype: str) -> str:
        if dtype == "bool":
            ssa = self.op(f"arith.extui {ssa} : i1 to i64")
            dtype = "int64"
        if not is_int(dtype):
            raise TypeError(f"internal error: index from {dtype}")
        return self.op(f"arith.index_cast {ssa} : {DTYPES[dtype]} to index", "idx")

    def from_index(self, ssa: str, dtype: str = "int64") -> str:
        return self.op(f"arith.index_cast {ssa} : index to {DTYPES[dtype]}")

    def index_dims(self, dims: Sequence[str], dtypes: Sequence[str], what: str) -> list[str]:
        """Index values from int scalars, clamped at 0 with a run-time error if negative."""
        out = []
        for i, (d, dt) in enumerate(zip(dims, dtypes)):
            idx = self.to_index(d, dt)
            zero = self.index(0)
            neg = self.icmp("slt", idx, zero)
            self.check(neg, f"{what}: dimension #{i} is negative ({{have}})", have=idx)
            out.append(self.iop("maxsi", idx, zero))
        return out

    def iop(self, name: str, a: str, b: str) -> str:
        """An ``index`` arithmetic op (``addi``, ``subi``, ``muli``, ``maxsi``...)."""
        return self.op(f"arith.{name} {a}, {b} : index", "ix")

    def icmp(self, pred: str, a: str, b: str, type_: str = "index") -> str:
        return self.op(f"arith.cmpi {pred}, {a}, {b} : {type_}", "cmp")

    def not_(self, cond: str) -> str:
        """The negation of the ``i1`` `cond`."""
        return self.op(f"arith.xori {cond}, {self.const(True, 'bool')} : i1")

    def select(self, cond: str, a: str, b: str, type_: str) -> str:
        return self.op(f"arith.select {cond}, {a}, {b} : {type_}", "sel")

    def check(self, bad: str, message: str, have: str | None = None, need: str | None = None,
              code: int = 1, exception: type | None = None) -> None:
        """Fails the call with `message` when the ``i1`` `bad` is true.

        Emits ``scan.check``: the failure ends the call at once (the run-time
        library's ``__mlir_scan_fail``), so the ops emitted after the check
        may assume that `bad` is false (no clamping of the sizes a check
        guards). :mod:`mlir_scan.builder.function` raises `message`
        (`code` 2: ``IndexError``, else ``ValueError``; `exception`, when
        given, is the class raised instead). `have` and `need` (``index``
        values) fill ``{have}``/``{need}`` in the message.
        """
        check_id = self.module.add_check(message, exception)
        have = have if have is not None else self.index(0)
        need = need if need is not None else self.index(0)
        self.stmt(f"scan.check {bad} code {_FAIL_CODES[code]} id {check_id} ({have}, {need} : index, index)")

    def if_else(self, cond: str, then_fn: Callable[["Block"], str], else_fn: Callable[["Block"], str],
                result_type: str, hint: str = "if") -> str:
        """``scf.if`` yielding one value: `then_fn`/`else_fn` emit each branch's value."""
        then_b, else_b = self.child(inherit=True), self.child(inherit=True)
        then_b.stmt(f"scf.yield {then_fn(then_b)} : {result_type}")
        else_b.stmt(f"scf.yield {else_fn(else_b)} : {result_type}")
        name = self.module.fresh(hint)
        self.stmt(f"{name} = scf.if {cond} -> ({result_type}) {{")
        self.lines.extend(then_b.lines)
        self.stmt("} else {")
        self.lines.extend(else_b.lines)
        self.stmt("}")
        return name

    # -- conversions -------------------------------------------------------------
    def cast(self, ssa: str, src: str, dst: str) -> str:
        """Converts a scalar of dtype `src` to dtype `dst` (NumPy's ``astype``)."""
        if src == dst:
            return ssa
        s, d = DTYPES[src], DTYPES[dst]
        if dst == "bool":
            if is_float(src):
                return self.op(f"arith.cmpf une, {ssa}, {self.const(0.0, src)} : {s}")
            return self.op(f"arith.cmpi ne, {ssa}, {self.const(0, src)} : {s}")
        if src == "bool":
            if is_float(dst):
                return self.op(f"arith.uitofp {ssa} : i1 to {d}")
            return self.op(f"arith.extui {ssa} : i1 to {d}")
        if is_float(src) and is_float(dst):
            opname = "extf" if np.dtype(dst).itemsize > np.dtype(src).itemsize else "truncf"
            return self.op(f"arith.{opname} {ssa} : {s} to {d}")
        if is_int(src) and is_int(dst):
            opname = "extsi" if np.dtype(dst).itemsize > np.dtype(src).itemsize else "trunci"
            return self.op(f"arith.{opname} {ssa} : {s} to {d}")
        if is_int(src):
            return self.op(f"arith.sitofp {ssa} : {s} to {d}")
        return self.op(f"arith.fptosi {ssa} : {s} to {d}")

    # -- tensors -----------------------------------------------------------------
    def empty(self, type_: TensorType, dims: Sequence[str]) -> str:
        """``tensor.empty`` of `type_`; `dims` holds one index per dimension."""
        dyn = [dims[i] for i, s in enumerate(type_.shape) if s is None]
        return self.op(f"tensor.empty({', '.join(dyn)}) : {type_.mlir}", "empty")

    def filled(self, type_: TensorType, dims: Sequence[str], scalar: str) -> str:
        """A tensor of `type_` with every element `scalar`."""
        empty = self.empty(type_, dims)
        return self.op(
            f"linalg.fill ins({scalar} : {type_.mlir_elem}) outs({empty} : {type_.mlir}) -> {type_.mlir}",
            "fill",
        )

    def tensor_cast(self, ssa: str, src: TensorType, dst: TensorType) -> str:
        """``tensor.cast`` between types differing only in static dimensions."""
        if src.mlir == dst.mlir:
            return ssa
        return self.op(f"tensor.cast {ssa} : {src.mlir} to {dst.mlir}", "cast")

    def generic(
        self,
        ins: Sequence[tuple[str, TensorType | str, str]],
        outs: Sequence[tuple[str, TensorType, str]],
        iterators: Sequence[str],
        body: Callable[["Block", list[str]], list[str]],
    ) -> list[str]:
        """A ``linalg.generic``.

        `ins`/`outs` are (ssa, type, affine map results such as ``"(d0, 0)"``);
        an input whose type is a dtype string is a scalar. `body` gets the
        body block and the block arguments and returns the yielded values.
        """
        n = len(iterators)
        dims = ", ".join(f"d{i}" for i in range(n))
        maps = [f"affine_map<({dims}) -> {m}>" for _, _, m in list(ins) + list(outs)]
        its = ", ".join(f'"{it}"' for it in iterators)
        inner = self.child(inherit=True)
        args, arg_decl = [], []
        for _, t, _ in list(ins) + list(outs):
            elem = DTYPES[t] if isinstance(t, str) else t.mlir_elem
            a = self.module.fresh("a")
            args.append(a)
            arg_decl.append(f"{a}: {elem}")
        yields = body(inner, args)
        out_elems = [t.mlir_elem for _, t, _ in outs]
        inner.stmt(f"linalg.yield {', '.join(yields)} : {', '.join(out_elems)}")

        def types(items):
            return ", ".join(DTYPES[t] if isinstance(t, str) else t.mlir for _, t, _ in items)

        head = f"linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}}"
        if ins:
            head += f" ins({', '.join(s for s, _, _ in ins)} : {types(ins)})"
        head += f" outs({', '.join(s for s, _, _ in outs)} : {types(outs)}) {{"
        results = ", ".join(t.mlir for _, t, _ in outs)
        name = self.module.fresh("g")
        count = len(outs)
        lhs = name if count == 1 else f"{name}:{count}"
        self.stmt(f"{lhs} = {head}")
        self.stmt(f"^bb0({', '.join(arg_decl)}):")
        self.lines.extend(inner.lines)
        self.stmt(f"}} -> {results}" if count == 1 else f"}} -> ({results})")
        return [name] if count == 1 else [f"{name}#{i}" for i in range(count)]

    def check_broadcast_size(self, have: str, need: str, i: int, what: str) -> None:
        """Fails the call unless an operand's size `have` along output
        dimension `i` is the output's size `need` (``index`` values)."""
        self.check(self.icmp("ne", have, need), f"{what}: shapes do not match: size {{have}} != {{need}} along "
                   f"dimension {i} (only dimensions of static size 1 broadcast)", have, need)

    def elementwise(
        self,
        out_type: TensorType,
        operands: Sequence[tuple[str, TensorType]],
        body: Callable[["Block", list[str]], str],
        out_dims: Sequence[str] | None = None,
        what: str = "elementwise",
    ) -> str:
        """Applies the scalar function `body` with NumPy broadcasting.

        Scalars (rank 0) call `body` directly; tensors become one
        ``linalg.generic`` whose indexing maps broadcast the operands (a
        statically-1 dimension reads index 0). `out_dims` gives the output's
        dimensions when no operand has them (e.g. filling a new tensor).

        Dimensions that must agree but are only known at run time are
        checked (``scan.check``): a mismatch ends the call before the
        ``linalg.generic`` runs.
        """
        if out_type.ndim == 0:
            return body(self, [s for s, _ in operands])
        rank = out_type.ndim
        operands = list(operands)
        final_dims: list[str] = []
        for i, size in enumerate(out_type.shape):
            cands = []
            for j, (_, t) in enumerate(operands):
                k = i - (rank - t.ndim)
                if k >= 0 and t.shape[k] != 1:
                    cands.append((j, k, t.shape[k]))
            if out_dims is not None:
                ref, ref_static = out_dims[i], size
            elif size is not None:
                ref, ref_static = self.index(size), size
            elif cands:
                j, k, _ = cands[0]
                ref, ref_static = self.dim(operands[j][0], operands[j][1], k), None
                cands = cands[1:]
            else:
                raise RuntimeError(f"internal error: no operand gives dimension {i}")
            final_dims.append(ref)
            unsure = [(j, k) for j, k, s in cands if s is None or ref_static is None]
            if not unsure:
                continue
            for j, k in unsure:
                self.check_broadcast_size(self.dim(operands[j][0], operands[j][1], k), ref, i, what)
        ins = []
        for ssa, t in operands:
            if t.ndim == 0:
                ins.append((ssa, t.dtype, "()"))
                continue
            exprs = []
            for k, size in enumerate(t.shape):
                i = k + rank - t.ndim
                exprs.append("0" if size == 1 and out_type.shape[i] != 1 else f"d{i}")
            ins.append((ssa, t, "(" + ", ".join(exprs) + ")"))
        out = self.empty(out_type, final_dims)
        ident = "(" + ", ".join(f"d{i}" for i in range(rank)) + ")"

        def gen_body(b: Block, args: list[str]) -> list[str]:
            return [body(b, args[: len(operands)])]

        return self.generic(ins, [(out, out_type, ident)], ["parallel"] * rank, gen_body)[0]


def _lazy_nodes(nodes: list, var: Variable) -> set[int]:
    """Ids of the nodes among `nodes` that `var` needs only through lazy inputs.

    An op with a ``lazy_inputs(node)`` method (``IfElse``: its branches)
    computes those inputs itself, in the branch that runs; a node used only
    there (directly, or through other such nodes) is not emitted before it.
    """
    if not any(getattr(n.op, "lazy_inputs", None) is not None for n in nodes):
        return set()
    users: dict[int, list] = {}
    for n in nodes:
        for k, inp in enumerate(n.inputs):
            if inp.owner is not None:
                users.setdefault(id(inp.owner), []).append((n, k))
    lazy: set[int] = set()
    for n in reversed(nodes):
        if var.owner is n:
            continue
        uses = users.get(id(n), [])
        if uses and all(id(c) in lazy or (getattr(c.op, "lazy_inputs", None) is not None
                                          and k in c.op.lazy_inputs(c)) for c, k in uses):
            lazy.add(id(n))
    return lazy


def _nested(array: np.ndarray) -> str:
    if array.ndim == 0:
        return "true" if bool(array) else "false"
    return "[" + ", ".join(_nested(a) for a in array) + "]"
