"""glrec.BatchRecorder on host batches (CPU encoders, the GL JPEG route on llvmpipe): every file decoded.

Each env's frames carry the env's index and the step in their pixels, so a decoded
frame is matched to the env and step it came from by PSNR against the exact
frames written (libx264 at qp 0 in 4:4:4 is a near-lossless reference).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from crash_helpers import child_env
from media import ffprobe_count

import glrec
from glrec.errors import ConfigError, EncoderError, GlrecError, RecorderClosedError

LOSSLESS = {"qp": 0, "pix_fmt": "yuv444p"}
N, H, W = 4, 48, 64


def step_batch(step: int, n: int = N, size: tuple[int, int] = (W, H), channels: int = 3) -> np.ndarray:
    """Env i at step s: a picture no other (env, step) has (noise seeded by both, a bar at the env's row)."""
    w, h = size
    out = np.empty((n, h, w, channels), np.uint8)
    for env in range(n):
        rng = np.random.default_rng(1000 * env + step)
        out[env] = rng.integers(0, 256, (h, w, channels), dtype=np.uint8) // 4 + 40
        out[env, :, :, 0] = (out[env, :, :, 0] // 2 + 60 * env % 256).astype(np.uint8)
        out[env, 4 * env : 4 * env + 4, :, :3] = 250
    return out


def decode(path: Path | str) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def packets(path: Path | str) -> list[av.Packet]:
    with av.open(str(path)) as c:
        return [p for p in c.demux(video=0) if p.size]


def assert_env_frames(path: Path, env: int, steps: list[int], *, min_psnr: float = 40.0) -> None:
    """``path`` holds exactly env ``env``'s frames of ``steps``, in order, and not another env's."""
    frames = decode(path)
    assert len(frames) == len(steps) == ffprobe_count(path), (path, len(frames), len(steps))
    for frame, step in zip(frames, steps, strict=True):
        batch = step_batch(step)
        own = psnr(frame, batch[env])
        assert own >= min_psnr, (path, step, own)
        assert all(psnr(frame, batch[e]) < own - 10 for e in range(N) if e != env), (path, step)


def record(tmp_path: Path, steps: int = 6, pattern: str = "env{env}.mp4", **kw) -> glrec.BatchResult:
    with glrec.BatchRecorder(str(tmp_path / pattern), **{**LOSSLESS, **kw}) as rec:
        for s in range(steps):
            assert rec.write(step_batch(s)) == s
    return rec.close()


def test_each_env_in_its_own_file_with_its_own_pixels(tmp_path) -> None:
    result = record(tmp_path, steps=6)
    assert [v.env for v in result.videos] == list(range(N))
    assert result.frames == N * 6 and result.steps == 6 and result.dropped == (0,) * N
    for env in range(N):
        assert_env_frames(tmp_path / f"env{env}.mp4", env, list(range(6)))
    assert "4 envs x 6 steps (files): 4 files, 24 frames" in result.summary()


def test_a_tuple_of_frames_records_as_the_stacked_batch(tmp_path) -> None:
    with glrec.BatchRecorder(str(tmp_path / "t{env}.mp4"), threads=1, **LOSSLESS) as rec:
        for s in range(4):
            rec.write(tuple(step_batch(s)[:, :, ::-1]))  # views with negative strides, as envs render them
    for env in range(N):
        frames = decode(tmp_path / f"t{env}.mp4")
        assert all(psnr(f, step_batch(s)[env, :, ::-1]) > 40 for s, f in enumerate(frames)) and len(frames) == 4


def test_rgba_batches_drop_alpha_and_odd_sizes_are_padded(tmp_path) -> None:
    with glrec.BatchRecorder(str(tmp_path / "a{env}.mkv"), **LOSSLESS) as rec:
        for s in range(3):
            rec.write(step_batch(s, n=2, size=(33, 21), channels=4))
    frames = decode(tmp_path / "a1.mkv")
    assert frames[0].shape == (21, 33, 3)  # 4:4:4 takes odd sizes as they are
    assert psnr(frames[2], step_batch(2, n=2, size=(33, 21), channels=4)[1, :, :, :3]) > 40
    with glrec.BatchRecorder(str(tmp_path / "o{env}.mkv"), qp=0) as rec:  # 4:2:0: pad is the default
        rec.write(np.full((2, 21, 33, 3), 200, np.uint8))
    frame = decode(tmp_path / "o0.mkv")[0]
    assert frame.shape == (22, 34, 3) and abs(int(frame[21, 33, 0]) - 200) <= 2  # the edge repeated


def test_a_subset_by_index_or_callable_and_active_masks(tmp_path) -> None:
    result = record(tmp_path, steps=3, envs=[1, 3])
    assert sorted(os.listdir(tmp_path)) == ["env1.mp4", "env3.mp4"]
    assert_env_frames(tmp_path / "env3.mp4", 3, [0, 1, 2])
    assert result.frames == 6
    with glrec.BatchRecorder(str(tmp_path / "m{env}.mp4"), envs=lambda i: i % 2 == 0, **LOSSLESS) as rec:
        rec.write(step_batch(0))
        rec.write(step_batch(1), active=[False, False, True, True])  # env 3 is not selected: only env 2
        rec.write(step_batch(2), active=[0])
    assert sorted(p.name for p in tmp_path.glob("m*.mp4")) == ["m0.mp4", "m2.mp4"]
    assert_env_frames(tmp_path / "m0.mp4", 0, [0, 2])
    assert_env_frames(tmp_path / "m2.mp4", 2, [0, 1])


def test_a_file_per_episode_starts_again_at_time_zero(tmp_path) -> None:
    with glrec.BatchRecorder(str(tmp_path / "e{env}-ep{episode}.mp4"), **LOSSLESS) as rec:
        for s in range(7):
            rec.write(step_batch(s))
            if s == 2:
                rec.end_episode(1)
    assert_env_frames(tmp_path / "e1-ep0.mp4", 1, [0, 1, 2])
    assert_env_frames(tmp_path / "e1-ep1.mp4", 1, [3, 4, 5, 6])
    assert_env_frames(tmp_path / "e0-ep0.mp4", 0, list(range(7)))
    assert packets(tmp_path / "e1-ep1.mp4")[0].pts == 0


def test_segments_cut_each_env_file_every_so_many_seconds_and_start_again_per_episode(tmp_path) -> None:
    """segment_seconds as FFmpeg's segment muxer: {part} numbers an episode's files, each a normal file from a
    keyframe at t = 0, every frame in exactly one of them."""
    with glrec.BatchRecorder(str(tmp_path / "s{env}-{episode}-{part}.mp4"), segment_seconds=0.1, fps=30,
                             **LOSSLESS) as rec:  # fmt: skip
        for s in range(8):
            rec.write(step_batch(s))
            if s == 4:
                rec.end_episode(1)
    result = rec.close()
    assert_env_frames(tmp_path / "s0-0-0.mp4", 0, [0, 1, 2])
    assert_env_frames(tmp_path / "s0-0-1.mp4", 0, [3, 4, 5])
    assert_env_frames(tmp_path / "s0-0-2.mp4", 0, [6, 7])
    assert_env_frames(tmp_path / "s1-0-1.mp4", 1, [3, 4])
    assert_env_frames(tmp_path / "s1-1-0.mp4", 1, [5, 6, 7])
    for path in tmp_path.glob("s*.mp4"):
        first = packets(path)[0]
        assert first.is_keyframe and first.pts == 0, path.name
    assert sum(v.frames for v in result.videos) == 8 * N
    assert {(v.env, v.episode, v.part) for v in result.videos if v.env == 1} == {(1, 0, 0), (1, 0, 1), (1, 1, 0)}
    for bad, words in [({"segment_seconds": 1}, r"needs \{part\} in the path pattern"),
                       ({"segment_seconds": 1, "keep": bool}, "clips are bounded by their ring"),
                       ({"segment_seconds": -1}, "must be above 0")]:  # fmt: skip
        with pytest.raises(ConfigError, match=words):
            glrec.BatchRecorder(str(tmp_path / "x{env}.mp4"), **bad)


def test_the_grid_tiles_every_env_with_labels(tmp_path) -> None:
    path = tmp_path / "grid.mp4"
    with glrec.BatchRecorder(str(path), layout="grid", labels=True, **LOSSLESS) as rec:
        for s in range(3):
            rec.write(step_batch(s, n=5), labels=[1.5 * e for e in range(5)])
    result = rec.close()
    frames = decode(path)
    assert len(frames) == 3 and frames[0].shape == (2 * H, 3 * W, 3)  # 5 envs: 3 columns, 2 rows
    for s, frame in enumerate(frames):
        batch = step_batch(s, n=5)
        for env in range(5):
            r, c = divmod(env, 3)
            tile = frame[r * H : (r + 1) * H, c * W : (c + 1) * W]
            assert psnr(tile[8:], batch[env][8:]) > 40  # below the label box: the env's own pixels
            text = f"#{env} {1.5 * env:.1f}"
            assert tile[0, : 4 * len(text) + 1].max() < 30 and tile[:7, 0].max() < 30  # the label's black box
            assert tile[1, 1].min() > 200 and tile[1, 2].max() < 30  # the '#' glyph's top row: white, black
        assert frame[H:, 2 * W :].max() < 30  # no env there: black
    assert result.videos[0].env is None and result.layout == "grid"


def test_gl_jpeg_route_gives_the_bytes_of_the_one_frame_stage(tmp_path, gl) -> None:
    from glrec.encoders.gl_jpeg.stage import GlJpegStage

    with glrec.BatchRecorder(str(tmp_path / "j{env}.mkv"), encoder="gl", codec="mjpeg", quality=95) as rec:
        for s in range(5):
            rec.write(step_batch(s))
    result = rec.close()
    assert result.encoder == "gl (GL-compute JPEG, batch)"
    stage = GlJpegStage(gl.mgl, (W, H), quality=95)  # one frame a call, from a bottom-up texture as GL renders
    try:
        for env in range(N):
            assert_env_frames(tmp_path / f"j{env}.mkv", env, list(range(5)), min_psnr=24)  # 4:2:0 noise
            got = packets(tmp_path / f"j{env}.mkv")
            assert all(p.is_keyframe for p in got)
            for s, packet in enumerate(got):
                texture = gl.mgl.texture((W, H), 3, step_batch(s)[env][::-1].tobytes(), alignment=1)
                assert bytes(packet) == stage.encode_now(texture), (env, s)
                texture.release()
    finally:
        stage.release()


def test_episodes_and_clips_split_where_written_on_the_gl_route(tmp_path, gl) -> None:
    """The GL JPEG route hands a step's JPEGs on steps later; an episode's end still falls after its own frames."""
    with glrec.BatchRecorder(str(tmp_path / "g{env}-{episode}.mkv"), encoder="gl", codec="mjpeg",
                             quality=95) as rec:  # fmt: skip
        for s in range(9):
            rec.write(step_batch(s))
            if s in (2, 3):
                rec.end_episode(1 if s == 2 else 3)
    assert_env_frames(tmp_path / "g1-0.mkv", 1, [0, 1, 2], min_psnr=24)
    assert_env_frames(tmp_path / "g1-1.mkv", 1, list(range(3, 9)), min_psnr=24)
    assert_env_frames(tmp_path / "g3-0.mkv", 3, [0, 1, 2, 3], min_psnr=24)
    assert_env_frames(tmp_path / "g3-1.mkv", 3, list(range(4, 9)), min_psnr=24)
    with glrec.BatchRecorder(str(tmp_path / "k{env}-{episode}.mkv"), encoder="gl", codec="mjpeg", quality=95,
                             keep=lambda info: info) as rec:  # fmt: skip
        for s in range(8):
            rec.write(step_batch(s))
            if s == 4:
                rec.end_episode(2, True)
    assert sorted(p.name for p in tmp_path.glob("k*.mkv")) == ["k2-0.mkv"]
    assert_env_frames(tmp_path / "k2-0.mkv", 2, list(range(5)), min_psnr=24)


def test_clips_kept_by_outcome_start_on_a_keyframe(tmp_path) -> None:
    kept = []
    with glrec.BatchRecorder(str(tmp_path / "c{env}-{episode}.mp4"), keep=lambda info: info["fail"],
                             **LOSSLESS) as rec:  # fmt: skip
        for s in range(40):
            rec.write(step_batch(s))
            if s in (11, 30):  # env 0: episodes 0..11 (kept), 12..30 (dropped); env 2: 0..30 kept
                rec.end_episode(0, {"fail": s == 11})
            if s == 30:
                rec.end_episode(2, {"fail": True})
        last = rec.save_last(0.2, env=3)  # 6 frames at 30 fps, from the keyframe at or before step 34
        kept.append(last)
    result = rec.close()
    assert sorted(p.name for p in tmp_path.glob("*.mp4")) == sorted(["c0-0.mp4", "c2-0.mp4", last.name])
    assert_env_frames(tmp_path / "c0-0.mp4", 0, list(range(12)))
    assert_env_frames(tmp_path / "c2-0.mp4", 2, list(range(31)))
    for name in ("c0-0.mp4", "c2-0.mp4", last.name):
        first = packets(tmp_path / name)[0]
        assert first.is_keyframe and first.pts == 0
    frames = decode(last)
    assert 6 <= len(frames) <= 40 and psnr(frames[-1], step_batch(39)[3]) > 40  # ends at the event
    assert result.ring_bytes_peak > 0


def test_the_ring_is_bounded_per_env(tmp_path) -> None:
    from glrec.batch.ring import GopRing
    from glrec.frame import Packet

    ring = GopRing(frames=10**6, max_bytes=10_000)
    for i in range(1000):
        ring.add([Packet(bytes(300), i, i, i % 10 == 0)])
    assert ring.bytes <= 10_000 and ring.peak_bytes <= 10_000 + 10 * 300  # the bound plus one GOP
    assert next(ring.gops())[0].keyframe
    result = record(tmp_path, steps=60, pattern="r{env}-{episode}.mp4", ring_seconds=1.0)
    assert result.videos == () and result.ring_bytes_peak > 0  # a ring without keep writes nothing


class _Gate:
    """A CPU encoder that waits at its first frame until the test opens the gate: the worker falls behind."""

    def __init__(self, inner, gate) -> None:
        self.inner, self.gate = inner, gate

    def encode(self, frame):
        self.gate.wait(30)
        return self.inner.encode(frame)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("policy", ["drop", "repeat"])
def test_backpressure_counts_what_it_dropped_or_repeated(tmp_path, monkeypatch, policy) -> None:
    import threading

    from glrec.batch import routes

    gate = threading.Event()
    real = routes.CpuRoute.stream_encoder
    monkeypatch.setattr(routes.CpuRoute, "stream_encoder", lambda self: _Gate(real(self), gate))
    with glrec.BatchRecorder(str(tmp_path / "b{env}.mkv"), backpressure=policy, workers=1, queue_steps=1,
                             **LOSSLESS) as rec:  # fmt: skip
        for s in range(12):
            rec.write(step_batch(s, n=2))
        gate.set()
    result = rec.close()
    lost = result.dropped if policy == "drop" else result.repeated
    assert lost[0] > 0 and lost[1] > 0  # one worker's queue of 2 frames: both envs fall behind
    for env in range(2):
        frames = decode(tmp_path / f"b{env}.mkv")
        if policy == "drop":
            assert len(frames) == 12 - lost[env]
            steps = [round(p.pts * p.time_base * 30) for p in packets(tmp_path / f"b{env}.mkv")]
            assert steps[0] == 0 and len(set(steps)) == len(steps) and max(steps) <= 11  # slots kept, gaps left
            for frame, step in zip(frames, sorted(steps), strict=True):
                assert psnr(frame, step_batch(step, n=2)[env]) > 40
        else:
            assert len(frames) == 12  # one frame per step, the previous picture in the slots it could not take
            assert sum(psnr(a, b) == float("inf") for a, b in itertools.pairwise(frames)) >= lost[env]
    assert f"{sum(lost)} {'dropped' if policy == 'drop' else 'repeated'}" in result.summary()


def test_abort_after_stops_with_every_file_finished(tmp_path, monkeypatch) -> None:
    import threading

    from glrec.batch import routes

    gate = threading.Event()
    real = routes.CpuRoute.stream_encoder
    monkeypatch.setattr(routes.CpuRoute, "stream_encoder", lambda self: _Gate(real(self), gate))
    rec = glrec.BatchRecorder(str(tmp_path / "x{env}.mkv"), backpressure="drop", abort_after=3, workers=1,
                              queue_steps=1, **LOSSLESS)  # fmt: skip
    threading.Timer(0.5, gate.set).start()  # the worker takes frames again after the recorder gave up
    with pytest.raises(EncoderError, match=r"fell behind: env \d had 4 frames in a row dropped \(abort_after=3\)"):
        for s in range(50):
            rec.write(step_batch(s, n=2))
    with pytest.raises(RecorderClosedError):
        rec.write(step_batch(0, n=2))
    assert 1 <= len(decode(tmp_path / "x0.mkv")) <= 10


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((N, H, W, 3), np.float32), "dtype is float32"),
        (np.zeros((N + 1, H, W, 3), np.uint8), f"has {N + 1} envs; this recording has {N}"),
        (np.zeros((N, H + 2, W, 3), np.uint8), f"Step 3 is {W}x{H + 2}x3; this recording is {W}x{H}x3"),
        (np.zeros((H, W, 3), np.uint8), "has shape (48, 64, 3)"),
        (np.zeros((N, 3, H, W), np.uint8), "channels-first"),
    ],
)
def test_bad_input_mid_run_is_one_line_and_loses_nothing(tmp_path, bad, message) -> None:
    with glrec.BatchRecorder(str(tmp_path / "v{env}.mp4"), **LOSSLESS) as rec:
        for s in range(3):
            rec.write(step_batch(s))
        with pytest.raises(ConfigError) as info:
            rec.write(bad)
        assert message in str(info.value) and "\n" not in str(info.value)
        rec.write(step_batch(3))  # still open
    for env in range(N):
        assert_env_frames(tmp_path / f"v{env}.mp4", env, [0, 1, 2, 3])


