"""Which ffmpeg baseline (a) runs, and how it was found: imageio-ffmpeg's own order, then the project's.

imageio-ffmpeg looks for ``IMAGEIO_FFMPEG_EXE``, then its bundled binary, then
one in the Python environment, then ``ffmpeg`` on ``PATH``. A machine without
network or a bundled binary (the lent GPU machine) can use the small static
build that ``benchmarks/gpu/build_ffmpeg.sh`` leaves in the checkout's
``.gpu/ffmpeg``; it is tried last. Whatever is found must have libx264, or the
baseline is skipped with the reason; the bench records the path, how it was
found and the version line.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import EncoderUnavailableError

#: The checkout's small static ffmpeg (benchmarks/gpu/build_ffmpeg.sh), tried after imageio-ffmpeg's search.
PROJECT_FFMPEG = Path(__file__).resolve().parents[2] / ".gpu" / "ffmpeg"
HINT = (
    "pip install 'glrec[bench]' (imageio-ffmpeg with its ffmpeg), set IMAGEIO_FFMPEG_EXE to an ffmpeg with "
    "libx264, or on a machine without network build one with benchmarks/gpu/build_ffmpeg.sh"
)


@dataclass(frozen=True)
class FoundFfmpeg:
    path: str
    found_by: str  # IMAGEIO_FFMPEG_EXE, imageio-ffmpeg's bundled binary, Python environment, system PATH, project
    version: str

    def describe(self) -> dict[str, str]:
        return asdict(self)


def _version_and_x264(exe: str) -> tuple[str, bool]:
    try:
        version = subprocess.run([exe, "-hide_banner", "-version"], capture_output=True, text=True, timeout=20)
        encoders = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EncoderUnavailableError(f"baseline naive-imageio: ffmpeg {exe} does not run ({exc}); {HINT}.") from exc
    first = (version.stdout.splitlines() or ["?"])[0]
    return first, " libx264 " in encoders.stdout


def _found_by(exe: str) -> str:
    if os.environ.get("IMAGEIO_FFMPEG_EXE"):
        return "IMAGEIO_FFMPEG_EXE"
    import imageio_ffmpeg

    here = Path(imageio_ffmpeg.__file__).resolve().parent
    full = Path(shutil.which(exe) or exe).resolve()
    if here in full.parents:
        return "imageio-ffmpeg's bundled binary"
    if Path(sys.prefix).resolve() in full.parents:
        return "the Python environment"
    return "system PATH"


@functools.lru_cache(maxsize=1)
def find_ffmpeg() -> FoundFfmpeg:
    """The ffmpeg baseline (a) will run; EncoderUnavailableError (the row is skipped) when there is none with x264."""
    try:
        import imageio_ffmpeg
    except ImportError as exc:
        raise EncoderUnavailableError(f"baseline naive-imageio needs imageio-ffmpeg ({exc}); {HINT}.") from exc
    try:
        exe, how = imageio_ffmpeg.get_ffmpeg_exe(), None
    except RuntimeError:
        if not PROJECT_FFMPEG.is_file():
            raise EncoderUnavailableError(f"baseline naive-imageio: no ffmpeg found; {HINT}.") from None
        exe, how = str(PROJECT_FFMPEG), f"the project's static build ({PROJECT_FFMPEG})"
    version, x264 = _version_and_x264(exe)
    if not x264:
        raise EncoderUnavailableError(f"baseline naive-imageio: {exe} ({version}) has no libx264 encoder; {HINT}.")
    return FoundFfmpeg(str(shutil.which(exe) or exe), how or _found_by(exe), version)


def use_ffmpeg() -> FoundFfmpeg:
    """Find the ffmpeg and make imageio-ffmpeg use exactly it in this process (the row's own)."""
    found = find_ffmpeg()
    os.environ["IMAGEIO_FFMPEG_EXE"] = found.path
    return found
