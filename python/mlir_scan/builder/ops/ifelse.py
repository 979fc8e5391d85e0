"""Theano's lazy ``IfElse``: one of two lists of values, chosen by a scalar condition.

``IfElse(n_outs)(cond, *then_values, *else_values)`` is emitted as one
``scf.if``: the nodes that only the branches need are emitted inside the
branch that uses them (its inputs are ``lazy_inputs``, see
:meth:`~mlir_scan.builder.emitter.Block.value`), so only the taken branch
runs (its run-time checks included). ``theano.ifelse.ifelse``
(:mod:`mlir_scan.builder.ifelse`) builds it.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> from mlir_scan.ifelse import ifelse
    >>> a, b = T.dscalar("a"), T.dscalar("b")
    >>> z = ifelse(T.lt(a, b), a * 2, T.log(b))
    >>> z.owner.op
    IfElse(1)
    >>> f = theano.function([a, b], z)
    >>> float(f(1.0, 2.0)), float(f(3.0, 1.0))
    (2.0, 0.0)
"""

from __future__ import annotations

from ..emitter import Block
from ..graph import Apply, Op, TensorType, Variable, is_float, is_int
from .autodiff import zeros_like
from .elemwise import cast

__all__ = ["IfElse"]


class IfElse(Op):
    """``IfElse(n_outs)(cond, *then_values, *else_values)``: `then_values` if `cond` is non-zero, lazily.

    `cond` is a scalar (any number or bool); the two lists have `n_outs`
    values each, pairwise of one dtype and rank. A result's static size is
    kept where both branches have it.
    """

    __props__ = ("n_outs",)

    def __init__(self, n_outs: int, as_view: bool = False, gpu: bool = False, name: str | None = None):
        if int(n_outs) != n_outs or n_outs < 1:
            raise ValueError(f"IfElse: n_outs must be a positive int, got {n_outs!r}")
        self.n_outs = int(n_outs)
        self.as_view, self.gpu, self.name = as_view, gpu, name

    def __str__(self) -> str:
        return f"IfElse({self.n_outs})"

    __repr__ = __str__

    def make_node(self, cond: Variable, *branches: Variable) -> Apply:
        n = self.n_outs
        if len(branches) != 2 * n:
            raise ValueError(f"IfElse: expected {2 * n} branch values, got {len(branches)}")
        if cond.ndim != 0:
            raise TypeError(f"ifelse: the condition must be a scalar, got {cond.type}")
        if not (is_int(cond.dtype) or is_float(cond.dtype) or cond.dtype == "bool"):  # pragma: no cover
            raise TypeError(f"ifelse: the condition has dtype {cond.dtype}")
        outs = []
        for i in range(n):
            t, e = branches[i], branches[n + i]
            if t.dtype != e.dtype or t.ndim != e.ndim:
                raise TypeError(
                    f"ifelse: the two branches should have identical types, but output #{i} is {t.type} in the "
                    f"then branch and {e.type} in the else branch")
            shape = tuple(a if a == b else None for a, b in zip(t.type.shape, e.type.shape))
            outs.append(TensorType(t.dtype, shape))
        return Apply(self, [cond, *branches], outs)

    def lazy_inputs(self, node: Apply) -> set[int]:
        """The branches: computed inside the ``scf.if`` (only the taken one runs)."""
        return set(range(1, 1 + 2 * self.n_outs))

    def emit(self, b: Block, node: Apply, inputs: list) -> list[str]:
        n = self.n_outs
        cond = b.cast(inputs[0], node.inputs[0].dtype, "bool")
        outs = [o.type for o in node.outputs]

        def branch(first: int) -> Block:
            bb = b.child(inherit=True)
            bb.fused = set(b.fused)
            vals = []
            for i in range(n):
                var = node.inputs[first + i]
                ssa = inputs[first + i]
                if ssa is None:
                    ssa = bb.value(var)
                if var.ndim:
                    ssa = bb.tensor_cast(ssa, var.type, outs[i])
                vals.append(ssa)
            bb.stmt(f"scf.yield {', '.join(vals)} : {', '.join(t.mlir for t in outs)}")
            return bb

        then_b, else_b = branch(1), branch(1 + n)
        name = b.module.fresh("ifelse")
        lhs = name if n == 1 else f"{name}:{n}"
        b.stmt(f"{lhs} = scf.if {cond} -> ({', '.join(t.mlir for t in outs)}) {{")
        b.lines.extend(then_b.lines)
        b.stmt("} else {")
        b.lines.extend(else_b.lines)
        b.stmt("}")
        return [name] if n == 1 else [f"{name}#{i}" for i in range(n)]

    def L_op(self, node: Apply, output_grads: list) -> list:
        """Theano's rule: each branch gets the gradient when it is taken, zeros otherwise."""
        n = self.n_outs
        cond = node.inputs[0]
        then_g: list = []
        else_g: list = []
        for i, g in enumerate(output_grads):
            t, e = node.inputs[1 + i], node.inputs[1 + n + i]
            if g is None or not is_float(node.outputs[i].dtype):
                then_g.append(None)
                else_g.append(None)
                continue
            then_g.append(IfElse(1)(cond, _fit(g, t), zeros_like(t)))
            else_g.append(IfElse(1)(cond, zeros_like(e), _fit(g, e)))
        return [None] + then_g + else_g


def _fit(g: Variable, like: Variable) -> Variable:
    """`g` of `like`'s dtype (a gradient may come in a wider float)."""
    return g if g.dtype == like.dtype else cast(g, like.dtype)
