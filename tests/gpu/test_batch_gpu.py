"""glrec.BatchRecorder from CUDA batches (GPU tier): the pixels never go through host memory on the GPU routes.

Each CUDA recording is compared with the recording of the same batches from host memory (the CPU-tier
path, proven in tests/batch/): the GL JPEG route must give the same bytes, the grid the same pictures.
"Never through host memory" is checked two ways: glrec's count of raw frames copied to the host
(``glrec.batch.routes.HOST_COPIES``) stays where it was, and no CUDA call that moves memory between
host and device (``cuMemcpyDtoH*``, ``cuMemcpyHtoD*``) is made while the GPU routes record.
Run on the GPU machine: ``PYTHONPATH=. python -m pytest tests/gpu/test_batch_gpu.py -m gpu -q``.
"""

from __future__ import annotations

import av
import numpy as np
import pytest

import glrec
from glrec.batch import routes
from glrec.errors import ConfigError

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="needs PyTorch with CUDA (pip install torch)")
N, H, W = 8, 64, 96


def _pillow_error(rgb: np.ndarray, quality: int) -> float:
    """Mean absolute error of libjpeg's (Pillow's) 4:2:0 JPEG of ``rgb`` at ``quality``: the reference."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", quality=quality, subsampling=2)
    back = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    return float(np.abs(back.astype(int) - rgb).mean())


def host_batches(steps: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = []
    for s in range(steps):
        b = rng.integers(0, 256, (N, H, W, 3), dtype=np.uint8) // 3 + 50
        for env in range(N):
            b[env, 4 * env : 4 * env + 4] = 250
            b[env, :, :, 1] = (b[env, :, :, 1] // 2 + 25 * s % 200).astype(np.uint8)
        out.append(b)
    return out


def decode(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def packets(path) -> list[bytes]:
    with av.open(str(path)) as c:
        return [bytes(p) for p in c.demux(video=0) if p.size]


@pytest.fixture
def host_calls(monkeypatch):
    """The names of the CUDA driver calls glrec makes that move memory between host and device."""
    import glrec.cuda.driver as driver

    seen: list[str] = []
    real = driver.call

    def call(name, *args):
        if "DtoH" in name or "HtoD" in name:
            seen.append(name)
        return real(name, *args)

    monkeypatch.setattr(driver, "call", call)
    return seen


def record(path, batches, **kw) -> glrec.BatchResult:
    with glrec.BatchRecorder(str(path), **kw) as rec:
        for b in batches:
            rec.write(b)
    return rec.close()


def test_gl_jpeg_from_a_torch_cuda_batch_equals_the_host_path_without_a_host_copy(tmp_path, host_calls) -> None:
    batches = host_batches()
    record(tmp_path / "h{env}.mkv", batches, encoder="gl", codec="mjpeg")
    before = routes.HOST_COPIES[0]
    cuda = [torch.from_numpy(b).cuda() for b in batches]
    host_calls.clear()
    result = record(tmp_path / "c{env}.mkv", cuda, encoder="gl", codec="mjpeg")
    assert routes.HOST_COPIES[0] == before and host_calls == []
    assert result.encoder == "gl (GL-compute JPEG, batch)" and len(result.videos) == N
    for env in range(N):
        assert packets(tmp_path / f"c{env}.mkv") == packets(tmp_path / f"h{env}.mkv")


def test_gl_jpeg_turns_over_one_reused_tensor_keep_every_step_and_episode(tmp_path) -> None:
    """CUDA steps go to GL in turns of K (staged copies, slots reused): one tensor overwritten in place each
    step still gives each step's own JPEGs, and an episode's end still falls after its own frames."""
    from glrec.batch.gl_route import turn_steps

    steps = 4 * turn_steps(N * H * W * 3) + 3  # several turns through every slot, and a part turn at the end
    batches = host_batches(steps)
    with glrec.BatchRecorder(str(tmp_path / "h{env}-{episode}.mkv"), encoder="gl", codec="mjpeg") as rec:
        for s, b in enumerate(batches):
            rec.write(b)
            if s == 10:
                rec.end_episode(5)
    frames = torch.empty((N, H, W, 3), dtype=torch.uint8, device="cuda")
    with glrec.BatchRecorder(str(tmp_path / "c{env}-{episode}.mkv"), encoder="gl", codec="mjpeg") as rec:
        for s, b in enumerate(batches):
            frames.copy_(torch.from_numpy(b).cuda(), non_blocking=True)  # the same memory every step
            rec.write(frames)
            if s == 10:
                rec.end_episode(5)
    for name in [f"{env}-0.mkv" for env in range(N)] + ["5-1.mkv"]:
        assert packets(tmp_path / f"c{name}") == packets(tmp_path / f"h{name}"), name
    assert len(packets(tmp_path / "c5-0.mkv")) == 11 and len(packets(tmp_path / "c5-1.mkv")) == steps - 11


def test_a_strided_cuda_batch_is_copied_env_by_env(tmp_path) -> None:
    batches = host_batches(2)
    big = [torch.from_numpy(np.pad(b, ((0, 0), (0, 0), (0, 8), (0, 0)))).cuda()[:, :, :W] for b in batches]
    assert not big[0].is_contiguous()
    record(tmp_path / "s{env}.mkv", big, encoder="gl", codec="mjpeg")
    record(tmp_path / "h{env}.mkv", batches, encoder="gl", codec="mjpeg")
    assert packets(tmp_path / "s3.mkv") == packets(tmp_path / "h3.mkv")


def test_nvjpeg_takes_all_envs_in_one_call_from_cuda(tmp_path, host_calls) -> None:
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    batches = host_batches()
    before = routes.HOST_COPIES[0]
    host_calls.clear()
    result = record(tmp_path / "n{env}.mkv", [torch.from_numpy(b).cuda() for b in batches], encoder="nvjpeg",
                    codec="mjpeg", quality=95)  # fmt: skip
    assert routes.HOST_COPIES[0] == before and host_calls == []
    assert result.encoder == "nvjpeg (batch)"
    for env in range(N):
        frames = decode(tmp_path / f"n{env}.mkv")
        assert len(frames) == len(batches)
        for frame, b in zip(frames, batches, strict=True):
            err = np.abs(frame.astype(int) - b[env]).mean()
            # JPEG of noise at 4:2:0 loses its colour detail: held to libjpeg's (Pillow's) error at quality 95
            # (on the H200, 2026-12-02: 12.3 levels for nvJPEG, where a fixed bound of 6 had been guessed)
            assert err <= _pillow_error(b[env], 95) + 1.5, (env, err)
            assert all(np.abs(frame.astype(int) - b[e]).mean() > err + 10 for e in range(N) if e != env)


def test_the_grid_from_cuda_matches_the_grid_from_host(tmp_path, host_calls) -> None:
    batches = host_batches()
    lossless = {"qp": 0, "pix_fmt": "yuv444p", "encoder": "cpu", "labels": True, "layout": "grid"}
    record(tmp_path / "host.mkv", batches, **lossless)
    record(tmp_path / "cuda.mkv", [torch.from_numpy(b).cuda() for b in batches], **lossless)
    host, cuda = decode(tmp_path / "host.mkv"), decode(tmp_path / "cuda.mkv")
    assert len(host) == len(cuda) == len(batches)
    for a, b in zip(host, cuda, strict=True):
        assert np.abs(a.astype(int) - b).max() <= 2  # tiles and labels: the GPU pass draws numpy's pixels


def test_cpu_encoders_from_cuda_copy_each_step_to_the_host_once(tmp_path) -> None:
    batches = host_batches()
    before = routes.HOST_COPIES[0]
    record(tmp_path / "c{env}.mkv", [torch.from_numpy(b).cuda() for b in batches], qp=0, pix_fmt="yuv444p")
    assert routes.HOST_COPIES[0] - before == N * len(batches)
    record(tmp_path / "h{env}.mkv", batches, qp=0, pix_fmt="yuv444p")
    for env in range(N):
        assert all(np.array_equal(a, b) for a, b in
                   zip(decode(tmp_path / f"c{env}.mkv"), decode(tmp_path / f"h{env}.mkv"), strict=True))  # fmt: skip


def test_a_host_batch_after_cuda_ones_is_refused_and_nothing_is_lost(tmp_path) -> None:
    batches = host_batches()
    with glrec.BatchRecorder(str(tmp_path / "x{env}.mkv"), encoder="gl", codec="mjpeg") as rec:
        rec.write(torch.from_numpy(batches[0]).cuda())
        with pytest.raises(ConfigError, match="Step 1 is a host batch; this recording takes cuda batches"):
            rec.write(batches[1])
        rec.write(torch.from_numpy(batches[2]).cuda())
    assert all(len(decode(tmp_path / f"x{env}.mkv")) == 2 for env in range(N))


def test_cupy_and_jax_batches_through_dlpack(tmp_path) -> None:
    batches = host_batches(2)
    made = []
    try:
        import cupy

        made.append(("cupy", [cupy.asarray(b) for b in batches]))
    except ImportError:
        pass
    try:
        import jax

        if any(d.platform == "gpu" for d in jax.devices()):
            made.append(("jax", [jax.device_put(b, jax.devices("gpu")[0]) for b in batches]))
    except ImportError:
        pass
    if not made:
        pytest.skip("needs CuPy or JAX with CUDA (pip install cupy-cuda12x / jax[cuda12])")
    record(tmp_path / "h{env}.mkv", batches, encoder="gl", codec="mjpeg")
    for name, arrays in made:
        record(tmp_path / (name + "{env}.mkv"), arrays, encoder="gl", codec="mjpeg")
        assert packets(tmp_path / f"{name}5.mkv") == packets(tmp_path / "h5.mkv"), name