def test_a_host_batch_where_cuda_was_promised_is_refused(tmp_path) -> None:
    rec = glrec.BatchRecorder(str(tmp_path / "g{env}.mp4"), device="cuda")
    with pytest.raises(ConfigError, match=r"host batch; this recording takes cuda batches \(its device=\)"):
        rec.write(step_batch(0))
    assert rec.close().videos == () and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "one.mp4"}, "Per-env files need {env} in the path"),
        ({"path": "g{env}.mp4", "layout": "grid"}, "layout='grid' writes one video"),
        ({"path": "e{env}.mp4", "backpressure": "later"}, "Unknown backpressure 'later'"),
        ({"path": "e{env}.mp4", "handoff": "host"}, "handoff configure the single-stream pipeline"),
        ({"path": "e{env}.mp4", "crff": 3}, "crff"),
        ({"path": "e{env}.mp4", "encoder": "nvenc", "backpressure": "repeat"}, "which per-env NVENC does not keep"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(tmp_path, kwargs, message) -> None:
    path = str(tmp_path / kwargs.pop("path"))
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("(", r"\(")), \
            glrec.BatchRecorder(path, **kwargs) as rec:  # fmt: skip
        rec.write(step_batch(0))
    assert not list(tmp_path.iterdir())


def test_per_env_nvenc_without_cuda_says_so_before_anything_is_written(tmp_path) -> None:
    from glrec.cuda.driver import cuda_problem

    if cuda_problem() is None:
        pytest.skip("CUDA is here: tests/encoders/test_nvenc_batch_contract.py and the GPU tier cover NVENC")
    with pytest.raises(GlrecError, match=r"encoder nvenc cannot run here: NVENC needs CUDA"), \
            glrec.BatchRecorder(str(tmp_path / "e{env}.mp4"), encoder="nvenc") as rec:  # fmt: skip
        rec.write(step_batch(0))
    assert not list(tmp_path.iterdir())


