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
against the signature, never modify their inputs, and turn the run-time checks
compiled into scans (``n_steps < 0``, too-short sequences...) into
``ValueError``. Results are NumPy arrays that own the memory the native code
allocated for them.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import math
import os
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mlir import execution_engine, ir, passmanager

from . import _registration

__all__ = ["Program", "compile", "STAGES"]

#: Stages whose IR :meth:`Program.ir` can show, in pipeline order.
STAGES = ("input", "optimized", "scf", "bufferized", "llvm")

# Pass pipelines between consecutive stages (textual, as `scan-opt` takes them;
# the last two are the pipelines registered in passes/lib/Pipelines.cpp).
_OPTIMIZE = "scan-optimize"
_TO_SCF = "convert-scan-to-scf,canonicalize,cse"
_BUFFERIZE = "scan-bufferize-loops"
_TO_LLVM = "scan-buffers-to-llvm"


# Mirrors ScanErrorCode in passes/include/Scan/RuntimeChecks.h.
_ERROR_GLOBAL = "__mlir_scan_error"
_ERROR_MESSAGES = {
    1: "scan: n_steps is {have}, must be >= 0",
    2: "scan: sequence #{item} has {have} rows but the steps and taps need {need}",
    3: "scan: mitmot buffer #{item} has {have} rows but the steps and taps need {need}",
    4: "scan: mitsot #{item} init has {have} rows but its taps need {need}",
}

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


#: The MLIR copy of the Python bindings (same process): its C API gives the
#: native address of any JIT symbol, including globals.
def _capi_library() -> ctypes.CDLL:
    libs = importlib.util.find_spec("mlir").submodule_search_locations[0]
    lib = ctypes.CDLL(os.path.join(libs, "_mlir_libs", "libMLIRPythonCAPI.so"))
    lib.mlirExecutionEngineLookup.restype = ctypes.c_void_p
    lib.mlirExecutionEngineLookup.argtypes = [ctypes.c_void_p, _StringRef]
    return lib


class _StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


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


class _OwnedAllocation:
    """Frees a buffer the native code allocated (with the programs' allocator,
    python/capi/ScanAllocator.cpp) when the last array using it dies."""

    __slots__ = ("address",)

    def __init__(self, address: int):
        self.address = address

    def __del__(self) -> None:
        _registration.capi().mlirScanFree(self.address)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _array_from_descriptor(desc: ctypes.Structure, t: _Type) -> np.ndarray:
    """A NumPy array over a returned buffer; the array owns the allocation
    (zero copy: the buffer is freed when the last array using it dies)."""
    shape = tuple(desc.sizes)
    allocated = desc.allocated
    owner = _OwnedAllocation(allocated) if allocated else None
    count = math.prod(shape)
    if count == 0:
        return np.empty(shape, dtype=t.dtype)
    itemsize = t.dtype.itemsize
    address = desc.aligned + desc.offset * itemsize
    strides = tuple(desc.strides)
    span = max(1 + sum((n - 1) * s for n, s in zip(shape, strides)), count)
    raw = (ctypes.c_char * (span * itemsize)).from_address(address)
    raw._mlir_scan_owner = owner  # keeps the allocation alive with the array
    flat = np.frombuffer(raw, dtype=t.dtype)
    if strides == _contiguous_strides(shape):
        return flat[:count].reshape(shape)
    return np.lib.stride_tricks.as_strided(
        flat, shape=shape, strides=tuple(s * itemsize for s in strides)
    )


