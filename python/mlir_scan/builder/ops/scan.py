"""The scan node of the graph and its MLIR form, ``scan.scan``.

A :class:`ScanOp` holds the inner graph (placeholders for the step's inputs
and the variables the step computes) and the op's static structure (taps,
counts, flags). Its node's inputs are the outer values, in the groups of
``scan.scan``: ``n_steps``, sequences, mitsot inits, sitsot inits,
non-sequences, then the outer sizes of nitsot rows whose shape is not static.
Outputs are mitsot, sitsot and nitsot results (``tensor<N x row>``), in that
order. :mod:`mlir_scan.builder.scan_module` builds these nodes from Theano's API.

A nitsot whose rows have dynamic sizes computable before the loop is
emitted as a sitsot whose state is never read (its buffer then exists before
the first step, which computes its row in place). One whose sizes only a
step knows (`nitsot_runtime`) is a nitsot with dynamic rows: the lowering
sizes its buffer from the first step's row.

Example (what ``scan`` builds for a running sum)::

    >>> import mlir_scan as ms
    >>> from mlir_scan import tensor as T
    >>> xs = T.vector("xs")
    >>> ys, _ = ms.scan(lambda x, acc: acc + x, sequences=xs, outputs_info=T.constant(0.0))
    >>> op = ys.owner.op
    >>> op.n_seqs, op.n_sitsot, op.n_nitsot, [str(v.type) for v in op.inner_inputs]
    (1, 1, 0, ['TensorType(float64, ())', 'TensorType(float64, ())'])
"""

from __future__ import annotations

import numpy as np

from ..emitter import Block
from ..graph import Apply, Constant, Op, TensorType, Variable, toposort
from . import scan_grad
from .autodiff import connection_pattern as pattern_of
from .shape import Shape_i, fold_shapes

__all__ = ["ScanOp", "ScanShape"]