_CHILD = """
import numpy as np, glrec
from test_batch_recorder import step_batch
rec = glrec.BatchRecorder({pattern!r}, qp=0, pix_fmt="yuv444p", fps=30)
for s in range(10**6):
    rec.write(step_batch(s % 50))
    if s == 45:
        print("written", flush=True)
"""


def _packets_so_far(path: Path) -> int:
    """Packets a reader finds in a file still being written (0 while it cannot be read yet)."""
    try:
        return len(packets(path))
    except (OSError, av.error.FFmpegError):
        return 0


@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_sigkill_leaves_every_env_file_playable(tmp_path, ext) -> None:
    pattern = str(tmp_path / f"k{{env}}.{ext}")
    code = _CHILD.format(pattern=pattern)
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(Path(__file__).parent, Path(__file__).parent.parent),
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "written"
        # Killed once every env's file holds a second of video on disk, however slow or fast the machine
        # (the files only grow, so what a reader saw before the kill is still there after it).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(_packets_so_far(tmp_path / f"k{env}.{ext}") >= 30
                                                      for env in range(N)):  # fmt: skip
            time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    for env in range(N):
        frames = decode(tmp_path / f"k{env}.{ext}")
        assert len(frames) >= 30, (env, len(frames))  # at least one whole second survives
        assert all(psnr(f, step_batch(s % 50)[env]) > 40 for s, f in enumerate(frames))


