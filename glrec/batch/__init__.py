"""Vectorised environments: ``(N, H, W, C)`` batches per step into N files, a grid, a subset, or clips kept by outcome.

See :class:`~glrec.batch.recorder.BatchRecorder` (``glrec.BatchRecorder``) and
README "Vectorised environments".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._faces import lazy_names

if TYPE_CHECKING:
    from .recorder import BatchRecorder
    from .result import BatchResult, BatchVideo

__getattr__ = lazy_names(__name__, {"BatchRecorder": "recorder", "BatchResult": "result", "BatchVideo": "result"})

__all__ = ["BatchRecorder", "BatchResult", "BatchVideo"]