class ScanOp(Op):
    """The inner function and static structure of one scan."""

    def __init__(
        self,
        *,
        inner_inputs: list[Variable],
        inner_outputs: list[Variable],
        seq_taps: list[tuple[int, ...]],
        mitsot_taps: list[tuple[int, ...]],
        n_sitsot: int,
        n_nitsot: int,
        n_nonseqs: int,
        until: bool,
        go_backwards: bool,
        keep: list[int],
        nitsot_shapes: list[tuple[int | None, ...]],
        name: str | None = None,
        truncate_gradient: int = -1,
        kinds: list[str] | None = None,
        state_checks: list[tuple[int, int, bool, str]] | None = None,
        mitmot_taps: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
        nitsot_runtime: list[bool] | None = None,
        type_error: str | None = None,
    ):
        self.inner_inputs = list(inner_inputs)
        # Sizes read from values the step computes are computed from the step's inputs.
        self.inner_outputs = fold_shapes(list(inner_outputs))
        self.seq_taps = [tuple(t) for t in seq_taps]
        self.mitsot_taps = [tuple(t) for t in mitsot_taps]
        self.n_seqs = len(self.seq_taps)
        #: (in_taps, out_taps) of each mitmot group (what a gradient builds):
        #: its buffer is an input after the sequences, its in-tap slices are
        #: inner inputs after the sequence slices, its out-tap rows the first
        #: inner outputs, and the final buffer the first outputs of the node.
        self.mitmot_taps = [(tuple(i), tuple(o)) for i, o in (mitmot_taps or [])]
        self.n_mitmot = len(self.mitmot_taps)
        self.n_mitsot = len(self.mitsot_taps)
        self.n_sitsot = n_sitsot
        self.n_nitsot = n_nitsot
        self.n_nonseqs = n_nonseqs
        self.until = until
        self.go_backwards = go_backwards
        self.keep = list(keep)
        self.nitsot_shapes = [tuple(s) for s in nitsot_shapes]
        #: Per nitsot: True when its rows' dynamic sizes are known only when a
        #: step runs (no outer size inputs; sized by the first step).
        self.nitsot_runtime = list(nitsot_runtime or [False] * len(self.nitsot_shapes))
        self.name = name
        self.truncate_gradient = truncate_gradient
        #: What each sitsot is: "output" (a user's), "update" (a shared variable).
        self.kinds = kinds or ["output"] * n_sitsot
        #: (output, dimension, checked before the loop?, message): state rows
        #: whose size must match the size of fn's output. Checks done before
        #: the loop take the output's size, computed outside, as an input.
        self.state_checks = [tuple(c) for c in (state_checks or [])]
        #: Why the scan's types are inconsistent (a state's broadcast pattern against its step's
        #: output): it builds, and compiling or differentiating it raises TypeError with this.
        self.type_error = type_error
        n_out = self.n_mitsot + n_sitsot + n_nitsot
        if len(self.keep) != n_out:
            raise ValueError("ScanOp: one keep entry per output")
        if len(self.inner_outputs) != self.n_mitmot_outs + n_out + (1 if until else 0):
            raise ValueError("ScanOp: one inner output per output (+ the until condition)")

    # Theano's Scan equality: two scans are equal when their static structure and
    # their inner graphs, up to the names of the inner variables, are the same
    # (``scan(f, x)`` and ``scan(f, y)`` apply equal ops to other inputs).
    def _static_key(self) -> tuple:
        return (tuple(self.seq_taps), tuple(self.mitsot_taps), tuple(self.mitmot_taps), self.n_sitsot,
                self.n_nitsot, self.n_nonseqs, self.until, self.go_backwards, tuple(self.keep),
                tuple(self.nitsot_shapes), tuple(self.nitsot_runtime), self.truncate_gradient,
                tuple(self.kinds), tuple(self.state_checks), self.type_error)

    def _structure(self) -> tuple:
        """(static key, inner input types, inner nodes as (op, input references), inner outputs),
        computed once; an inner variable is referred to by its position, a constant by its
        value, a free variable (a shared one) by its identity."""
        key = self.__dict__.get("_structure_key")
        if key is not None:
            return key
        index: dict[int, tuple] = {v.id: ("in", k) for k, v in enumerate(self.inner_inputs)}

        def ref(v: Variable) -> tuple:
            if v.id in index:
                return index[v.id]
            if isinstance(v, Constant):
                data = np.asarray(v.data)
                return ("const", str(data.dtype), data.shape, data.tobytes())
            return ("free", v.id)

        nodes = []
        for n, node in enumerate(toposort(self.inner_outputs)):
            nodes.append((node.op, tuple(ref(i) for i in node.inputs)))
            for k, out in enumerate(node.outputs):
                index[out.id] = ("node", n, k)
        types = tuple((v.type.dtype, v.type.shape) for v in self.inner_inputs)
        key = (self._static_key(), types, tuple(nodes), tuple(ref(o) for o in self.inner_outputs))
        self._structure_key = key
        return key

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(self) is not type(other) or self._static_key() != other._static_key():  # type: ignore[attr-defined]
            return False
        try:
            return bool(self._structure() == other._structure())  # type: ignore[attr-defined]
        except (TypeError, ValueError):  # (an op parameter that does not compare: an array)
            return False

    def __hash__(self) -> int:
        # (the op types only: some ops' parameters are not hashable)
        static, types, nodes, _ = self._structure()
        return hash((static, types, tuple(type(op).__name__ for op, _ in nodes)))

    def __str__(self) -> str:
        return f"Scan{{{self.name}}}" if self.name else "Scan"

    __repr__ = __str__

    # -- structure -------------------------------------------------------------
    @property
    def n_outputs(self) -> int:
        """The outputs with one row per step (mitsot, sitsot, nitsot), after the mitmot buffers."""
        return self.n_mitsot + self.n_sitsot + self.n_nitsot

    @property
    def n_mitmot_ins(self) -> int:
        return sum(len(i) for i, _ in self.mitmot_taps)

    @property
    def n_mitmot_outs(self) -> int:
        return sum(len(o) for _, o in self.mitmot_taps)

    #: :func:`~mlir_scan.builder.ops.autodiff.backprop` tells which inputs need a gradient.
    L_op_wants_needed = True

    def L_op(self, node: Apply, output_grads: list, needed: list | None = None) -> list:
        """Backpropagation through time: a backward ``scan.scan`` (see :mod:`.scan_grad`)."""
        if self.type_error:
            raise TypeError(self.type_error)
        return scan_grad.scan_L_op(self, node, output_grads, needed)

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        """Theano's ``Scan.connection_pattern``: ``[i][j]``, whether output ``j`` depends on input ``i``.

        Read from the inner graph (through its ops' connection patterns),
        then closed over the recurrences: a state's output depends on what
        its taps' values depend on. ``n_steps`` and the size inputs are not
        connected; a state's initial value is connected to its own output
        when the output can hold initial rows (``keep``) or is a MITMOT
        buffer.
        """
        cached = getattr(self, "_connection_pattern", None)
        if cached is not None and len(cached) == len(node.inputs):
            return [list(row) for row in cached]
        mask: dict[int, int] = {v.id: 1 << k for k, v in enumerate(self.inner_inputs)}
        for inner_node in toposort(self.inner_outputs):
            rows = pattern_of(inner_node)
            for j, out in enumerate(inner_node.outputs):
                m = 0
                for i, inp in enumerate(inner_node.inputs):
                    if rows[i][j]:
                        m |= mask.get(inp.id, 0)
                mask[out.id] = mask.get(out.id, 0) | m
        inner_mask = [mask.get(v.id, 0) for v in self.inner_outputs]

        # Outer inputs -> bit masks of their inner inputs.
        def bits(start: int, n: int) -> int:
            return sum(1 << k for k in range(start, start + n))

        in_bits: list[int] = [0]  # n_steps
        k = 0
        for taps in self.seq_taps:
            in_bits.append(bits(k, len(taps)))
            k += len(taps)
        state_bits = []  # per outer output: the inner inputs of its own taps
        for i_taps, _ in self.mitmot_taps:
            in_bits.append(bits(k, len(i_taps)))
            state_bits.append(bits(k, len(i_taps)))
            k += len(i_taps)
        for taps in self.mitsot_taps:
            in_bits.append(bits(k, len(taps)))
            state_bits.append(bits(k, len(taps)))
            k += len(taps)
        for _ in range(self.n_sitsot):
            in_bits.append(1 << k)
            state_bits.append(1 << k)
            k += 1
        for _ in range(self.n_nonseqs):
            in_bits.append(1 << k)
            k += 1
        in_bits += [0] * (len(node.inputs) - len(in_bits))
        state_bits += [0] * self.n_nitsot

        # Outer outputs -> bit masks of the inner inputs their inner outputs read.
        out_bits = []
        pos = 0
        for _, o_taps in self.mitmot_taps:
            m = 0
            for q in range(pos, pos + len(o_taps)):
                m |= inner_mask[q]
            out_bits.append(m)
            pos += len(o_taps)
        for q in range(pos, pos + self.n_outputs):
            out_bits.append(inner_mask[q])

        n_out = len(node.outputs)
        n_states = self.n_mitmot + self.n_mitsot + self.n_sitsot
        # conn[j]: the inner inputs output j depends on, closed over the recurrences.
        conn = list(out_bits)
        changed = True
        while changed:
            changed = False
            for j in range(n_out):
                m = conn[j]
                for s in range(n_states):
                    if conn[j] & state_bits[s]:
                        m |= conn[s]
                if m != conn[j]:
                    conn[j], changed = m, True
        keep = [True] * self.n_mitmot + [bool(k) for k in self.keep[:self.n_mitsot + self.n_sitsot]]
        rows = []
        for i, b in enumerate(in_bits):
            row = [bool(conn[j] & b) for j in range(n_out)]
            rows.append(row)
        # A state's own initial value reaches its output directly where initial rows can be returned.
        first_state_input = 1 + self.n_seqs
        for s in range(n_states):
            if keep[s]:
                rows[first_state_input + s][s] = True
        self._connection_pattern = [tuple(r) for r in rows]
        return rows

    def n_dyn_dims(self) -> int:
        return self._dyn_dims_before(len(self.nitsot_shapes))

    def _dyn_dims_before(self, j: int) -> int:
        """The outer size inputs of the nitsots before nitsot `j`."""
        return sum(1 for s, rt in zip(self.nitsot_shapes[:j], self.nitsot_runtime[:j]) if not rt
                   for d in s if d is None)

    def n_check_inputs(self) -> int:
        return sum(1 for c in self.state_checks if c[2])

    def outer_groups(self, node: Apply) -> dict[str, list[Variable]]:
        """The node's inputs split into the groups of ``scan.scan``."""
        return self.split_inputs(node.inputs)

    def split_inputs(self, ins: list) -> dict[str, list]:
        """A list ordered like the node's inputs, split into the groups of ``scan.scan``."""
        i = 1
        groups = {"n_steps": [ins[0]]}
        for name, n in (("sequences", self.n_seqs), ("mitmot", self.n_mitmot), ("mitsot", self.n_mitsot), ("sitsot", self.n_sitsot),
                        ("nonseqs", self.n_nonseqs), ("nitsot_dims", self.n_dyn_dims()),
                        ("state_dims", self.n_check_inputs())):
            groups[name] = ins[i:i + n]
            i += n
        return groups

    def static_steps(self, n_steps: Variable) -> int | None:
        if self.until or not isinstance(n_steps, Constant):
            return None
        return int(n_steps.data)

    def make_node(self, n_steps: Variable, *outer: Variable) -> Apply:
        expected = (self.n_seqs + self.n_mitmot + self.n_mitsot + self.n_sitsot + self.n_nonseqs + self.n_dyn_dims()
                    + self.n_check_inputs())
        if len(outer) != expected:
            raise TypeError(f"{self}: expected {expected + 1} inputs, got {len(outer) + 1}")
        if n_steps.ndim != 0 or n_steps.dtype not in ("int8", "int16", "int32", "int64"):
            raise TypeError(f"{self}: n_steps must be an integer scalar, got {n_steps.type}")
        node_inputs = [n_steps, *outer]
        n = self.static_steps(n_steps)
        # Check the outer values against the inner placeholders (a rebuilt node
        # may get new outer values, e.g. from givens).
        k = 0
        ins = list(outer)
        pos = 0
        for taps in self.seq_taps:
            seq = ins[pos]
            for _ in taps:
                ph = self.inner_inputs[k]
                if seq.ndim != ph.ndim + 1 or seq.dtype != ph.dtype:
                    raise TypeError(f"{self}: sequence {seq} ({seq.type}) does not match its slices ({ph.type})")
                k += 1
            pos += 1
        mitmot_types = []
        for in_taps, _ in self.mitmot_taps:
            buf = ins[pos]
            for _ in in_taps:
                ph = self.inner_inputs[k]
                if buf.ndim != ph.ndim + 1 or buf.dtype != ph.dtype:
                    raise TypeError(f"{self}: mitmot buffer {buf} ({buf.type}) does not match its taps ({ph.type})")
                k += 1
            mitmot_types.append(buf.type)
            pos += 1
        for taps in self.mitsot_taps:
            init = ins[pos]
            ph = self.inner_inputs[k]
            if init.ndim != ph.ndim + 1 or init.dtype != ph.dtype:
                raise TypeError(f"{self}: mitsot init {init} ({init.type}) does not match its taps ({ph.type})")
            k += len(taps)
            pos += 1
        for _ in range(self.n_sitsot + self.n_nonseqs):
            v, ph = ins[pos], self.inner_inputs[k]
            if v.type != ph.type:
                raise TypeError(f"{self}: {v} ({v.type}) does not match the inner input {ph} ({ph.type})")
            k += 1
            pos += 1
        out_types = list(mitmot_types)
        outs = self.inner_outputs[self.n_mitmot_outs:]
        first = self.n_seqs + self.n_mitmot
        for i in range(self.n_outputs):
            rows = self.keep[i] or n
            if i < self.n_mitsot:
                init = outer[first + i]
                out_types.append(init.type.row().stacked(rows))
            elif i < self.n_mitsot + self.n_sitsot:
                init = outer[first + i]
                out_types.append(init.type.stacked(rows))
            else:
                j = i - self.n_mitsot - self.n_sitsot
                out_types.append(TensorType(outs[i].dtype, self.nitsot_shapes[j]).stacked(rows))
        return Apply(self, node_inputs, out_types)

    def infer_shape(self, node: Apply, input_shapes: list[tuple]) -> list[tuple]:
        groups = self.outer_groups(node)
        first = 1 + self.n_seqs + self.n_mitmot
        n_steps = node.inputs[0]
        dyn = iter(groups["nitsot_dims"])
        shapes = [tuple(input_shapes[1 + self.n_seqs + j]) for j in range(self.n_mitmot)]
        for i in range(self.n_outputs):
            if self.keep[i]:
                lead = self.keep[i]
            elif self.until:
                lead = None
            else:
                lead = n_steps
            if i < self.n_mitsot:
                rest = tuple(input_shapes[first + i][1:])
            elif i < self.n_mitsot + self.n_sitsot:
                rest = tuple(input_shapes[first + i])
            else:
                j = i - self.n_mitsot - self.n_sitsot
                if self.nitsot_runtime[j]:
                    rest = tuple(d if d is not None else Shape_i(k + 1)(node.outputs[self.n_mitmot + i])
                                 for k, d in enumerate(self.nitsot_shapes[j]))
                else:
                    rest = tuple(d if d is not None else next(dyn) for d in self.nitsot_shapes[j])
            if lead is None:
                out_var = node.outputs[self.n_mitmot + i]
                static = out_var.type.shape[0]
                lead = static if static is not None else _dim0(out_var)
            shapes.append((lead,) + rest)
        return shapes

    def infer_checked_shape(self, node: Apply, input_shapes: list[tuple]) -> list[tuple]:
        """The shapes a user's query sees: sizes computed with the scan's own checks.

        A scan with a static ``n_steps`` has a static number of rows, but it
        fails when its sequences are too short (or ``n_steps`` is negative,
        or a state does not keep its shape): ``o.shape[0]`` must fail then
        too, and must not make the scan's inputs unused. Each output's sizes
        are the outputs of a :class:`ScanShape` node, which checks what the
        scan checks before its loop and computes the sizes without reading
        the scan's result. The node still takes the result as an input, so
        the scan is emitted: a body with run-time checks of its own has
        effects and runs (its checks fail the query as they fail the
        values); a body without any is pure and the pipeline deletes the
        scan. `until` scans keep their row count read from the result.
        """
        # A mitmot's final buffer has the shape of the buffer given.
        shapes = [tuple(input_shapes[1 + self.n_seqs + j]) for j in range(self.n_mitmot)]
        for i in range(self.n_outputs):
            out = node.outputs[self.n_mitmot + i]
            dims = list(ScanShape(self, i).make_node(*node.inputs, out).outputs)
            if self.keep[i]:
                dims[0] = self.keep[i]
            elif self.until:
                dims[0] = _dim0(out)
            shapes.append(tuple(dims))
        return shapes

    def emit_outer_checks(self, b: Block, inputs: list[str], variables: list[Variable]) -> str:
        """Emits the checks the lowered scan does before its loop; returns n_steps as an index.

        The failures and their messages are those of the scan itself
        (``ScanRuntime.cpp``), plus the builder's state checks done before
        the loop.
        """
        pairs = self.split_inputs(list(zip(inputs, variables)))
        n_ssa, n_var = pairs["n_steps"][0]
        n = b.index(int(n_var.data)) if isinstance(n_var, Constant) else b.to_index(n_ssa, n_var.dtype)
        zero = b.index(0)
        b.check(b.icmp("slt", n, zero), "scan: n_steps is {have}, must be >= 0", have=n)
        for i, ((ssa, var), taps) in enumerate(zip(pairs["sequences"], self.seq_taps)):
            span = max(0, max(taps)) - min(0, min(taps))
            have = b.dim(ssa, var.type, 0)
            need = b.iop("addi", n, b.index(span))
            b.check(b.icmp("slt", have, need),
                    f"scan: sequence #{i} has {{have}} rows but the steps and taps need {{need}}", have, need)
        for i, ((ssa, var), taps) in enumerate(zip(pairs["mitsot"], self.mitsot_taps)):
            if var.type.shape[0] is not None:
                continue
            have, need = b.dim(ssa, var.type, 0), b.index(-min(taps))
            b.check(b.icmp("ne", have, need), f"scan: mitsot #{i} init has {{have}} rows but its taps need {{need}}",
                    have, need)
        inits = pairs["mitsot"] + pairs["sitsot"]
        state_dims = iter(pairs["state_dims"])
        for out_idx, d, hoisted, message in self.state_checks:
            if not hoisted:
                continue
            ssa, var = next(state_dims)
            have = b.to_index(ssa, var.dtype)
            init_ssa, init_var = inits[out_idx]
            need = b.dim(init_ssa, init_var.type, d + (1 if out_idx < self.n_mitsot else 0))
            b.check(b.icmp("ne", have, need), message, have, need)
        return n

    # -- MLIR --------------------------------------------------------------------
    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        if self.type_error:
            raise TypeError(self.type_error)
        groups = self.outer_groups(node)
        it = iter(inputs)
        n_ssa = next(it)
        seqs = [next(it) for _ in range(self.n_seqs)]
        mitmots = [next(it) for _ in range(self.n_mitmot)]
        mitsots = [next(it) for _ in range(self.n_mitsot)]
        sitsots = [next(it) for _ in range(self.n_sitsot)]
        nonseqs = [next(it) for _ in range(self.n_nonseqs)]
        dims = [next(it) for _ in range(self.n_dyn_dims())]
        state_dims = [next(it) for _ in range(self.n_check_inputs())]

        n_index = b.to_index(n_ssa, node.inputs[0].dtype)
        if isinstance(node.inputs[0], Constant):
            n_index = b.index(int(node.inputs[0].data))
        n_static = self.static_steps(node.inputs[0])

        # fn's outputs must have the shape of their states: checked before the
        # loop where the output's size is known outside (no step runs if not).
        inits = mitsots + sitsots
        init_vars = list(groups["mitsot"]) + list(groups["sitsot"])
        sd_it = iter(zip(state_dims, groups["state_dims"]))
        for out_idx, d, hoisted, message in self.state_checks:
            if not hoisted:
                continue
            ssa, var = next(sd_it)
            have = b.to_index(ssa, var.dtype)
            init_t = init_vars[out_idx].type
            need = b.dim(inits[out_idx], init_t, d + (1 if out_idx < self.n_mitsot else 0))
            bad = b.icmp("ne", have, need)
            b.check(bad, message, have, need)

        # Nitsots with dynamic rows become sitsots with a zero init.
        n_mm = self.n_mitmot_outs
        nit_out = self.inner_outputs[n_mm + self.n_mitsot + self.n_sitsot:n_mm + self.n_outputs]
        converted, static_nit = [], []
        dim_it = iter(zip(dims, groups["nitsot_dims"]))
        for j, shape in enumerate(self.nitsot_shapes):
            if None in shape and not self.nitsot_runtime[j]:
                row = TensorType(nit_out[j].dtype, shape)
                sizes = []
                for d in shape:
                    if d is None:
                        ssa, var = next(dim_it)
                        # (clamped at 0 like every allocation of the body)
                        sizes.append(b.iop("maxsi", b.to_index(ssa, var.dtype), b.index(0)))
                    else:
                        sizes.append(b.index(d))
                zero = b.const(0.0 if row.dtype.startswith("float") else (False if row.dtype == "bool" else 0), row.dtype)
                converted.append((j, b.filled(row, sizes, zero), row))
            else:
                static_nit.append(j)

        seq_vars = groups["sequences"]
        mm_vars = groups["mitmot"]
        mit_vars = groups["mitsot"]
        sit_vars = groups["sitsot"]
        non_vars = groups["nonseqs"]

        region = Block(b.module, indent=b.indent + 2)
        arg_decls = []

        def bind(ph: Variable, mlir_type: str) -> None:
            a = b.module.fresh("arg")
            region.bind(ph, a)
            arg_decls.append(f"{a}: {mlir_type}")

        k = 0
        for i, taps in enumerate(self.seq_taps):
            for _ in taps:
                bind(self.inner_inputs[k], seq_vars[i].type.row().mlir)
                k += 1
        for i, (in_taps, _) in enumerate(self.mitmot_taps):
            for _ in in_taps:
                bind(self.inner_inputs[k], mm_vars[i].type.row().mlir)
                k += 1
        for i, taps in enumerate(self.mitsot_taps):
            for _ in taps:
                bind(self.inner_inputs[k], mit_vars[i].type.row().mlir)
                k += 1
        for i in range(self.n_sitsot):
            bind(self.inner_inputs[k], sit_vars[i].type.mlir)
            k += 1
        # The converted nitsots' states are never read: unbound block arguments.
        for _, _, row in converted:
            arg_decls.append(f"{b.module.fresh('unused')}: {row.mlir}")
        for i in range(self.n_nonseqs):
            bind(self.inner_inputs[k], non_vars[i].type.mlir)
            k += 1
        # (Group order: sequences, mitsots, sitsots + converted nitsots, non-sequences.)
        decls = arg_decls

        # Yields: mitsot, sitsot (+ converted nitsots), static nitsots, until.
        yields: list[tuple[str, str]] = []
        region.plan(self.inner_outputs)

        def yield_value(var: Variable, want: TensorType, ref: str | None = None, idx: int = -1) -> None:
            ssa = region.value(var)
            guards = [(d, msg) for o, d, hoisted, msg in self.state_checks if o == idx and not hoisted]
            if guards and ref is not None:
                # The size is only known inside the loop: check every step (a
                # mismatch ends the call before the row is stored).
                for d, msg in guards:
                    have = region.dim(ssa, var.type, d)
                    need = region.dim(ref, want, d)
                    region.check(region.icmp("ne", have, need), msg, have, need)
            if var.ndim:
                ssa = region.tensor_cast(ssa, var.type, want)
            yields.append((ssa, want.mlir))

        for j, (_, out_taps) in enumerate(self.mitmot_taps):
            start = sum(len(o) for _, o in self.mitmot_taps[:j])
            for q in range(len(out_taps)):
                yield_value(self.inner_outputs[start + q], mm_vars[j].type.row())
        outs = self.inner_outputs[n_mm:]
        k = sum(len(taps) for taps in self.seq_taps) + self.n_mitmot_ins
        mit_refs = []
        for taps in self.mitsot_taps:
            mit_refs.append(region.lookup(self.inner_inputs[k]))
            k += len(taps)
        sit_refs = [region.lookup(self.inner_inputs[k + i]) for i in range(self.n_sitsot)]
        for i in range(self.n_mitsot):
            yield_value(outs[i], mit_vars[i].type.row(), mit_refs[i], i)
        for i in range(self.n_sitsot):
            yield_value(outs[self.n_mitsot + i], sit_vars[i].type, sit_refs[i], self.n_mitsot + i)
        for j, _, row in converted:
            yield_value(nit_out[j], row)
        for j in static_nit:
            yield_value(nit_out[j], TensorType(nit_out[j].dtype, self.nitsot_shapes[j]))
        if self.until:
            cond = outs[-1]
            ssa = region.value(cond)
            yields.append((region.cast(ssa, cond.dtype, "bool"), "i1"))
        region.stmt(f"scan.yield {', '.join(s for s, _ in yields)} : {', '.join(t for _, t in yields)}")

        # Result types, in op order, and the keep list.
        def rows(i: int) -> str:
            k = self.keep[i]
            if k:
                return str(k)
            return "?" if n_static is None else str(n_static)

        def stacked(row_mlir: str, i: int) -> str:
            r = rows(i)
            if row_mlir.startswith("tensor<"):
                return f"tensor<{r}x{row_mlir[len('tensor<'):]}"
            return f"tensor<{r}x{row_mlir}>"

        result_types, keep, order = [], [], []
        for j in range(self.n_mitmot):
            result_types.append(mm_vars[j].type.mlir)
            keep.append(0)
            order.append(-1 - j)
        for i in range(self.n_mitsot):
            result_types.append(stacked(mit_vars[i].type.row().mlir, i))
            keep.append(self.keep[i])
            order.append(i)
        for i in range(self.n_sitsot):
            idx = self.n_mitsot + i
            result_types.append(stacked(sit_vars[i].type.mlir, idx))
            keep.append(self.keep[idx])
            order.append(idx)
        first_nit = self.n_mitsot + self.n_sitsot
        for j, _, row in converted:
            result_types.append(stacked(row.mlir, first_nit + j))
            keep.append(self.keep[first_nit + j])
            order.append(first_nit + j)
        for j in static_nit:
            row = TensorType(nit_out[j].dtype, self.nitsot_shapes[j])
            result_types.append(stacked(row.mlir, first_nit + j))
            keep.append(self.keep[first_nit + j])
            order.append(first_nit + j)

        head = f"scan.scan steps({n_index})"
        if self.go_backwards:
            head += " go_backwards"
        if self.until:
            head += " until"
        parts = [head]
        if seqs:
            items = []
            for s, v, taps in zip(seqs, seq_vars, self.seq_taps):
                items.append(f"{s}[{', '.join(str(t) for t in taps)}] : {v.type.mlir}")
            parts.append(f"sequences({', '.join(items)})")
        if mitmots:
            items = []
            for s, v, (in_taps, out_taps) in zip(mitmots, mm_vars, self.mitmot_taps):
                items.append(f"{s}[{', '.join(str(t) for t in in_taps)}] -> [{', '.join(str(t) for t in out_taps)}]"
                             f" : {v.type.mlir}")
            parts.append(f"mitmot({', '.join(items)})")
        if mitsots:
            items = []
            for s, v, taps in zip(mitsots, mit_vars, self.mitsot_taps):
                items.append(f"{s}[{', '.join(str(t) for t in taps)}] : {v.type.mlir}")
            parts.append(f"mitsot({', '.join(items)})")
        sit_ssa = sitsots + [init for _, init, _ in converted]
        sit_types = [v.type.mlir for v in sit_vars] + [row.mlir for _, _, row in converted]
        if sit_ssa:
            parts.append(f"sitsot({', '.join(f'{s} : {t}' for s, t in zip(sit_ssa, sit_types))})")
        if nonseqs:
            parts.append(f"nonsequences({', '.join(f'{s} : {v.type.mlir}' for s, v in zip(nonseqs, non_vars))})")
        if any(keep):
            parts.append(f"keep [{', '.join(str(k) for k in keep)}]")
        count = len(result_types)
        name = b.module.fresh("scan")
        lhs = name if count == 1 else f"{name}:{count}"
        b.stmt(f"{lhs} = " + "\n    ".join(parts) + " {")
        b.stmt(f"^bb0({', '.join(decls)}):")
        b.lines.extend(region.lines)
        b.stmt(f"}} -> ({', '.join(result_types)})")
        names = [name] if count == 1 else [f"{name}#{i}" for i in range(count)]
        # Node outputs: the mitmot buffers, then the per-step outputs.
        results: list[str] = [""] * (self.n_mitmot + self.n_outputs)
        for ssa, idx in zip(names, order):
            results[idx + self.n_mitmot if idx >= 0 else -1 - idx] = ssa
        # The graph's output types may be more static than the op's.
        for pos, idx in enumerate(order):
            r = idx + self.n_mitmot if idx >= 0 else -1 - idx
            want = node.outputs[r].type
            have_mlir = result_types[pos]
            if have_mlir != want.mlir:
                results[r] = b.op(f"tensor.cast {results[r]} : {have_mlir} to {want.mlir}", "cast")
        return results