class _Function:
    """A compiled public function, callable on NumPy arrays and scalars."""

    def __init__(self, program: "Program", name: str, args: list[_Type], results: list[_Type]):
        self._program = program
        self.__name__ = name
        self.args = args
        self.results = results
        self._native = None

    def __repr__(self) -> str:
        sig = ", ".join(a.text for a in self.args)
        res = ", ".join(r.text for r in self.results)
        return f"<compiled @{self.__name__}({sig}) -> ({res})>"

    def _bind(self) -> None:
        ctypes_args: list[Any] = []
        result_fields = []
        for i, r in enumerate(self.results):
            ctype = _descriptor_type(len(r.shape), r.dtype) if r.is_tensor else _CTYPES[r.dtype]
            result_fields.append((f"r{i}", ctype))
        self._result_struct = None
        restype = None
        if len(self.results) == 1 and not self.results[0].is_tensor:
            restype = result_fields[0][1]
        elif self.results:
            if len(self.results) == 1:
                self._result_struct = result_fields[0][1]
            else:
                self._result_struct = type(
                    "Results", (ctypes.Structure,), {"_fields_": result_fields}
                )
            ctypes_args.append(ctypes.POINTER(self._result_struct))
        for a in self.args:
            if a.is_tensor:
                ctypes_args.append(ctypes.POINTER(_descriptor_type(len(a.shape), a.dtype)))
            else:
                ctypes_args.append(_CTYPES[a.dtype])
        address = self._program._lookup("_mlir_ciface_" + self.__name__)
        self._native = ctypes.CFUNCTYPE(restype, *ctypes_args)(address)

    def _convert_arg(self, i: int, value: Any, t: _Type) -> tuple[Any, Any]:
        """(the ctypes argument, an object to keep alive during the call)."""
        if not t.is_tensor:
            # Fast path: a Python/NumPy scalar of the right kind and range.
            kind = type(value)
            if (kind is int or kind is t.dtype.type) and t.dtype.kind in "iu":
                if t.min <= value <= t.max:
                    return _CTYPES[t.dtype](value), None
            elif (kind is float or kind is t.dtype.type) and t.dtype.kind == "f":
                return _CTYPES[t.dtype](value), None
        what = f"argument #{i} of @{self.__name__} ({t.text})"
        if not t.is_tensor:
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
            return _CTYPES[t.dtype](value.item() if isinstance(value, np.generic) else value), None
        if isinstance(value, np.ndarray):
            if value.dtype != t.dtype:
                raise TypeError(
                    f"{what}: expected dtype {t.dtype.name}, got {value.dtype.name} "
                    f"(cast it with .astype(np.{t.dtype.name}))"
                )
            array = np.ascontiguousarray(value)
        else:
            array = np.asarray(value)
            if not np.can_cast(array.dtype, t.dtype, casting="same_kind") or (
                array.dtype.kind == "f" and t.dtype.kind in "iub"
            ):
                raise TypeError(f"{what}: cannot convert {array.dtype.name} values to {t.dtype.name}")
            array = np.ascontiguousarray(array, dtype=t.dtype)
        if array.ndim != len(t.shape):
            raise ValueError(f"{what}: expected rank {len(t.shape)}, got an array of shape {array.shape}")
        for d, (have, want) in enumerate(zip(array.shape, t.shape)):
            if want is not None and have != want:
                raise ValueError(f"{what}: dimension {d} must be {want}, got shape {array.shape}")
        desc = _descriptor_type(array.ndim, t.dtype)()
        ptr = array.ctypes.data
        desc.allocated = ptr
        desc.aligned = ptr
        desc.offset = 0
        for d in range(array.ndim):
            desc.sizes[d] = array.shape[d]
            desc.strides[d] = array.strides[d] // t.dtype.itemsize
        return ctypes.pointer(desc), array

    def __call__(self, *values: Any) -> Any:
        if len(values) != len(self.args):
            raise TypeError(
                f"@{self.__name__} takes {len(self.args)} arguments, got {len(values)}"
            )
        if self._native is None:
            self._bind()
        converted = [self._convert_arg(i, v, t) for i, (v, t) in enumerate(zip(values, self.args))]
        call_args = [c for c, _ in converted]
        result_struct = self._result_struct() if self._result_struct else None
        if result_struct is not None:
            call_args.insert(0, ctypes.pointer(result_struct))
        scalar = self._native(*call_args)
        del converted  # the inputs were only needed during the call

        outputs: list[Any] = []
        if result_struct is None:
            if self.results:
                outputs.append(self.results[0].dtype.type(scalar))
        elif len(self.results) == 1:
            outputs.append(_array_from_descriptor(result_struct, self.results[0]))
        else:
            for i, r in enumerate(self.results):
                field = getattr(result_struct, f"r{i}")
                outputs.append(
                    _array_from_descriptor(field, r) if r.is_tensor else r.dtype.type(field)
                )
        self._program._raise_recorded_error()
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


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


def _compile_once(module: ir.Module) -> None:
    """Makes LLVM compile each function body once.

    Python calls only the `_mlir_ciface_` wrappers. With the wrapped function
    external, LLVM inlines it into its wrapper and still compiles the original:
    the loop nest is optimized and code-generated twice, which was 40% of a
    small program's compile time. Internal and never inlined, it is compiled
    once and called once per call.
    """
    funcs = [op for op in module.body.operations if op.operation.name == "llvm.func"]
    names = {ir.StringAttr(op.attributes["sym_name"]).value for op in funcs}
    internal = ir.Attribute.parse("#llvm.linkage<internal>")
    for op in funcs:
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if "_mlir_ciface_" + name in names:
            op.attributes["linkage"] = internal
            op.attributes["no_inline"] = ir.UnitAttr.get()


def _pass_manager(pipeline: str) -> passmanager.PassManager:
    """The pass manager for `pipeline` in this thread's compile context, built once.

    Building one parses the pipeline and, on its first run, initializes every
    pass (each `canonicalize` collects the patterns of all loaded dialects):
    a few milliseconds per compile, saved by running the same instance on the
    next module.
    """
    managers = _thread_state.__dict__.setdefault("pass_managers", {})
    manager = managers.get(pipeline)
    if manager is None:
        manager = managers[pipeline] = passmanager.PassManager.parse(f"builtin.module({pipeline})")
    return manager


