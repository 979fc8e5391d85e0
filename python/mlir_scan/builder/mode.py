"""Theano's ``Mode``: a compilation mode object for :func:`mlir_scan.function`.

``theano.Mode(linker=..., optimizer=...)`` names how Theano compiles a
function. Here one thing of it has an effect: ``optimizer`` in
(``None``, ``"None"``, ``"fast_compile"``, ``"merge"``) compiles without the
scan rewrites (as ``mode="FAST_COMPILE"``), any other optimizer with them.
The linker is recorded and not used (the program is always compiled by MLIR
and LLVM); ``including``/``excluding``/``requiring`` return a new mode with
the tags recorded: Theano's rewrites are MLIR passes here, which never change
a result.

Example::

    >>> import mlir_scan as theano
    >>> from mlir_scan import tensor as T
    >>> x = T.dvector("x")
    >>> f = theano.function([x], 2 * x, mode=theano.Mode(linker="py", optimizer=None))
    >>> f([1.0, 2.0])
    array([2., 4.])
"""

from __future__ import annotations

from typing import Any

from . import config

__all__ = ["Mode", "get_mode", "get_default_mode", "UNOPTIMIZED"]

#: Optimizer settings that compile without the scan rewrites.
UNOPTIMIZED = (None, "None", "fast_compile", "merge")


class Mode:
    """Theano's ``Mode(linker=None, optimizer="default")``."""

    def __init__(self, linker: Any = None, optimizer: Any = "default"):
        self.linker = linker
        self.optimizer = optimizer
        self.included: tuple[str, ...] = ()
        self.excluded: tuple[str, ...] = ()
        self.required: tuple[str, ...] = ()

    @property
    def optimizes(self) -> bool:
        """Whether functions compiled in this mode run the scan rewrites."""
        if self.optimizer == "default":
            return config.optimizer not in UNOPTIMIZED
        return self.optimizer not in UNOPTIMIZED

    def _with(self, **tags: tuple[str, ...]) -> "Mode":
        mode = Mode(self.linker, self.optimizer)
        mode.included, mode.excluded, mode.required = self.included, self.excluded, self.required
        for name, value in tags.items():
            setattr(mode, name, getattr(mode, name) + value)
        return mode

    def including(self, *tags: str) -> "Mode":
        return self._with(included=tags)

    def excluding(self, *tags: str) -> "Mode":
        return self._with(excluded=tags)

    def requiring(self, *tags: str) -> "Mode":
        return self._with(required=tags)

    def __repr__(self) -> str:
        return f"Mode(linker={self.linker!r}, optimizer={self.optimizer!r})"


def get_mode(mode: Any) -> Mode:
    """The :class:`Mode` of a mode name (Theano's ``compile.mode.get_mode``).

    Every name ``config.mode`` accepts is a mode here: ``"FAST_COMPILE"``
    compiles without the scan rewrites, ``"Mode"`` (and ``None``) follows
    ``config.optimizer``, the others (``"FAST_RUN"``, ``"DebugMode"``,
    ``"NanGuardMode"``, the backends' names...) compile with them.
    """
    if isinstance(mode, Mode):
        return mode
    if mode is None or mode == "Mode":
        return Mode()
    if not isinstance(mode, str) or mode not in config._MODES:
        raise ValueError(f"get_mode: unknown mode {mode!r}: expected a Mode or one of {', '.join(config._MODES)}")
    if mode == "FAST_COMPILE":
        return Mode(linker="py", optimizer="fast_compile")
    return Mode(linker="cvm", optimizer="fast_run")


def get_default_mode() -> Mode:
    """The mode of ``config.mode`` (Theano's ``compile.mode.get_default_mode``)."""
    return get_mode(config.mode)
