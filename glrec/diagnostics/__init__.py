"""``glrec info`` (what this machine has) and ``glrec doctor`` (does each stage work, end to end).

``doctor`` records a short colour-bar clip through each backend that this
machine offers, decodes it with an independent decoder (PyAV/FFmpeg; NVDEC
through PyNvVideoCodec where present) and reports PSNR against a plain
render. It is how a user with an NVENC GPU confirms the full NVENC path: glrec's
own development GPU (an H200) has no NVENC, so there the check reports it as
unavailable, with the driver's reason.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GlrecError

log = logging.getLogger("glrec")

PASS, FAIL, NA = "ok", "FAIL", "n/a"
MIN_PSNR = 30.0  # dB on luma: far below what a working encoder gives on colour bars, far above a broken one


@dataclass
class Check:
    name: str
    status: str
    detail: str
    remedy: str = ""


# -- shared probes ---------------------------------------------------------------------------


def _cuda_summary() -> tuple[str | None, list[Any]]:
    from ..cuda.driver import cuda_problem, visible_devices

    problem = cuda_problem()
    return problem, ([] if problem else visible_devices())


def _reference_rgb(scene: str, size: tuple[int, int], frames: int, fps: float) -> list[np.ndarray]:
    """``scene`` rendered with plain moderngl calls (no glrec pipeline), RGB rows top-down."""
    from ..gl.context import create_context
    from ..gl.target import RenderTarget
    from ..scenes import load_scene

    out = []
    with create_context() as gl:
        target = RenderTarget(gl.mgl, size)
        sc = load_scene(scene)
        sc.setup(gl.mgl, size)
        for i in range(frames):
            target.use()
            sc.render(i / fps)
            out.append(np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(size[1], size[0], 3)[::-1])
        sc.close()
        target.release()
    return out


def _reference_luma(scene: str, size: tuple[int, int], frames: int, fps: float, colour: Any) -> list[np.ndarray]:
    """Luma of :func:`_reference_rgb` through ``colour``'s matrix and range."""
    return [np.clip(np.floor(colour.to_yuv(rgb / 255.0)[..., 0] + 0.5), 0, 255)
            for rgb in _reference_rgb(scene, size, frames, fps)]  # fmt: skip


