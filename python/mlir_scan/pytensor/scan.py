"""PyTensor's ``Scan`` node as one builder scan (one ``scan.scan`` op).

PyTensor's ``ScanInfo`` groups map onto the builder's (and ``scan.scan``'s):

=====================  ==================================================================
PyTensor (outer)       builder / ``scan.scan``
=====================  ==================================================================
``n_steps``            ``n_steps``
sequence (tap 0)       sequence with tap 0 (PyTensor gives each tap its own sequence)
``mit_mot`` buffer     mitmot group (in/out taps), see :mod:`.mitmot`
``mit_sot`` buffer     mitsot: its first ``K = -min(taps)`` rows are the init
``sit_sot`` buffer     sitsot: its row 0 is the init
untraced ``sit_sot``   sitsot whose last row only is kept (``keep = 1``)
``nit_sot`` size       nitsot (one row per step; zero rows up to a larger size)
non-sequence           non-sequence
``as_while``           ``until`` (the inner graph's last output)
=====================  ==================================================================

PyTensor's outer outputs of mit_sot and sit_sot groups are whole buffers:
the ``K`` init rows followed by one row per step. The translation gives
exactly that (``concatenate(init rows, scan rows)``), but a
:class:`BufferHint` lets the ``Subtensor`` nodes PyTensor puts after a scan
read the scan's rows without the copy: ``buffer[K:]`` is the scan's result
itself, and ``buffer[-j]`` (any constant ``j``) is read from a scan that keeps only
its last rows when every reader of the buffer is such an index (the
builder's ``keep``, what PyTensor's own ``scan_save_mem`` does).

Example::

    >>> import pytensor, pytensor.tensor as pt
    >>> from pytensor.graph.fg import FunctionGraph
    >>> from mlir_scan.pytensor.translate import Translator
    >>> x = pt.vector("x")
    >>> ys = pytensor.scan(lambda v, acc: acc + v, sequences=x, outputs_info=pt.zeros(()),
    ...                    return_updates=False)
    >>> fg = FunctionGraph([x], [ys], clone=True)
    >>> tr = Translator(); tr.fgraph = fg; _ = tr.inputs(fg.inputs)
    >>> out, = tr.outputs(fg.outputs)
    >>> type(out.owner.op).__name__
    'ScanOp'
"""

from __future__ import annotations

from typing import Any

from pytensor.scan.op import Scan
from pytensor.tensor.basic import Alloc, AllocEmpty
from pytensor.tensor.subtensor import IncSubtensor, Subtensor, indices_from_subtensor

from ..builder import tensor as T
from ..builder.graph import Variable
from ..builder.ops.misc import Assert as BAssert
from ..builder.ops.scan import ScanOp
from ..builder.scan_module import scan as builder_scan
from ..builder.scan_module import until
from . import mitmot
from .last_rows import last_rows_bound
from .rewrites import inner_graph_rewrites
from .translate import Translator, Unsupported, register

__all__ = ["BufferHint", "translate_scan"]


class BufferHint:
    """A PyTensor mit_sot/sit_sot output buffer: `k` init rows, then the scan's `rows`.

    `last` holds, when the scan keeps only its last `keep` rows, the result
    of that scan (``tensor<keep x ...>``): ``buffer[-j]`` is ``last[keep - j]``.
    """

    def __init__(self, init_rows: Variable, rows: Variable | None, k: int,
                 last: Variable | None = None, keep: int = 0, steps: Variable | None = None):
        self.init_rows, self.rows, self.k = init_rows, rows, k
        self.last, self.keep, self.steps = last, keep, steps

    def whole(self) -> Variable:
        """The whole buffer, as PyTensor gives it."""
        if self.rows is None:
            raise ValueError("BufferHint: the full buffer of a scan kept to its last rows")
        return T.concatenate([self.init_rows, self.rows], axis=0)

    def index(self, key: tuple) -> Variable | None:
        """``buffer[key]`` without the whole buffer, when the key allows it (else None)."""
        if len(key) != 1:
            return None
        (k,) = key
        if isinstance(k, slice) and self.rows is not None:
            if k.step is None and k.stop is None and isinstance(k.start, int) and k.start >= self.k:
                return self.rows if k.start == self.k else self.rows[k.start - self.k:]
            return None
        if isinstance(k, int) and self.last is not None and -self.keep <= k < 0:
            last = self.last
            if -k > self.k:
                # Past the init rows: the buffer (k + n_steps rows) must have that many.
                enough = T.ge(self.steps, -k - self.k)
                last = BAssert(f"index {k} is out of bounds for the buffer of a scan of fewer than "
                               f"{-k - self.k} steps", IndexError)(last, enough)
            return last[self.keep + k]
        if isinstance(k, Variable) and k.ndim == 0 and self.last is not None:
            # An index among the last `keep` rows that moves with the number of steps
            # (last_rows.last_rows_bound proved it, for every reader of the buffer).
            rows = self.steps + self.k
            from_end = T.switch(T.lt(k, 0), -k, rows - k)
            exists = T.and_(T.ge(from_end, 1), T.le(from_end, rows))
            last = BAssert("index out of bounds for the buffer of the scan", IndexError)(self.last, exists)
            return last[self.keep - from_end]
        return None

    def tail(self, key: tuple) -> BufferHint | None:
        """The hint of ``buffer[s:]`` (constant ``s``, at most the init rows) of a buffer kept to its
        last rows; else None."""
        if len(key) != 1 or self.last is None or not isinstance(key[0], slice):
            return None
        (k,) = key
        if k.stop is not None or k.step is not None or not isinstance(k.start, int) or not 0 <= k.start <= self.k:
            return None
        return BufferHint(self.init_rows[k.start:], None, self.k - k.start, last=self.last, keep=self.keep,
                          steps=self.steps)


