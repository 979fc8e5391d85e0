"""Compile MLIR with scan ops to native code and call it on NumPy arrays.

Example::

    import numpy as np
    import mlir_scan

    prog = mlir_scan.compile('''
      func.func @cumsum(%xs: tensor<?xf64>, %x0: f64) -> tensor<?xf64> {
        %c0 = arith.constant 0 : index
        %n = tensor.dim %xs, %c0 : tensor<?xf64>
        %r = scan.scan steps(%n) sequences(%xs : tensor<?xf64>) sitsot(%x0 : f64) {
        ^bb0(%x: f64, %acc: f64):
          %s = arith.addf %acc, %x : f64
          scan.yield %s : f64
        } -> (tensor<?xf64>)
        return %r : tensor<?xf64>
      }''')
    prog.cumsum(np.arange(4.0), 0.0)     # array([0., 1., 3., 6.])

Every public ``func.func`` whose arguments and results are ranked tensors or
scalars (``index``, ``i1``, ``i8``..``i64``, ``f32``, ``f64``) becomes a method
of the returned :class:`Program`. Calls check dtypes, ranks and static sizes
against the signature and never modify their inputs. Each call runs in a call
frame of the run-time library (python/runtime/ScanRuntime.h): a failed
run-time check ends the call and raises here, for that call alone, whatever
other threads do. The checks compiled into scans (``n_steps < 0``, too-short
sequences...) and the run-time verification of the program's ops (mismatched
dynamic sizes, out-of-bounds indices; ``checks=False`` leaves it out) raise
``ValueError``; a buffer that cannot be allocated (or whose size does not fit
in 64 bits) raises ``MemoryError``, an empty one of a shape NumPy cannot have
(``(2**62, 0)`` of f64) ``ValueError``. Results are NumPy arrays that own the
memory the native code allocated for them.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import importlib.util
import math
import os
import re
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from mlir import execution_engine, ir, passmanager

from . import _blas, _native, _registration, _vector_math

__all__ = ["Program", "STAGES", "wait_optimized"]

#: Stages whose IR :meth:`Program.ir` can show, in pipeline order.
STAGES = ("input", "optimized", "scf", "bufferized", "llvm")

# Pass pipelines between consecutive stages (textual, as `scan-opt` takes them;
# all but the first are pipelines registered in passes/lib/Pipelines.cpp).
_OPTIMIZE = "scan-optimize"
_VERIFY = "scan-runtime-verification,"
_TO_SCF = "convert-scan-to-scf,canonicalize,cse"
_BUFFERIZE = "scan-bufferize-loops"
_TO_LLVM = "scan-buffers-to-llvm"


class _CallError(ctypes.Structure):
    """`CallError` of python/runtime/ScanRuntime.h: one call's failure."""

    _fields_ = [("kind", ctypes.c_int64), ("code", ctypes.c_int64), ("item", ctypes.c_int64),
                ("have", ctypes.c_int64), ("need", ctypes.c_int64), ("message", ctypes.c_char * 1024)]


#: ErrorKind of ScanRuntime.h -> the exception raised.
_ERROR_KINDS = {1: ValueError, 2: IndexError, 3: MemoryError}
#: ScanErrorCode (passes/include/Scan/ErrorCodes.h) of the graph builder's
#: checks, whose messages the builder keeps (see CheckFailure).
_BUILDER_CODES = (100, 101)


class CheckFailure:
    """What a failed check of the graph builder reported: its id and values.

    Attached as ``.scan_check`` to the exception a call raises, so that
    :mod:`mlir_scan.function` can replace the message by its own.
    """

    __slots__ = ("check", "have", "need")

    def __init__(self, check: int, have: int, need: int):
        self.check, self.have, self.need = check, have, need


#: ScanErrorCode::VerificationFailed: a cf.assert, located "file:line:col: what".
_VERIFICATION_FAILED = 7
#: ScanErrorCode::CodeNotCompiled: LLVM could not compile the quick code that
#: the call waited for (python/capi/ScanJIT.cpp compiles it in the background).
_CODE_NOT_COMPILED = 10
_LOCATED = re.compile(r"-:(\d+):(\d+): (.*)", re.S)


def _call_error(error: _CallError, source: str) -> Exception:
    kind = _ERROR_KINDS.get(error.kind, RuntimeError)
    message = error.message.decode(errors="replace")
    located = _LOCATED.fullmatch(message) if error.code == _VERIFICATION_FAILED else None
    if located:
        # "-" is the buffer compile() parsed: point into the source text.
        line, column, what = int(located[1]), int(located[2]), located[3]
        lines = source.splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        message = f"{what} (line {line}, column {column} of the compiled source" + (
            f": `{text}`)" if text else ")")
    exc = kind(message)
    if error.code in _BUILDER_CODES:
        exc.scan_check = CheckFailure(error.item, error.have, error.need)
    return exc


def release_cached_memory() -> int:
    """Gives the memory compiled programs freed back to the system; returns its bytes.

    Programs allocate their buffers through mlir-scan's run-time allocator,
    which keeps freed blocks of 128 KiB or more (up to 512 MiB) for the next
    call instead of returning them, as the caching allocators of XLA and
    PyTorch do: a repeated call then pays no page faults. This empties that
    cache (``torch.cuda.empty_cache()``'s role). Buffers still in use, such as
    arrays a program returned, are not touched.

    >>> import mlir_scan
    >>> mlir_scan.release_cached_memory() >= 0
    True
    """
    return int(_registration.runtime_library().mlirScanReleaseCachedMemory())


