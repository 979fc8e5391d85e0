"""Theano's configuration flags: ``mlir_scan.config`` is Theano's ``theano.config``.

Every flag of Theano 1.0's ``theano.config`` exists, with Theano's name, its
sections (``config.warn.subtensor_merge_bug``, ``config.dnn.conv.algo_fwd``...)
and its default, so code that reads or sets them runs. Setting a flag Theano
does not have raises ``AttributeError``, as Theano does; a value outside the
flag's choices raises ``ValueError``. ``change_flags`` sets flags for a
``with`` block or a decorated function, and the ``THEANO_FLAGS`` environment
variable (``THEANO_FLAGS=floatX=float32,warn.round=False``) is read at import.

Flags with an effect (the others are accepted and ignored: they configure
Theano's C and GPU back ends, its debugging modes, test values, profiling and
warnings about old bugs, none of which exists here; ``x.tag.test_value = ...``
is accepted too, and test values are not computed):

* ``floatX``: the dtype of untyped float placeholders (``T.vector()``,
  ``T.matrix()``...), of Python float constants and shared values, and of
  ``T.zeros``/``T.ones``/random samples without a dtype (``"float64"``; set
  ``"float32"`` before building a graph for single precision);
* ``mode``: the default ``mode`` of :func:`mlir_scan.function`
  (``"FAST_COMPILE"`` skips the scan rewrites; ``"Mode"``, ``"FAST_RUN"``,
  ``"DebugMode"``, ``"NanGuardMode"`` compile with them);
* ``optimizer``: with ``mode="Mode"`` (the default), ``"fast_compile"``,
  ``"merge"`` and ``"None"`` skip the scan rewrites as ``FAST_COMPILE`` does;
* ``on_unused_input``: the default ``on_unused_input`` of
  :func:`mlir_scan.function` (``"raise"``, ``"warn"`` or ``"ignore"``).

Example::

    >>> import mlir_scan as theano
    >>> theano.config.floatX, theano.config.mode, theano.config.warn.round
    ('float64', 'Mode', False)
    >>> theano.config.warn.subtensor_merge_bug = False      # accepted, no effect
    >>> with theano.config.change_flags(floatX="float32"):
    ...     theano.tensor.vector().dtype
    'float32'
    >>> theano.config.floatX
    'float64'
    >>> theano.config.no_such_flag = 1
    Traceback (most recent call last):
    ...
    AttributeError: theano.config has no flag 'no_such_flag' (Theano's config rejects unknown flags)
"""

from __future__ import annotations

import functools
import os
import sys
import types
import warnings
from typing import Any, Callable

__all__ = ["floatX", "change_flags", "EFFECTIVE_FLAGS"]

#: The flags that change what mlir_scan does; every other flag is accepted and ignored.
EFFECTIVE_FLAGS = ("floatX", "mode", "optimizer", "on_unused_input")


# -- kinds of flags (Theano's EnumStr, BoolParam, IntParam, FloatParam, StrParam) --------------------


def _enum(*choices: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"invalid value {value!r}: expected one of {', '.join(map(repr, choices))}")
        return value
    return check


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
    elif value in (True, False, 0, 1):
        return bool(value)
    raise ValueError(f"invalid value {value!r}: expected a boolean")


def _int(value: Any) -> int:
    try:
        result = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"invalid value {value!r}: expected an integer") from None
    if isinstance(value, float) and result != value:
        raise ValueError(f"invalid value {value!r}: expected an integer")
    return result


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"invalid value {value!r}: expected a number") from None


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"invalid value {value!r}: expected a string")
    return value


def _any(value: Any) -> Any:
    return value


def _mode(value: Any) -> Any:
    # Theano takes a mode's name or a Mode object.
    if isinstance(value, str) and value not in _MODES:
        raise ValueError(f"invalid value {value!r}: expected a mode ({', '.join(_MODES)}) or a Mode object")
    return value


def _device(value: Any) -> str:
    value = _str(value)
    if not value.startswith(("cpu", "cuda", "opencl", "gpu")):
        raise ValueError(f"invalid value {value!r}: expected 'cpu', 'cuda', 'cudaN' or 'openclN:M'")
    return value


_MODES = ("Mode", "DebugMode", "DEBUG_MODE", "FAST_RUN", "FAST_COMPILE", "NanGuardMode", "ProfileMode",
          "PROFILE_MODE", "JAX", "NUMBA", "PYTORCH")
