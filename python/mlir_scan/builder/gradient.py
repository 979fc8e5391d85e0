"""Symbolic differentiation: ``grad``, ``jacobian``, ``hessian``, ``disconnected_grad`` (``theano.gradient``).

:func:`grad` walks the graph backwards from the cost, asking each node's op for
the gradients of its inputs (``Op.L_op``, next to each op class) and summing
the contributions of every use of a variable
(:func:`~mlir_scan.builder.ops.autodiff.backprop`). The gradient of a scan
is a second scan that runs backwards (backpropagation through time, its
recurrent gradients MITMOT states: :mod:`~mlir_scan.builder.ops.scan_grad`).
:func:`jacobian` and :func:`hessian` are built the way Theano builds them: a
scan over the rows of a gradient.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> gy = T.grad(x ** 2, x)
    >>> f = theano.function([x], gy)
    >>> f(4)
    array(8.)
"""

from __future__ import annotations

import warnings
from typing import Any

from . import config
from . import tensor as T
from .graph import Constant, NullTypeGradError, Variable, clone_replace, graph_inputs, is_float
from .ops.autodiff import DisconnectedGrad, backprop, conform, connected, const, one_like, zeros_like
from .ops.disconnected import GradClip, GradScale, ZeroGrad
from .scan_module import scan

__all__ = ["grad", "jacobian", "hessian", "disconnected_grad", "zero_grad", "consider_constant", "grad_clip",
           "grad_scale", "DisconnectedInputError", "NullTypeGradError"]


class DisconnectedInputError(ValueError):
    """A variable given to :func:`grad` is not part of the cost's graph, or only through non-differentiable
    connections (sizes, indices, shapes, ``disconnected_grad``): Theano's name."""


def disconnected_grad(x: Any) -> Variable:
    """`x` in the forward computation, but no gradient flows back through it."""
    return DisconnectedGrad()(T.as_tensor_variable(x))


def zero_grad(x: Any) -> Variable:
    """`x` in the forward computation, with a zero gradient (Theano's ``zero_grad``).

    Unlike :func:`disconnected_grad`, `x` stays connected to the cost: a
    ``wrt`` reached only through it gets zeros, not ``DisconnectedInputError``.

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> float(theano.function([x], T.grad(zero_grad(x) * x, x))(3.0))
    3.0
    """
    return ZeroGrad()(T.as_tensor_variable(x))


#: Theano's deprecated name of :func:`zero_grad`.
consider_constant = zero_grad


def grad_clip(x: Any, lower_bound: float, upper_bound: float) -> Variable:
    """`x` in the forward computation; its gradient is clipped to [`lower_bound`, `upper_bound`].

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> float(theano.function([x], T.grad(grad_clip(x, -1.0, 1.0) ** 2, x))(3.0))
    1.0
    """
    for name, v in (("lower_bound", lower_bound), ("upper_bound", upper_bound)):
        if isinstance(v, Variable):
            raise TypeError(f"grad_clip: {name} must be a constant number, got a symbolic {v.type}")
    return GradClip(lower_bound, upper_bound)(T.as_tensor_variable(x))


def grad_scale(x: Any, multiplier: float) -> Variable:
    """`x` in the forward computation; its gradient is multiplied by `multiplier`."""
    if isinstance(multiplier, Variable):
        raise TypeError(f"grad_scale: multiplier must be a constant number, got a symbolic {multiplier.type}")
    return GradScale(multiplier)(T.as_tensor_variable(x))


def _describe(v: Variable, label: str) -> str:
    return f"{label} ({v.name})" if v.name else f"{label} ({v!r})"


def _outer_values(graph_roots: list[Variable]) -> dict[Variable, Variable]:
    """Non-sequence placeholders of a scan step being traced -> their outer values.

    Inside a step function the non-sequences are placeholders; Theano gives
    ``fn`` the outer variables themselves, so ``T.grad(y[i], x)`` with `y`
    and `x` passed as non-sequences differentiates through `y`'s graph. The
    placeholders are replaced by their outer values for the differentiation;
    the scan then passes whatever the gradient uses as non-sequences.
    """
    return {v: v.tag["scan_outer"] for v in graph_roots if "scan_outer" in v.tag}