def _runtime_symbols() -> dict[str, int]:
    """The addresses every compiled program's external symbols resolve to."""
    lib = _registration.runtime_library()
    names = {
        # finalize-memref-to-llvm{use-generic-functions}
        "_mlir_memref_to_llvm_alloc": "_mlir_memref_to_llvm_alloc",
        "_mlir_memref_to_llvm_free": "_mlir_memref_to_llvm_free",
        # libc names, should a lowering call them directly
        "malloc": "mlirScanAlloc",
        "calloc": "mlirScanCalloc",
        "free": "mlirScanFree",
        "memrefCopy": "mlirScanMemrefCopy",
        # passes/include/Scan/RuntimeChecks.h
        "__mlir_scan_fail": "__mlir_scan_fail",
        "__mlir_scan_fail_alloc": "__mlir_scan_fail_alloc",
        "__mlir_scan_fail_message": "__mlir_scan_fail_message",
        # the quick tier's loops (python/capi/ScanJIT.cpp)
        "__mlir_scan_poll_upgrade": "__mlir_scan_poll_upgrade",
        "__mlir_scan_upgrade_begins": "__mlir_scan_upgrade_begins",
        "__mlir_scan_upgrade_ends": "__mlir_scan_upgrade_ends",
        "__mlir_scan_foreground": "__mlir_scan_foreground",
        "__mlir_scan_compile_begins": "mlirScanCompileBegins",
        "__mlir_scan_compile_ends": "mlirScanCompileEnds",
        "__mlir_scan_entries_ready": "__mlir_scan_entries_ready",
        # python/runtime/ScanParallel.cpp (scan-lower-parallel-calls)
        "__mlir_scan_parallel_for": "__mlir_scan_parallel_for",
        "__mlir_scan_parallel_parts": "__mlir_scan_parallel_parts",
        # python/runtime/ScanBlas.cpp (scan-call-blas)
        "mlir_scan_blas_gemm_f64": "mlirScanBlasGemmF64",
        "mlir_scan_blas_gemm_f32": "mlirScanBlasGemmF32",
        "mlir_scan_gemm_f64": "mlirScanGemmF64",
        "mlir_scan_gemm_f32": "mlirScanGemmF32",
        # python/runtime/ScanSpecialFunctions.cpp (gammaln, psi, polygamma)
        **{name: name for base in ("lgamma", "digamma", "polygamma")
           for name in (f"__mlir_scan_{base}", f"__mlir_scan_{base}f")},
    }
    return {symbol: ctypes.cast(lib[name], ctypes.c_void_p).value for symbol, name in names.items()}


_RUNTIME_SYMBOLS = _runtime_symbols()
_blas.load(_registration.runtime_library())

_SCALAR_DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "index": np.int64,
}
_CTYPES = {
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
    np.dtype(np.bool_): ctypes.c_bool,
    np.dtype(np.int8): ctypes.c_int8,
    np.dtype(np.int16): ctypes.c_int16,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.int64): ctypes.c_int64,
}


def _mlir_capi_path() -> str:
    """The MLIR copy of the Python bindings (libMLIRPythonCAPI.so)."""
    libs = importlib.util.find_spec("mlir").submodule_search_locations[0]
    return os.path.join(libs, "_mlir_libs", "libMLIRPythonCAPI.so")


#: The MLIR copy of the Python bindings (same process): its C API gives the
#: native address of any JIT symbol, including globals.
def _capi_library() -> ctypes.CDLL:
    lib = ctypes.CDLL(_mlir_capi_path())
    lib.mlirExecutionEngineLookup.restype = ctypes.c_void_p
    lib.mlirExecutionEngineLookup.argtypes = [ctypes.c_void_p, _registration.MlirStringRef]
    return lib


_CAPI = _capi_library()


@dataclass(frozen=True)
class _Type:
    """A function argument/result type: a scalar or a ranked tensor."""

    text: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None  # None for scalars; None dims are `?`

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    @functools.cached_property
    def min(self) -> int:
        return int(np.iinfo(self.dtype).min) if self.dtype.kind in "iu" else 0

    @functools.cached_property
    def max(self) -> int:
        return int(np.iinfo(self.dtype).max) if self.dtype.kind in "iu" else 0

    @classmethod
    def parse(cls, type_: ir.Type, what: str) -> "_Type":
        text = str(type_)
        if isinstance(type_, ir.RankedTensorType):
            tensor = type_
            elem = str(tensor.element_type)
            if elem not in _SCALAR_DTYPES or tensor.rank == 0:
                raise TypeError(f"{what} has unsupported type {text}")
            shape = tuple(
                None if tensor.is_dynamic_dim(i) else tensor.get_dim_size(i)
                for i in range(tensor.rank)
            )
            return cls(text, np.dtype(_SCALAR_DTYPES[elem]), shape)
        if text in _SCALAR_DTYPES:
            return cls(text, np.dtype(_SCALAR_DTYPES[text]), None)
        raise TypeError(f"{what} has unsupported type {text}")


def _descriptor_type(rank: int, dtype: np.dtype) -> type[ctypes.Structure]:
    """The ctypes layout of a ranked memref descriptor."""
    key = (rank, dtype)
    if key not in _DESCRIPTORS:
        _DESCRIPTORS[key] = type(
            f"MemRef{rank}d_{dtype.name}",
            (ctypes.Structure,),
            {
                "_fields_": [
                    ("allocated", ctypes.c_void_p),
                    ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank),
                ]
            },
        )
    return _DESCRIPTORS[key]


_DESCRIPTORS: dict[tuple[int, np.dtype], type[ctypes.Structure]] = {}


