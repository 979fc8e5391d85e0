"""``MlirScanLinker``: the PyTensor linker of the ``MLIR_SCAN`` mode.

Built on PyTensor's ``JITLinker``, as its JAX and NUMBA linkers are. When
every node of the (rewritten) FunctionGraph has a translation, the whole
graph becomes ONE builder graph, hence one MLIR module compiled by
:func:`mlir_scan.function`, run as a single thunk (no per-node Python
dispatch). Otherwise (and unless ``strict``) each Scan node mlir-scan
supports is replaced by a compiled :class:`~.fallback.MlirScanOp` and the
graph runs in PyTensor's own VM linker (C thunks where a compiler exists).
With ``strict=True`` the first unsupported op raises
:class:`UnsupportedOpError` instead.

A graph that translates but then fails to build or compile (a defect of
mlir-scan: the builder rejects it, or its MLIR does not verify) falls back
the same way, Scan by Scan (a Scan that fails too stays PyTensor's); with
``strict=True`` it raises :class:`CompileError`.

After compilation, ``f.maker.linker`` tells what happened: ``whole_graph``
(bool), ``ir`` (the MLIR module of the whole graph, or of the compiled scans
joined), ``left_to_pytensor`` (the ops PyTensor runs, with the reason).

Example::

    >>> import pytensor, pytensor.tensor as pt
    >>> from pytensor.compile.mode import Mode
    >>> x = pt.vector("x")
    >>> f = pytensor.function([x], (x * 2).sum(), mode=Mode(MlirScanLinker(), "fast_run"))
    >>> float(f([1.0, 2.0])), f.maker.linker.whole_graph
    (6.0, True)
"""

from __future__ import annotations

import warnings
from typing import Any

from pytensor.link.basic import JITLinker
from pytensor.link.vm import VMLinker

from ..builder.function import function as builder_function
from .fallback import compile_scans, describe_failure
from .rewrites import EXCLUDED_REWRITES
from .translate import Translator, Unsupported

__all__ = ["MlirScanLinker", "UnsupportedOpError", "CompileError", "FallbackWarning", "EXCLUDED_REWRITES"]


class FallbackWarning(UserWarning):
    """A compiled function runs (part of) its graph in PyTensor instead of mlir-scan.

    Warned once per compiled function; the message names the op types and
    why. ``mlir_scan.pytensor.left_to_pytensor(f)`` lists them;
    ``warnings.simplefilter("ignore", FallbackWarning)`` silences it, and
    ``get_mode(strict=True)`` makes it an error.
    """


class UnsupportedOpError(NotImplementedError):
    """Strict mode: the graph uses an op mlir-scan does not translate (the message names it)."""


class CompileError(RuntimeError):
    """Strict mode: a translated graph that mlir-scan failed to build or compile.

    Not an unsupported op but a defect of mlir-scan (the builder rejected the
    translated graph, or the emitted MLIR did not verify or lower); the cause
    is chained. Without ``strict`` the function falls back to PyTensor instead.
    """


