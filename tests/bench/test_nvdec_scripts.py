"""benchmarks/nvdec_stages.py and nvdec_check.py, checked where NVDEC cannot run: what they measure is right.

Both scripts run on the lent GPU machine, where a mistake costs a device run. Here the
stage script's CPU rows run for real (a few frames), its NVDEC rows must fail as one
reported error each rather than end the run, and the check script's helpers must find
a planted difference and nothing else.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import av
import numpy as np
import pytest
from where import BENCHMARKS

BENCH = BENCHMARKS


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.gl
def test_stage_rows_report_rates_and_startup(tmp_path):
    from glrec.sources.video.nvdec import nvdec_problem

    rows = "demux,source-cpu" + (",worker" if nvdec_problem() else "")
    cmd = [sys.executable, str(BENCH / "nvdec_stages.py"), "--rows", rows, "--size", "160x96", "--frames", "40",
           "--warmup", "5", "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (result,) = tmp_path.glob("*_nvdec-stages_160x96.json")
    doc = json.loads(result.read_text())["rows"]
    assert doc["demux"]["frames"] == 40
    cpu = doc["source-cpu"]
    assert cpu["frames"] == 40 and cpu["steady"] > 0 and 0 < cpu["startup_s"] < cpu["seconds"]
    assert set(cpu["startup_steps_s"]) == {"gl_context", "open_to_first_picture", "setup"}
    assert cpu["update_us"] > 0 and cpu["gpu_upload_convert_us"] > 0
    if "worker" in doc:  # no NVDEC here: the row says why, and the run went on
        assert "PyNvVideoCodec" in doc["worker"]["error"] or "CUDA" in doc["worker"]["error"]
    assert "source-cpu" in proc.stdout and "steady" in proc.stdout


def test_check_helpers_split_nvdec_layouts_and_count_differences():
    m = _load("nvdec_check")
    from glrec.sources.video.nvdec import _nv_format

    rng = np.random.default_rng(1)
    for bits, name in ((8, "NV12"), (10, "P016")):
        dtype = np.uint8 if bits == 8 else np.uint16
        y, u, v = (rng.integers(0, 1 << bits, s, dtype=dtype) for s in ((9, 14), (5, 7), (5, 7)))
        shift = 0 if bits == 8 else 16 - bits
        nv = [(y << shift)[..., None], np.stack([u << shift, v << shift], axis=-1)]
        got = m._split(nv, _nv_format(name, bits))
        assert m._diff_report([got], [[y, u, v]], "YUV") == {c: {"max": 0, "differing": 0} for c in "YUV"}
        planted = [y.copy(), u, v]
        planted[0][3, 4] ^= 5
        report = m._diff_report([got], [planted], "YUV")
        assert report["Y"] == {"max": 5, "differing": 1} and report["U"]["max"] == report["V"]["max"] == 0
        # NVDEC's samples as the planar frame FFmpeg would give: the same samples come back out.
        frame = m._planar(got, bits > 8)
        assert frame.format.name == ("yuv420p" if bits == 8 else "yuv420p10le")
        back = m._planes_of(frame)
        assert all(np.array_equal(a, b) for a, b in zip(back, (y, u, v), strict=True))


def test_check_reads_ffmpeg_planes_without_row_padding(tmp_path):
    m = _load("nvdec_check")
    frame = av.VideoFrame(50, 30, "yuv420p")
    planes = m._planes_of(frame)
    assert [p.shape for p in planes] == [(30, 50), (15, 25), (15, 25)]
    assert frame.planes[0].line_size > 50  # the padding that had to be cut off
