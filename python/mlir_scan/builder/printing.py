"""Theano's ``theano.printing`` (``mlir_scan.printing``): text forms of a graph, and ``Print``.

:func:`debugprint` prints the graph of variables, nodes or a compiled function
as an indented tree, one line per node (Theano's layout: ``op [id A]
'name'``, a node seen before is printed once and then only named), followed
by the inner graphs of the scans. :func:`pprint` (also ``pp``) gives an
expression as a formula. :class:`Print` passes its input through.
``pydotprint`` (graphviz pictures) is not provided.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x, y = T.dvector("x"), T.dscalar("y")
    >>> print(theano.printing.pprint(T.exp(x) * y + 1))
    ((exp(x) * y) + 1)
    >>> theano.printing.debugprint(T.exp(x) * y + 1)
    Elemwise(add) [id A] ''
     |Elemwise(mul) [id B] ''
     | |Elemwise(exp) [id C] ''
     | | |x [id D]
     | |y [id E]
     |Constant{1} [id F]
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Iterable

import numpy as np

from .emitter import Block
from .graph import Apply, Constant, Op, Variable
from .tensor import as_tensor_variable

__all__ = ["debugprint", "pprint", "pp", "Print"]

_INFIX = {"add": ("+", 6), "sub": ("-", 6), "mul": ("*", 7), "true_div": ("/", 7), "int_div": ("//", 7),
          "mod": ("%", 7), "pow": ("**", 9), "lt": ("<", 4), "le": ("<=", 4), "gt": (">", 4), "ge": (">=", 4),
          "eq": ("==", 4), "neq": ("!=", 4), "and": ("&", 3), "or": ("|", 1), "xor": ("^", 2)}
_PREFIX = {"neg": "-", "invert": "~"}


def _char_id(n: int) -> str:
    """Theano's ``ids="CHAR"``: A, B, ..., Z, BA, BB, ..."""
    digits = ""
    while True:
        digits = chr(ord("A") + n % 26) + digits
        n //= 26
        if n == 0:
            return digits


class _Ids:
    def __init__(self, kind: str):
        if kind not in ("CHAR", "id", "int", ""):
            raise ValueError(f"debugprint: ids must be 'CHAR', 'id', 'int' or '', not {kind!r}")
        self.kind, self.seen = kind, {}

    def __call__(self, v: Variable) -> str:
        if self.kind == "":
            return ""
        key = id(v.owner) if v.owner is not None else id(v)
        if key not in self.seen:
            n = len(self.seen)
            self.seen[key] = {"CHAR": _char_id(n), "int": str(n), "id": str(key)}[self.kind]
        return f"[id {self.seen[key]}]"


def _leaf_text(v: Variable) -> str:
    return str(v)


def _node_text(v: Variable) -> str:
    node = v.owner
    text = str(node.op)
    if len(node.outputs) > 1:
        text += f".{v.index}"
    return text


def _print_tree(v: Variable, out: list[str], ids: _Ids, done: set, prefix: str, child_prefix: str,
                depth: int, print_type: bool, stop_on_name: bool, inner: list) -> None:
    # Iterative: deep graphs do not hit Python's recursion limit.
    stack = [(v, prefix, child_prefix, depth)]
    while stack:
        v, prefix, child_prefix, depth = stack.pop()
        if depth == 0:
            continue
        type_text = f" <{v.type}>" if print_type else ""
        id_text = ids(v)
        sep = " " if id_text else ""
        if v.owner is None:
            out.append(f"{prefix}{_leaf_text(v)}{sep}{id_text}{type_text}")
            continue
        node = v.owner
        out.append(f"{prefix}{_node_text(v)}{sep}{id_text}{type_text} '{v.name or ''}'")
        if id(node) in done or (stop_on_name and v.name and prefix):
            continue
        done.add(id(node))
        if hasattr(node.op, "inner_outputs") and all(node.op is not n.op for n in inner):
            inner.append(node)
        children = node.inputs
        for k in range(len(children) - 1, -1, -1):
            last = k == len(children) - 1
            stack.append((children[k], child_prefix + " |", child_prefix + ("  " if last else " |"), depth - 1))


def _roots(obj: Any) -> list[Variable]:
    if isinstance(obj, Variable):
        return [obj]
    if isinstance(obj, Apply):
        return list(obj.outputs)
    outputs = getattr(obj, "outputs", None)
    if outputs is not None and hasattr(obj, "updates"):  # a compiled function
        return list(outputs) + list(obj.updates.values())
    if isinstance(obj, (list, tuple)):
        roots: list[Variable] = []
        for item in obj:
            roots.extend(_roots(item))
        return roots
    raise TypeError(f"debugprint: expected a variable, a node, a compiled function or a list of them, got {obj!r}")


