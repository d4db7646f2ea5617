"""``glrec doctor``: does each stage work here, end to end, with a remedy for each that does not.

Doctor records a short colour-bar clip through every encoder of the registry
(:mod:`glrec.encoders.registry`; each row names its check) and through each
CUDA handoff this machine offers, decodes it with an independent decoder
(PyAV/FFmpeg; NVDEC through PyNvVideoCodec where present) and reports PSNR
against a plain render. An encoder that cannot run here is reported n/a with
the reason it gives (the plan's own words). It is how a user with an NVENC GPU
confirms the full NVENC path: glrec's own development GPU (an H200) has no
NVENC, so there the check reports it as unavailable, with the driver's reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..encoders.registry import ENCODERS
from ..encoders.row import EncoderRow
from ..errors import EncoderUnavailableError, GlrecError
from ..sinks.registry import CODEC_SUFFIX
from . import common
from .common import FAIL, MIN_PSNR, NA, PASS, Check

log = logging.getLogger("glrec")

_SEE = "see the error; glrec record -v shows each stage"


def _check(name: str, remedy: str, fn: Callable[[], tuple[str, str]]) -> Check:
    try:
        status, detail = fn()
    except Exception as exc:  # a check must report, not crash the doctor
        return Check(name, FAIL, f"{type(exc).__name__}: {exc}", remedy)
    return Check(name, status, detail, remedy if status != PASS else "")


def _encoders() -> list[EncoderRow]:
    """The registry's rows, the host's encoder first (its clip is the one NVDEC decodes)."""
    return sorted(ENCODERS.values(), key=lambda row: row.context != "host")


def _encoder_check(row: EncoderRow, workdir: Path, baselines: dict[str, tuple[str, float]]) -> Check:
    """``row``'s round trip at its defaults (n/a with its reason where it cannot run here)."""
    codec = row.codecs[0]
    options: dict[str, Any] = {"encoder": row.name, "codec": codec}
    if row.context == "host":
        options["handoff"] = "host"  # the host path itself; the CUDA handoffs have checks of their own
    path = workdir / f"{row.name}{CODEC_SUFFIX[codec]}"  # the container its first codec is recorded into
    try:
        result, worst = common.round_trip(path, **options)
    except EncoderUnavailableError as exc:
        return Check(row.doctor, NA, str(exc), f"optional: without {row.label}, glrec records on the others")
    except Exception as exc:
        return Check(
            row.doctor, FAIL, f"{type(exc).__name__}: {exc}", "see the error; glrec record -v shows each stage"
        )
    plane = "RGB" if codec == "png" else "luma"  # PNG is compared as RGB: no matrix between
    shown = "identical (lossless)" if worst == float("inf") else f"PSNR {worst:.1f} dB"
    detail = f"{result.encoder} round trip, 10 frames, {plane} {shown}"
    other = baselines.get(codec)
    if other is not None and other[0] != result.encoder:
        detail += f" ({other[0]} at its defaults: {other[1]:.1f} dB)"
    baselines.setdefault(codec, (result.encoder, worst))
    ok = worst >= MIN_PSNR
    return Check(
        row.doctor, PASS if ok else FAIL, detail, "" if ok else "see the detail; glrec record -v shows each stage"
    )


