"""The symbolic graph of the Theano-style builder: types, variables and nodes.

A graph is made of :class:`Variable` objects (typed symbolic values) and
:class:`Apply` nodes (one application of an :class:`Op` to input variables,
producing output variables). Ops know their output types (NumPy-style dtype
promotion and broadcasting), their output shapes in terms of other variables
(:meth:`Op.infer_shape`) and how to emit MLIR for themselves
(:meth:`Op.emit`). Nothing here touches MLIR (this module imports only
NumPy); the ops themselves are in :mod:`mlir_scan.builder.ops`.

Example::

    >>> from mlir_scan import tensor as T
    >>> x = T.vector("x")
    >>> y = x * 2 + 1
    >>> y.type
    TensorType(float64, (None,))
    >>> y.owner.op
    Elemwise(add)
    >>> [v.name for v in graph_inputs([y]) if not isinstance(v, Constant)]
    ['x']
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = [
    "DTYPES",
    "TensorType",
    "Variable",
    "Constant",
    "Apply",
    "Op",
    "MissingInputError",
    "UnusedInputError",
    "NullTypeGradError",
    "graph_inputs",
    "toposort",
    "ancestors",
    "clone_replace",
    "inputs",
    "check_dtype",
    "upcast",
]

#: Supported dtypes and their MLIR element types.
DTYPES: dict[str, str] = {
    "bool": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "float32": "f32",
    "float64": "f64",
}

_INT_DTYPES = ("int8", "int16", "int32", "int64")
_FLOAT_DTYPES = ("float32", "float64")


class MissingInputError(Exception):
    """A graph uses a variable that is neither an input nor computable (Theano's name)."""


class UnusedInputError(Exception):
    """An input given to :func:`mlir_scan.function` is not used by the outputs."""


class NullTypeGradError(TypeError):
    """A gradient was requested through an op that has none (Theano's name)."""


def check_dtype(dtype: Any, what: str = "dtype") -> str:
    """The canonical name of a supported dtype, or a TypeError naming `what`.

    >>> check_dtype("float64"), check_dtype(np.int32)
    ('float64', 'int32')
    """
    try:
        name = np.dtype(dtype).name
    except TypeError as exc:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from exc
    if name not in DTYPES:
        raise TypeError(
            f"{what}: dtype {name} is not supported (use one of {', '.join(DTYPES)})"
        )
    return name


def upcast(*dtypes: str) -> str:
    """NumPy's promotion of `dtypes` (all in :data:`DTYPES`).

    >>> upcast("int32", "float32"), upcast("int8", "int16"), upcast("bool", "bool")
    ('float64', 'int16', 'bool')
    """
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


def is_float(dtype: str) -> bool:
    return dtype in _FLOAT_DTYPES


def is_int(dtype: str) -> bool:
    return dtype in _INT_DTYPES


class TensorType:
    """A dtype and a shape whose entries are ints (static) or ``None`` (unknown).

    Rank 0 is a scalar; in MLIR it is the element type itself (``f64``), and
    rank >= 1 is a ranked tensor (``tensor<?x3xf64>``).

    >>> t = TensorType("float32", (None, 3))
    >>> t.ndim, t.mlir, t.row().mlir, TensorType("int32", ()).mlir
    (2, 'tensor<?x3xf32>', 'tensor<3xf32>', 'i32')
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: Any, shape: Sequence[int | None] | None = None,
                 broadcastable: Sequence[bool] | None = None, name: str | None = None):
        self.dtype = check_dtype(dtype)
        if shape is not None and broadcastable is not None:
            raise TypeError("TensorType: give shape or broadcastable, not both")
        if shape is None:
            shape = () if broadcastable is None else broadcastable
        if isinstance(shape, (bool, np.bool_, int, np.integer)) or shape is None:
            raise TypeError(f"TensorType: shape must be a sequence, got {shape!r}")
        shape = tuple(shape)
        if broadcastable is not None or (shape and all(isinstance(d, (bool, np.bool_)) for d in shape)):
            # Theano's broadcastable pattern: True is a dimension of static size 1.
            if not all(isinstance(d, (bool, np.bool_)) for d in shape):
                raise TypeError(f"TensorType: broadcastable must hold booleans, got {shape!r}")
            shape = tuple(1 if d else None for d in shape)
        dims = []
        for d in shape:
            if d is not None:
                if isinstance(d, (bool, np.bool_)) or int(d) != d or int(d) < 0:
                    raise ValueError(f"TensorType: bad static dimension {d!r}")
                d = int(d)
            dims.append(d)
        self.shape: tuple[int | None, ...] = tuple(dims)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, name: str | None = None) -> "Variable":
        """A new placeholder of this type (Theano's ``TensorType(dtype, broadcastable)(name)``).

        >>> TensorType("float32", (False, True))("x")
        Variable(x: float32(?, 1))
        """
        return Variable(self, name=name)

    make_variable = __call__

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """Theano's broadcastable pattern: True where the dimension is statically 1."""
        return tuple(d == 1 for d in self.shape)

    @property
    def mlir_elem(self) -> str:
        return DTYPES[self.dtype]

    @property
    def mlir(self) -> str:
        if not self.shape:
            return self.mlir_elem
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"tensor<{dims}x{self.mlir_elem}>"

    def row(self) -> "TensorType":
        """The type of one row (drop the leading dimension)."""
        if not self.shape:
            raise ValueError("a scalar has no rows")
        return TensorType(self.dtype, self.shape[1:])

    def stacked(self, n: int | None) -> "TensorType":
        """The type of `n` rows of this type."""
        return TensorType(self.dtype, (n,) + self.shape)

    def with_dtype(self, dtype: str) -> "TensorType":
        return TensorType(dtype, self.shape)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TensorType)
            and other.dtype == self.dtype
            and other.shape == self.shape
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.shape))

    def __repr__(self) -> str:
        return f"TensorType({self.dtype}, {self.shape})"


