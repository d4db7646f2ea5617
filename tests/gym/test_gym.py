"""glrec.gym.RecordVideo against Gymnasium's own RecordVideo on the same seeded CartPole episodes.

Gymnasium's wrapper is run for real (moviepy writes its files). Both must write the same file names, and
glrec's files the number of frames Gymnasium's wrapper captured; moviepy itself sometimes writes one frame
fewer than it is given (it writes ``int(duration * fps)`` frames, and ``n / fps * fps`` can fall just below
``n`` in floating point), so Gymnasium's files may hold one frame fewer than its wrapper captured.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import av
import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
pytest.importorskip("pygame")  # CartPole's renderer
from conftest import psnr  # noqa: E402

import glrec.gym  # noqa: E402

pytestmark = pytest.mark.gl
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def decoded_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def counts(folder: Path) -> dict[str, int]:
    return {p.name: len(decoded_frames(p)) for p in sorted(folder.iterdir())}


class CountingGymnasiumWrapper(gym.wrappers.RecordVideo):
    """Gymnasium's wrapper, noting how many frames it captured for each video it saves."""

    captured: dict[str, int]

    def stop_recording(self):
        self.captured = getattr(self, "captured", {})
        if self.recorded_frames:
            self.captured[f"{self._video_name}.mp4"] = len(self.recorded_frames)
        super().stop_recording()


def run(wrapper, folder: Path, episodes: int, render_mode: str = "rgb_array", **kwargs):
    env = wrapper(gym.make("CartPole-v1", render_mode=render_mode), str(folder), **kwargs)
    env.action_space.seed(1)
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.close()
    return env


@pytest.mark.filterwarnings("ignore:.*Overwriting existing videos")
@pytest.mark.parametrize(
    "kwargs",
    [
        {"episode_trigger": lambda e: True, "name_prefix": "cart"},
        {"step_trigger": lambda s: s % 20 == 0, "video_length": 8},
        {},  # Gymnasium's default schedule: episodes 0, 1, 8, 27, ...
        {"episode_trigger": lambda e: e % 2 == 0, "render_mode": "rgb_array_list"},
    ],
    ids=["every-episode", "step-trigger", "default-schedule", "rgb-array-list"],
)
def test_same_files_as_gymnasium(tmp_path, kwargs):
    theirs = run(CountingGymnasiumWrapper, tmp_path / "gymnasium", 2, **kwargs)
    ours = run(glrec.gym.RecordVideo, tmp_path / "glrec", 2, **kwargs)
    their_counts, our_counts = counts(tmp_path / "gymnasium"), counts(tmp_path / "glrec")
    assert list(our_counts) == list(their_counts) and our_counts, (our_counts, their_counts)
    assert our_counts == theirs.captured
    for name, n in their_counts.items():
        assert n in (theirs.captured[name], theirs.captured[name] - 1), name  # moviepy's rounding, see above
    assert [v.frames for v in ours.videos] == list(our_counts.values())


def test_frames_are_the_episode_as_rendered(tmp_path):
    run(glrec.gym.RecordVideo, tmp_path / "v", 1, episode_trigger=lambda e: True)
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.action_space.seed(1)
    env.reset(seed=0)
    rendered, done = [env.render()], False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        rendered.append(env.render())
        done = terminated or truncated
    env.close()
    decoded = decoded_frames(tmp_path / "v" / "rl-video-episode-0.mp4")
    assert len(decoded) == len(rendered)
    for got, want in zip(decoded, rendered, strict=True):
        assert got.shape == want.shape == (400, 600, 3)
        assert psnr(got, want) >= 30


def test_memory_stays_flat_where_gymnasiums_grows(tmp_path):
    def traced_growth(wrapper, folder: Path) -> tuple[float, int]:
        env = wrapper(gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=160), str(folder),
                      episode_trigger=lambda e: True)  # fmt: skip
        obs, _ = env.reset(seed=0)
        tracemalloc.start()
        try:
            for step in range(160):
                obs, _, terminated, _, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))  # keeps the pole up
                assert not terminated
                if step == 39:
                    early = tracemalloc.get_traced_memory()[0]
            late = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            env.close()
        return (late - early) / 2**20, step + 1

    ours, steps = traced_growth(glrec.gym.RecordVideo, tmp_path / "glrec")
    theirs, _ = traced_growth(gym.wrappers.RecordVideo, tmp_path / "gymnasium")
    frame_mb = 600 * 400 * 3 / 2**20
    assert theirs >= 0.9 * 120 * frame_mb, theirs  # Gymnasium holds every frame until the episode ends
    # glrec holds at most its encode queue (8 frames) and the frames in hand, whatever the episode's length
    assert ours < 12 * frame_mb, ours
    assert len(decoded_frames(tmp_path / "glrec" / "rl-video-episode-0.mp4")) == steps + 1


def test_refuses_render_modes_without_images():
    with pytest.raises(ValueError, match="rgb_array"):
        glrec.gym.RecordVideo(gym.make("CartPole-v1"), "unused")


def test_options_reach_the_recorder_and_overwrite_false_protects_files(tmp_path):
    run(glrec.gym.RecordVideo, tmp_path, 1, episode_trigger=lambda e: True, codec="hevc", crf=30)
    with av.open(str(tmp_path / "rl-video-episode-0.mp4")) as c:
        assert c.streams.video[0].codec_context.name == "hevc"
    with pytest.raises(glrec.OutputExistsError):
        run(glrec.gym.RecordVideo, tmp_path, 1, episode_trigger=lambda e: True, overwrite=False)