def run_doctor(workdir: Path) -> list[Check]:
    """Run every check; each reports ok / FAIL / n/a with the reason and a remedy."""
    import av

    checks: list[Check] = []

    def gl() -> tuple[str, str]:
        from ..gl.context import create_context

        with create_context() as ctx:
            return PASS, f"{ctx.info.renderer}, OpenGL {ctx.info.version}"

    checks.append(_check("EGL/OpenGL", "apt-get install libegl1 (+ libegl-mesa0 without a GPU); see README", gl))

    def codecs() -> tuple[str, str]:
        missing = [c for c in ("libx264", "libx265", "libsvtav1", "mjpeg") if c not in av.codecs_available]
        if missing:
            return NA, f"PyAV lacks {', '.join(missing)}"
        return PASS, f"PyAV {av.__version__}: libx264, libx265, libsvtav1, mjpeg"

    checks.append(_check("PyAV codecs", "pip install av (the PyPI wheels include them)", codecs))
    rows = _encoders()
    host = [row for row in rows if row.context == "host"]
    baselines: dict[str, tuple[str, float]] = {}  # codec -> (encoder, PSNR) of the host's round trip
    checks += [_encoder_check(row, workdir, baselines) for row in host]

    problem, devices = common.cuda_summary()
    checks.append(
        Check("CUDA", NA, problem, _cuda_remedy(problem))
        if problem
        else Check("CUDA", PASS, "; ".join(f"{d.ordinal}: {d.name} (PCI {d.pci_bus_id})" for d in devices))
    )
    if problem is None:
        checks += _handoff_checks(workdir)
        checks.append(_sharing_check())
    for row in rows:
        if row in host:
            continue
        if problem and row.needs_cuda:  # said once, on the CUDA line: here the few words
            from ..cuda.driver import cuda_brief

            checks.append(Check(row.doctor, NA, f"needs CUDA ({cuda_brief(problem)}: see the CUDA line)",
                                f"optional: without {row.label}, glrec records on the others"))  # fmt: skip
            continue
        check = _encoder_check(row, workdir, baselines)
        checks.append(check)
        if check.status == PASS and "rgba" in row.pix_fmts:  # it converts RGB itself: measure how
            checks.append(_check(f"{row.doctor} rgba colour",
                                 "glrec's rgba tag may be wrong on this GPU: use pix_fmt yuv420p or nv12 (glrec "
                                 "converts), and please report this line", lambda: _nvenc_rgb(workdir)))  # fmt: skip
    if problem is None:
        clip = workdir / f"{host[0].name}.mp4" if host else workdir / "none.mp4"
        checks.append(_check("NVDEC", "pip install PyNvVideoCodec", lambda: _nvdec(clip)))
    return checks


def _sharing_check() -> Check:
    """Whether several glrec processes on one GPU run their CUDA work side by side (MPS) or time-slice."""
    from ..cuda.gpu_lock import mps_pipe

    pipe = mps_pipe()
    if pipe is not None:
        return Check("GPU sharing", PASS, f"CUDA MPS runs ({pipe}): recordings in several processes add up")
    return Check(
        "GPU sharing", NA, "no CUDA MPS daemon: several processes recording on one GPU time-slice it (an H200: "
        "2 Recorders with nvJPEG 1,189 frames/s in total, 2,048 under MPS)",
        "optional: nvidia-cuda-mps-control -d (the machine's owner), or gpu_lock=True / --gpu-lock where MPS "
        "cannot run; see docs/guides/performance.md",
    )  # fmt: skip


def _cuda_remedy(problem: str) -> str:
    """What to do for the GPU path: ``pip install glrec[cuda]`` only where cuda-python itself is missing."""
    from ..cuda.driver import cuda_remedy

    return cuda_remedy(problem)


def _handoff_checks(workdir: Path) -> list[Check]:
    checks = []
    for kind in ("register", "shared"):

        def interop(kind: str = kind) -> tuple[str, str]:
            _, worst = common.round_trip(workdir / f"{kind}.mp4", encoder="cpu", handoff=kind)
            ok = worst >= MIN_PSNR
            return (PASS if ok else FAIL), f"GL -> CUDA ({kind}) -> libx264 round trip, luma PSNR {worst:.1f} dB"

        checks.append(_check(f"CUDA-GL {kind}", "needs the NVIDIA GL driver on the CUDA device (glrec info)", interop))
    return checks


def _nvdec(clip: Path) -> tuple[str, str]:
    from ..encoders.nvenc.probe import load_pynvvideocodec

    try:
        nvc = load_pynvvideocodec()
    except GlrecError as exc:
        return NA, str(exc)
    if not clip.exists():
        return NA, "no H.264 file from the CPU check to decode"
    n = count_nvdec_frames(nvc, clip)
    return (PASS if n == 10 else FAIL), f"PyNvVideoCodec SimpleDecoder decoded {n} of 10 frames"


def _nvenc_rgb(workdir: Path) -> tuple[str, str]:
    """Encode colour bars from rgba input with NVENC, decode them and measure the conversion NVENC used."""
    from .nvenc_rgb import check

    return check(workdir)


def count_nvdec_frames(nvc: Any, path: Path) -> int:
    """Decode ``path`` fully with PyNvVideoCodec's SimpleDecoder and count the frames it returns.

    Batches never reach past the length the container declares: PyNvVideoCodec prints a
    ``[WARN] INVALID INDEX`` line for every frame asked for beyond the end (seen on the H200).
    """
    decoder = nvc.SimpleDecoder(str(path), gpu_id=0, use_device_memory=True)
    declared = len(decoder)  # 0 where the container does not say
    n = 0
    while True:
        want = 8 if not declared else min(8, declared - n)
        batch = decoder.get_batch_frames(want) if want > 0 else []
        if not batch:
            return n
        n += len(batch)