_ids = itertools.count()


class Scratchpad(dict):
    """A variable's ``tag``: a dict whose keys are also attributes, as Theano's
    ``tag`` object (``x.tag.test_value = ...``; test values are kept, not used).

    >>> t = Scratchpad()
    >>> t.test_value = 3
    >>> t["test_value"], t.test_value, "trace" in t
    (3, 3, False)
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"tag has no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None


class Variable:
    """A typed symbolic value: a graph input, a constant or an output of a node.

    Variables support NumPy-like operators (``+ - * / // % **``, comparisons,
    indexing) and methods (``sum``, ``mean``, ``astype``, ``T``, ...) that
    build new nodes; see :mod:`mlir_scan.tensor`. ``==`` is identity (use
    ``T.eq`` for an element-wise comparison), as in Theano.
    """

    def __init__(
        self,
        type: TensorType,
        owner: "Apply | None" = None,
        index: int | None = None,
        name: str | None = None,
    ):
        if not isinstance(type, TensorType):
            raise TypeError(f"Variable: expected a TensorType, got {type!r}")
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.id = next(_ids)
        self.tag: Scratchpad = Scratchpad()

    # -- type shortcuts -----------------------------------------------------
    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        return self.type.broadcastable

    def __str__(self) -> str:
        if self.name:
            return self.name
        if self.owner is not None:
            out = f".{self.index}" if len(self.owner.outputs) > 1 else ""
            return f"{self.owner.op}{out}"
        kind = {0: "scalar", 1: "vector", 2: "matrix"}.get(self.ndim, f"tensor{self.ndim}")
        return f"<TensorType({self.type.dtype}, {kind})>"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self}: {self.type.dtype}{_shape_text(self.type.shape)})"

    #: False on the results of the comparison operators ``< <= > >=``
    #: (Theano's ``_is_nonzero``): their truth value raises, so that
    #: ``a < b < c`` (``(a < b) and (b < c)``) fails instead of building ``b < c``.
    _is_nonzero = True

    def __bool__(self) -> bool:
        """True, as in Theano 1.0 (``if not input:`` tests for None), except for
        the result of a comparison operator, which raises ``TypeError``.

        >>> from mlir_scan import tensor as T
        >>> x = T.scalar("x")
        >>> bool(x), bool(x + 1)
        (True, True)
        >>> bool(x < 1)
        Traceback (most recent call last):
        ...
        TypeError: Variables do not support boolean operations: ...
        """
        if self._is_nonzero:
            return True
        raise TypeError(
            f"Variables do not support boolean operations: the truth value of the comparison "
            f"{self} is unknown until the function runs (a chained comparison a < b < c is "
            "(a < b) and (b < c)); use T.and_, T.switch, T.lt ... to build conditions"
        )

    # NumPy on the left of an operator (``np.ones(3) + v``, ``np.float32(0.5) * v``)
    # defers to the variable's reflected operator instead of building an
    # object array: NumPy's ufuncs do not take variables (``__array_ufunc__ =
    # None``), and Theano's ``__array_priority__`` for code that reads it.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        tag = state.get("tag")
        if isinstance(tag, dict) and "eval_functions" in tag:
            # ``Variable.eval``'s cache of compiled functions is rebuilt on demand.
            state["tag"] = Scratchpad((k, v) for k, v in tag.items() if k != "eval_functions")
        return state

    def __deepcopy__(self, memo: dict) -> "Variable":
        """A copy of the graph computing this variable (``copy.deepcopy``), made node by
        node in topological order, so that deep graphs do not hit Python's recursion
        limit; variables and nodes met before (in `memo`) are reused. Ops are shared,
        not copied: they describe computations and are not changed after they are made
        (a scan's inner graph reads its own placeholders, not the outer variables)."""
        if id(self) in memo:
            return memo[id(self)]
        if self.owner is None:
            new = type(self).__new__(type(self))
            memo[id(self)] = new
            new.__setstate__(copy.deepcopy(Variable.__getstate__(self), memo))
            return new
        for node in toposort([self]):
            if id(node) in memo:
                continue
            for v in node.inputs:
                if id(v) not in memo:
                    copy.deepcopy(v, memo)  # a root (the owners of the others come first)
            new_node = Apply.__new__(Apply)
            memo[id(node)] = new_node
            new_node.op = node.op
            new_node.inputs = [memo[id(v)] for v in node.inputs]
            new_node.outputs = []
            for out in node.outputs:
                new = type(out).__new__(type(out))
                memo[id(out)] = new
                state = {k: (new_node if k == "owner" else copy.deepcopy(v, memo))
                         for k, v in Variable.__getstate__(out).items()}
                new.__setstate__(state)
                new_node.outputs.append(new)
        return memo[id(self)]

    def __setstate__(self, state: dict) -> None:
        """A copied or unpickled variable is a new variable: it takes a fresh id
        (graph walks tell variables apart by id)."""
        self.__dict__.update(state)
        self.id = next(_ids)

    def __iter__(self):
        n = self.type.shape[0] if self.ndim else None
        if n is None:
            raise TypeError(
                f"cannot iterate over {self}: its leading dimension is not known "
                "statically (index it explicitly, or use scan)"
            )
        for i in range(n):
            yield self[i]

    def __len__(self) -> int:
        n = self.type.shape[0] if self.ndim else None
        if n is None:
            raise TypeError(f"len({self}) is not known statically; use {self}.shape[0]")
        return n

    # Operators and tensor methods (``+``, ``sum``, ``T``...) are installed
    # by the tensor DSL (:mod:`mlir_scan.builder.tensor.basic`), which defines them.


def comparison_operator(fn):
    """`fn` (a comparison such as ``T.lt``) as the operator ``Variable.__lt__``:
    its result's truth value raises (Theano's ``_is_nonzero = False``)."""

    def operator(self, other):
        out = fn(self, other)
        if isinstance(out, Variable):
            out._is_nonzero = False
        return out

    operator.__name__ = getattr(fn, "__name__", "comparison")
    operator.__doc__ = fn.__doc__
    operator.__wrapped__ = fn
    return operator


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class Constant(Variable):
    """A variable with a value known when the graph is built.

    >>> Constant(np.asarray([1.0, 2.0])).type
    TensorType(float64, (2,))
    """

    def __init__(self, data: Any, dtype: str | None = None, name: str | None = None):
        array = np.asarray(data, dtype=dtype)
        dtype_name = check_dtype(array.dtype, "constant")
        super().__init__(TensorType(dtype_name, array.shape), name=name)
        self.data = array
        self.data.setflags(write=False)

    def __str__(self) -> str:
        if self.name:
            return self.name
        if self.data.size <= 8:
            return f"Constant{{{self.data.tolist()}}}"
        return f"Constant{{{self.type.dtype}{_shape_text(self.type.shape)}}}"


class Apply:
    """One application of `op` to `inputs`, producing `outputs`."""

    __slots__ = ("op", "inputs", "outputs")

    def __init__(self, op: "Op", inputs: Sequence[Variable], output_types: Sequence[TensorType]):
        for i, v in enumerate(inputs):
            if not isinstance(v, Variable):
                raise TypeError(f"{op}: input #{i} is not a symbolic variable: {v!r}")
        self.op = op
        self.inputs = list(inputs)
        self.outputs = [Variable(t, self, i) for i, t in enumerate(output_types)]

    def clone_with_new_inputs(self, inputs: Sequence[Variable]) -> "Apply":
        """A node applying the same op to `inputs` (types re-derived by the op)."""
        return self.op.make_node(*inputs)

    def __repr__(self) -> str:
        return f"Apply({self.op}, {[str(i) for i in self.inputs]})"


class Op:
    """Base class of the graph's operations.

    A subclass implements :meth:`make_node` (check and type the inputs) and
    :meth:`emit` (write MLIR); :meth:`infer_shape` is optional (the fallback
    reads the dimensions of the outputs at run time).
    """

    #: Parameters that identify the op (used by __eq__/__hash__ and __str__).
    __props__: tuple[str, ...] = ()

    #: True for element-wise ops: ops with a ``scalar_op`` applied to every
    #: element of their broadcast inputs. The emitter may compute such a node
    #: inside the loop of an element-wise consumer (see ``Block.plan``).
    elementwise: bool = False

    def make_node(self, *inputs: Variable) -> Apply:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, *inputs: Any) -> Any:
        node = self.make_node(*inputs)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def infer_shape(self, node: Apply, input_shapes: list[tuple]) -> list[tuple] | None:
        """Output shapes as tuples of ints / int64 scalar variables, or None."""
        return None

    def emit(self, block: Any, node: Apply, inputs: list[str]) -> list[str]:  # pragma: no cover
        raise NotImplementedError

    def L_op(self, node: Apply, output_grads: list["Variable | None"]) -> list["Variable | None"]:
        """The gradients of a cost with respect to the node's inputs (backpropagation).

        `output_grads` holds the gradient of the cost with respect to each
        output (``None``: the cost does not depend on it, a zero gradient).
        The result holds one entry per input: a variable of the input's
        shape, or ``None`` for a zero (or undefined, integer) gradient.
        :mod:`mlir_scan.builder.gradient` calls it; an op without a gradient
        raises :class:`NullTypeGradError` naming itself.
        """
        raise NullTypeGradError(
            f"grad: {self} has no gradient: the cost depends on a differentiated input only "
            f"through {self} (node {node})"
        )

    def _props(self) -> tuple:
        return tuple(getattr(self, p) for p in self.__props__)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._props() == other._props()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._props()))

    def __str__(self) -> str:
        props = self._props()
        if not props:
            return type(self).__name__
        return f"{type(self).__name__}({', '.join(str(p) for p in props)})"

    __repr__ = __str__