def grad(cost: Any, wrt: Any, consider_constant: Any = None, disconnected_inputs: str = "raise",
         add_names: bool = True, known_grads: Any = None, return_disconnected: str = "zero",
         null_gradients: str = "raise") -> Any:
    """The gradient of the scalar `cost` with respect to `wrt` (a variable or a list).

    Theano's arguments: `consider_constant` (variables through which no
    gradient flows), `disconnected_inputs` (``"raise"``, ``"warn"`` or
    ``"ignore"`` for a `wrt` the cost does not depend on),
    `return_disconnected` (``"zero"``, ``"None"`` or ``"Disconnected"``: what
    such a `wrt` gets), `known_grads` (a dict variable -> gradient, used
    instead of or in addition to a cost), `null_gradients` (only ``"raise"``
    is supported: an undefined gradient raises :class:`NullTypeGradError`).

    Theano's connection rules: a `wrt` is disconnected
    (:class:`DisconnectedInputError` with ``disconnected_inputs="raise"``)
    when the cost does not depend on it, or only through sizes, indices,
    shapes or :func:`disconnected_grad`. A `wrt` the cost depends on only
    through integer values (a cast to an integer type, a comparison, an
    integer-valued cost) has a zero gradient. Integer `wrt` are allowed:
    their gradient, like every zero gradient of a variable that is not a
    float, is zeros of ``config.floatX`` (Theano's ``_float_zeros_like``).
    A path through an op without gradient (a random draw) raises
    :class:`NullTypeGradError`, integer-valued or not.

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x, k = T.dvector("x"), T.iscalar("k")
    >>> g = T.grad(T.cast(x, "int64").sum(), [x, k], disconnected_inputs="ignore")
    >>> [v.dtype for v in g]
    ['float64', 'float64']
    """
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError(f"grad: disconnected_inputs must be 'raise', 'warn' or 'ignore', got {disconnected_inputs!r}")
    if return_disconnected not in ("zero", "None", "Disconnected"):
        raise ValueError(f"grad: return_disconnected must be 'zero', 'None' or 'Disconnected', "
                         f"got {return_disconnected!r}")
    if null_gradients not in ("raise", "return"):
        raise ValueError(f"grad: null_gradients must be 'raise' or 'return', got {null_gradients!r}")
    if cost is None and not known_grads:
        raise ValueError("grad: give a cost or known_grads")
    if isinstance(wrt, set):
        raise TypeError("grad: wrt must not be a set (sets have no order to return the gradients in)")
    if cost is not None:
        try:
            cost = T.as_tensor_variable(cost)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"grad: the cost must be a symbolic scalar, got {cost!r}") from exc
        if cost.ndim != 0:
            raise TypeError(f"grad: the cost must be a scalar, got {cost} of type {cost.type} "
                            "(sum it, or use jacobian for a vector)")

    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    for i, w in enumerate(wrt_list):
        label = "wrt" if single else f"wrt[{i}]"
        if not isinstance(w, Variable):
            raise TypeError(f"grad: {label} must be a symbolic variable, got {w!r}")

    seeds: list[tuple[Variable, Variable]] = []
    if cost is not None:
        # Theano seeds an integer cost with a float one (_float_ones_like):
        # the ops that made it send zeros to their inputs.
        seeds.append((cost, one_like(cost) if is_float(cost.dtype) else const(1, config.floatX)))
    for k, g in (known_grads or {}).items():
        if not isinstance(k, Variable):
            raise TypeError(f"grad: known_grads keys must be symbolic variables, got {k!r}")
        g = T.as_tensor_variable(g)
        if g.ndim != k.ndim:
            raise TypeError(f"grad: known_grads[{k}] has rank {g.ndim}, the variable has rank {k.ndim}")
        if not is_float(g.dtype):
            raise TypeError(f"grad: known_grads[{k}] has dtype {g.dtype}; gradients must be continuous (float)")
        seeds.append((k, conform(g, k) if is_float(k.dtype) else g))

    # Inside a scan step: differentiate through the outer values of non-sequences.
    roots = graph_inputs([v for v, _ in seeds] + wrt_list)
    outer = _outer_values(roots)
    if outer:
        replaced = clone_replace([v for v, _ in seeds], outer)
        seeds = [(nv, g) for nv, (_, g) in zip(replaced, seeds)]
        wrt_eff = [outer.get(w, w) for w in wrt_list]
    else:
        wrt_eff = wrt_list

    stop = set()
    if isinstance(consider_constant, Variable):
        consider_constant = [consider_constant]
    for c in consider_constant or ():
        if not isinstance(c, Variable):
            raise TypeError(f"grad: consider_constant must hold symbolic variables, got {c!r}")
        stop.add(outer.get(c, c).id)

    grads = backprop(seeds, wrt_eff, stop, check_from=wrt_eff)
    is_connected = connected([v for v, _ in seeds], wrt_eff, stop)
    out = []
    for i, (w, g) in enumerate(zip(wrt_list, grads)):
        if not is_connected[i] and not any(v is wrt_eff[i] for v, _ in seeds):
            # Disconnected by Theano's connection rules, whatever value the
            # ops' gradients (zeros) would give it.
            g = None
            label = "wrt" if single else f"wrt[{i}]"
            msg = (f"grad method was asked to compute the gradient with respect to a variable that is not "
                   f"part of the computational graph of the cost, or is used only by a non-differentiable "
                   f"operator (a size, an index, a shape, disconnected_grad): {_describe(w, label)} "
                   "(pass disconnected_inputs='ignore' to get a zero gradient)")
            if disconnected_inputs == "raise":
                raise DisconnectedInputError(msg)
            if disconnected_inputs == "warn":
                warnings.warn(msg, stacklevel=2)
            if return_disconnected != "zero":
                out.append(None)
                continue
        if g is None:
            g = zeros_like(w, dtype=w.dtype if is_float(w.dtype) else config.floatX)
        out.append(g)
    if add_names:
        for w, g in zip(wrt_list, out):
            if g is not None and g.name is None and w.name and not isinstance(g, Constant):
                g.name = f"(d{cost.name if cost is not None and cost.name else 'cost'}/d{w.name})"
    return out[0] if single else out