def _dim0(var: Variable):
    return Shape_i(0)(var)


class ScanShape(Op):
    """The sizes of output `index` of a scan, with the checks the scan does before its loop.

    Its inputs are those of the scan node, then the output itself (never
    read: it keeps the scan in the emitted module, see
    :meth:`ScanOp.infer_checked_shape`); its outputs are int64 scalars,
    one per dimension of the scan's output: ``n_steps`` rows (checked as the
    scan checks it: not negative, sequences long enough, mitsot inits with
    their rows, states keeping their shape), then the row's sizes (from the
    initial state, or the sizes a nitsot's rows are given). No step runs.
    See :meth:`ScanOp.infer_checked_shape`.
    """

    #: Its sizes are checked at run time (see ``checked_shape_of``).
    checks_shape = True

    def __init__(self, scan: ScanOp, index: int):
        self.scan, self.index = scan, index

    def __eq__(self, other: object) -> bool:
        return type(other) is ScanShape and other.scan is self.scan and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.scan), self.index))

    def __str__(self) -> str:
        return f"ScanShape{{{self.scan}, {self.index}}}"

    __repr__ = __str__

    def make_node(self, *inputs: Variable) -> Apply:
        rank = inputs[-1].ndim
        return Apply(self, list(inputs), [TensorType("int64", ())] * rank)

    def infer_shape(self, node, input_shapes):
        return [()] * len(node.outputs)

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        scan = self.scan
        out_ssa, out_var = inputs[-1], node.inputs[-1]
        inputs, variables = inputs[:-1], node.inputs[:-1]
        n = scan.emit_outer_checks(b, inputs, variables)
        pairs = scan.split_inputs(list(zip(inputs, variables)))
        i = self.index
        sizes = [n]
        if i < scan.n_mitsot:
            ssa, var = pairs["mitsot"][i]
            sizes += [b.dim(ssa, var.type, d) for d in range(1, var.ndim)]
        elif i < scan.n_mitsot + scan.n_sitsot:
            ssa, var = pairs["sitsot"][i - scan.n_mitsot]
            sizes += b.dims(ssa, var.type)
        else:
            j = i - scan.n_mitsot - scan.n_sitsot
            dyn = iter(pairs["nitsot_dims"][scan._dyn_dims_before(j):])
            for k, d in enumerate(scan.nitsot_shapes[j]):
                if d is not None:
                    sizes.append(b.index(d))
                    continue
                if scan.nitsot_runtime[j]:  # sized by the first step: read the result
                    sizes.append(b.dim(out_ssa, out_var.type, k + 1))
                    continue
                ssa, var = next(dyn)
                sizes.append(b.iop("maxsi", b.to_index(ssa, var.dtype), b.index(0)))
        return [b.from_index(s) for s in sizes[:len(node.outputs)]]