_TEST_VALUE = _enum("off", "ignore", "warn", "raise", "pdb")
_SETERR = _enum("None", "ignore", "warn", "raise", "call", "print", "log")

# name: (check, default), Theano 1.0's (theano/configdefaults.py).
_FLAGS: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "floatX": (_enum("float64", "float32", "float16"), "float64"),
    "warn_float64": (_enum("ignore", "warn", "raise", "pdb"), "ignore"),
    "pickle_test_value": (_bool, True),
    "cast_policy": (_enum("custom", "numpy+floatX"), "custom"),
    "int_division": (_enum("int", "raise", "floatX"), "int"),
    "deterministic": (_enum("default", "more"), "default"),
    "device": (_device, "cpu"),
    "init_gpu_device": (_str, ""),
    "force_device": (_bool, False),
    "conv.assert_shape": (_bool, False),
    "print_global_stats": (_bool, False),
    "contexts": (_str, ""),
    "print_active_device": (_bool, True),
    "gpuarray.sync": (_bool, False),
    "gpuarray.preallocate": (_float, 0.0),
    "gpuarray.sched": (_enum("default", "multi", "single"), "default"),
    "gpuarray.single_stream": (_bool, True),
    "gpuarray.cache_path": (_str, ""),
    "cuda.root": (_str, ""),
    "cuda.include_path": (_str, ""),
    "dnn.conv.workmem": (_str, ""),
    "dnn.conv.workmem_bwd": (_str, ""),
    "dnn.conv.algo_bwd": (_str, ""),
    "dnn.conv.algo_fwd": (_str, "small"),
    "dnn.conv.algo_bwd_data": (_str, "none"),
    "dnn.conv.algo_bwd_filter": (_str, "none"),
    "dnn.conv.precision": (_str, "as_input_f32"),
    "dnn.base_path": (_str, ""),
    "dnn.include_path": (_str, ""),
    "dnn.library_path": (_str, ""),
    "dnn.bin_path": (_str, ""),
    "dnn.enabled": (_enum("auto", "True", "False", "no_check"), "auto"),
    "magma.include_path": (_str, ""),
    "magma.library_path": (_str, ""),
    "magma.enabled": (_bool, False),
    "assert_no_cpu_op": (_enum("ignore", "warn", "raise", "pdb"), "ignore"),
    "mode": (_mode, "Mode"),
    "cxx": (_str, ""),
    "linker": (_enum("cvm", "c|py", "py", "c", "c|py_nogc", "vm", "vm_nogc", "cvm_nogc"), "cvm"),
    "allow_gc": (_bool, True),
    "optimizer": (_enum("fast_run", "merge", "fast_compile", "None", "o4", "o3", "o2", "o1", "unsafe"),
                  "fast_run"),
    "optimizer_verbose": (_bool, False),
    "on_opt_error": (_enum("warn", "raise", "pdb", "ignore"), "warn"),
    "nocleanup": (_bool, False),
    "on_unused_input": (_enum("raise", "warn", "ignore"), "raise"),
    "tensor.cmp_sloppy": (_int, 0),
    "tensor.local_elemwise_fusion": (_bool, True),
    "tensor.insert_inplace_optimizer_validate_nb": (_int, -1),
    "gpu.local_elemwise_fusion": (_bool, True),
    "lib.amdlibm": (_bool, False),
    "gpuelemwise.sync": (_bool, True),
    "traceback.limit": (_int, 8),
    "traceback.compile_limit": (_int, 0),
    "experimental.unpickle_gpu_on_cpu": (_bool, False),
    "experimental.local_alloc_elemwise": (_bool, True),
    "experimental.local_alloc_elemwise_assert": (_bool, True),
    "numpy.seterr_all": (_SETERR, "ignore"),
    "numpy.seterr_divide": (_SETERR, "None"),
    "numpy.seterr_over": (_SETERR, "None"),
    "numpy.seterr_under": (_SETERR, "None"),
    "numpy.seterr_invalid": (_SETERR, "None"),
    # warn.*: warnings about bugs of old Theano versions (warn.ignore_bug_before = '0.9'
    # turns off those fixed in 0.9 and before).
    "warn.ignore_bug_before": (_str, "0.9"),
    "warn.argmax_pushdown_bug": (_bool, False),
    "warn.gpusum_01_011_0111_bug": (_bool, False),
    "warn.sum_sum_bug": (_bool, False),
    "warn.sum_div_dimshuffle_bug": (_bool, False),
    "warn.subtensor_merge_bug": (_bool, False),
    "warn.gpu_set_subtensor1": (_bool, False),
    "warn.vm_gc_bug": (_bool, False),
    "warn.signal_conv2d_interface": (_bool, False),
    "warn.reduce_join": (_bool, False),
    "warn.inc_set_subtensor1": (_bool, False),
    "warn.round": (_bool, False),
    "warn.inc_subtensor1_opt": (_bool, True),
    "warn.identify_1pexp_bug": (_bool, False),
    "compute_test_value": (_TEST_VALUE, "off"),
    "print_test_value": (_bool, False),
    "compute_test_value_opt": (_TEST_VALUE, "off"),
    "unpickle_function": (_bool, True),
    "reoptimize_unpickled_function": (_bool, False),
    "exception_verbosity": (_enum("low", "high"), "low"),
    "openmp": (_bool, False),
    "openmp_elemwise_minsize": (_int, 200000),
    "check_input": (_bool, True),
    "cache_optimizations": (_bool, False),
    "unittests.rseed": (_str, "666"),
    "NanGuardMode.nan_is_error": (_bool, True),
    "NanGuardMode.inf_is_error": (_bool, True),
    "NanGuardMode.big_is_error": (_bool, True),
    "NanGuardMode.action": (_enum("raise", "warn", "pdb"), "raise"),
    "optimizer_excluding": (_str, ""),
    "optimizer_including": (_str, ""),
    "optimizer_requiring": (_str, ""),
    "DebugMode.patience": (_int, 10),
    "DebugMode.check_c": (_bool, False),
    "DebugMode.check_py": (_bool, True),
    "DebugMode.check_finite": (_bool, True),
    "DebugMode.check_strides": (_int, 0),
    "DebugMode.warn_input_not_reused": (_bool, True),
    "DebugMode.check_preallocated_output": (_str, ""),
    "DebugMode.check_preallocated_output_ndim": (_int, 4),
    "profiling.time_thunks": (_bool, True),
    "profiling.n_apply": (_int, 20),
    "profiling.n_ops": (_int, 20),
    "profiling.output_line_width": (_int, 512),
    "profiling.min_memory_size": (_int, 1024),
    "profiling.min_peak_memory": (_bool, False),
    "profiling.destination": (_str, "stderr"),
    "profiling.debugprint": (_bool, False),
    "profiling.ignore_first_call": (_bool, False),
    "optdb.position_cutoff": (_float, float("inf")),
    "optdb.max_use_ratio": (_float, 8.0),
    "gcc.cxxflags": (_str, ""),
    "cmodule.warn_no_version": (_bool, False),
    "cmodule.remove_gxx_opt": (_bool, False),
    "cmodule.compilation_warning": (_bool, False),
    "cmodule.preload_cache": (_bool, False),
    "cmodule.age_thresh_use": (_int, 60 * 60 * 24 * 24),
    "cmodule.debug": (_bool, False),
    "blas.ldflags": (_str, ""),
    "blas.check_openmp": (_bool, True),
    "metaopt.verbose": (_int, 0),
    "metaopt.optimizer_excluding": (_str, ""),
    "metaopt.optimizer_including": (_str, ""),
    "profile": (_bool, False),
    "profile_optimizer": (_bool, False),
    "profile_memory": (_bool, False),
    "vm.lazy": (_enum("None", "True", "False", None, True, False), "None"),
    "on_shape_error": (_enum("warn", "raise"), "warn"),
    "scan.allow_gc": (_bool, False),
    "scan.allow_output_prealloc": (_bool, True),
    "scan.debug": (_bool, False),
    "compile.wait": (_int, 5),
    "compile.timeout": (_int, 120),
    "cycle_detection": (_enum("regular", "fast"), "regular"),
    "check_stack_trace": (_enum("off", "log", "warn", "raise"), "off"),
    "compiledir_format": (_str, ""),
    "base_compiledir": (_str, ""),
    "compiledir": (_str, ""),
    "ctc.root": (_str, ""),
}