def _flat(expression: Variable) -> Variable:
    return expression if expression.ndim <= 1 else T.flatten(expression)


def jacobian(expression: Any, wrt: Any, consider_constant: Any = None, disconnected_inputs: str = "raise") -> Any:
    """The Jacobian of `expression` (flattened) with respect to `wrt`: a scan over its rows.

    Row ``i`` is ``grad(expression[i], wrt)``; a scalar expression gives its
    gradient (Theano's rule).
    """
    expression = T.as_tensor_variable(expression)
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    if expression.ndim == 0:
        g = grad(expression, wrt_list, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        return g[0] if single else g
    flat = _flat(expression)

    def row(i):
        return grad(flat[i], wrt_list, consider_constant=consider_constant,
                    disconnected_inputs=disconnected_inputs)

    rows, _ = scan(row, sequences=T.arange(flat.shape[0]), return_list=True, name="jacobian")
    return rows[0] if single else rows


def hessian(cost: Any, wrt: Any, consider_constant: Any = None, disconnected_inputs: str = "raise") -> Any:
    """The Hessian of the scalar `cost` with respect to each vector in `wrt` (Theano's ``hessian``)."""
    cost = T.as_tensor_variable(cost)
    if cost.ndim != 0:
        raise TypeError(f"hessian: the cost must be a scalar, got {cost.type}")
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    out = []
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable) or w.ndim != 1:
            label = "wrt" if single else f"wrt[{i}]"
            raise TypeError(f"hessian: {label} must be a vector, got {w!r}")
        g = grad(cost, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        out.append(jacobian(g, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs))
    return out[0] if single else out