def _last_rows_only(tr: Translator, pt_out: Any, k: int) -> int:
    """`j` when every reader of `pt_out` reads ``pt_out[-i]`` with ``i <= j``, or a row among the last
    `j` at a symbolic index (``last_rows_bound``); else 0."""
    fg = tr.fgraph
    if fg is None or pt_out not in getattr(fg, "clients", {}):
        return 0
    clients = fg.clients[pt_out]
    if not clients:
        return 0
    need = 0
    for client, pos in clients:
        if not hasattr(client, "op") or not isinstance(client.op, Subtensor) or pos != 0:
            return 0
        if len(client.op.idx_list) != 1:
            return 0
        entry = client.op.idx_list[0]
        if isinstance(entry, slice):
            # ``buffer[s:]`` (PyTensor 2.38 reads ``res = buffer[1:]`` at a symbolic index as
            # ``buffer[1:][i]``): its own readers count, rows from the end are the same.
            start = tr.static_int(client.inputs[1]) if len(client.inputs) == 2 else None
            if entry.stop is not None or entry.step is not None or start is None or not 0 <= start <= k:
                return 0
            inner = _last_rows_only(tr, client.outputs[0], k - start)
            if not inner:
                return 0
            need = max(need, inner)
            continue
        i = tr.static_int(client.inputs[1])
        if i is None:
            bound = last_rows_bound(client.inputs[1], pt_out)
            if bound is None:
                return 0
            need = max(need, bound)
            continue
        if i >= 0:
            return 0
        need = max(need, -i)
    return need


def _init_rows(tr: Translator, pt_buf: Any, k: int) -> Variable:
    """The first `k` rows of a state buffer, without the buffer when PyTensor built it.

    PyTensor's ``scan`` makes each state buffer as
    ``set_subtensor(AllocEmpty(n_steps + k, *row)[:k], init)``: the init rows
    are then ``init`` broadcast to ``(k, *row)``, and the ``n_steps + k``-row
    buffer needs no allocation at all.
    """
    node = pt_buf.owner
    if (node is not None and isinstance(node.op, IncSubtensor) and node.op.set_instead_of_inc
            and isinstance(node.inputs[0].owner and node.inputs[0].owner.op, (Alloc, AllocEmpty))
            and len(node.op.idx_list) == 1 and isinstance(node.op.idx_list[0], slice)):
        entry = indices_from_subtensor(node.inputs[2:], node.op.idx_list)[0]
        stop = tr.static_int(entry.stop) if entry.stop is not None else None
        if entry.start is None and entry.step is None and stop == k:
            alloc = node.inputs[0].owner
            dims = alloc.inputs[1:] if isinstance(alloc.op, Alloc) else alloc.inputs
            if not all(tr.has(v) for v in [node.inputs[1], *dims[1:]]):
                return tr.value(pt_buf)[:k]  # (a scan translated alone: no view of the buffer's graph)
            row = [tr.value(d) for d in dims[1:]]
            init = T.alloc(tr.value(node.inputs[1]), k, *row)
            return init
        if entry.start is None and entry.step is None and entry.stop is not None:
            # ``init[:k]`` of an init of fewer than k rows: PyTensor's buffer then holds fewer
            # init rows than the taps read (its result is garbage of another length); an error here.
            static = tr.static_int(entry.stop)
            if static is None and not tr.has(entry.stop):
                return tr.value(pt_buf)[:k]
            if static is None or static < k:
                have = T.as_tensor_variable(static if static is not None else tr.value(entry.stop))
                rows = BAssert(f"scan: the initial value of a state whose taps reach {k} steps back has fewer "
                               f"than {k} rows", ValueError)(tr.value(pt_buf), T.ge(have, k))
                return rows[:k]
    return tr.value(pt_buf)[:k]


