"""The machine and software a benchmark ran on, stored with every result."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import socket
from importlib import metadata
from typing import Any

import av

from .. import __version__
from .common import scene_rig
from .meter import gl_clock_for, peak_rss_mb
from .spec import RowResult, RowSpec, row


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """CPU model, cores (all and usable), memory, OS, host name."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "hostname": socket.gethostname(),
    }


def versions() -> dict[str, Any]:
    """glrec, Python, moderngl, glcontext, numpy, PyAV and its FFmpeg libraries, imageio-ffmpeg."""
    from .baselines import imageio_ffmpeg_version

    return {
        "glrec": __version__,
        "python": platform.python_version(),
        "moderngl": _version("moderngl"),
        "glcontext": _version("glcontext"),
        "numpy": _version("numpy"),
        "pyav": av.__version__,
        "ffmpeg_libs": {k: ".".join(map(str, v)) for k, v in av.library_versions.items()},
        "imageio_ffmpeg": _version("imageio-ffmpeg"),
        "imageio_ffmpeg_exe": imageio_ffmpeg_version(),
    }


@row("probe")
def probe(spec: RowSpec) -> RowResult:
    """The GL driver, and the memory a process holds once it has a context and a scene (no encoder)."""
    with scene_rig(spec) as rig:
        info = rig.gl.info
        gl = {
            "renderer": info.renderer,
            "vendor": info.vendor,
            "version": info.version,
            "software": info.is_software,
            "stage_clock": gl_clock_for(rig.ctx),
        }
        rig.render(0, spec.fps)
        rig.ctx.finish()
    return {"gl": gl, "idle_rss_mb": peak_rss_mb()[0]}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def result_name(mach: dict[str, Any], gl: dict[str, Any] | None, when: dt.datetime) -> str:
    """``2025-11-29_amd-epyc-2c_llvmpipe``: date, CPU and cores, GL renderer."""
    cpu = slug(re.sub(r"\((R|TM)\)|CPU|Processor|@.*", "", mach["cpu"]))[:24].strip("-")
    renderer = slug((gl or {}).get("renderer", "nogl").split("(")[0])[:24].strip("-")
    return f"{when:%Y-%m-%d}_{cpu}-{mach['cores_usable']}c_{renderer}"