class _Function(_native.Function):
    """A compiled public function, callable on NumPy arrays and scalars.

    Calls go through the native call path (python/native/ScanNative.cpp):
    exact arguments (an ndarray of the right dtype, rank and static sizes,
    C-contiguous; a Python or NumPy scalar of the right kind and range) are
    passed without a Python-level step; anything else goes through
    :meth:`_coerce`, which converts it or raises the error that names it.
    Results are NumPy arrays that own the memory the program allocated.
    """

    def __init__(self, program: "Program", name: str, args: list[_Type], results: list[_Type]):
        # The native part is bound by _bind() once the program is compiled.
        self._program = program
        self.__name__ = name
        self.args = args
        self.results = results

    def __repr__(self) -> str:
        sig = ", ".join(a.text for a in self.args)
        res = ", ".join(r.text for r in self.results)
        return f"<compiled @{self.__name__}({sig}) -> ({res})>"

    def _bind(self) -> None:
        """Binds the packed entry point and the signature's layout.

        The JIT (:class:`_Jit`, or MLIR's ExecutionEngine for CUDA programs)
        gives every external function `g` a packed wrapper
        `_mlir_g(void **args)`: ``args[i]`` points at argument i and the last
        slot at the result. Here `g` is the C-interface wrapper
        ``_mlir_ciface_<name>``, whose first argument points at the result
        struct when the function returns tensors (or several values); the
        struct's layout is ctypes' (the C layout the lowering uses).
        """
        fields = []
        for i, r in enumerate(self.results):
            ctype = _descriptor_type(len(r.shape), r.dtype) if r.is_tensor else _CTYPES[r.dtype]
            fields.append((f"r{i}", ctype))
        through_struct = bool(self.results) and not (len(self.results) == 1 and not self.results[0].is_tensor)
        struct = type("Results", (ctypes.Structure,), {"_fields_": fields})
        result_specs = [(r.is_tensor, r.dtype.num, _static_dims(r), getattr(struct, f"r{i}").offset)
                        for i, r in enumerate(self.results)]
        arg_specs = [(a.is_tensor, a.dtype.num, _static_dims(a), 0) for a in self.args]
        symbol = "_mlir__mlir_ciface_" + self.__name__
        #: The address of the word that holds the entry point's address in
        #: the program's current tier (calls go through it), or 0. (It holds
        #: 0 while LLVM compiles the quick tier: calls wait for it.)
        self._entry_slot = self._program._entry_slot(symbol)
        entry = ctypes.c_uint64.from_address(self._entry_slot).value if self._entry_slot \
            else self._program._lookup(symbol)
        self._signature = (entry, arg_specs, result_specs, ctypes.sizeof(struct), through_struct)
        _native.Function.__init__(self, *self._signature, self._coerce, self._raise_error,
                                  entry_slot=self._entry_slot)

    def _raise_error(self, kind: int, code: int, item: int, have: int, need: int,
                     message: bytes) -> Exception:
        """The exception of a failed call (the native path raises it)."""
        if code == _CODE_NOT_COMPILED and isinstance(self._program._engine, _Jit):
            return RuntimeError(f"compile: LLVM could not compile the program: "
                                f"{self._program._engine.quick_error()}")
        error = _CallError(kind=kind, code=code, item=item, have=have, need=need, message=message)
        return _call_error(error, self._program._source)

    def _coerce(self, i: int, value: Any) -> Any:
        """Argument `i` converted for the native path, or the error naming it:
        a C-contiguous ndarray of the argument's dtype and rank, or a Python
        scalar of its kind and range."""
        t = self.args[i]
        what = f"argument #{i} of @{self.__name__} ({t.text})"
        if not t.is_tensor:
            if isinstance(value, int) and not isinstance(value, bool):
                # A Python int of any size: NumPy would make one beyond 64
                # bits an object array ("expected an integer, got int").
                if t.dtype.kind == "f":
                    if abs(value) > float(np.finfo(t.dtype).max):
                        raise ValueError(f"{what}: the integer {_short(value)} is too large for {t.text}")
                    return float(value)
                if t.dtype.kind in "iu":
                    if not t.min <= value <= t.max:
                        raise ValueError(f"{what}: {_short(value)} does not fit in {t.text}")
                    return value
            if isinstance(value, np.ndarray) and value.ndim != 0:
                raise TypeError(f"{what}: expected a scalar, got an array of shape {value.shape}")
            kind = np.asarray(value).dtype
            if t.dtype.kind == "f" and kind.kind not in "fiub":
                raise TypeError(f"{what}: expected a number, got {type(value).__name__}")
            if t.dtype.kind in "iu" and kind.kind not in "iub":
                raise TypeError(f"{what}: expected an integer, got {type(value).__name__}")
            if t.dtype.kind == "b" and kind.kind != "b":
                raise TypeError(f"{what}: expected a bool, got {type(value).__name__}")
            if t.dtype.kind in "iu" and not t.min <= int(value) <= t.max:
                raise ValueError(f"{what}: {value} does not fit in {t.text}")
            if t.dtype.kind == "f":
                return float(value)
            return bool(value) if t.dtype.kind == "b" else int(value)
        if isinstance(value, np.ndarray):
            if value.dtype != t.dtype:
                raise TypeError(
                    f"{what}: expected dtype {t.dtype.name}, got {value.dtype.name} "
                    f"(cast it with .astype(np.{t.dtype.name}))"
                )
            array = value
        else:
            try:
                array = np.asarray(value)
            except (ValueError, TypeError) as exc:  # a ragged list, ...
                raise ValueError(f"{what}: cannot convert {type(value).__name__} to an array: {exc}") from None
            if array.dtype == object or not np.can_cast(array.dtype, t.dtype, casting="same_kind") or (
                array.dtype.kind == "f" and t.dtype.kind in "iub"
            ):
                raise TypeError(f"{what}: cannot convert {_kind_of(value, array)} to {t.dtype.name}")
        # Before making it contiguous, which turns a rank-0 array into rank 1.
        if array.ndim != len(t.shape):
            raise ValueError(f"{what}: expected rank {len(t.shape)}, got {_kind_of(value, array)} "
                             f"of shape {array.shape}")
        for d, (have, want) in enumerate(zip(array.shape, t.shape)):
            if want is not None and have != want:
                raise ValueError(f"{what}: dimension {d} must be {want}, got shape {array.shape}")
        # A fresh array of exactly the native type (ndarray subclasses, other
        # byte orders and non-C strides are copied).
        return np.array(array, dtype=t.dtype.newbyteorder("="), order="C", copy=True, subok=False)


