"""NVENC's room: the encoder through PyNvVideoCodec, its probe and caps query, its colour tags, options and row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._faces import lazy_names

if TYPE_CHECKING:
    from .encoder import (
        INSTALL_HINT,
        NVENC_FORMATS,
        RGB_INPUT_COLOUR,
        NvencEncoder,
        check_nvenc_options,
        explain_nvenc_error,
        load_pynvvideocodec,
        nvenc_caps_problem,
        nvenc_config,
        nvenc_options_problem,
    )
    from .options import NvencOptions
    from .row import ROW

__getattr__ = lazy_names(__name__, {
    **dict.fromkeys(("INSTALL_HINT", "NVENC_FORMATS", "RGB_INPUT_COLOUR", "NvencEncoder", "check_nvenc_options",
                     "explain_nvenc_error", "load_pynvvideocodec", "nvenc_caps_problem", "nvenc_config",
                     "nvenc_options_problem"), "encoder"),
    "NvencOptions": "options", "ROW": "row",
})  # fmt: skip

__all__ = ["INSTALL_HINT", "NVENC_FORMATS", "RGB_INPUT_COLOUR", "ROW", "NvencEncoder", "NvencOptions",
           "check_nvenc_options", "explain_nvenc_error", "load_pynvvideocodec", "nvenc_caps_problem", "nvenc_config",
           "nvenc_options_problem"]  # fmt: skip
