"""Whether the GPU encoders work on this machine, and why not: asked by the plan, ``glrec info`` and doctor.

NVENC's probe lives with NVENC (:mod:`glrec.encoders.nvenc_probe`: one session,
successes cached, failures probed again); nvJPEG's is here.
"""

from __future__ import annotations

from ..errors import GlrecError
from .nvenc_probe import nvenc_caps, nvenc_problem, nvenc_status

__all__ = ["nvenc_caps", "nvenc_problem", "nvenc_status", "nvjpeg_problem"]


def nvjpeg_problem() -> str | None:
    from .nvjpeg import load_nvimgcodec

    try:
        load_nvimgcodec()
    except GlrecError as exc:
        return str(exc)
    return None