def decoded_planes(path: Path) -> list[list[np.ndarray]]:
    """Every frame's Y, U, V planes as decoded (no conversion), for 4:2:0 and 4:4:4 streams."""
    import av

    out = []
    with av.open(str(path)) as c:
        for fr in c.decode(video=0):
            name = fr.format.name
            if name not in ("yuv420p", "yuvj420p", "yuv444p", "yuvj444p"):
                fr = fr.reformat(format="yuv420p")
                name = "yuv420p"
            a = fr.to_ndarray()
            h, w = fr.height, fr.width
            if "444" in name:
                out.append([a[i] for i in range(3)])
            else:
                flat = a.reshape(-1)
                q = (w // 2) * (h // 2)
                out.append([flat[: w * h].reshape(h, w), flat[w * h : w * h + q].reshape(h // 2, w // 2),
                            flat[w * h + q : w * h + 2 * q].reshape(h // 2, w // 2)])  # fmt: skip
    return out


def decoded_luma(path: Path) -> list[np.ndarray]:
    """Every frame's luma, decoded by PyAV (FFmpeg's decoders)."""
    import av

    out: list[np.ndarray] = []
    if "%" in path.name:
        files = sorted(path.parent.glob(path.name.split("%")[0] + "*" + path.suffix))
        for f in files:
            with av.open(str(f)) as c:
                out.extend(fr.to_ndarray(format="gray") for fr in c.decode(video=0))
        return out
    with av.open(str(path)) as c:
        for fr in c.decode(video=0):
            out.append(fr.reformat(format="yuv444p").to_ndarray()[0])
    return out


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def _round_trip(path: Path, frames: int = 10, size: tuple[int, int] = (320, 240), **options: Any) -> tuple[Any, float]:
    """Record colour bars through ``options``' backend, decode them back, return (result, worst PSNR)."""
    from .._api import record

    result = record("bars", path, size=size, fps=30, frames=frames, overwrite=True, **options)
    got = decoded_luma(path)
    if len(got) != frames:
        raise GlrecError(f"{path.name}: decoded {len(got)} frames, recorded {frames}")
    from ..options import VideoOptions

    colour = VideoOptions.create(size, 30, codec=options.get("codec", "h264")).colour
    ref = _reference_luma("bars", size, frames, 30, colour)
    return result, min(psnr(a, b) for a, b in zip(got, ref, strict=True))


# -- doctor ------------------------------------------------------------------------------------


def _check(name: str, remedy: str, fn: Callable[[], tuple[str, str]]) -> Check:
    try:
        status, detail = fn()
    except Exception as exc:  # a check must report, not crash the doctor
        return Check(name, FAIL, f"{type(exc).__name__}: {exc}", remedy)
    return Check(name, status, detail, remedy if status != PASS else "")


def run_doctor(workdir: Path) -> list[Check]:
    """Run every check; each reports ok / FAIL / n/a with the reason and a remedy."""
    import av

    checks: list[Check] = []
    h264 = workdir / "cpu.mp4"

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

    def cpu() -> tuple[str, str]:
        _, worst = _round_trip(h264, encoder="cpu", handoff="host")
        return (PASS if worst >= MIN_PSNR else FAIL), f"libx264 round trip, 10 frames, luma PSNR {worst:.1f} dB"

    checks.append(_check("CPU encode", "see the error; glrec record -v shows each stage", cpu))

    problem, devices = _cuda_summary()
    checks.append(
        Check("CUDA", NA, problem or "", f"for the GPU path: {_cuda_hint()}")
        if problem
        else Check("CUDA", PASS, "; ".join(f"{d.ordinal}: {d.name} (PCI {d.pci_bus_id})" for d in devices))
    )
    if problem is None:
        checks.extend(_gpu_checks(workdir, h264))
    else:
        checks.append(Check("NVENC", NA, f"needs CUDA ({problem}); {_nvenc_library()}", f"for NVENC: {_cuda_hint()}"))
    return checks


def _nvenc_library() -> str:
    from ..encoders.nvenc_probe import nvenc_library_problem

    why = nvenc_library_problem()
    return "PyNvVideoCodec loads" if why is None else why


def _cuda_hint() -> str:
    from ..cuda.driver import INSTALL_HINT

    return INSTALL_HINT


def _gpu_checks(workdir: Path, h264: Path) -> list[Check]:
    from ..encoders.available import nvenc_status, nvjpeg_problem

    checks = []
    for kind in ("register", "shared"):

        def interop(kind: str = kind) -> tuple[str, str]:
            _, worst = _round_trip(workdir / f"{kind}.mp4", encoder="cpu", handoff=kind)
            ok = worst >= MIN_PSNR
            return (PASS if ok else FAIL), f"GL -> CUDA ({kind}) -> libx264 round trip, luma PSNR {worst:.1f} dB"

        checks.append(_check(f"CUDA-GL {kind}", "needs the NVIDIA GL driver on the CUDA device (glrec info)", interop))

    why = nvenc_status()["h264"]
    if why is not None:
        checks.append(Check("NVENC", NA, why, "use --encoder nvjpeg (MJPEG) or --encoder cpu"))
    else:

        def nvenc() -> tuple[str, str]:
            _, worst = _round_trip(workdir / "nvenc.mp4", encoder="nvenc")
            _, cpu = _round_trip(workdir / "nvenc-cpu.mp4", encoder="cpu", handoff="host")
            return (PASS if worst >= MIN_PSNR else FAIL), (
                f"NVENC h264 round trip at its defaults, luma PSNR "
                f"{worst:.1f} dB (libx264 at its defaults: {cpu:.1f} dB)"
            )

        checks.append(_check("NVENC", "update the driver; see the error", nvenc))
        checks.append(
            _check(
                "NVENC rgba colour",
                "glrec's rgba tag may be wrong on this GPU: use pix_fmt yuv420p "
                "or nv12 (glrec converts), and please report this line",
                lambda: _nvenc_rgb(workdir),
            )
        )

    why = nvjpeg_problem()
    if why is not None:
        checks.append(Check("nvJPEG", NA, why, "pip install glrec[nvjpeg]"))
    else:

        def nvjpeg() -> tuple[str, str]:
            _, worst = _round_trip(workdir / "nvjpeg.mkv", encoder="nvjpeg", codec="mjpeg")
            return (PASS if worst >= MIN_PSNR else FAIL), f"nvJPEG MJPEG round trip, luma PSNR {worst:.1f} dB"

        checks.append(_check("nvJPEG", "make the nvJPEG library visible (CUDA toolkit)", nvjpeg))

    def nvdec() -> tuple[str, str]:
        from ..encoders.nvenc_probe import load_pynvvideocodec

        try:
            nvc = load_pynvvideocodec()
        except GlrecError as exc:
            return NA, str(exc)
        if not h264.exists():
            return NA, "no H.264 file from the CPU check to decode"
        n = count_nvdec_frames(nvc, h264)
        return (PASS if n == 10 else FAIL), f"PyNvVideoCodec SimpleDecoder decoded {n} of 10 frames"

    checks.append(_check("NVDEC", "pip install PyNvVideoCodec", nvdec))
    return checks


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


# -- info --------------------------------------------------------------------------------------


def info_lines() -> list[str]:
    import av

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
    problem, devices = _cuda_summary()
    if problem:
        lines.append(f"CUDA: unavailable: {problem}")
    else:
        from ..cuda.driver import driver_version

        lines.append(f"CUDA: driver supports CUDA {driver_version()}")
        lines += [f"    CUDA {d.ordinal}: {d.name}, PCI {d.pci_bus_id}, {d.memory / 2**30:.1f} GiB" for d in devices]
    cpu = [c for c in ("libx264", "libx265", "libsvtav1", "mjpeg") if c in av.codecs_available]
    lines.append("Encoders:")
    lines.append(f"    cpu: PyAV {av.__version__}: {', '.join(cpu) or 'none'}")
    if problem:
        lines.append(f"    nvenc: needs CUDA; {_nvenc_library()}")
        lines.append("    nvjpeg: needs CUDA")
        return lines
    from ..encoders.available import nvenc_status, nvjpeg_problem

    for d in devices:  # one NVENC session per device answers for every codec
        on = f" (CUDA {d.ordinal})" if len(devices) > 1 else ""
        for codec, why in nvenc_status(("h264", "hevc", "av1"), d.ordinal).items():
            lines.append(f"    nvenc {codec}{on}: {'opens a session' if why is None else 'unavailable: ' + why}")
    why = nvjpeg_problem()
    lines.append(f"    nvjpeg: {'available (nvImageCodec)' if why is None else 'unavailable: ' + why}")
    return lines


# -- CLI ---------------------------------------------------------------------------------------


def _cmd_info(args: argparse.Namespace) -> int:
    print("\n".join(info_lines()))
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="glrec-doctor-") as tmp:
        checks = run_doctor(Path(tmp))
    required = {r.lower() for r in args.require}
    width = max(len(c.name) for c in checks)
    failed = False
    for c in checks:
        status = c.status
        if c.name.lower() in required and status != PASS:
            status, failed = FAIL, True
        failed |= status == FAIL
        print(f"{c.name:<{width}}  {status:<4}  {c.detail}")
        if c.remedy and status != PASS:
            print(f"{'':<{width}}        -> {c.remedy}")
    for name in sorted(required - {c.name.lower() for c in checks}):
        failed = True
        print(f"{name:<{width}}  {FAIL:<4}  required, but this machine has no such check")
    print("doctor: " + ("problems found (see FAIL lines)" if failed else "all available stages work"))
    return 1 if failed else 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    info = subparsers.add_parser("info", parents=[common], help="GL, EGL and CUDA devices, and which encoders open")
    info.set_defaults(func=_cmd_info)
    doctor = subparsers.add_parser("doctor", parents=[common], help="check every stage end to end, with remedies")
    doctor.add_argument("--require", action="append", default=[], metavar="CHECK",
                        help="treat a check that is n/a as a failure, e.g. --require nvenc")  # fmt: skip
    doctor.set_defaults(func=_cmd_doctor)
