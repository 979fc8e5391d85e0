"""Loads the Scan dialect library and registers the dialect and passes.

The C++ dialect lives in ``_lib/libMLIRScanCAPI.so``, linked against the MLIR
copy inside the ``mlir`` Python bindings. It is called through ctypes with the
C-API pointers the bindings expose as ``_CAPIPtr`` capsules, so no second
nanobind or MLIR copy is ever loaded. The run-time library of compiled
programs (calls, failures, allocator; no MLIR inside) is
``_lib/libMLIRScanRuntime.so``.
"""

from __future__ import annotations

import ctypes
import importlib.resources
from functools import lru_cache

from mlir import ir
from mlir._mlir_libs import _mlir, get_dialect_registry

__all__ = ["capi", "runtime_library", "register_dialects", "register_passes"]

_LIBRARY_NAME = "libMLIRScanCAPI.so"
_RUNTIME_NAME = "libMLIRScanRuntime.so"


class _MlirDialectRegistry(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]


class MlirOperation(ctypes.Structure):
    """The C API's MlirOperation, passed by value."""

    _fields_ = [("ptr", ctypes.c_void_p)]


class MlirStringRef(ctypes.Structure):
    """The C API's MlirStringRef."""

    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


class MlirModule(ctypes.Structure):
    """The C API's MlirModule, passed by value."""

    _fields_ = [("ptr", ctypes.c_void_p)]


class MlirPassManager(ctypes.Structure):
    """The C API's MlirPassManager, passed by value."""

    _fields_ = [("ptr", ctypes.c_void_p)]


def _capsule_pointer(obj: object) -> int:
    """The raw C pointer behind ``obj._CAPIPtr``."""
    capsule = obj._CAPIPtr
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    pointer = get_pointer(capsule, get_name(capsule))
    if not pointer:
        raise RuntimeError(f"could not read the C pointer of {obj!r}")
    return pointer


def library_path(name: str):
    """The path of one of the package's shared libraries (``_lib/``)."""
    path = importlib.resources.files(__package__) / "_lib" / name
    if not path.is_file():
        raise ImportError(
            f"mlir_scan: {path} is missing; the package was not built "
            "(install it with `pip install .`)"
        )
    return path


@lru_cache(maxsize=None)
def capi() -> ctypes.CDLL:
    """The loaded ``libMLIRScanCAPI.so``."""
    lib = ctypes.CDLL(str(library_path(_LIBRARY_NAME)))
    lib.mlirScanRegisterDialect.argtypes = [_MlirDialectRegistry]
    lib.mlirScanRegisterDialect.restype = None
    lib.mlirScanRegisterPasses.argtypes = []
    lib.mlirScanRegisterPasses.restype = None
    lib.mlirScanGenericizeFoldHazards.argtypes = [MlirModule]
    lib.mlirScanGenericizeFoldHazards.restype = None
    lib.mlirScanCompileOnce.argtypes = [MlirModule]
    lib.mlirScanCompileOnce.restype = None
    lib.mlirScanRunPassManager.argtypes = [MlirPassManager, MlirOperation, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanRunPassManager.restype = ctypes.c_int
    # python/capi/ScanJIT.cpp
    lib.mlirScanJitCreate.argtypes = [
        MlirOperation, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(MlirStringRef),
        ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitCreate.restype = ctypes.c_void_p
    lib.mlirScanJitLoad.argtypes = [
        ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(MlirStringRef),
        ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitLoad.restype = ctypes.c_void_p
    lib.mlirScanJitHostTarget.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitHostTarget.restype = None
    lib.mlirScanJitLookup.argtypes = [ctypes.c_void_p, MlirStringRef, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitLookup.restype = ctypes.c_uint64
    lib.mlirScanJitEntry.argtypes = [ctypes.c_void_p, MlirStringRef, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitEntry.restype = ctypes.c_void_p
    lib.mlirScanJitNumParts.argtypes = [ctypes.c_void_p]
    lib.mlirScanJitNumParts.restype = ctypes.c_int
    lib.mlirScanJitQuickError.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitQuickError.restype = None
    lib.mlirScanJitTestQuickCompiles.argtypes = [ctypes.c_int]
    lib.mlirScanJitTestQuickCompiles.restype = None
    lib.mlirScanJitQuick.argtypes = [ctypes.c_void_p]
    lib.mlirScanJitQuick.restype = ctypes.c_int
    lib.mlirScanJitOptimizing.argtypes = [ctypes.c_void_p]
    lib.mlirScanJitOptimizing.restype = ctypes.c_int
    lib.mlirScanJitWait.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mlirScanJitWait.restype = None
    lib.mlirScanJitCancel.argtypes = [ctypes.c_void_p]
    lib.mlirScanJitCancel.restype = None
    lib.mlirScanJitDestroy.argtypes = [ctypes.c_void_p]
    lib.mlirScanJitDestroy.restype = None
    return lib


@lru_cache(maxsize=None)
def runtime_library() -> ctypes.CDLL:
    """The loaded ``libMLIRScanRuntime.so`` (python/runtime/ScanRuntime.h)."""
    lib = ctypes.CDLL(str(library_path(_RUNTIME_NAME)))
    lib.mlirScanInvoke.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.mlirScanInvoke.restype = ctypes.c_int
    lib.mlirScanRestarts.argtypes = []
    lib.mlirScanRestarts.restype = ctypes.c_int64
    for name in ("mlirScanCompileBegins", "mlirScanCompileEnds"):
        lib[name].argtypes = []
        lib[name].restype = None
    lib.mlirScanUpgradesPending.argtypes = []
    lib.mlirScanUpgradesPending.restype = ctypes.c_int32
    lib.mlirScanAlloc.argtypes = [ctypes.c_size_t]
    lib.mlirScanAlloc.restype = ctypes.c_void_p
    lib.mlirScanCalloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    lib.mlirScanCalloc.restype = ctypes.c_void_p
    lib.mlirScanFree.argtypes = [ctypes.c_void_p]
    lib.mlirScanFree.restype = None
    lib.mlirScanNumThreads.argtypes = []
    lib.mlirScanNumThreads.restype = ctypes.c_int64
    lib.mlirScanReleaseCachedMemory.argtypes = []
    lib.mlirScanReleaseCachedMemory.restype = ctypes.c_size_t
    return lib


def _insert_dialect(registry: ir.DialectRegistry) -> None:
    capi().mlirScanRegisterDialect(_MlirDialectRegistry(_capsule_pointer(registry)))


def register_passes() -> None:
    """Makes the scan passes known to ``PassManager.parse`` (idempotent)."""
    capi().mlirScanRegisterPasses()


def register_dialects(context: ir.Context | None = None) -> None:
    """Registers the Scan dialect.

    Without ``context``: into the registry every ``mlir.ir.Context`` created
    from now on starts with (``import mlir_scan`` does this). With a
    ``context`` created earlier: into that context, and loads the dialect.
    """
    if context is None:
        _insert_dialect(get_dialect_registry())
        return
    registry = ir.DialectRegistry()
    _insert_dialect(registry)
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()


@lru_cache(maxsize=None)
def _register_everything() -> None:
    register_dialects()
    register_passes()
    # Op classes of the dialect come back as `mlir_scan.dialect.ScanOp`, not
    # as plain OpViews, once the bindings can find the dialect's module.
    _mlir.globals.append_dialect_search_prefix("mlir_scan._dialects")
