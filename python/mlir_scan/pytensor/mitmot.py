"""PyTensor's MITMOT groups (what ``pytensor.grad`` of a scan builds) as ``scan.scan`` mitmot groups.

A PyTensor mit_mot group is an outer buffer, in-slices (taps read) and
out-slices (taps written), relative to step ``t``; ``scan.scan``'s mitmot
group has the same meaning (SPEC section 4: in_tap ``k`` reads the current
row ``t + k - lo``, out_tap ``k`` overwrites row ``t + k - lo``, ``lo =
min(0, taps)``), so the groups carry over one to one, and the node's first
outputs are the final buffers, as PyTensor's.

How: :mod:`.scan` builds the scan with the builder's ``scan`` (which works
out nitsot shapes and state checks), passing each mitmot buffer as a
*sequence* read at its in-taps and each out-tap row as a trailing *nitsot*
(:func:`builder_arguments`). The step function sees the same arguments in
the same order as PyTensor's inner function. :func:`rebuild` then turns that
scan into one with the mitmot groups: the same inner graph, the sequence
slices become mitmot in-taps, the trailing nitsots become the out-tap yields.
A group without in-taps (``scan.scan`` allows it, PyTensor's ``grad``
never builds one) or with a repeated tap is
:class:`~mlir_scan.pytensor.translate.Unsupported`.
"""

from __future__ import annotations

from typing import Any

from ..builder.graph import Variable
from ..builder.ops.scan import ScanOp
from .translate import Translator, Unsupported

__all__ = ["Group", "groups", "builder_arguments", "rebuild", "copy_op"]


class Group:
    """One PyTensor mit_mot group: its outer buffer, in-taps and out-taps (PyTensor's order)."""

    def __init__(self, buffer: Any, in_taps: tuple, out_taps: tuple):
        self.buffer, self.in_taps, self.out_taps = buffer, tuple(in_taps), tuple(out_taps)


def groups(node: Any) -> list[Group]:
    """The mit_mot groups of a PyTensor Scan node."""
    op, info = node.op, node.op.info
    return [Group(buf, i, o) for buf, i, o in
            zip(op.outer_mitmot(node.inputs), info.mit_mot_in_slices, info.mit_mot_out_slices)]


def builder_arguments(tr: Translator, node: Any, mm: list[Group]) -> tuple[list, int]:
    """The extra builder sequences (buffers read at their in-taps) and the number of out-tap rows."""
    seqs = []
    for g in mm:
        if not g.in_taps:
            raise Unsupported(node.op, "a mit_mot group without in-taps")
        if len(set(g.in_taps)) != len(g.in_taps) or len(set(g.out_taps)) != len(g.out_taps):
            raise Unsupported(node.op, "a mit_mot group with a repeated tap")
        seqs.append({"input": tr.value(g.buffer), "taps": list(g.in_taps)})
    return seqs, sum(len(g.out_taps) for g in mm)


def copy_op(op: ScanOp, **changes: Any) -> ScanOp:
    """A ScanOp with the fields of `op`, some replaced by `changes`."""
    fields = dict(
        inner_inputs=op.inner_inputs, inner_outputs=op.inner_outputs, seq_taps=op.seq_taps,
        mitsot_taps=op.mitsot_taps, n_sitsot=op.n_sitsot, n_nitsot=op.n_nitsot, n_nonseqs=op.n_nonseqs,
        until=op.until, go_backwards=op.go_backwards, keep=op.keep, nitsot_shapes=op.nitsot_shapes,
        name=op.name, truncate_gradient=op.truncate_gradient, kinds=op.kinds,
        state_checks=op.state_checks, nitsot_runtime=op.nitsot_runtime, mitmot_taps=op.mitmot_taps,
        type_error=op.type_error)
    fields.update(changes)
    return ScanOp(**fields)


def rebuild(node: Any, mm: list[Group], n_plain_seqs: int) -> tuple[list[Variable], list[Variable]]:
    """The builder scan `node` (built with :func:`builder_arguments`) with real mitmot groups.

    Returns (final buffers, the other outputs in `node`'s order without the
    out-tap nitsots).
    """
    op: ScanOp = node.op
    n_out_rows = sum(len(g.out_taps) for g in mm)
    n_mm = len(mm)
    n_nit = op.n_nitsot - n_out_rows
    groups_in = op.split_inputs(node.inputs)
    # The out-tap nitsots are the last ones: drop their outer size inputs.
    n_dims_kept = op._dyn_dims_before(n_nit)
    first_out = op.n_mitsot + op.n_sitsot
    outs = op.inner_outputs
    mm_outs = outs[first_out + n_nit:first_out + n_nit + n_out_rows]
    rest = outs[:first_out + n_nit] + outs[first_out + n_nit + n_out_rows:]
    # scan.scan wants taps in increasing order: the builder's scan sorted the
    # in-tap slices already; sort the out-tap rows here.
    sorted_outs, pos = [], 0
    for g in mm:
        rows = list(zip(g.out_taps, mm_outs[pos:pos + len(g.out_taps)]))
        sorted_outs.extend(v for _, v in sorted(rows, key=lambda p: p[0]))
        pos += len(g.out_taps)
    new = copy_op(
        op,
        inner_outputs=sorted_outs + list(rest),
        seq_taps=op.seq_taps[:n_plain_seqs],
        mitmot_taps=[(tuple(sorted(g.in_taps)), tuple(sorted(g.out_taps))) for g in mm],
        n_nitsot=n_nit,
        keep=op.keep[:first_out + n_nit],
        nitsot_shapes=op.nitsot_shapes[:n_nit],
        nitsot_runtime=op.nitsot_runtime[:n_nit],
    )
    inputs = (groups_in["n_steps"] + groups_in["sequences"][:n_plain_seqs] + groups_in["sequences"][n_plain_seqs:]
              + groups_in["mitsot"] + groups_in["sitsot"] + groups_in["nonseqs"]
              + groups_in["nitsot_dims"][:n_dims_kept] + groups_in["state_dims"])
    new_node = new.make_node(*inputs)
    return new_node.outputs[:n_mm], new_node.outputs[n_mm:]
