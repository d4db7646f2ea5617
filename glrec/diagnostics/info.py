"""``glrec info``: what this machine has -- GL, EGL and CUDA devices, and what each encoder of the registry says."""

from __future__ import annotations

from ..errors import GlrecError
from . import common
from .doctor import _encoders


def info_lines() -> list[str]:
    from .. import __version__
    from ..gl.devices import egl_devices

    lines = [f"glrec {__version__}"]
    try:
        from ..gl.context import create_context

        with create_context() as gl:
            ext = "yes" if "GL_EXT_memory_object_fd" in gl.mgl.extensions else "no"
            lines.append(f"GL: {gl.info.renderer}, OpenGL {gl.info.version} ({gl.info.vendor})")
            lines.append(f"    GL_EXT_memory_object_fd (shared handoff): {ext}")
    except GlrecError as exc:
        lines.append(f"GL: unavailable: {exc}")
    lines.append("EGL devices:")
    lines += [f"    {d.describe()}" for d in egl_devices()] or ["    none listed (EGL_EXT_device_enumeration missing)"]
    problem, devices = common.cuda_summary()
    if problem:
        lines.append(f"CUDA: unavailable: {problem}")
    else:
        from ..cuda.driver import driver_version

        lines.append(f"CUDA: driver supports CUDA {driver_version()}")
        lines += [f"    CUDA {d.ordinal}: {d.name}, PCI {d.pci_bus_id}, {d.memory / 2**30:.1f} GiB" for d in devices]
    lines.append("Encoders:")
    ordinals = [d.ordinal for d in devices]
    for row in _encoders():  # each encoder's room says what it has here (NVENC: one session per device)
        if row.status is None:  # a row that has nothing to probe: what it encodes, in its own words
            lines.append(f"    {row.name}: {', '.join(row.codecs)} ({row.note})")
        else:
            lines += [f"    {line}" for line in row.status(ordinals, problem)]
    lines.append("encoder auto here (each codec at the defaults; a summary says the reason in a few words):")
    lines += [f"    {line}" for line in auto_choices()]
    return lines


def auto_choices() -> list[str]:
    """What ``encoder="auto"`` picks here for each codec at the defaults, with every reason in full (the plan's)."""
    from ..options import PipelineOptions, VideoOptions
    from ..pipeline.plan import make_plan
    from ..sinks.registry import CODEC_SUFFIX, output_kind

    out = []
    for codec, ext in CODEC_SUFFIX.items():
        try:
            plan = make_plan(VideoOptions.create((64, 64), 30, codec=codec), PipelineOptions(),
                             output_kind(f"x{ext}", codec))  # fmt: skip
        except GlrecError as exc:
            out.append(f"{codec}: none ({exc})")
            continue
        if plan.device is not None:
            plan.device.release()
        out.append(f"{codec}: {plan.describe()}")
    return out
