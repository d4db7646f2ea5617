"""Child process of the NVENC contract test: glrec's real NVENC code against the real PyNvVideoCodec.

Run with ``LD_LIBRARY_PATH`` at the stand-in driver libraries (see ``fake_drivers.py``);
``argv``: a JSON job and a work directory, or ``--batch FILE`` with many (each with its own
work directory and environment, run one after the other in this process, so the suite
pays one interpreter start-up for them). Prints one ``result {json}`` line.

Jobs (``kind``):

- ``encode``: open ``NvencEncoder`` for ``options`` on CUDA device ``device``, fill a
  ``DevicePool`` slot per frame index in ``frames`` with random planes (written to
  ``inputs/frame_<index>.bin`` in glrec's host layout), hand each to the encoder as a
  ``DeviceFrame`` the way a handoff does (fill, record the slot's event, pending), call
  ``request_keyframe()`` before the indices in ``keyframe_before``, then flush.
- ``probe``: :func:`nvenc_problem` once per step, each with its own environment changes.
- ``plan``: :func:`make_plan` for ``options`` on CUDA device ``cuda_device``.
- ``info``: ``glrec info``'s lines.
- ``introspect``: ``CreateEncoder`` with ``gpu_id=99`` and with ``gpuid=99``; with ``lossless``, H.264
  lossless with every keyword that might set NVENC's transform bypass flag, and the flag NVENC got.
- ``doctor_rgb``: ``glrec doctor``'s NVENC rgba colour check, with its colour bars in ``inputs/``.
- ``gl_encode``: the GPU tier, through glrec's real GL -> CUDA handoffs (``gl_reference.py``).
- ``open``: plan, then set ``open_env`` and open the planned encoder (auto's fallback when it cannot open).
- ``record``: the GPU tier, a whole ``glrec.record`` after a plan, with ``open_env`` set in between.
- ``batch``: a ``glrec.BatchRecorder`` of ``steps`` random ``shape`` batches (``where``: cuda, a device
  allocation with ``__cuda_array_interface__``; or host, numpy) into per-env ``.h264`` files with
  ``encoder="nvenc"`` and ``options``; the batches go to ``inputs/batches.npy``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
from pathlib import Path

import numpy as np


def marker(data: bytes) -> dict | None:
    """The stand-in's marker in a packet: picture number, frameIdx, timestamp, picture type, flags."""
    match = re.search(rb"GLRECFAKE ([^;]*);", data)
    if match is None:
        return None
    return {k: int(v) for k, v in (item.split("=") for item in match.group(1).decode().split())}


def packets_json(packets) -> list[dict]:
    return [{"pts": p.pts, "dts": p.dts, "keyframe": p.keyframe, "marker": marker(p.data), "head": p.data[:8].hex(),
             "size": len(p.data)} for p in packets]  # fmt: skip


def error_json(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "message": str(exc), "mro": [c.__name__ for c in type(exc).__mro__]}


def encode(job: dict, work: Path) -> dict:
    from glrec.convert import PlaneLayout
    from glrec.cuda.driver import CudaDevice, call
    from glrec.cuda.pool import DeviceFrame, DevicePool
    from glrec.encoders.nvenc import NvencEncoder
    from glrec.options import VideoOptions

    device = CudaDevice.open(job.get("device", 0))
    options = VideoOptions.create(**job["options"])
    layout = PlaneLayout.for_format(options.pix_fmt, *options.encoded_size)
    pool = DevicePool(device, layout.nbytes, job.get("slots", 3))
    out: dict = {"context": device.context_handle, "stream": device.stream_handle, "slots": {}, "calls": []}
    try:
        asked = options.request("nvenc", raw_output=job.get("raw_output", False), device=device)
        enc = NvencEncoder(asked.facts, asked.options, device, raw_output=asked.raw_output)
    except Exception as exc:
        out["error"] = error_json(exc)
        return out
    rng = np.random.default_rng(job.get("seed", 1))
    try:
        for index in job["frames"]:
            if index in job.get("keyframe_before", []):
                enc.request_keyframe()
            slot = pool.acquire(timeout=5)
            data = rng.integers(0, 256, layout.nbytes, dtype=np.uint8)
            (work / "inputs" / f"frame_{index}.bin").write_bytes(data.tobytes())
            device.bind()
            call("cuMemcpyHtoD", pool.address(slot), data.ctypes.data, layout.nbytes)
            call("cuEventRecord", pool.events[slot], device.stream)
            out["slots"][str(index)] = pool.address(slot)
            frame = DeviceFrame(index, layout, pool, slot, pending=True)
            out["calls"].append({"frame": index, "packets": packets_json(enc.encode(frame))})
        out["flush"] = packets_json(enc.flush())
    except Exception as exc:
        out["error"] = error_json(exc)
        out["traceback"] = traceback.format_exc()
    finally:
        enc.close()
    out["free_slots"] = pool.free
    pool.release()
    device.release()
    return out