def _static_dims(t: _Type) -> tuple[int, ...]:
    return tuple(-1 if d is None else d for d in t.shape) if t.is_tensor else ()


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:8]}...({len(text)} digits)"


def _kind_of(value: Any, array: np.ndarray) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return f"a NumPy {'scalar' if isinstance(value, np.generic) else 'array'} of dtype {array.dtype.name}"
    if array.dtype == object:
        return f"a {type(value).__name__} of Python objects"
    return f"{array.dtype.name} values"


def _mark_arguments_read_only(func: ir.Operation, ftype: ir.FunctionType) -> None:
    """Tensor arguments are the caller's NumPy arrays, passed without a copy:
    one-shot-bufferize must copy before writing into them, never write them."""
    existing = func.attributes["arg_attrs"] if "arg_attrs" in func.attributes else None
    dicts = []
    for i, t in enumerate(ftype.inputs):
        entries = {}
        if existing is not None:
            for named in ir.DictAttr(ir.ArrayAttr(existing)[i]):
                entries[named.name] = named.attr
        if isinstance(t, ir.RankedTensorType):
            entries["bufferization.writable"] = ir.BoolAttr.get(False)
        dicts.append(ir.DictAttr.get(entries))
    func.attributes["arg_attrs"] = ir.ArrayAttr.get(dicts)


def _check_options(optimize: Any, opt_level: Any, block_steps: Any = 64, **flags: Any) -> None:
    """Validates compile()'s options: a mistyped one is an error, never a
    silently chosen default (`checks="no"` is truthy)."""
    if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError(f"compile: opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if isinstance(block_steps, (bool, np.bool_)) or not isinstance(block_steps, (int, np.integer)) \
            or block_steps < 0:
        raise ValueError(f"compile: block_steps must be an integer >= 0 (0: no blocks), got {block_steps!r}")
    if not isinstance(optimize, (bool, str)):
        raise TypeError(f"compile: optimize must be a bool or a pass pipeline string, "
                        f"got {type(optimize).__name__}")
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"compile: {name} must be True or False, got {value!r}")


def _rewrites(optimize: bool | str) -> str:
    """The rewrite pipeline of the "optimized" stage."""
    if isinstance(optimize, str):
        return optimize  # a pass pipeline, e.g. "scan-push-out-seq,canonicalize"
    return _OPTIMIZE if optimize else ""


_thread_state = threading.local()
_COMPILES_PER_CONTEXT = 64


def _compile_context() -> ir.Context:
    """The MLIR context :func:`compile` parses into: one per thread, kept.

    Creating a context (loading every dialect and the LLVM translations) costs
    about 4 ms, a tenth of a small program's compile time. Only the compiled
    code outlives a compile, so programs can share one. What accumulates is
    MLIR's uniqued types and attributes, including the program's constants
    (a large `dense<...>` stays until the context goes), so a thread starts a
    new context every ``_COMPILES_PER_CONTEXT`` compiles; a context lives on
    while a program compiled in it does.
    """
    context = getattr(_thread_state, "context", None)
    compiles = getattr(_thread_state, "compiles", 0)
    if context is None or compiles >= _COMPILES_PER_CONTEXT:
        context = _thread_state.context = ir.Context()
        _thread_state.pass_managers = {}
        compiles = 0
    _thread_state.compiles = compiles + 1
    return context


@contextlib.contextmanager
def _single_threaded(context: ir.Context) -> Iterator[None]:
    """MLIR's threads off in `context` while the body parses or verifies.

    MLIR verifies the functions of a module on its thread pool, and the
    bindings' error capture makes Python objects (each diagnostic's location)
    on the thread that reports: without the GIL there, nanobind aborts the
    process ("attempted to change the reference count of a Python object
    while the GIL was not held") when several functions fail to verify. The
    pass pipelines, whose diagnostics mlir-scan's C API collects, keep the
    threads.
    """
    context.enable_multithreading(False)
    try:
        yield
    finally:
        context.enable_multithreading(True)


def _top_level_ops(module: ir.Module) -> list[ir.Operation]:
    """The operations of `module`'s body, as plain operations.

    Not ``module.body.operations``, whose items are op views: making the first
    view of an LLVM-dialect op imports ``mlir.dialects.llvm``, 45 ms of the
    first compile of a process. A pre-order walk that skips every region
    reads the same operations without views.
    """
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op == module.operation:
            return ir.WalkResult.ADVANCE
        ops.append(op)
        return ir.WalkResult.SKIP

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops


def _compile_once(module: ir.Module) -> None:
    """Makes LLVM compile each function body once: the functions the
    `_mlir_ciface_` wrappers wrap become internal and never inlined, other
    functions with a body internal (python/capi/ScanCAPI.cpp,
    ``mlirScanCompileOnce``, says why)."""
    _registration.capi().mlirScanCompileOnce(_registration.MlirModule(_registration._capsule_pointer(module)))


def _is_declared_global(op: ir.Operation) -> bool:
    """An `llvm.mlir.global` without a value or initializer region: a
    declaration (`memref.global` without an initial value lowers to one),
    which the JIT must resolve like an external function."""
    return (op.name == "llvm.mlir.global" and "value" not in op.attributes
            and len(op.regions[0].blocks) == 0)


def _check_external_symbols(module: ir.Module) -> None:
    """Every function the LLVM module calls, and every global it reads, but
    does not define must exist.

    The JIT resolves them against the run-time library and the process (libc,
    libm): one that is neither would make the first call fail with an
    unhelpful "symbol not found"; name it now instead.
    """
    declared, globals_ = set(), set()
    for op in _top_level_ops(module):
        if op.name == "llvm.func" and len(op.regions[0].blocks) == 0:
            declared.add(ir.StringAttr(op.attributes["sym_name"]).value)
        elif _is_declared_global(op):
            globals_.add(ir.StringAttr(op.attributes["sym_name"]).value)
    # Only a declaration nothing resolves needs the walk over every op (a
    # declaration is harmless where nothing uses it).
    unresolved = {name for name in declared | globals_
                  if name not in _RUNTIME_SYMBOLS and not _process_has(name)}
    if not unresolved:
        return
    used: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        for attr in ("callee", "global_name"):
            if attr in op.attributes:
                value = op.attributes[attr]
                if isinstance(value, ir.FlatSymbolRefAttr):
                    used.add(value.value)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)

    def missing(names: set[str]) -> str:
        return ", ".join(f"@{name}" for name in sorted(names & used)
                         if name not in _RUNTIME_SYMBOLS and not _process_has(name))

    if functions := missing(declared):
        raise ValueError(f"compile: the module calls external function(s) {functions}, defined neither "
                         "in the module nor in the process (declare only functions of libc/libm or "
                         "define them in the module)")
    if variables := missing(globals_):
        raise ValueError(f"compile: the module uses external global(s) {variables}, defined neither "
                         "in the module nor in the process (give the global an initial value, or "
                         "declare only globals of libc/libm)")


_PROCESS = ctypes.CDLL(None)


def _process_has(symbol: str) -> bool:
    try:
        _PROCESS[symbol]
    except AttributeError:
        return False
    return True


def _pass_manager(pipeline: str, verify_each: bool = True) -> passmanager.PassManager:
    """The pass manager for `pipeline` in this thread's compile context, built once.

    Building one parses the pipeline and, on its first run, initializes every
    pass (each `canonicalize` collects the patterns of all loaded dialects):
    a few milliseconds per compile, saved by running the same instance on the
    next module. Without `verify_each`, the IR is not verified after each pass
    (the caller verifies it once at the end).
    """
    managers = _thread_state.__dict__.setdefault("pass_managers", {})
    manager = managers.get((pipeline, verify_each))
    if manager is None:
        manager = passmanager.PassManager.parse(f"builtin.module({pipeline})")
        manager.enable_verifier(verify_each)
        managers[(pipeline, verify_each)] = manager
    return manager


class _Diagnostic:
    """An error diagnostic reported by :func:`_run_pass_manager` (the fields
    :class:`mlir.ir.MLIRError` prints: `location`, `message`, `notes`)."""

    def __init__(self, location: str, message: str):
        self.location, self.message, self.notes = location, message, []


def _run_pass_manager(manager: passmanager.PassManager, module: ir.Module) -> None:
    """Runs `manager` on `module`; MLIRError (with the error diagnostics) on failure.

    Not ``manager.run``: an upstream pass that emits an error and still
    succeeds makes the bindings abort the process ("unhandled captured
    errors"); mlir-scan's C API (python/capi/ScanCAPI.cpp) counts such a run
    as failed.
    """
    out = ctypes.create_string_buffer(1 << 16)
    failed = _registration.capi().mlirScanRunPassManager(
        _registration.MlirPassManager(_registration._capsule_pointer(manager)),
        _registration.MlirOperation(_registration._capsule_pointer(module.operation)), out, len(out))
    if not failed:
        return
    diagnostics: list[_Diagnostic] = []
    for record in out.value.decode("utf-8", "replace").split("\x1e"):
        if record.count("\x1f") < 2:
            continue
        kind, location, message = record.split("\x1f", 2)
        if kind == "N" and diagnostics:
            diagnostics[-1].notes.append(_Diagnostic(location, message))
        else:
            diagnostics.append(_Diagnostic(location, message))
    raise ir.MLIRError("Failure while executing pass pipeline", diagnostics)


#: Stages whose passes (upstream conversions, in the main) are verified once at
#: the end instead of after each pass: a third of a large program's MLIR time
#: went to verifying the module some sixty times. The scan rewrites and the
#: lowering of scans, which see the user's IR, keep the check after each pass.
_VERIFIED_AT_THE_END = ("bufferized", "llvm")


@functools.lru_cache(maxsize=None)
def _runtime_symbol_arrays() -> tuple[int, Any, Any]:
    """The run-time library's symbols as ScanJIT takes them (count, names,
    addresses): the same for every compile of the process."""
    names = [n.encode() for n in _RUNTIME_SYMBOLS]
    refs = (_registration.MlirStringRef * len(names))(
        *[_registration.MlirStringRef(n, len(n)) for n in names])
    addresses = (ctypes.c_uint64 * len(names))(*_RUNTIME_SYMBOLS.values())
    return len(names), refs, addresses


