"""The processing stage on the CUDA path (``-m gpu``): torch and CuPy on the frame's CUDA memory, OpenCL through
external memory. Needs an NVIDIA GPU, cuda-python, a CUDA build of PyTorch (CuPy and the NVIDIA OpenCL ICD for
their tests; for OpenCL point OCL_ICD_VENDORS at a folder whose .icd file names libnvidia-opencl.so.1).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from conftest import psnr
from helpers import decode_planes
from process_helpers import LOSSLESS, assert_planes_equal, cl_counts, converted, fd_growth, open_fds, require, sobel
from test_process import FPS, bars_rgba, seeded_model, torch_sobel
from where import EXAMPLES

import glrec
from glrec.errors import ProcessOutputError
from glrec.process import Boxes, Mask, OpenCLKernel, Overlay, Process, clcontext
from glrec.process.memory import CudaMemory

pytestmark = pytest.mark.gpu
SIZE = (256, 144)
FILTERS = EXAMPLES / "filters.cl"


def cuda_torch():
    torch = require("torch", "a CUDA build of PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"needs a CUDA build of PyTorch (this is {torch.__version__})")
    return torch


def record(path, process, n=6, size=SIZE, **options):
    options = {**LOSSLESS, **options}
    return glrec.record("bars", path, frames=n, size=size, fps=FPS, process=process, **options)


def inverted(frames):
    out = [f.copy() for f in frames]
    for f in out:
        f[..., :3] = 255 - f[..., :3]
    return out


def no_host_copy(*args):
    raise AssertionError("the frame was copied to the host")


def test_torch_invert_in_place_on_the_frames_cuda_memory(tmp_path, monkeypatch, caplog):
    torch = cuda_torch()
    monkeypatch.setattr(CudaMemory, "download", no_host_copy)
    monkeypatch.setattr(CudaMemory, "upload", no_host_copy)
    seen = []

    def invert(frame):
        seen.append((frame.device.type, frame.device.index, torch.cuda.current_stream().cuda_stream))
        frame[..., :3] = 255 - frame[..., :3]

    out = tmp_path / "inv.mkv"
    caplog.set_level(logging.INFO, logger="glrec")
    with glrec.Recorder(out, size=SIZE, fps=FPS, **LOSSLESS, process=invert) as rec:
        for _ in range(6):
            rec.render("bars")
        stream = rec.plan.device.stream_handle
    assert seen == [("cuda", 0, stream)] * 6  # glrec's stream is torch's current stream inside fn
    assert any("on torch arrays in CUDA memory" in r.getMessage() for r in caplog.records)
    assert_planes_equal(out, converted(inverted(bars_rgba(6, SIZE))))


def test_torch_sobel_returning_a_new_tensor_is_exact(tmp_path):
    cuda_torch()
    record(tmp_path / "s.mkv", torch_sobel)
    assert_planes_equal(tmp_path / "s.mkv", converted([sobel(f) for f in bars_rgba(6, SIZE)]))


def test_seeded_model_on_the_gpu_matches_the_model_on_the_cpu_host_copy(tmp_path):
    torch = cuda_torch()
    model, apply = seeded_model()
    host = bars_rgba(5, SIZE)
    expected = converted([apply(torch.from_numpy(f)).numpy() for f in host], "yuv420p")  # CPU, host copies
    model.cuda()
    glrec.record("bars", tmp_path / "m.mp4", frames=5, size=SIZE, fps=FPS, process=apply)
    got = decode_planes(tmp_path / "m.mp4")
    assert len(got) == 5
    for g, e in zip(got, expected, strict=True):
        assert psnr(np.concatenate([p.ravel() for p in g]), np.concatenate([p.ravel() for p in e])) > 35


def test_cupy_invert(tmp_path):
    cupy = require("cupy", "pip install cupy-cuda12x")
    kinds = []

    def invert(frame):
        kinds.append(type(frame))
        return cupy.concatenate([255 - frame[..., :3], frame[..., 3:]], axis=2)

    record(tmp_path / "c.mkv", Process(invert, array="cupy"))
    assert kinds == [cupy.ndarray] * 6
    assert_planes_equal(tmp_path / "c.mkv", converted(inverted(bars_rgba(6, SIZE))))


def test_overlay_from_cuda_tensors(tmp_path, monkeypatch):
    torch = cuda_torch()
    monkeypatch.setattr(CudaMemory, "download", no_host_copy)

    def fn(frame):
        frame.zero_()
        frame[..., 3] = 255
        labels = torch.zeros(frame.shape[:2], dtype=torch.uint8, device=frame.device)
        labels[100:, :50] = 1
        return Overlay(Boxes(torch.tensor([[10, 8, 30, 20]], device=frame.device), colour=(1, 1, 1), width=2),
                       Mask(labels, palette=[(0, 0, 1)]))  # fmt: skip

    record(tmp_path / "o.mkv", fn, n=2)
    want = np.zeros((144, 256, 4), np.uint8)
    want[..., 3] = 255
    want[100:, :50, 2] = 255
    want[7:9, 9:31] = want[19:21, 9:31] = want[9:19, 9:11] = want[9:19, 29:31] = 255
    assert_planes_equal(tmp_path / "o.mkv", converted([want, want]))


def test_host_round_trip_on_the_cuda_path_is_said_and_exact(tmp_path, caplog):
    cuda_torch()

    def invert(frame):
        assert isinstance(frame, np.ndarray)
        frame[..., :3] = 255 - frame[..., :3]

    with caplog.at_level(logging.INFO, logger="glrec"):
        record(tmp_path / "h.mkv", Process(invert, memory="host"))
    assert any("copied from and back to CUDA memory" in r.getMessage() for r in caplog.records)
    assert_planes_equal(tmp_path / "h.mkv", converted(inverted(bars_rgba(6, SIZE))))


def test_raising_on_the_cuda_path_keeps_the_frames_before(tmp_path):
    cuda_torch()
    calls = []

    def fn(frame):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("CUDA model failed")

    with pytest.raises(RuntimeError, match="CUDA model failed"):
        record(tmp_path / "r.mkv", fn, n=8)
    assert_planes_equal(tmp_path / "r.mkv", converted(bars_rgba(3, SIZE)))


def test_a_host_tensor_on_the_cuda_path_is_refused(tmp_path):
    cuda_torch()
    with pytest.raises(ProcessOutputError, match="device cpu.*on CUDA device 0"):
        record(tmp_path / "d.mkv", lambda frame: frame.cpu())


def _nvidia_opencl():
    cl = require("pyopencl", "pip install glrec[opencl]")
    try:
        names = [p.name for p in cl.get_platforms()]
    except cl.Error:
        names = []
    if not any("NVIDIA" in n for n in names):
        pytest.skip(
            "needs the NVIDIA OpenCL platform: mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > "
            f"/tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd (platforms here: {names})"
        )
    return cl


def test_opencl_kernel_through_cuda_external_memory(tmp_path, caplog):
    cuda_torch()  # the GPU tier's CUDA build; the recorder itself needs only cuda-python
    _nvidia_opencl()
    kernel = OpenCLKernel.from_file(FILTERS, "sobel")
    with caplog.at_level(logging.INFO, logger="glrec"):
        record(tmp_path / "ext.mkv", kernel)
        record(tmp_path / "copy.mkv", Process(kernel, memory="host"))
    said = [r.getMessage() for r in caplog.records if "OpenCL kernel sobel" in r.getMessage()]
    assert len(said) == 2, said
    assert "through CUDA external memory" in said[0], said
    assert "copying each frame through host memory (Process(memory='host') asked for it)" in said[1], said
    expected = converted([sobel(f) for f in bars_rgba(6, SIZE)])
    assert_planes_equal(tmp_path / "ext.mkv", expected)
    assert_planes_equal(tmp_path / "copy.mkv", expected)


def _no_growth(first, after, what):
    assert sum(after.values()) == sum(first.values()), (
        f"{sum(first.values())} descriptors after the warm-up, {sum(after.values())} after {what}; "
        f"new: {fd_growth(first, after)}; gone: {fd_growth(after, first)}"
    )


def test_opencl_recordings_in_one_process_cost_the_descriptors_of_one(tmp_path):
    # NVIDIA's OpenCL opens device files per context; glrec shares one per device, so only the first recording
    # (which makes it) may open any. Each import of the CUDA memory has its own fd, closed by glrec.
    cuda_torch()
    _nvidia_opencl()
    kernel = OpenCLKernel.from_file(FILTERS, "invert")
    record(tmp_path / "0.mkv", kernel, n=2)  # makes the shared context
    record(tmp_path / "1.mkv", Process(kernel, memory="host"), n=2)  # and the host path's first use
    first, counts, contexts = open_fds(), cl_counts(), [e.context for e in clcontext.entries()]
    for i in range(2, 6):  # external memory and the host copy in turn, on the one shared context
        record(tmp_path / f"{i}.mkv", Process(kernel, memory="host") if i % 2 else kernel, n=3)
    _no_growth(first, open_fds(), "four more (external memory, host copy, in turn)")
    assert [e.context for e in clcontext.entries()] == contexts, "a recording made an OpenCL context of its own"
    assert cl_counts() == counts, f"OpenCL objects left alive (context, queue, [programs]): {counts} -> {cl_counts()}"
    assert_planes_equal(tmp_path / "4.mkv", converted(inverted(bars_rgba(3, SIZE))))  # external memory


def test_cuda_path_recordings_leave_no_descriptors_behind(tmp_path):
    # Every recording exports its VMM memory as an fd that GL imports and owns: none may stay open in glrec.
    cuda_torch()

    def invert(frame):
        frame[..., :3] = 255 - frame[..., :3]

    record(tmp_path / "0.mkv", invert, n=2)
    first = open_fds()
    for i in range(1, 5):
        record(tmp_path / f"{i}.mkv", invert, n=3)
    _no_growth(first, open_fds(), "four more with a torch stage")
    assert_planes_equal(tmp_path / "4.mkv", converted(inverted(bars_rgba(3, SIZE))))
