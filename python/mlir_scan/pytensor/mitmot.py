"""PyTensor's MITMOT scans (what ``pytensor.grad`` of a scan builds) as ``scan.scan`` mitmot groups.

PyTensor's mit_mot group: an outer buffer, in-slices (taps read) and
out-slices (taps written), relative to step ``t``; ``scan.scan``'s mitmot
group has the same meaning (SPEC section 4: in_tap ``k`` reads row
``t + k - lo``, out_tap ``k`` overwrites row ``t + k - lo``, with ``lo =
min(0, taps)``), so the groups carry over one to one. This module needs the
builder's ``ScanOp`` with ``mitmot_taps``; without it a MITMOT scan is
:class:`~mlir_scan.pytensor.translate.Unsupported` (and falls back to
PyTensor).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..builder.ops.scan import ScanOp
from .translate import Translator, Unsupported

__all__ = ["translate", "available"]


def available() -> bool:
    """Whether the builder's scan has MITMOT groups."""
    return "mitmot_taps" in inspect.signature(ScanOp.__init__).parameters


def translate(tr: Translator, node: Any, ins: list) -> list:
    """The builder scan of a PyTensor Scan node with mit_mot groups."""
    if not available():
        raise Unsupported(node.op, "MITMOT groups need the builder's mitmot support")
    raise Unsupported(node.op, "MITMOT translation is not implemented yet")