class _Jit:
    """The machine code of a lowered module (python/capi/ScanJIT.cpp).

    The LLVM module is split into parts of about equal estimated cost that are
    optimized and compiled at the same time, one per core (``MLIR_SCAN_NUM_THREADS`` sets
    how many), and linked in one ORC JIT against the run-time library. With a
    ``save_prefix``, the parts' objects are also written to the compile cache
    (:func:`_cache_prefix`). The code lives as long as this object.

    With ``tiered``, a large module is compiled at -O0 first and at the
    requested level, both on a background thread (:meth:`compile` returns
    once the module is translated to LLVM IR); calls go through entry slots
    (:meth:`entry`) that wait for the quick code and move to the optimized
    code when it is linked, and a call running in the quick code then
    restarts in it (see ScanJIT.cpp).
    """

    def __init__(self, handle: int, cached: bool):
        self._handle = handle
        if _registration.capi().mlirScanJitOptimizing(handle):
            _OPTIMIZING.add(self)
        #: Whether the code came from the compile cache.
        self.cached = cached
        finalizer = weakref.finalize(self, _registration.capi().mlirScanJitDestroy, handle)
        # Not at interpreter exit: a daemon thread may still be running the
        # code, and the process's memory goes anyway.
        finalizer.atexit = False

    @classmethod
    def compile(cls, module: ir.Module, opt_level: int, save_prefix: str | None = None,
                tiered: bool = False) -> "_Jit":
        count, refs, addresses = _runtime_symbol_arrays()
        error = ctypes.create_string_buffer(4096)
        handle = _registration.capi().mlirScanJitCreate(
            _registration.MlirOperation(_registration._capsule_pointer(module.operation)), opt_level,
            _registration.runtime_library().mlirScanNumThreads(), int(tiered), count, refs, addresses,
            save_prefix.encode() if save_prefix else None, error, len(error))
        if not handle:
            raise RuntimeError(f"compile: LLVM could not compile the program: {error.value.decode()}")
        return cls(handle, cached=False)

    @classmethod
    def load(cls, prefix: str, opt_level: int) -> "_Jit | None":
        """The code saved under `prefix`, or None if there is none (or it is
        unreadable: the caller compiles again and overwrites it)."""
        try:
            with open(prefix + ".parts") as f:
                parts = int(f.read())
        except (OSError, ValueError):
            return None
        count, refs, addresses = _runtime_symbol_arrays()
        error = ctypes.create_string_buffer(1024)
        handle = _registration.capi().mlirScanJitLoad(prefix.encode(), parts, opt_level, count, refs,
                                                      addresses, error, len(error))
        return cls(handle, cached=True) if handle else None

    @property
    def parts(self) -> int:
        """How many parts LLVM compiled the current tier in at the same time."""
        return _registration.capi().mlirScanJitNumParts(self._handle)

    @property
    def quick(self) -> bool:
        """Whether calls run the quick tier (compiled at -O0)."""
        return bool(_registration.capi().mlirScanJitQuick(self._handle))

    def quick_error(self) -> str:
        """Why LLVM could not compile the quick tier, or "" (waits for it
        if it is being compiled)."""
        error = ctypes.create_string_buffer(4096)
        _registration.capi().mlirScanJitQuickError(self._handle, error, len(error))
        return error.value.decode(errors="replace")

    def wait(self) -> None:
        """Waits until the optimized tier is compiled and in use. If LLVM
        failed there, the quick code stays (the same results) and this warns."""
        error = ctypes.create_string_buffer(4096)
        _registration.capi().mlirScanJitWait(self._handle, error, len(error))
        _OPTIMIZING.discard(self)
        if error.value:
            warnings.warn(f"mlir_scan: LLVM could not compile the optimized code, calls keep running the "
                          f"quick code: {error.value.decode()}", RuntimeWarning, stacklevel=2)

    def cancel(self) -> None:
        """Gives up the optimized code if its compile has not started; calls
        keep running the quick code (:meth:`wait` still waits for a compile
        that has started)."""
        _registration.capi().mlirScanJitCancel(self._handle)

    def entry(self, symbol: str) -> int:
        """The address of the word holding `symbol`'s address in the current tier."""
        data = symbol.encode()
        error = ctypes.create_string_buffer(1024)
        slot = _registration.capi().mlirScanJitEntry(
            self._handle, _registration.MlirStringRef(data, len(data)), error, len(error))
        if not slot:
            raise RuntimeError(f"symbol {symbol} not found in the compiled module: {error.value.decode()}")
        return slot

    def lookup(self, symbol: str, required: bool = True) -> int:
        data = symbol.encode()
        error = ctypes.create_string_buffer(1024)
        address = _registration.capi().mlirScanJitLookup(
            self._handle, _registration.MlirStringRef(data, len(data)), error, len(error))
        if not address and required:
            raise RuntimeError(f"symbol {symbol} not found in the compiled module: {error.value.decode()}")
        return address


def tiers_enabled() -> bool:
    """Whether ``compile(..., tiered=True)`` compiles large programs in two
    tiers: unless the environment sets ``MLIR_SCAN_TIERED=0`` (read at each
    compile), which makes every compile wait for the optimized code."""
    return os.environ.get("MLIR_SCAN_TIERED", "1") != "0"


#: The programs whose optimized tier is being compiled on a background thread.
_OPTIMIZING: "weakref.WeakSet[_Jit]" = weakref.WeakSet()


