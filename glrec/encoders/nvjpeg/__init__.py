"""nvJPEG's room: JPEG from CUDA memory through nvImageCodec (its encoder and row)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._faces import lazy_names

if TYPE_CHECKING:
    from .encoder import INSTALL_HINT, NvJpegEncoder, load_nvimgcodec
    from .row import BATCH, ROW, nvjpeg_problem

__getattr__ = lazy_names(__name__, {
    "INSTALL_HINT": "encoder", "NvJpegEncoder": "encoder", "load_nvimgcodec": "encoder", "BATCH": "row",
    "ROW": "row", "nvjpeg_problem": "row",
})  # fmt: skip

__all__ = ["BATCH", "INSTALL_HINT", "ROW", "NvJpegEncoder", "load_nvimgcodec", "nvjpeg_problem"]