class _Section:
    """A section of flags (``config.warn``, ``config.dnn.conv``...): attributes that
    exist take values their flag accepts; any other name is an ``AttributeError``."""

    def __init__(self, path: str):
        object.__setattr__(self, "_path", path)

    def __setattr__(self, name: str, value: Any) -> None:
        _set_flag(f"{self._path}.{name}", value, self, name)

    def __repr__(self) -> str:
        return f"<theano.config section {self._path}>"

    def __str__(self) -> str:
        return _describe(self._path + ".")


_SECTION_NAMES = sorted({name.rsplit(".", 1)[0] for name in _FLAGS if "." in name}
                        | {".".join(name.split(".")[:2]) for name in _FLAGS if name.count(".") > 1})


def _owner(path: str) -> tuple[Any, str]:
    """(object holding flag `path`, its attribute name)."""
    module = sys.modules[__name__]
    *sections, attr = path.split(".")
    owner: Any = module
    for s in sections:
        owner = owner.__dict__[s]
    return owner, attr


def _set_flag(path: str, value: Any, owner: Any, attr: str) -> None:
    if path not in _FLAGS:
        if attr.startswith("_") or (path in _SECTION_NAMES and isinstance(value, _Section)):
            object.__setattr__(owner, attr, value)
            return
        raise AttributeError(f"theano.config has no flag {path!r} (Theano's config rejects unknown flags)")
    check, _ = _FLAGS[path]
    try:
        value = check(value)
    except ValueError as exc:
        raise ValueError(f"theano.config.{path}: {exc}") from None
    object.__setattr__(owner, attr, value)