def with_keep(results: list[Variable], keep: dict[int, int]) -> list[Variable]:
    """The outputs of the builder scan of `results` rebuilt keeping only the last rows.

    `keep` maps an output index (in the op's order, mitmot buffers not
    counted) to its number of rows. The mitmot buffers stay first.
    """
    node = results[0].owner
    op: ScanOp = node.op
    new_keep = list(op.keep)
    for i, k in keep.items():
        new_keep[i] = k
    return mitmot.copy_op(op, keep=new_keep).make_node(*node.inputs).outputs


def _op_index(node: Any, var: Variable) -> int:
    """The index of `var` among the outputs of `node` after its mitmot buffers."""
    outs = node.outputs[node.op.n_mitmot:]
    for i, out in enumerate(outs):
        if out is var:
            return i
    raise ValueError("not an output of the scan")


def rewritten_inner_graph(op: Scan) -> tuple[list, list]:
    """The inputs and outputs of `op`'s inner graph after PyTensor's rewrites
    that decide values.

    PyTensor compiles a scan's inner function with its mode's rewrites
    (``Scan.fn``), and some of them decide values, not only speed: the
    gradient of ``switch(c, h, h + sqrt(a))`` is ``0 * (0.5 / sqrt(a))``,
    NaN where ``a < 0``, until ``local_mul_switch_sink`` moves the product
    into the switch, as every PyTensor mode does. ``canonicalize``,
    ``stabilize`` and ``specialize`` (less :data:`~.rewrites.EXCLUDED_REWRITES`)
    run on a copy of the inner graph here; the rest of ``fast_run`` (fusion,
    BLAS, the scan rewrites) is speed that mlir-scan's own passes provide, and
    costs 8x the time (W6's two scans: 320 ms against 40 ms).
    """
    fg = op.fgraph.clone()
    inner_graph_rewrites().rewrite(fg)
    return list(fg.inputs), list(fg.outputs)