class Program:
    """A compiled module: one callable attribute per public function."""

    def __init__(self, source: str | ir.Module, optimize: bool | str = True, opt_level: int = 3,
                 vectorize: bool = True):
        steps = [("optimized", _rewrites(optimize)), ("scf", _TO_SCF), ("bufferized", _BUFFERIZE),
                 ("llvm", _TO_LLVM if vectorize else _TO_LLVM + "{vectorize=false}")]
        module = self._compile(source, steps)
        self._load(module, opt_level)

    def _compile(self, source: str | ir.Module, steps: list[tuple[str, str]]) -> ir.Module:
        """Parses `source` and runs the (stage, pipeline) `steps`, keeping each stage's IR."""
        _registration.register_passes()
        self._context = _compile_context()
        text = str(source) if isinstance(source, ir.Module) else source
        if not isinstance(text, str):
            raise TypeError(f"compile: expected MLIR text or an mlir.ir.Module, got {type(source).__name__}")
        self._stages: dict[str, str] = {}
        with self._context, ir.Location.unknown():
            module = ir.Module.parse(text)
            self._functions = self._collect_functions(module)
            self._stages["input"] = str(module)
            for stage, pipeline in steps:
                if pipeline:
                    if stage == "optimized":
                        # A rewrite pipeline given as a string may fold before
                        # any scan pass has run this guard (scan-optimize and
                        # convert-scan-to-scf run it first thing): upstream
                        # folders of xori/cmpi on dynamic tensors abort.
                        _registration.capi().mlirScanGenericizeFoldHazards(
                            _registration.MlirModule(_registration._capsule_pointer(module)))
                    _pass_manager(pipeline).run(module.operation)
                if stage == "llvm":
                    _compile_once(module)
                self._stages[stage] = str(module)
        return module

    def _load(self, module: ir.Module, opt_level: int, shared_libs: Sequence[str] = ()) -> None:
        """JIT-compiles the lowered `module` and binds the public functions."""
        with self._context:
            self._engine = execution_engine.ExecutionEngine(module, opt_level=opt_level,
                                                            shared_libs=list(shared_libs))
        # Before the first lookup, which compiles: the program's malloc/free
        # are the caching allocator (python/capi/ScanAllocator.cpp).
        capi = _registration.capi()
        for symbol, function in (("memrefCopy", capi.mlirScanMemrefCopy),
                                 ("malloc", capi.mlirScanAlloc), ("calloc", capi.mlirScanCalloc),
                                 ("free", capi.mlirScanFree)):
            self._engine.raw_register_runtime(symbol, ctypes.cast(function, ctypes.c_void_p))
        self._error = None
        address = self._lookup(_ERROR_GLOBAL, required=False)
        if address:
            self._error = (ctypes.c_int64 * 4).from_address(address)
        for name, fn in self._functions.items():
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

    def _lookup(self, symbol: str, required: bool = True) -> int:
        data = symbol.encode()
        address = _CAPI.mlirExecutionEngineLookup(
            _registration._capsule_pointer(self._engine), _StringRef(data, len(data))
        )
        if not address and required:
            raise RuntimeError(f"symbol {symbol} not found in the compiled module")
        return address or 0

    def _raise_recorded_error(self) -> None:
        if self._error is None or self._error[0] == 0:
            return
        code, item, have, need = list(self._error)
        for i in range(4):
            self._error[i] = 0
        template = _ERROR_MESSAGES.get(code, "scan: run-time check {code} failed")
        raise ValueError(template.format(code=code, item=item, have=have, need=need))

    @property
    def functions(self) -> dict[str, _Function]:
        """The callable public functions, by name."""
        return dict(self._functions)

    def ir(self, stage: str = "llvm") -> str:
        """The module's IR at `stage` (one of :data:`STAGES`)."""
        if stage not in self._stages:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
        return self._stages[stage]


def compile(source: str | ir.Module, optimize: bool | str = True, opt_level: int = 3,  # noqa: A001
            vectorize: bool = True, target: str = "cpu", **cuda_options: Any) -> Program:
    """Compiles MLIR text or an ``mlir.ir.Module`` into a :class:`Program`.

    ``optimize=True`` runs ``scan-optimize`` (Theano's ``FAST_RUN``),
    ``optimize=False`` skips the scan rewrites (``FAST_COMPILE``), and a string
    runs that pass pipeline instead (e.g. ``"scan-push-out-seq,scan-remove-unused"``),
    which is how the tests compare a program with and without one rewrite.
    ``opt_level`` is LLVM's optimization level (0-3). ``vectorize=False`` leaves
    the inner loops of linalg ops to LLVM's loop vectorizer instead of
    ``scan-vectorize-linalg-loops`` (for comparing results and speed).

    ``target="cuda"`` compiles for NVIDIA GPUs instead (:mod:`mlir_scan.cuda`;
    options ``chip``, ``mode``, ``format``, ``emulate``).
    """
    if target == "cuda":
        from .cuda import CudaProgram

        return CudaProgram(source, optimize=optimize, opt_level=opt_level, **cuda_options)
    if target != "cpu":
        raise ValueError(f"compile: target must be 'cpu' or 'cuda', not {target!r}")
    if cuda_options:
        raise TypeError(f"compile: {', '.join(sorted(cuda_options))} only apply to target='cuda'")
    return Program(source, optimize=optimize, opt_level=opt_level, vectorize=vectorize)