# -- graph walks ---------------------------------------------------------------


def toposort(outputs: Iterable[Variable], stop: set[int] | None = None) -> list[Apply]:
    """The nodes computing `outputs`, each after the nodes it depends on.

    `stop` holds ids of variables whose owners are not walked into.
    Iterative, so deep graphs do not hit Python's recursion limit.
    """
    stop = stop or set()
    order: list[Apply] = []
    seen: set[int] = set()
    for out in outputs:
        stack: list[tuple[Apply, int]] = []
        if out.owner is not None and out.id not in stop and id(out.owner) not in seen:
            seen.add(id(out.owner))
            stack.append((out.owner, 0))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                inp = node.inputs[i]
                if inp.owner is not None and inp.id not in stop and id(inp.owner) not in seen:
                    seen.add(id(inp.owner))
                    stack.append((inp.owner, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def ancestors(outputs: Iterable[Variable], stop: set[int] | None = None) -> list[Variable]:
    """Every variable `outputs` depend on (themselves included), inputs first."""
    outputs = list(outputs)
    result: list[Variable] = []
    seen: set[int] = set()

    def add(v: Variable) -> None:
        if v.id not in seen:
            seen.add(v.id)
            result.append(v)

    nodes = toposort(outputs, stop)
    for node in nodes:
        for v in node.inputs:
            if v.owner is None or (stop and v.id in stop):
                add(v)
    for node in nodes:
        for v in node.outputs:
            add(v)
    for v in outputs:
        add(v)
    return result


def graph_inputs(outputs: Iterable[Variable], stop: set[int] | None = None) -> list[Variable]:
    """The root variables of the graph of `outputs` (no owner, or in `stop`)."""
    return [
        v for v in ancestors(outputs, stop) if v.owner is None or (stop and v.id in stop)
    ]


def clone_replace(
    outputs: Sequence[Variable], replace: dict[Variable, Variable], strict: bool = True
) -> list[Variable]:
    """`outputs` recomputed with each key of `replace` swapped for its value.

    Nodes that do not depend on a replaced variable are shared, not copied.
    A replacement must have its key's dtype and rank (with `strict`) or rank
    (without: the nodes re-derive their types).

    >>> from mlir_scan import tensor as T
    >>> x, y = T.scalar("x"), T.scalar("y")
    >>> [z] = clone_replace([x * 2], {x: y})
    >>> z.owner.inputs[0] is y
    True
    """
    mapping: dict[int, Variable] = {k.id: v for k, v in replace.items()}
    for key, value in replace.items():
        if (strict and key.type.dtype != value.type.dtype) or key.type.ndim != value.type.ndim:
            raise TypeError(
                f"clone_replace: cannot replace {key} ({key.type}) by {value} ({value.type})"
            )
    for node in toposort(outputs, stop=set(mapping)):
        new_inputs = [mapping.get(v.id, v) for v in node.inputs]
        if all(a is b for a, b in zip(new_inputs, node.inputs)):
            continue
        new_node = node.clone_with_new_inputs(new_inputs)
        for old, new in zip(node.outputs, new_node.outputs):
            if old.name and not new.name:
                new.name = old.name
            mapping[old.id] = new
    return [mapping.get(v.id, v) for v in outputs]


def depends_on(outputs: Iterable[Variable], targets: set[int]) -> set[int]:
    """Ids of the variables among the ancestors of `outputs` that depend on `targets`."""
    dependent = set(targets)
    for node in toposort(outputs):
        if any(v.id in dependent for v in node.inputs):
            dependent.update(v.id for v in node.outputs)
    return dependent


def inputs(variables: Iterable[Variable], blockers: Iterable[Variable] | None = None) -> list[Variable]:
    """Theano's ``graph.inputs``: the variables without an owner that `variables` depend on.

    Constants and shared variables are included; the walk stops at `blockers`.

    >>> from mlir_scan import tensor as T
    >>> x, y = T.scalar("x"), T.scalar("y")
    >>> [v.name for v in inputs([x * y + x])]
    ['x', 'y']
    """
    if isinstance(variables, Variable):
        variables = [variables]
    stop = {v.id for v in blockers} if blockers is not None else None
    return graph_inputs(list(variables), stop)
