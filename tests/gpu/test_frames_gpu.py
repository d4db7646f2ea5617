"""CUDA frames in (GPU tier): PyTorch and CuPy arrays recorded without leaving the GPU.

Each recording of CUDA frames is compared with the recording of their host copies through the same
recorder settings: the decoded videos must be identical, frame for frame. Run with ``-m gpu`` on a
machine with an NVIDIA GPU, cuda-python and PyTorch (CuPy for the CuPy cases).
"""

from __future__ import annotations

import logging

import av
import numpy as np
import pytest

import glrec
from glrec.errors import ConfigError

pytestmark = pytest.mark.gpu
LOSSLESS = {"qp": 0, "pix_fmt": "yuv444p"}
HOST_COPY_LOG = "CUDA frames are copied to host memory"


def decode(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray() for f in c.decode(video=0)]


def pictures(n: int = 5, size=(96, 64)) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    w, h = size
    out = []
    for i in range(n):
        a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        a[:8, :8] = (255, 0, 0)
        a[:, :, 2] = (a[:, :, 2] // 2 + 20 * i).astype(np.uint8)
        out.append(a)
    return out


def assert_same_video(tmp_path, device_frames, host_frames, caplog, **options) -> None:
    caplog.set_level(logging.INFO, logger="glrec")
    suffix = ".mkv" if options.get("codec") == "mjpeg" else ".mp4"
    on_gpu = glrec.write_video(tmp_path / f"cuda{suffix}", device_frames, fps=10, **options)
    assert HOST_COPY_LOG not in caplog.text, "CUDA frames went through host memory"
    assert "CUDA" in on_gpu.encoder or on_gpu.encoder == "nvjpeg", on_gpu.encoder
    on_host = glrec.write_video(tmp_path / f"host{suffix}", host_frames, fps=10, **options)
    got, want = decode(on_gpu.path), decode(on_host.path)
    assert len(got) == len(want) == len(host_frames)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("handoff", ["auto", "register"])  # auto: shared where GL imports CUDA memory
def test_torch_uint8_tensors_equal_their_host_copy(tmp_path, caplog, handoff):
    torch = pytest.importorskip("torch")
    host = pictures()
    device = [torch.from_numpy(a).cuda() for a in host]
    assert_same_video(tmp_path, device, host, caplog, handoff=handoff, **LOSSLESS)
    expected = "registered GL buffer" if handoff == "register" else "no map"
    assert "CUDA frames in through" in caplog.text and expected in caplog.text


def test_torch_float_rgba_and_strided_views(tmp_path, caplog):
    torch = pytest.importorskip("torch")
    host = [a.astype(np.float32) / 255 for a in pictures()]
    rgba = [torch.cat([torch.from_numpy(a), torch.ones(*a.shape[:2], 1)], 2).cuda() for a in host]
    views = [
        rgba[0],
        rgba[1][:, :, :3],  # a channel slice
        torch.from_numpy(np.ascontiguousarray(host[2][::-1])).cuda().flip(0),  # flip() copies; same picture
        torch.from_numpy(np.ascontiguousarray(host[3].transpose(1, 0, 2))).cuda().permute(1, 0, 2),  # transposed
        rgba[4].half(),
    ]
    expected = [h.astype(np.float16) if i == 4 else h for i, h in enumerate(host)]
    assert_same_video(tmp_path, views, expected, caplog, **LOSSLESS)


def test_cupy_arrays_with_negative_strides(tmp_path, caplog):
    cp = pytest.importorskip("cupy")
    host = pictures()
    device = [cp.asarray(np.ascontiguousarray(a[::-1, ::-1]))[::-1, ::-1] for a in host]  # negative strides
    assert_same_video(tmp_path, device, host, caplog, **LOSSLESS)


def test_dlpack_only_producer(tmp_path, caplog):
    torch = pytest.importorskip("torch")

    class DLPackOnly:  # a real PyTorch CUDA tensor, offered through DLPack alone (as JAX offers its arrays)
        def __init__(self, tensor):
            self._t = tensor

        def __dlpack__(self, **kwargs):
            return self._t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._t.__dlpack_device__()

    host = pictures(3)
    assert_same_video(tmp_path, [DLPackOnly(torch.from_numpy(a).cuda()) for a in host], host, caplog, **LOSSLESS)


def test_nvjpeg_from_cuda_tensors(tmp_path, caplog):
    torch = pytest.importorskip("torch")
    from glrec.encoders.nvjpeg import row as available

    if available.nvjpeg_problem() is not None:
        pytest.skip(f"needs nvImageCodec: {available.nvjpeg_problem()}")
    host = pictures()
    assert_same_video(tmp_path, [torch.from_numpy(a).cuda() for a in host], host, caplog, codec="mjpeg",
                      encoder="nvjpeg")  # fmt: skip


def test_producer_stream_is_waited_for(tmp_path):
    torch = pytest.importorskip("torch")
    side = torch.cuda.Stream()
    frames = []
    with glrec.Recorder(tmp_path / "stream.mp4", fps=10, **LOSSLESS) as rec, torch.cuda.stream(side):
        for value in (50, 200):
            x = torch.zeros((64, 96, 3), dtype=torch.uint8, device="cuda")
            torch.cuda._sleep(200_000_000)  # keeps the side stream busy long after write() is called
            x.fill_(value)
            rec.write(x)  # no synchronize: glrec must wait for the side stream itself
            frames.append(value)
    decoded = decode(tmp_path / "stream.mp4")
    assert len(decoded) == 2
    for got, value in zip(decoded, frames, strict=True):
        y = got[0].astype(int)  # yuv444p planes; grey values: Y = 16 + 219 * v / 255
        assert abs(y.mean() - (16 + 219 * value / 255)) < 2


def test_cuda_frames_with_the_host_handoff_are_copied_once(tmp_path, caplog):
    torch = pytest.importorskip("torch")
    caplog.set_level(logging.INFO, logger="glrec")
    host = pictures(3)
    on_host_path = glrec.write_video(tmp_path / "a.mp4", [torch.from_numpy(a).cuda() for a in host], fps=10,
                                     handoff="host", encoder="cpu", **LOSSLESS)  # fmt: skip
    assert HOST_COPY_LOG in caplog.text
    reference = glrec.write_video(tmp_path / "b.mp4", host, fps=10, handoff="host", encoder="cpu", **LOSSLESS)
    for a, b in zip(decode(on_host_path.path), decode(reference.path), strict=True):
        assert np.array_equal(a, b)


def test_bad_cuda_frames(tmp_path):
    torch = pytest.importorskip("torch")
    good = torch.zeros((64, 96, 3), device="cuda")
    path = tmp_path / "bad.mp4"
    with glrec.Recorder(path, fps=10) as rec:
        rec.write(good)
        with pytest.raises(ConfigError, match=r"detach\(\)"):
            rec.write(torch.zeros((64, 96, 3), device="cuda", requires_grad=True))
        with pytest.raises(ConfigError, match="dtype is float64"):
            rec.write(torch.zeros((64, 96, 3), device="cuda", dtype=torch.float64))
        nan = good.clone()
        nan[3, 3, 1] = float("nan")
        with pytest.raises(ConfigError, match="NaN"):
            rec.write(nan)
        with pytest.raises(ConfigError, match="above 1"):
            rec.write(good + 2)
        with pytest.raises(ConfigError, match="this recording is 96x64"):
            rec.write(torch.zeros((32, 32, 3), device="cuda"))
        rec.write(good)
    assert rec.close().frames == 2
    assert len(decode(path)) == 2


def test_cuda_array_from_another_device_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices (e.g. the nvidia-h200-x2 machine)")
    with glrec.Recorder(tmp_path / "dev.mp4", fps=10, cuda_device=0) as rec:
        rec.write(torch.zeros((64, 96, 3), dtype=torch.uint8, device="cuda:0"))
        with pytest.raises(ConfigError, match="on device 1; this recorder records on CUDA device 0"):
            rec.write(torch.zeros((64, 96, 3), dtype=torch.uint8, device="cuda:1"))
    # Without cuda_device, a sizeless recorder takes the first frame's device.
    with glrec.Recorder(tmp_path / "dev1.mp4", fps=10) as rec:
        rec.write(torch.zeros((64, 96, 3), dtype=torch.uint8, device="cuda:1"))
        assert rec.plan.device is not None and rec.plan.device.ordinal == 1


def test_gl_jpeg_takes_cuda_tensors_on_the_gpu_and_auto_picks_it(tmp_path, caplog):
    """auto on NVIDIA GL: MJPEG through the GL JPEG encoder; CUDA frames go into GL device to device."""
    torch = pytest.importorskip("torch")
    caplog.set_level(logging.INFO, logger="glrec")
    host = pictures()
    on_gpu = glrec.write_video(tmp_path / "cuda.mkv", [torch.from_numpy(a).cuda() for a in host], fps=10, codec="mjpeg")
    assert on_gpu.encoder.startswith("gl"), on_gpu.encoder  # auto: the GL JPEG encoder on hardware GL
    assert HOST_COPY_LOG not in caplog.text, "CUDA frames went through host memory"
    on_host = glrec.write_video(tmp_path / "host.mkv", host, fps=10, codec="mjpeg", encoder="gl")
    got, want = decode(on_gpu.path), decode(on_host.path)
    assert len(got) == len(want) == len(host)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("pix_fmt", ["rgb24", "rgba"])
def test_torch_tensors_and_rendered_frames_to_png_exactly(tmp_path, pix_fmt):
    """PNG sequences from CUDA memory (GL pack -> CUDA handoff -> one copy to the host per frame): CUDA tensors
    come back exactly, and a rendered scene through each CUDA handoff equals its host path's, byte for byte."""
    torch = pytest.importorskip("torch")
    host = [np.dstack([a, np.full(a.shape[:2], 17 * i, np.uint8)]) for i, a in enumerate(pictures())]  # RGBA
    device = [torch.from_numpy(a).cuda() for a in host]
    glrec.write_video(tmp_path / "t_%02d.png", device, fps=10, pix_fmt=pix_fmt)
    channels = 4 if pix_fmt == "rgba" else 3
    for i, a in enumerate(host):
        with av.open(str(tmp_path / f"t_{i:02d}.png")) as c:
            (got,) = [f.to_ndarray(format=pix_fmt) for f in c.decode(video=0)]
        assert np.array_equal(got, a[..., :channels]), i
    files = {}
    for handoff in ("host", "register", "shared"):
        r = glrec.record("cube", tmp_path / f"{handoff}_%02d.png", size=(96, 64), fps=30, frames=6, handoff=handoff,
                         pix_fmt=pix_fmt)  # fmt: skip
        assert r.encoder.startswith("png") and r.frames == 6
        files[handoff] = [(tmp_path / f"{handoff}_{i:02d}.png").read_bytes() for i in range(6)]
    assert files["register"] == files["host"] and files["shared"] == files["host"]