def test_memory_stays_within_the_queues_over_many_steps(tmp_path) -> None:
    """Python-side memory after 400 steps is what it was after 100: frames are encoded, not kept (tracemalloc)."""
    import tracemalloc

    batch = np.random.default_rng(0).integers(0, 256, (8, 64, 96, 3), dtype=np.uint8)  # 147 kB a step
    tracemalloc.start()
    try:
        with glrec.BatchRecorder(str(tmp_path / "m{env}.mkv"), queue_steps=2) as rec:
            for step in range(400):
                rec.write(batch)
                if step == 100:
                    early = tracemalloc.get_traced_memory()[0]
            late = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert late - early < 3 * batch.nbytes, (early, late)  # 300 steps kept would be 100x the batch
    assert rec.close().frames == 8 * 400


def test_an_existing_file_is_refused_at_the_first_step_with_overwrite_false(tmp_path) -> None:
    from glrec.errors import OutputExistsError

    (tmp_path / "f2.mp4").write_bytes(b"keep me")
    with pytest.raises(OutputExistsError), glrec.BatchRecorder(str(tmp_path / "f{env}.mp4"), overwrite=False) as rec:
        rec.write(step_batch(0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f2.mp4"]  # nothing written, nothing replaced
    assert (tmp_path / "f2.mp4").read_bytes() == b"keep me"


@pytest.mark.gl
def test_the_gl_grid_pass_draws_what_numpy_tiles(tmp_path) -> None:
    """The pass that tiles CUDA batches on the GPU, fed from host memory here: the same pixels as numpy's."""
    from glrec.batch.frames import HostBatch
    from glrec.batch.grid import GridPass, label_text, tile_host
    from glrec.batch.layers import LayerUpload

    batch = step_batch(1, n=5)
    labels = [label_text(env, 1.5 * env) for env in range(5)]
    expected = tile_host(list(batch), labels, None)
    with glrec.Recorder(str(tmp_path / "g.mkv"), size=(3 * W, 2 * H), **LOSSLESS) as rec:
        with rec.ctx:
            upload, grid = LayerUpload(rec.ctx, 5, (W, H), 3), GridPass(rec.ctx, 5, (W, H))
        with rec.frame():
            upload.put(HostBatch(list(batch)))
            grid.draw(upload.texture, labels)
        with rec.ctx:
            upload.release()
            grid.release()
    frame = decode(tmp_path / "g.mkv")[0]
    assert psnr(frame, expected) > 40
    assert psnr(frame[:8], expected[:8]) > 40  # the label rows too


def test_the_grid_drops_steps_while_its_encoder_is_behind(tmp_path, monkeypatch) -> None:
    from glrec._recording import Recording

    behind = iter([False, True, True, False, False, True] + [False] * 10)
    monkeypatch.setattr(Recording, "encoder_backlogged", property(lambda self: next(behind)))
    with glrec.BatchRecorder(str(tmp_path / "g.mkv"), layout="grid", backpressure="drop", **LOSSLESS) as rec:
        for s in range(8):
            rec.write(step_batch(s))
    result = rec.close()
    assert result.dropped == (3,) * N
    steps = [round(p.pts * p.time_base * 30) for p in packets(tmp_path / "g.mkv")]
    assert sorted(steps) == [0, 3, 4, 6, 7]  # the dropped steps' slots stay empty: time is the simulator's
    frames = decode(tmp_path / "g.mkv")
    assert psnr(frames[1][:H, :W], step_batch(3)[0]) > 40


def threads_and_processes(tmp_path: Path, n: int, threads: int, **kw: object) -> None:
    """Record 7 steps of ``n`` envs (env 5's first episode ends after step 3) with ``threads`` encode threads
    (files ``t*``) and with the default pool, processes here (``p*``): every file's packets are the same."""
    from glrec.batch.mux_procs import ProcessPool
    from glrec.batch.pool import EncodePool

    for tag, extra in {"t": {"workers": threads}, "p": {}}.items():
        with glrec.BatchRecorder(str(tmp_path / f"{tag}{{env}}-{{episode}}.mkv"), **kw, **extra) as rec:
            for s in range(7):
                rec.write(step_batch(s, n=n))
                if s == 3:
                    rec.end_episode(5)
        assert type(rec._pool) is (EncodePool if tag == "t" else ProcessPool)
        result = rec.close()
        assert len(result.videos) == n + 1 and result.frames == 7 * n
    for env in range(n):
        for episode in (0, 1) if env == 5 else (0,):
            name = f"{env}-{episode}.mkv"
            got, want = (packets(tmp_path / f"{tag}{name}") for tag in ("p", "t"))
            assert [bytes(p) for p in got] == [bytes(p) for p in want], name


def test_many_envs_of_gpu_made_jpegs_mux_in_processes_as_threads_would(tmp_path, gl) -> None:
    """16 envs or more of GL JPEGs are muxed in child processes: the same packets as one mux thread, episodes
    split where written, clips kept by outcome."""
    from glrec.batch.mux_procs import PROCESS_ENVS, ProcessPool

    n = PROCESS_ENVS
    threads_and_processes(tmp_path, n, 1, encoder="gl", codec="mjpeg")
    assert len(packets(tmp_path / "p5-0.mkv")) == 4 and len(packets(tmp_path / "p5-1.mkv")) == 3
    with glrec.BatchRecorder(str(tmp_path / "g{env}-{part}.mkv"), encoder="gl", codec="mjpeg", fps=30,
                             segment_seconds=2 / 30) as rec:  # fmt: skip
        for s in range(5):
            rec.write(step_batch(s, n=n))
    assert type(rec._pool) is ProcessPool
    cut = [bytes(p) for part in range(3) for p in packets(tmp_path / f"g0-{part}.mkv")]
    assert cut == [bytes(p) for p in packets(tmp_path / "t0-0.mkv")][:5]
    assert [len(packets(tmp_path / f"g3-{part}.mkv")) for part in range(3)] == [2, 2, 1]
    with glrec.BatchRecorder(str(tmp_path / "k{env}-{episode}.mkv"), encoder="gl", codec="mjpeg",
                             keep=lambda info: info) as rec:  # fmt: skip
        for s in range(6):
            rec.write(step_batch(s, n=n))
            if s == 2:
                rec.end_episode(7, True)
                rec.end_episode(8, False)
    assert [p.name for p in tmp_path.glob("k*.mkv")] == ["k7-0.mkv"]
    assert rec.close().ring_bytes_peak > 0
    frames = decode(tmp_path / "k7-0.mkv")
    assert len(frames) == 3 and all(psnr(f, step_batch(s, n=n)[7]) > 24 for s, f in enumerate(frames))


_MUX_CHILD = """
import time, numpy as np, glrec
from test_batch_recorder import step_batch
rec = glrec.BatchRecorder({pattern!r}, encoder="gl", codec="mjpeg", fps=30)
for s in range(40):
    rec.write(step_batch(s, n=16))
print("written", flush=True)
time.sleep(600)
"""


def killed_recorder_files(tmp_path: Path, script: str, prefix: str, steps: int) -> None:
    """Run ``script`` (it records ``steps`` steps of 16 envs into ``tmp_path/{prefix}{env}.mkv`` in child
    processes, prints "written" and sleeps), SIGKILL it: its children finish every file, trailer included,
    each frame its own step's picture, at most a quarter of the steps missing."""
    here = Path(__file__).parent
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=child_env(here, here.parent))  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "written"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)

    def finished(path: Path) -> bool:  # the trailer is written (Matroska's duration): not a cut file
        try:
            with av.open(str(path)) as c:
                return c.duration is not None
        except (OSError, av.error.FFmpegError):
            return False

    deadline = time.monotonic() + 60  # the children see their input end and write the trailers
    while time.monotonic() < deadline and not all(finished(tmp_path / f"{prefix}{env}.mkv") for env in range(16)):
        time.sleep(0.2)
    batches = [step_batch(t, n=16) for t in range(steps)]
    for env in range(16):
        path = tmp_path / f"{prefix}{env}.mkv"
        frames = decode(path)
        assert steps * 3 // 4 <= len(frames) <= steps and ffprobe_count(path) == len(frames), (env, len(frames))
        for s, f in enumerate(frames):  # each frame is its own step's picture (4:2:0 noise: judged by the best match)
            scores = [psnr(f, b[env]) for b in batches]
            assert scores.index(max(scores)) == s, (env, s)
        assert finished(path)


def test_a_killed_recorder_leaves_its_mux_processes_to_finish_every_file(tmp_path, gl) -> None:
    killed_recorder_files(tmp_path, _MUX_CHILD.format(pattern=str(tmp_path / "m{env}.mkv")), "m", 40)