def wait_optimized() -> None:
    """Waits until every program of this process runs its optimized code
    (:meth:`Program.wait` for all of them, including those a PyTensor mode or
    a builder function compiled).

    Also called before the process forks (a child has no copy of a background
    compile, and would never get the optimized code). At exit, only the
    running compile is waited for (:func:`_finish_at_exit`).
    """
    for jit in list(_OPTIMIZING):
        jit.wait()


def _finish_at_exit() -> None:
    """At exit, the optimized compiles that wait for their turn are dropped
    (nothing will call their code) and the running one is waited for: LLVM
    must not be torn down under it."""
    for jit in list(_OPTIMIZING):
        jit.cancel()
    wait_optimized()


atexit.register(_finish_at_exit)
os.register_at_fork(before=wait_optimized)


@functools.lru_cache(maxsize=None)
def _build_identity() -> str:
    """What a saved object depends on besides the program: the host target and
    the libraries that compiled it (this package's passes, MLIR, LLVM)."""
    target = ctypes.create_string_buffer(8192)
    _registration.capi().mlirScanJitHostTarget(target, len(target))
    parts = [target.value.decode()]
    for path in (str(_registration.library_path(_registration._LIBRARY_NAME)),
                 str(_registration.library_path(_registration._RUNTIME_NAME)),
                 _mlir_capi_path()):
        stat = os.stat(path)
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    parts.append(" ".join(sorted(_RUNTIME_SYMBOLS)))
    return "\n".join(parts)


def _cache_dir() -> str | None:
    """The compile cache's folder (``MLIR_SCAN_CACHE_DIR``, by default
    ``$XDG_CACHE_HOME/mlir-scan`` or ``~/.cache/mlir-scan``), or None when
    ``MLIR_SCAN_CACHE=0`` or the folder cannot be made."""
    if os.environ.get("MLIR_SCAN_CACHE", "1") == "0":
        return None
    folder = os.environ.get("MLIR_SCAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mlir-scan")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _cache_prefix(source: str, steps: list[tuple[str, str]], opt_level: int) -> str | None:
    """Where the objects of `source` compiled through `steps` are saved: a
    hash of everything they depend on (the program, the pipelines, the LLVM
    level, the thread count, the target, the libraries)."""
    folder = _cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256()
    for part in (source, repr(steps), str(opt_level),
                 str(_registration.runtime_library().mlirScanNumThreads()), _build_identity()):
        digest.update(part.encode())
        digest.update(b"\0")
    return os.path.join(folder, digest.hexdigest())


@contextlib.contextmanager
def _compiling() -> Iterator[None]:
    """Tells the run-time library that the process is compiling a program:
    background compiles of optimized tiers wait for it, and for the first
    call after it (``__mlir_scan_foreground`` in python/runtime/ScanRuntime.cpp)."""
    library = _registration.runtime_library()
    library.mlirScanCompileBegins()
    try:
        yield
    finally:
        library.mlirScanCompileEnds()


