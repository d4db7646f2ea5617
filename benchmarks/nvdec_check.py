"""NVDEC against FFmpeg, stage by stage, in one run on an NVIDIA GPU: where do the two decoder paths differ?

    source .gpu/boot.sh && python3 benchmarks/nvdec_check.py            # on the GPU machine
    python3 benchmarks/nvdec_check.py --clips tc.mp4,h264-1080.mp4       # some clips only

For each clip (made with PyAV's encoders, as tests/gpu/test_nvdec_gpu.py makes them) it prints:

  times         NVDEC's picture times vs FFmpeg's: counts and the largest difference
  samples       per plane (Y, U, V), the largest |NVDEC - FFmpeg| over all pictures and how many samples
                differ; NVDEC's P016 is compared after the shift that puts its bits low. H.264/HEVC/VP9
                decoding is exact: anything but 0 is a decoder or copy-geometry problem
  rgb           NVDEC's samples through NVDEC's GL path vs FFmpeg's through the CPU path's uploader, both
                converted by glrec's RGB pass: per channel largest |diff| and pixels differing
  same-samples  NVDEC's own samples through the CPU path's uploader vs through NVDEC's GL path: non-zero
                means the two GL paths convert equal samples differently
  source        VideoSource(decoder="nvdec") vs decoder="cpu" walked as the GPU tests walk them (which
                picture is shown at which time, then its texture)

Then the transcode of test_transcode_through_nvdec_with_an_overlay_matches_the_cpu_decoder:
lossy as that test ran it (cpu, cpu again, nvdec: whether the encoded video is byte-identical and
the lowest PSNR), and lossless (qp 0, yuv444p: the largest |diff| of the decoded outputs).
A JSON summary goes to --out (default benchmarks/results/).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

import av
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

_X265 = {"x265-params": "log-level=error"}
CLIPS = {  # name: (encoder, pyav_clip keywords)
    "tc.mp4": ("libx264", {"size": (320, 180), "rate": 30, "frames": 30, "audio": True}),  # the transcode test's
    "h264.mp4": ("libx264", {"options": {"bf": "2"}}),
    "h264-1080.mp4": ("libx264", {"size": (1920, 1080), "frames": 20}),  # coded 1088 rows, cropped
    "h264.ts": ("libx264", {}),
    "hevc.mkv": ("libx265", {"options": _X265}),
    "hevc10.mp4": ("libx265", {"pix_fmt": "yuv420p10le", "options": _X265}),
    "vp9.webm": ("libvpx-vp9", {}),
}


def _planes_of(frame: av.VideoFrame) -> list[np.ndarray]:
    """FFmpeg's planes as (rows, samples) arrays."""
    deep = frame.format.name.endswith(("10le", "12le", "16le"))
    dtype, size = (np.uint16, 2) if deep else (np.uint8, 1)
    return [np.frombuffer(memoryview(p), dtype).reshape(p.height, p.line_size // size)[:, : p.width]
            for p in frame.planes]  # fmt: skip


def _split(planes: list[np.ndarray], fmt) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """NVDEC's planes (rows, texels, comps) as Y, U, V sample arrays with the bits low."""
    shift = 16 - fmt.bits if fmt.msb else 0
    out = [planes[0][..., 0]]
    if len(planes) == 2:
        out += [planes[1][..., 0], planes[1][..., 1]]
    else:
        out += [p[..., 0] for p in planes[1:]]
    return [p >> shift if shift else p for p in out]


def _colour(frame, fmt) -> tuple[int, bool]:  # type: ignore[no-untyped-def]
    colorspace = int(getattr(frame, "colorspace", 2) or 2)
    tagged = int(getattr(frame, "color_range", 0) or 0)
    return colorspace, (tagged == 2 if tagged else fmt.full_range)


def _convert(ctx, rgb, planes, fmt, colour, size) -> np.ndarray:  # type: ignore[no-untyped-def]
    rgb.configure(fmt, colour[0], colour[1], size, 0, [t.size for t in planes])
    rgb.run(planes)
    return np.frombuffer(rgb.texture.read(), np.uint8).reshape(size[1], size[0], 4)[..., :3].copy()


def _planar(samples: list[np.ndarray], deep: bool) -> av.VideoFrame:
    """NVDEC's samples as the planar frame FFmpeg's decoder would have produced."""
    y = samples[0]
    frame = av.VideoFrame(y.shape[1], y.shape[0], "yuv420p10le" if deep else "yuv420p")
    for plane, data in zip(frame.planes, samples, strict=True):
        rows = np.zeros((plane.height, plane.line_size), np.uint8)
        raw = np.ascontiguousarray(data.astype(np.uint16 if deep else np.uint8)).view(np.uint8)
        rows[:, : raw.shape[1]] = raw.reshape(data.shape[0], -1)
        plane.update(rows.tobytes())
    return frame


def _diff_report(a: list[np.ndarray], b: list[np.ndarray], names: str) -> dict:
    """Per channel/plane: the largest |a - b| and how many elements differ, summed over pictures."""
    out: dict[str, dict[str, int]] = {n: {"max": 0, "differing": 0} for n in names}
    for x, y in zip(a, b, strict=True):
        for i, n in enumerate(names):
            xi, yi = (x[i], y[i]) if isinstance(x, list) else (x[..., i], y[..., i])
            if xi.shape != yi.shape:
                out[n] = {"max": -1, "differing": -1, "shape": f"{xi.shape} vs {yi.shape}"}  # type: ignore[dict-item]
                continue
            d = np.abs(xi.astype(np.int64) - yi.astype(np.int64))
            out[n]["max"] = max(out[n]["max"], int(d.max()))
            out[n]["differing"] += int((d > 0).sum())
    return out


def check_clip(gl, path: Path) -> dict:  # type: ignore[no-untyped-def]
    from media import texture_rgb

    from glrec.sources import VideoSource
    from glrec.sources.video.media import classify, open_container
    from glrec.sources.video.nvdec import NvdecWorker
    from glrec.sources.video.rgb import RgbPass
    from glrec.sources.video.upload import PboUploader

    ctx = gl.mgl
    result: dict = {}
    # FFmpeg: samples, and RGB through the CPU path's uploader.
    ff_times, ff_samples, ff_rgb = [], [], []
    cpu_up, rgb = PboUploader(ctx), RgbPass(ctx)
    with av.open(str(path)) as c:
        for frame in c.decode(video=0):
            ff_times.append(float(frame.time))
            ff_samples.append([p.copy() for p in _planes_of(frame)])
            fmt = cpu_up.upload(frame)
            ff_rgb.append(_convert(ctx, rgb, cpu_up.planes, fmt, _colour(frame, fmt), (frame.width, frame.height)))
    # NVDEC: samples, RGB through NVDEC's GL path, and its samples through the CPU path's uploader.
    nv_times, nv_samples, nv_rgb, nv_via_cpu = [], [], [], []
    spec = classify(path)
    worker = NvdecWorker(spec, open_container(spec))
    worker.start()
    nv_up = worker.uploader(ctx)
    try:
        while (pic := worker.get(timeout=60)) is not None:
            nvp = pic.frame
            samples = _split(worker.host_planes(nvp), nvp.fmt)
            nv_times.append(pic.time)
            nv_samples.append(samples)
            fmt = nv_up.upload(nvp)
            colour = _colour(nvp, fmt)
            nv_rgb.append(_convert(ctx, rgb, nv_up.planes, fmt, colour, (nvp.width, nvp.height)))
            planar = _planar(samples, fmt.bits > 8)
            pfmt = cpu_up.upload(planar)
            nv_via_cpu.append(_convert(ctx, rgb, cpu_up.planes, pfmt, colour, (nvp.width, nvp.height)))
        result["nvdec_format"] = fmt.name if nv_times else None
    finally:
        nv_up.release()
        worker.stop()
        cpu_up.release()
        rgb.release()
    t0 = ff_times[0] if ff_times else 0.0
    ff_rel = [t - t0 for t in ff_times]
    n = min(len(ff_rel), len(nv_times))
    result["times"] = {"ffmpeg": len(ff_rel), "nvdec": len(nv_times),
                       "max_diff_s": max((abs(a - b) for a, b in zip(ff_rel[:n], nv_times[:n], strict=True)),
                                         default=0.0)}  # fmt: skip
    result["samples"] = _diff_report(nv_samples[:n], ff_samples[:n], "YUV")
    result["rgb"] = _diff_report(nv_rgb[:n], ff_rgb[:n], "RGB")
    result["same_samples"] = _diff_report(nv_via_cpu, nv_rgb, "RGB")
    # The VideoSource walk of the GPU tests (picture choice by time, then the texture).
    walks = {}
    for decoder in ("cpu", "nvdec"):
        shots = []
        with VideoSource(path, decoder=decoder) as src:  # type: ignore[arg-type]
            src.setup(ctx)
            for t in ff_rel:
                pic = src.update(t)
                shots.append((pic.time if pic is not None else None, texture_rgb(src).astype(np.int64)))
        walks[decoder] = shots
    result["source"] = {
        "times_equal": [a for a, _ in walks["cpu"]] == [b for b, _ in walks["nvdec"]],
        **_diff_report([b for _, b in walks["nvdec"]], [a for _, a in walks["cpu"]], "RGB"),
    }
    return result


def _video_digest(path: Path) -> tuple[str, list[np.ndarray], list[float]]:
    h = hashlib.sha256()
    with av.open(str(path)) as c:
        for p in c.demux(video=0):
            if p.size:
                h.update(bytes(p))
    with av.open(str(path)) as c:
        frames = [(f.to_ndarray(format="rgb24"), float(f.time)) for f in c.decode(video=0)]
    return h.hexdigest(), [f for f, _ in frames], [t for _, t in frames]


def check_transcode(media: Path, tmp: Path) -> dict:
    from conftest import psnr

    from glrec.cli import main

    src = media / "tc.mp4"
    overlay = str(ROOT / "examples" / "grade_overlay.glsl")
    out: dict = {}
    runs = {}
    lossless = ["--qp", "0", "--pix-fmt", "yuv444p", "--encoder", "cpu"]
    for name, decoder, extra in (("cpu", "cpu", []), ("cpu-again", "cpu", []), ("nvdec", "nvdec", []),
                                 ("cpu-lossless", "cpu", lossless), ("nvdec-lossless", "nvdec", lossless)):  # fmt: skip
        path = tmp / f"{name}.{'mkv' if 'lossless' in name else 'mp4'}"
        code = main(["record", str(src), "-o", str(path), "--overlay", overlay, "--decoder", decoder, "-q", *extra])
        runs[name] = _video_digest(path) if code == 0 else None
        out[f"{name}_exit"] = code
    for a, b in (("cpu", "cpu-again"), ("cpu", "nvdec"), ("cpu-lossless", "nvdec-lossless")):
        ra, rb = runs.get(a), runs.get(b)
        if ra is None or rb is None:
            continue
        same_len = len(ra[1]) == len(rb[1])
        entry: dict = {"identical_video": ra[0] == rb[0], "frames": [len(ra[1]), len(rb[1])],
                       "times_equal": ra[2] == rb[2]}  # fmt: skip
        if same_len:
            entry["min_psnr"] = min((psnr(x, y) for x, y in zip(ra[1], rb[1], strict=True)), default=None)
            entry["max_abs_rgb"] = max((int(np.abs(x.astype(int) - y.astype(int)).max()) for x, y in
                                        zip(ra[1], rb[1], strict=True)), default=None)  # fmt: skip
        out[f"{a} vs {b}"] = entry
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clips", default=",".join(CLIPS))
    ap.add_argument("--no-transcode", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    from media import pyav_clip

    from glrec.cuda.driver import device_info
    from glrec.gl.context import create_cuda_context

    summary: dict = {"when": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        with create_cuda_context(0, device_info(0).pci_bus_id) as gl:
            summary["gl"] = str(gl)
            for name in args.clips.split(","):
                codec, kw = CLIPS[name]
                try:
                    path = pyav_clip(tmp / name, codec, **kw)
                    summary[name] = check_clip(gl, path)
                except Exception as exc:
                    summary[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-1500:]}
                print(f"== {name}: {json.dumps(summary[name], default=str)}", flush=True)
        if not args.no_transcode:
            try:
                if not (tmp / "tc.mp4").exists():
                    pyav_clip(tmp / "tc.mp4", CLIPS["tc.mp4"][0], **CLIPS["tc.mp4"][1])
                summary["transcode"] = check_transcode(tmp, tmp)
            except Exception as exc:
                summary["transcode"] = {"error": f"{type(exc).__name__}: {exc}",
                                        "trace": traceback.format_exc()[-1500:]}  # fmt: skip
            print(f"== transcode: {json.dumps(summary['transcode'], default=str)}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{time.strftime('%Y-%m-%d')}_nvdec-check.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
