"""The CPU encoders in processes (16 envs or more, from CPU_PROCESS_CORES cores): raw frames through shared memory.

On the 2-core machine the default keeps threads (there the cores bound the encode), so these
tests lower the core threshold; the child processes are the real ones. Every output is
compared with the thread path's, decoded and packet by packet.
"""

from __future__ import annotations

import av
import numpy as np
import pytest
from conftest import psnr
from media import ffprobe_count
from test_batch_recorder import LOSSLESS, decode, killed_recorder_files, step_batch, threads_and_processes

import glrec
from glrec.batch import mux_procs
from glrec.batch.frame_slots import FrameSlots, can_share
from glrec.batch.mux_child import _host

pytestmark = pytest.mark.skipif(not can_share(), reason="needs memfd_create (Linux)")
N = mux_procs.PROCESS_ENVS


@pytest.fixture
def processes(monkeypatch):
    monkeypatch.setattr(mux_procs, "CPU_PROCESS_CORES", 1)


def test_the_cpu_encoders_in_processes_write_what_threads_write(tmp_path, processes) -> None:
    threads_and_processes(tmp_path, N, 2, encoder="cpu", **LOSSLESS)
    for env in range(N):
        frames = decode(tmp_path / f"p{env}-0.mkv")
        steps = range(4) if env == 5 else range(7)
        assert len(frames) == len(steps) == ffprobe_count(tmp_path / f"p{env}-0.mkv")
        assert all(psnr(f, step_batch(s, n=N)[env]) > 40 for s, f in zip(steps, frames, strict=True)), env


def test_segments_and_clips_kept_by_outcome_in_processes(tmp_path, processes) -> None:
    with glrec.BatchRecorder(str(tmp_path / "g{env}-{part}.mp4"), encoder="cpu", fps=30, segment_seconds=2 / 30,
                             **LOSSLESS) as rec:  # fmt: skip
        for s in range(5):
            rec.write(step_batch(s, n=N))
    assert type(rec._pool) is mux_procs.ProcessPool
    assert [len(decode(tmp_path / f"g3-{part}.mp4")) for part in range(3)] == [2, 2, 1]
    with glrec.BatchRecorder(str(tmp_path / "k{env}-{episode}.mp4"), encoder="cpu", keep=lambda info: info,
                             **LOSSLESS) as rec:  # fmt: skip
        for s in range(6):
            rec.write(step_batch(s, n=N))
            if s == 2:
                rec.end_episode(7, True)
                rec.end_episode(8, False)
    assert [p.name for p in tmp_path.glob("k*.mp4")] == ["k7-0.mp4"]
    with av.open(str(tmp_path / "k7-0.mp4")) as c:
        assert next(p for p in c.demux(video=0) if p.size).is_keyframe
    frames = decode(tmp_path / "k7-0.mp4")
    assert len(frames) == 3 and all(psnr(f, step_batch(s, n=N)[7]) > 40 for s, f in enumerate(frames))


def test_a_repeated_frame_keeps_its_own_pixels_after_its_slot_is_written_again() -> None:
    slots = FrameSlots(2, 1, (4, 6, 3))
    try:
        first = np.full((4, 6, 3), 7, np.uint8)
        slot = slots.write([first])
        kept, viewed = (
            _host(slots.frame(slot, 0), "rgb24", 6, 4, True),
            _host(slots.frame(slot, 0), "rgb24", 6, 4, False),
        )
        slots.write([np.zeros_like(first)])
        slots.write([np.full_like(first, 99)])  # slot 0 again
        assert (kept.data == 7).all() and (viewed.data == 99).all()
        del viewed
    finally:
        slots.close()


_CHILD = """
import time, glrec
import glrec.batch.mux_procs as mp
from test_batch_recorder import step_batch
mp.CPU_PROCESS_CORES = 1
rec = glrec.BatchRecorder({pattern!r}, encoder="cpu", fps=30)
for s in range(30):
    rec.write(step_batch(s, n=16))
assert type(rec._pool) is mp.ProcessPool
print("written", flush=True)
time.sleep(600)
"""


def test_a_killed_recorder_leaves_its_encode_processes_to_finish_every_file(tmp_path) -> None:
    killed_recorder_files(tmp_path, _CHILD.format(pattern=str(tmp_path / "c{env}.mkv")), "c", 30)


@pytest.mark.parametrize(
    "ext, codec, options, floor", [(".gif", "gif", {}, 35), (".webm", "vp9", {"crf": 4, "pix_fmt": "yuv444p"}, 38)]
)
def test_gif_and_vp9_per_env_in_processes(tmp_path, processes, ext, codec, options, floor) -> None:
    """The child processes open the same CPU encoder: GIF's palette and libvpx-vp9 work there too. (The frames are
    noise: 38-39 dB through GIF's palettes; 4:2:0 alone holds them to 25 dB, so VP9 here is 4:4:4 at crf 4, 42-49.)"""
    with glrec.BatchRecorder(str(tmp_path / f"e{{env}}{ext}"), encoder="cpu", fps=25, **options) as rec:
        for s in range(4):
            rec.write(step_batch(s, n=N))
    assert type(rec._pool) is mux_procs.ProcessPool
    for env in (0, N - 1):
        with av.open(str(tmp_path / f"e{env}{ext}")) as c:
            assert c.streams.video[0].codec_context.name == codec
        frames = decode(tmp_path / f"e{env}{ext}")
        assert len(frames) == 4 == ffprobe_count(tmp_path / f"e{env}{ext}")
        assert all(psnr(f, step_batch(s, n=N)[env]) > floor for s, f in enumerate(frames)), env


def test_png_sequences_per_env_in_processes_are_the_frames_exactly(tmp_path, processes) -> None:
    """The child processes open the PNG encoder the recorder planned: every env's sequence is its frames, exactly."""
    with glrec.BatchRecorder(str(tmp_path / "e{env}_%02d.png"), fps=25) as rec:
        for s in range(3):
            rec.write(step_batch(s, n=N))
    assert type(rec._pool) is mux_procs.ProcessPool
    for env in (0, N - 1):
        for s in range(3):
            with av.open(str(tmp_path / f"e{env}_{s:02d}.png")) as c:
                assert c.streams.video[0].codec_context.name == "png"
                (frame,) = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
            assert np.array_equal(frame, step_batch(s, n=N)[env]), (env, s)
        assert ffprobe_count(tmp_path / f"e{env}_%02d.png") == 3
