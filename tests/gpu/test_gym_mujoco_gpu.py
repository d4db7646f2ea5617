"""GPU tier (``-m gpu``): glrec.gym.RecordVideo on HalfCheetah-v5 with MuJoCo on the NVIDIA EGL driver.

The fast path records MuJoCo's framebuffer in MuJoCo's context through a CUDA handoff (the frame
leaves the GPU only as the CPU encoder's YUV): the same frame counts as the episodes' renders and
PSNR >= 40 dB against the env's own ``render()`` frames.
"""

from __future__ import annotations

import pytest
from gl_child import need, run_child
from test_gym_mujoco import EPISODES, MUJOCO_ENV

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("handoff", ["register", "shared"])
def test_halfcheetah_recorded_from_mujocos_framebuffer_through_a_cuda_handoff(tmp_path, handoff) -> None:
    need("mujoco", "gymnasium")
    out = run_child(
        EPISODES
        + f"""
env = episodes(glrec.gym.RecordVideo(make(), r"{tmp_path}/v", episode_trigger=lambda e: True, encoder="cpu",
                                     handoff="{handoff}", **LOSSLESS), 2)
ref = reference(2)
videos = [decode(r"{tmp_path}/v/rl-video-episode-" + str(e) + ".mp4") for e in range(2)]
done(frames=[len(v) for v in videos], want=[len(ref[e]) for e in range(2)],
     psnr=[psnr(a, b) for e in range(2) for a, b in zip(ref[e], videos[e])],
     fast=sum(FAST in line for line in seen.lines), plans=[line for line in seen.lines if line.startswith("plan:")])
""",
        MUJOCO_ENV,
        timeout=240,
    )
    assert out["fast"] == 2, out
    assert out["frames"] == out["want"], out
    assert out["plans"] and all(f"CUDA {handoff} handoff" in p for p in out["plans"]), out["plans"]
    assert min(out["psnr"]) >= 40, out["psnr"]