def probe(job: dict, work: Path) -> dict:
    from glrec.cuda.driver import CudaDevice
    from glrec.encoders.nvenc.probe import nvenc_problem

    device = CudaDevice.open(job.get("device", 0))
    results = []
    for step in job["steps"]:
        for k, v in step.get("env", {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        results.append(nvenc_problem(step.get("codec", "h264"), device))
    device.release()
    return {"problems": results}


def plan(job: dict, work: Path) -> dict:
    from glrec.options import PipelineOptions, VideoOptions
    from glrec.pipeline.plan import make_plan
    from glrec.sinks.registry import output_kind

    try:
        video = VideoOptions.create(**job["options"])
        ext = {"av1": ".ivf", "mjpeg": ".mkv"}.get(video.codec, ".h264" if job.get("raw_output") else ".mp4")
        pipeline = PipelineOptions(handoff=job.get("handoff", "auto"), cuda_device=job.get("cuda_device", 0))
        p = make_plan(video, pipeline, output_kind(f"out{ext}", video.codec))
    except Exception as exc:
        return {"error": error_json(exc)}
    if p.device is not None:
        p.device.release()
    return {"encoder": p.encoder, "handoff": p.handoff, "describe": p.describe()}


class _Said(logging.Handler):
    """The glrec log's warnings, as lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def open_encoder(job: dict, work: Path) -> dict:
    """Plan (the probe opens a session and is cached), then set ``open_env`` and open the planned encoder.

    ``pipeline``: the pipeline options (cuda_device, handoff); ``again``: plan once more afterwards (what a
    second recording in the process would get), reported as ``replanned``.
    """
    from glrec.options import PipelineOptions, VideoOptions
    from glrec.pipeline.build import _open_encoder
    from glrec.pipeline.plan import make_plan
    from glrec.sinks.registry import output_kind

    video = VideoOptions.create(**job["options"])
    pipeline, output = PipelineOptions.parse(job.get("pipeline", {})), output_kind("out.mp4", video.codec)
    p = make_plan(video, pipeline, output)
    first = p.encoder
    before = {k: os.environ.get(k) for k in job.get("open_env", {})}
    os.environ.update(job.get("open_env", {}))
    out: dict = {"planned": first}
    said = _Said()
    logging.getLogger("glrec").addHandler(said)
    try:
        encoder, p, _ = _open_encoder(p, video, pipeline, output)
        out.update(encoder=p.encoder, name=encoder.name, fallbacks=list(p.fallbacks), describe=p.describe(),
                   handoff=p.handoff, device=p.device.ordinal if p.uses_cuda and p.device else None)  # fmt: skip
        encoder.close()
    except Exception as exc:
        out["error"] = error_json(exc)
    finally:
        logging.getLogger("glrec").removeHandler(said)
        out["log"] = said.lines
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if p.device is not None:
            p.device.release()
    if job.get("again"):
        out["replanned"] = plan({"options": job["options"], **job.get("pipeline", {})}, work)
    return out


def record(job: dict, work: Path) -> dict:
    """A whole recording (``glrec.record`` of plasma to ``out.mp4``), after a plan that caches a successful probe,
    with ``open_env`` set in between (the GPU tier: glrec's real GL and CUDA)."""
    import glrec
    from glrec.options import PipelineOptions, VideoOptions
    from glrec.pipeline.plan import make_plan
    from glrec.sinks.registry import output_kind

    options = job["options"]
    video = VideoOptions.create(**{k: v for k, v in options.items() if k in VideoOptions.names()})
    pipeline = PipelineOptions.parse({k: v for k, v in options.items() if k in PipelineOptions.names()})
    warm = make_plan(video, pipeline, output_kind("out.mp4", video.codec))
    if warm.device is not None:
        warm.device.release()
    os.environ.update(job.get("open_env", {}))
    path = work / "out.mp4"
    try:
        result = glrec.record("plasma", path, frames=job["frames"], **options)
    except Exception as exc:
        return {"planned": warm.encoder, "error": error_json(exc)}
    return {"planned": warm.encoder, "encoder": result.encoder, "fallback": result.fallback,
            "summary": result.summary(), "frames": result.frames, "path": str(path)}  # fmt: skip


def introspect(job: dict, work: Path) -> dict:
    """How the real module takes the GPU keyword: ``gpu_id`` is checked against the device count, ``gpuid`` is not."""
    import PyNvVideoCodec as nvc

    out: dict = {}
    for key in ("gpu_id", "gpuid"):
        try:
            nvc.CreateEncoder(64, 64, "NV12", True, codec="h264", **{key: 99})
            out[key] = None
        except Exception as exc:
            out[key] = str(exc)
    if job.get("lossless"):  # every spelling that might reach qpPrimeYZeroTransformBypassFlag or the profile
        keys = {
            "qpPrimeYZeroTransformBypassFlag": "1",
            "qpprimeyzerotransformbypassflag": "1",
            "lossless": "1",
            "transformbypass": "1",
            "profile": "high444p",
        }
        nvc.CreateEncoder(
            64, 64, "YUV444", True, codec="h264", tuning_info="lossless", rc="constqp", constqp="0", **keys
        )
        init = [json.loads(line) for line in (work / "nvenc.jsonl").read_text().splitlines() if '"initialize"' in line]
        out["lossless"] = {
            "profile": init[-1]["profile"],
            "bypass": init[-1]["codec_config"]["qpPrimeYZeroTransformBypassFlag"],
        }
    return out


def doctor_rgb(job: dict, work: Path) -> dict:
    """Doctor's NVENC rgba colour check as doctor runs it; the colour bars it encodes go to ``inputs/`` as rgba."""
    from glrec.diagnostics.common import reference_rgb
    from glrec.diagnostics.doctor import _nvenc_rgb

    for i, rgb in enumerate(reference_rgb("bars", (320, 240), 5, 30)):
        rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
        (work / "inputs" / f"frame_{i}.bin").write_bytes(rgba.tobytes())
    status, detail = _nvenc_rgb(work)
    return {"status": status, "detail": detail}


def gl_encode(job: dict, work: Path) -> dict:
    """Render, convert and hand frames over GL -> CUDA (``handoff``) into NvencEncoder; references by glReadPixels."""
    from gl_reference import encode_through_handoff

    return encode_through_handoff(job, work)


class _DeviceBatch:
    """A device allocation seen as an (N, H, W, C) uint8 CUDA array, as PyTorch or CuPy show theirs."""

    def __init__(self, ptr: int, shape: tuple[int, ...]) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None, "stream": None}  # fmt: skip


def batch(job: dict, work: Path) -> dict:
    import glrec
    from glrec.cuda.driver import CudaDevice, call

    shape, steps = tuple(job["shape"]), job["steps"]
    batches = np.random.default_rng(7).integers(0, 256, (steps, *shape), dtype=np.uint8)
    np.save(work / "inputs" / "batches.npy", batches)
    device = CudaDevice.open(0)
    ptr = int(call("cuMemAlloc", batches[0].nbytes)) if job.get("where", "cuda") == "cuda" else None
    result: dict = {}
    try:
        rec = glrec.BatchRecorder(str(work / "env{env}.h264"), encoder="nvenc", **job.get("options", {}))
        with rec:
            for step in batches:
                if ptr is None:
                    rec.write(step)
                else:
                    call("cuMemcpyHtoD", ptr, step.ctypes.data, step.nbytes)
                    rec.write(_DeviceBatch(ptr, shape))
        done = rec.close()
        result["videos"] = [{"env": v.env, "path": str(v.path), "frames": v.frames} for v in done.videos]
        result["encoder"] = done.encoder
    except Exception as exc:
        result["error"] = error_json(exc)
    finally:
        if ptr is not None:
            call("cuMemFree", ptr)
        device.release()
    result["files"] = sorted(p.name for p in work.glob("env*"))
    return result


def info(job: dict, work: Path) -> dict:
    from glrec.diagnostics import info_lines

    return {"lines": info_lines()}


KINDS = {"encode": encode, "probe": probe, "plan": plan, "info": info, "introspect": introspect,
         "gl_encode": gl_encode, "doctor_rgb": doctor_rgb, "open": open_encoder, "record": record,
         "batch": batch}  # fmt: skip


def run_one(job: dict, work: Path, env: dict[str, str | None]) -> dict:
    """One job with its own records under ``work`` and its own environment, as if in a fresh process."""
    (work / "surfaces").mkdir(parents=True, exist_ok=True)
    (work / "inputs").mkdir(parents=True, exist_ok=True)
    env = {"GLREC_FAKE_NVENC_LOG": str(work / "nvenc.jsonl"), "GLREC_FAKE_NVENC_DUMP": str(work / "surfaces"),
           "GLREC_FAKE_CUDA_LOG": str(work / "cuda.jsonl"), **env}  # fmt: skip
    saved = {k: os.environ.get(k) for k in env}
    probe_module = sys.modules.get("glrec.encoders.nvenc.probe")
    if probe_module is not None:
        probe_module._cache.clear()  # a fresh process knows no caps yet, nor failures
        probe_module._failed.clear()
    try:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return KINDS[job["kind"]](job, work)
    except Exception:
        return {"crash": traceback.format_exc()}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> int:
    if sys.argv[1] == "--batch":  # [{"name", "job", "work", "env"}, ...] in a file
        entries = json.loads(Path(sys.argv[2]).read_text())
        result = {e["name"]: run_one(e["job"], Path(e["work"]), e.get("env", {})) for e in entries}
    else:
        result = run_one(json.loads(sys.argv[1]), Path(sys.argv[2]), {})
    print("result " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