class MlirScanLinker(JITLinker):
    """The linker of the ``MLIR_SCAN`` mode (see the module docstring)."""

    required_rewrites = ("minimum_compile",)
    incompatible_rewrites = EXCLUDED_REWRITES

    def __init__(self, strict: bool = False, allow_gc: bool | None = None, schedule: Any = None):
        super().__init__(allow_gc=allow_gc, schedule=schedule)
        self.strict = bool(strict)
        self.whole_graph: bool | None = None
        self.ir: str | None = None
        self.left_to_pytensor: list[tuple[Any, str]] = []
        self.updated_vars: dict = {}
        self._function: Any = None

    def __getstate__(self) -> dict:
        # (PyTensor pickles a function with its maker and linker; the compiled
        # code is not pickled: make_all compiles it again after unpickling)
        return {**self.__dict__, "_function": None}

    def clone(self, allow_gc: bool | None = None) -> "MlirScanLinker":
        return type(self)(strict=self.strict, allow_gc=self.allow_gc if allow_gc is None else allow_gc,
                          schedule=self.schedule)

    def accept(self, fgraph: Any, no_recycling: Any = None, profile: Any = None) -> "MlirScanLinker":
        if self.fgraph is not None and self.fgraph is not fgraph:
            return self.clone().accept(fgraph, no_recycling, profile)
        self.fgraph = fgraph
        self.no_recycling = list(no_recycling or [])
        self.profile = profile
        return self

    def accept_var_updates(self, updated_vars: dict) -> None:
        self.updated_vars = updated_vars

    # -- whole graph ----------------------------------------------------------------------
    def _translate(self) -> Any:
        fg = self.fgraph
        tr = Translator()
        tr.fgraph = fg
        b_inputs = tr.inputs(fg.inputs)
        outs = tr.outputs(fg.outputs, fg.inputs)
        return builder_function(tr.check_inputs(b_inputs), list(outs), on_unused_input="ignore")

    def make_all(self, input_storage=None, output_storage=None, storage_map=None):
        try:
            self._function = self._translate()
        except Unsupported as exc:
            if self.strict:
                raise UnsupportedOpError(f"mlir-scan (strict mode): {exc}") from exc
            return self._fallback((exc.op, str(exc)), input_storage, output_storage, storage_map)
        except Exception as exc:  # noqa: BLE001 - any failure to build or compile
            # A graph that translates but does not build or compile is mlir-scan's
            # defect, not the user's: PyTensor still computes it (never a crash or a
            # wrong result), and left_to_pytensor says why.
            reason = f"the whole graph failed to compile: {describe_failure(exc)}"
            if self.strict:
                raise CompileError(f"mlir-scan (strict mode): {reason}") from exc
            return self._fallback((None, reason), input_storage, output_storage, storage_map)
        self.whole_graph = True
        self.ir = self._function.ir
        return super().make_all(input_storage, output_storage, storage_map)

    def fgraph_convert(self, fgraph, **kwargs):
        return self._function

    def jit_compile(self, fn):
        if not self.fgraph.outputs:
            def run_no_outputs(*args):
                fn(*args)
            return run_no_outputs
        return fn

    def create_thunk_inputs(self, storage_map):
        return [storage_map[n] for n in self.fgraph.inputs]

    # -- fallback -------------------------------------------------------------------------
    def _fallback(self, reason: tuple[Any, str], input_storage, output_storage, storage_map):
        """PyTensor's VM linker runs the graph, with each Scan mlir-scan compiles as a MlirScanOp.

        `reason` is ``(op or None, why)``: why the whole graph is not one module.
        """
        new_nodes, left, replaced = compile_scans(self.fgraph)
        no_recycling = [replaced.get(v, v) for v in self.no_recycling]
        self.whole_graph = False
        self.left_to_pytensor = [reason] + left
        ops = sorted({type(op).__name__ for op, _ in self.left_to_pytensor if op is not None})
        compiled = f"; {len(new_nodes)} of its Scans are compiled by mlir-scan" if new_nodes else ""
        warnings.warn(
            f"mlir-scan: this function runs in PyTensor, not as one mlir-scan module"
            f"{' (ops: ' + ', '.join(ops) + ')' if ops else ''}: {reason[1]}{compiled}. "
            "mlir_scan.pytensor.left_to_pytensor(f) lists what was left to PyTensor and why.",
            FallbackWarning, stacklevel=2)
        self.ir = "\n".join(n.op.ir for n in new_nodes) or None
        vm = VMLinker(allow_gc=self.allow_gc, use_cloop=False)
        vm = vm.accept(self.fgraph, no_recycling, self.profile)
        vm.accept_var_updates(self.updated_vars)
        return vm.make_all(input_storage=input_storage, output_storage=output_storage, storage_map=storage_map)
