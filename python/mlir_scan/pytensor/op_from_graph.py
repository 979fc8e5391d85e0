"""``OpFromGraph``: a node whose op is a graph, translated by translating that graph.

An ``OpFromGraph`` (and any subclass without a translation of its own, such as
the gradient PyTensor builds for ``AllocDiag``, or a user's ``OpFromGraph``
helper) computes exactly its inner graph. Its inner graph is translated in
place, with the node's inputs bound to the inner inputs, so it becomes part of
the same module as the rest of the function: no call per node.

Example::

    >>> import pytensor, pytensor.tensor as pt
    >>> from pytensor.compile.builders import OpFromGraph
    >>> import mlir_scan.pytensor
    >>> a, b = pt.vectors("a", "b")
    >>> axpy = OpFromGraph([a, b], [2 * a + b])
    >>> x, y = pt.vectors("x", "y")
    >>> f = pytensor.function([x, y], axpy(x, y), mode=mlir_scan.pytensor.get_mode(strict=True))
    >>> f([1.0, 2.0], [3.0, 4.0])
    array([5., 8.])
"""

from __future__ import annotations

from typing import Any

from pytensor.compile.builders import OpFromGraph

from .translate import Translator, Unsupported, register

__all__: list[str] = []


@register(OpFromGraph)
def _op_from_graph(tr: Translator, node: Any, ins: list) -> list:
    op = node.op
    inner = Translator()
    # An input with no builder value (a scan buffer read through its hint, a slice)
    # raises only if the inner graph reads it, as an outer graph's rejected input does.
    for pv, bv in zip(op.inner_inputs, ins):
        if bv is None:
            inner.rejected[pv] = Unsupported(op, f"input {pv} of the inner graph has no mlir-scan value")
        else:
            inner.bind(pv, bv)
    return inner.outputs(op.inner_outputs, op.inner_inputs)