def debugprint(obj: Any, depth: int = -1, print_type: bool = False, file: Any = None, ids: str = "CHAR",
               stop_on_name: bool = False, done: Any = None, print_storage: bool = False,
               print_clients: bool = False, used_ids: Any = None) -> Any:
    """Prints the graph of `obj` (variables, a node, a compiled function, or a list of them)
    as an indented tree, as Theano's ``theano.printing.debugprint`` does.

    `depth` limits the levels printed (-1: all), `print_type` adds each
    variable's type, `ids` names nodes (``"CHAR"``: A, B...; ``"int"``,
    ``"id"``, or ``""`` for none), `stop_on_name` does not expand named
    variables. `file` is where to print (``sys.stdout`` by default); with
    ``file="str"`` the text is returned instead (and `file` itself when one is given). `done`, `print_storage`,
    `print_clients` and `used_ids` are accepted and ignored.

    >>> from mlir_scan import tensor as T
    >>> x = T.dscalar("x")
    >>> print(debugprint(T.tanh(x), file="str", print_type=True), end="")
    Elemwise(tanh) [id A] <TensorType(float64, ())> ''
     |x [id B] <TensorType(float64, ())>
    """
    out: list[str] = []
    ident = _Ids(ids)
    seen: set = set()
    inner: list[Apply] = []
    for v in _roots(obj):
        _print_tree(v, out, ident, seen, "", "", depth, print_type, stop_on_name, inner)
    if inner:
        out.append("")
        out.append("Inner graphs of the scan ops:")
        k = 0
        while k < len(inner):  # inner graphs may hold scans of their own
            node = inner[k]
            k += 1
            out.append("")
            first = node.outputs[0]
            out.append(f"{_node_text(first)} {ident(first)} '{first.name or ''}'".rstrip())
            for o in node.op.inner_outputs:
                if isinstance(o, Variable):
                    _print_tree(o, out, ident, seen, " >", " >", depth, print_type, stop_on_name, inner)
    text = "\n".join(out) + "\n"
    if file == "str":
        return text
    stream = sys.stdout if file is None else file
    stream.write(text)
    return file


def _constant_text(c: Constant) -> str:
    data = c.data
    if data.ndim == 0:
        return repr(data.item())
    if data.size <= 8:
        return np.array2string(data, separator=", ")
    return str(c)


def _formula(v: Variable, memo: dict[int, tuple[str, int]]) -> tuple[str, int]:
    """(text, precedence) of `v`; iterative over the graph."""
    stack: list[tuple[Variable, bool]] = [(v, False)]
    while stack:
        var, ready = stack.pop()
        if var.id in memo:
            continue
        if var.name and var.owner is None or isinstance(var, Constant) or var.owner is None:
            if isinstance(var, Constant) and not var.name:
                memo[var.id] = (_constant_text(var), 100)
            else:
                memo[var.id] = (str(var), 100)
            continue
        node = var.owner
        if not ready:
            stack.append((var, True))
            stack.extend((i, False) for i in node.inputs if i.id not in memo)
            continue
        args = [memo[i.id] for i in node.inputs]
        scalar = getattr(getattr(node.op, "scalar_op", None), "name", None)
        if scalar in _INFIX and len(args) == 2:
            sym, prec = _INFIX[scalar]
            memo[var.id] = (f"({args[0][0]} {sym} {args[1][0]})", 100)
        elif scalar in _PREFIX and len(args) == 1:
            memo[var.id] = (f"{_PREFIX[scalar]}{args[0][0]}", 100)
        else:
            name = scalar if scalar is not None else str(node.op)
            if len(node.outputs) > 1:
                name += f".{var.index}"
            memo[var.id] = (f"{name}({', '.join(a for a, _ in args)})", 100)
    return memo[v.id]


def pprint(obj: Any) -> str:
    """A formula for `obj` (a variable or a list of variables), as Theano's ``pprint``:
    infix operators in parentheses, other ops as calls, inputs by name.

    >>> from mlir_scan import tensor as T
    >>> a, b = T.dscalars("a", "b")
    >>> pprint(-a + T.maximum(a, b) / 2)
    '(-a + (maximum(a, b) / 2))'
    """
    if isinstance(obj, (list, tuple)):
        return "\n".join(pprint(v) for v in obj)
    if not isinstance(obj, Variable):
        raise TypeError(f"pprint: expected a symbolic variable, got {obj!r}")
    return _formula(obj, {})[0]


pp = pprint


class Print(Op):
    """Theano's ``Print(message)(x)``: `x` itself, its gradient passing through.

    Compiled programs do not call back into Python, so the value is **not
    printed** when the function runs (a warning says so once); the op only
    keeps programs that use it running. Use ``.eval`` or an extra output of the
    function to see a value.
    """

    __props__ = ("message",)
    _warned = False

    def __init__(self, message: str = "", attrs: Iterable[str] = ("__str__",), global_fn: Any = None):
        self.message = message
        self.attrs = tuple(attrs)
        if not Print._warned:
            Print._warned = True
            warnings.warn("theano.printing.Print: compiled functions do not print values; "
                          "the op passes its input through", stacklevel=2)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type])

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0]]

    def emit(self, b: Block, node: Apply, inputs: list[str]) -> list[str]:
        return [inputs[0]]

    def L_op(self, node: Apply, output_grads: list) -> list:
        return list(output_grads)