@register(Scan)
def translate_scan(tr: Translator, node: Any, ins: list) -> list:
    op: Scan = node.op
    info = op.info
    pin = node.inputs
    n_steps = tr.value(pin[0])
    seqs = [tr.value(v) for v in op.outer_seqs(pin)]
    mm = mitmot.groups(node)
    mm_seqs, n_mm_rows = mitmot.builder_arguments(tr, node, mm)
    mitsot_bufs = op.outer_mitsot(pin)
    sitsot_bufs = op.outer_sitsot(pin)
    untraced = [tr.value(v) for v in op.outer_untraced_sit_sot(pin)]
    nonseqs = [tr.value(v) for v in op.outer_non_seqs(pin)]
    n_nit = info.n_nit_sot

    outputs_info: list[Any] = []
    init_rows = []
    for buf, taps in zip(mitsot_bufs, info.mit_sot_in_slices):
        k = -min(taps)
        rows = _init_rows(tr, buf, k)
        init_rows.append((rows, k))
        outputs_info.append({"initial": rows, "taps": list(taps)})
    for buf in sitsot_bufs:
        rows = _init_rows(tr, buf, 1)
        init_rows.append((rows, 1))
        outputs_info.append(rows[0])
    outputs_info.extend(untraced)
    outputs_info.extend([None] * (n_nit + n_mm_rows))  # (mitmot out-tap rows last, see mitmot.py)

    inner_ins, inner_outs = rewritten_inner_graph(op)
    order = (op.inner_mitsot_outs(inner_outs) + op.inner_sitsot_outs(inner_outs)
             + op.inner_untraced_sit_sot_outs(inner_outs) + op.inner_nitsot_outs(inner_outs)
             + op.inner_mitmot_outs(inner_outs))

    # The row type of each state output in `order`: its outer buffer's row (PyTensor writes the
    # step's value there), or an untraced state's own type.
    state_rows = [b.type.clone(shape=b.type.shape[1:])() for b in mitsot_bufs + sitsot_bufs]
    state_rows += [v.type() for v in op.outer_untraced_sit_sot(pin)]

    def step(*args: Variable) -> Any:
        sub = Translator()
        for pv, bv in zip(inner_ins, args):
            sub.bind(pv, sub.conform(bv, pv))
        outs = sub.outputs(order + ([inner_outs[-1]] if info.as_while else []), inner_ins)
        # A state's new value takes the static sizes of the state's buffer rows: an inner graph
        # may compute a (?, ?) row for a buffer of (1, 1) rows, as the gradient of pymc-extras'
        # Cholesky filter does; PyTensor writes it into the buffer, which checks the size.
        outs = [sub.conform(o, row) for o, row in zip(outs, state_rows)] + outs[len(state_rows):]
        if info.as_while:
            return outs[:-1], until(outs[-1])
        return outs

    if not order:
        raise Unsupported(op, "a scan without outputs")
    results = builder_scan(step, sequences=seqs + mm_seqs, outputs_info=outputs_info, non_sequences=nonseqs,
                           n_steps=n_steps, truncate_gradient=op.truncate_gradient, return_list=True,
                           name=op.name)[0]
    finals: list[Variable] = []
    if mm:
        old = results[0].owner
        finals, rest = mitmot.rebuild(old, mm, len(seqs))
        old_outs = old.outputs[old.op.n_mitmot:]
        results = [rest[_index(old_outs, r)] for r in results[:len(results) - n_mm_rows]]
    n_state = len(mitsot_bufs) + len(sitsot_bufs)
    pt_states = op.outer_mitsot_outs(node.outputs) + op.outer_sitsot_outs(node.outputs)

    # Keep only the last rows of buffers read only there, and of untraced states.
    keep: dict[int, int] = {}
    last_of: dict[int, int] = {}
    scan_node = results[0].owner if results else None
    if not info.as_while:
        for i, (pt_out, (_, k)) in enumerate(zip(pt_states, init_rows)):
            j = _last_rows_only(tr, pt_out, k)
            if j:
                keep[_op_index(scan_node, results[i])] = j
                last_of[i] = j
    for u in range(len(untraced)):
        keep[_op_index(scan_node, results[n_state + u])] = 1
    if keep:
        new_outs = with_keep(results, keep)
        n_mm = len(finals)
        finals = new_outs[:n_mm]
        old_outs = scan_node.outputs[n_mm:]
        results = [new_outs[n_mm + _index(old_outs, r)] for r in results]

    outs: list[Variable | None] = list(finals)
    for i, (pt_out, (rows, k)) in enumerate(zip(pt_states, init_rows)):
        if i in last_of:
            hint = BufferHint(rows, None, k, last=results[i], keep=last_of[i], steps=n_steps)
            tr.buffers[pt_out] = hint
            # The whole buffer has no value: every reader indexes its last rows.
            outs.append(None)
        else:
            hint = BufferHint(rows, results[i], k)
            tr.buffers[pt_out] = hint
            outs.append(hint.whole())
    nit = results[n_state + len(untraced):]
    sizes = op.outer_nitsot(pin)
    outs.extend(_nitsot_output(tr, node, rows, size) for rows, size in zip(nit, sizes))
    outs.extend(r[0] for r in results[n_state:n_state + len(untraced)])
    return outs


def _nitsot_output(tr: Translator, node: Any, rows: Variable, size: Any) -> Variable:
    """PyTensor's nit_sot output of `size` rows: the scan's rows, then zeros.

    PyTensor allocates a nit_sot output with its size input. The graphs its
    ``scan`` builds pass ``n_steps`` (then `rows` is the output), but the
    backward scan of a ``truncate_gradient=k`` gradient runs ``min(n, k)``
    steps into an ``n``-row output, and ``Scan.perform`` zeros the rows no
    step wrote.
    """
    n_steps = node.inputs[0]
    if size is n_steps:
        return rows
    k, n = tr.static_int(size), tr.static_int(n_steps)
    if k is not None and k == n:
        return rows
    if node.op.info.as_while:
        # (PyTensor cuts a while loop's outputs by the steps not run: no builder of
        # PyTensor's makes such a scan, and it is not worth a translation.)
        raise Unsupported(node.op, "a while scan with a nit_sot size other than n_steps")
    if k is not None and n is not None and k < n:
        raise Unsupported(node.op, f"a nit_sot of {k} rows for {n} steps (a circular buffer)")
    pad = T.maximum(T.cast(tr.value(size), "int64") - T.cast(tr.value(n_steps), "int64"), 0)
    zeros = T.zeros([pad] + [rows.shape[d] for d in range(1, rows.ndim)], dtype=rows.dtype)
    whole = T.concatenate([rows, zeros], axis=0)
    # A size below n_steps would be one of PyTensor's circular buffers (scan_save_mem,
    # excluded from this mode): a run-time error rather than a wrong result.
    return T.specify_shape(whole, [tr.value(size)] + [None] * (rows.ndim - 1))


def _index(outputs: list[Variable], var: Variable) -> int:
    for i, out in enumerate(outputs):
        if out is var:
            return i
    raise ValueError("not an output of the scan")
