"""PyTensor's ``pytensor.tensor.random``: ``RandomStream`` (``pt.random.RandomStream``).

See :mod:`.utils`.
"""

from __future__ import annotations

from . import utils
from .utils import RandomStream

__all__ = ["RandomStream", "utils"]