def _get_flag(path: str) -> Any:
    if path not in _FLAGS:
        raise AttributeError(f"theano.config has no flag {path!r}")
    owner, attr = _owner(path)
    return getattr(owner, attr)


def _describe(prefix: str = "") -> str:
    return "\n".join(f"{name} = {_get_flag(name)!r}" for name in sorted(_FLAGS) if name.startswith(prefix))


class change_flags:  # noqa: N801  (Theano's name)
    """Theano's ``config.change_flags``: sets flags for a ``with`` block or a decorated function.

    Flags are keywords, or a dict for those with a section
    (``change_flags({"warn.round": True}, floatX="float32")``); the old
    values come back afterwards, whatever happens.

    >>> import mlir_scan as theano
    >>> @theano.config.change_flags(floatX="float32")
    ... def build():
    ...     return theano.tensor.matrix().dtype
    >>> build(), theano.config.floatX
    ('float32', 'float64')
    """

    def __init__(self, args: Any = (), **kwargs: Any):
        flags = dict(args)
        flags.update(kwargs)
        for name in flags:
            if name not in _FLAGS:
                raise AttributeError(f"change_flags: theano.config has no flag {name!r}")
        self.flags = flags
        self._saved: list[dict[str, Any]] = []

    def __enter__(self) -> "change_flags":
        saved = {name: _get_flag(name) for name in self.flags}
        self._saved.append(saved)
        try:
            for name, value in self.flags.items():
                _set_flag(name, value, *_owner(name))
        except Exception:
            self._restore(self._saved.pop())
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self._restore(self._saved.pop())

    @staticmethod
    def _restore(saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            owner, attr = _owner(name)
            object.__setattr__(owner, attr, value)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return wrapper


class _ConfigModule(types.ModuleType):
    """This module's class: setting an attribute sets a flag (checked, as Theano's config does)."""

    def __setattr__(self, name: str, value: Any) -> None:
        _set_flag(name, value, self, name)

    def __str__(self) -> str:
        return _describe()


def _install() -> None:
    module = sys.modules[__name__]
    for path in _SECTION_NAMES:
        owner, attr = _owner(path) if "." in path else (module, path)
        if attr not in owner.__dict__:
            object.__setattr__(owner, attr, _Section(path))
    for path, (_, default) in _FLAGS.items():
        owner, attr = _owner(path)
        object.__setattr__(owner, attr, default)
    module.__class__ = _ConfigModule


def _read_environment(text: str) -> None:
    """Applies Theano's ``THEANO_FLAGS`` syntax (``name=value,section.name=value``);
    unknown flags and bad values are warnings, as in Theano."""
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            warnings.warn(f"THEANO_FLAGS: ignoring {item!r} (expected name=value)", stacklevel=2)
            continue
        name = name.strip()
        try:
            _set_flag(name, value.strip(), *_owner(name))
        except (AttributeError, KeyError, ValueError) as exc:
            warnings.warn(f"THEANO_FLAGS: ignoring {item!r}: {exc}", stacklevel=2)


#: The default float dtype (Theano's ``config.floatX``).
floatX: str = "float64"

_install()
_read_environment(os.environ.get("THEANO_FLAGS", ""))