class Program:
    """A compiled module: one callable attribute per public function."""

    def __init__(self, source: str | ir.Module, optimize: bool | str = True, opt_level: int = 3,
                 vectorize: bool = True, checks: bool = True, parallel: bool = True, block_steps: int = 64,
                 private_nonsequences: bool = True, free_early: bool = True, blas: bool = True,
                 tiered: bool = True, vector_math: bool = True, split_reductions: bool = True):
        _check_options(optimize, opt_level, block_steps, vectorize=vectorize, checks=checks, parallel=parallel,
                       private_nonsequences=private_nonsequences, free_early=free_early, blas=blas,
                       tiered=tiered, vector_math=vector_math, split_reductions=split_reductions)
        lowering = (f"{_TO_LLVM}{{vectorize={int(bool(vectorize))} parallel={int(bool(parallel))} "
                    f"split-reductions={int(bool(split_reductions))} "
                    f"blas={int(bool(blas))} {_vector_math.pipeline_options(bool(vector_math))}}}")
        to_scf = _TO_SCF
        if block_steps != 64 or not private_nonsequences:
            to_scf = to_scf.replace("convert-scan-to-scf", f"convert-scan-to-scf{{block-steps={int(block_steps)} "
                                    f"private-nonsequences={int(bool(private_nonsequences))}}}", 1)
        steps = [("optimized", _rewrites(optimize)), ("scf", (_VERIFY if checks else "") + to_scf),
                 ("bufferized", _BUFFERIZE if free_early else f"{_BUFFERIZE}{{free-early=0}}"), ("llvm", lowering)]
        text = str(source) if isinstance(source, ir.Module) else source
        prefix = _cache_prefix(text, steps, opt_level) if isinstance(text, str) else None
        cached = _Jit.load(prefix, opt_level) if prefix else None
        if cached is not None:
            # Compiled before: only the public functions' signatures are read.
            self._compile(text, [])
            self._steps = steps
            self._engine = cached
            try:
                self._bind_functions()
                return
            except RuntimeError:
                pass  # a symbol this process lacks: compile, for the error that names it
        with _compiling():
            module = self._compile(text, steps)  # text: a Module source is printed once
            self._load(module, opt_level, save_prefix=prefix, tiered=tiered and tiers_enabled())

    def _compile(self, source: str | ir.Module, steps: list[tuple[str, str]],
                 keep: Sequence[str] = ()) -> ir.Module:
        """Parses `source` and runs the (stage, pipeline) `steps`.

        The IR of the stages in `keep` is printed as it goes; :meth:`ir` prints
        any other stage when asked, by running the steps again from the source
        (printing a large module at every stage was a tenth of its compile time).
        """
        _registration.register_passes()
        self._context = _compile_context()
        text = str(source) if isinstance(source, ir.Module) else source
        if not isinstance(text, str):
            raise TypeError(f"compile: expected MLIR text or an mlir.ir.Module, got {type(source).__name__}")
        self._stages: dict[str, str] = {}
        self._source = text
        self._steps = steps
        with self._context, ir.Location.unknown():
            with _single_threaded(self._context):
                module = ir.Module.parse(text)
            self._functions = self._collect_functions(module)
            self._run_steps(module, steps, keep)
        return module

    def _run_steps(self, module: ir.Module, steps: list[tuple[str, str]], keep: Sequence[str]) -> None:
        for stage, pipeline in steps:
            if pipeline:
                if stage == "optimized":
                    # A rewrite pipeline given as a string may fold before
                    # any scan pass has run this guard (scan-optimize and
                    # convert-scan-to-scf run it first thing): upstream
                    # folders of xori/cmpi on dynamic tensors abort.
                    _registration.capi().mlirScanGenericizeFoldHazards(
                        _registration.MlirModule(_registration._capsule_pointer(module)))
                if stage in _VERIFIED_AT_THE_END:
                    _run_pass_manager(_pass_manager(pipeline, verify_each=False), module)
                    with _single_threaded(module.context):
                        module.operation.verify()
                else:
                    _run_pass_manager(_pass_manager(pipeline), module)
            if stage == "llvm":
                _compile_once(module)
                _check_external_symbols(module)
            if stage in keep:
                self._stages[stage] = str(module)

    def _stage(self, stage: str) -> str:
        """The IR at `stage`, printed now if the compile did not keep it."""
        if stage not in self._stages:
            names = ["input"] + [name for name, _ in self._steps]
            steps = self._steps[:names.index(stage)]
            with (context := _compile_context()), ir.Location.unknown():
                with _single_threaded(context):
                    module = ir.Module.parse(self._source)
                self._collect_functions(module)
                self._run_steps(module, steps, ())
                self._stages[stage] = str(module)
        return self._stages[stage]

    def _load(self, module: ir.Module, opt_level: int, shared_libs: Sequence[str] = (),
              save_prefix: str | None = None, tiered: bool = False) -> None:
        """JIT-compiles the lowered `module` and binds the public functions.

        CPU programs go through :class:`_Jit` (on every core); programs that
        load shared libraries (the CUDA runtime) through MLIR's ExecutionEngine.
        """
        if shared_libs:
            with self._context:
                self._engine = execution_engine.ExecutionEngine(module, opt_level=opt_level,
                                                                shared_libs=list(shared_libs))
            # Before the first lookup, which compiles: allocation, failures and
            # copies come from the run-time library (python/runtime/).
            for symbol, address in _RUNTIME_SYMBOLS.items():
                self._engine.raw_register_runtime(symbol, ctypes.c_void_p(address))
        else:
            with self._context:
                self._engine = _Jit.compile(module, opt_level, save_prefix, tiered=tiered)
        self._bind_functions()

    def _bind_functions(self) -> None:
        for name, fn in self._functions.items():
            fn._bind()  # with MLIR's ExecutionEngine, the first lookup compiles
            setattr(self, name, fn)

    def _collect_functions(self, module: ir.Module) -> dict[str, _Function]:
        functions = {}
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            attrs = op.attributes
            if "sym_visibility" in attrs and ir.StringAttr(attrs["sym_visibility"]).value != "public":
                continue
            if len(op.regions[0].blocks) == 0:
                continue  # a declaration
            name = ir.StringAttr(attrs["sym_name"]).value
            ftype = ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value)
            args = [_Type.parse(t, f"argument #{i} of @{name}") for i, t in enumerate(ftype.inputs)]
            results = [_Type.parse(t, f"result #{i} of @{name}") for i, t in enumerate(ftype.results)]
            if name.startswith("_") or hasattr(Program, name):
                raise ValueError(f"compile: public function name @{name} is reserved")
            op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            _mark_arguments_read_only(op, ftype)
            functions[name] = _Function(self, name, args, results)
        return functions

    def _entry_slot(self, symbol: str) -> int:
        """The address of the word holding `symbol`'s address in the current
        tier (:class:`_Jit`), or 0 for code that does not change."""
        return self._engine.entry(symbol) if isinstance(self._engine, _Jit) else 0

    @property
    def tier(self) -> str:
        """``"quick"`` while the program runs code LLVM compiled at -O0 (the
        optimized code is being compiled on a background thread, ``tiered``;
        or LLVM failed there, which :meth:`wait` warns of), else ``"optimized"``."""
        return "quick" if isinstance(self._engine, _Jit) and self._engine.quick else "optimized"

    def wait(self) -> "Program":
        """Waits until calls run the optimized code (at once if they already
        do); returns the program. A benchmark's steady state starts here."""
        if isinstance(self._engine, _Jit):
            self._engine.wait()
        return self

    def _lookup(self, symbol: str, required: bool = True) -> int:
        if isinstance(self._engine, _Jit):
            return self._engine.lookup(symbol, required)
        data = symbol.encode()
        address = _CAPI.mlirExecutionEngineLookup(
            _registration._capsule_pointer(self._engine), _registration.MlirStringRef(data, len(data))
        )
        if not address and required:
            raise RuntimeError(f"symbol {symbol} not found in the compiled module")
        return address or 0

    @property
    def functions(self) -> dict[str, _Function]:
        """The callable public functions, by name."""
        return dict(self._functions)

    def ir(self, stage: str = "llvm") -> str:
        """The module's IR at `stage` (one of :data:`STAGES`)."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
        return self._stage(stage)
