"""glrec.gym.RecordVectorVideo on Gymnasium's own SyncVectorEnv and AsyncVectorEnv: each env's episodes, decoded.

A tap between the vector env and the wrapper keeps a copy of every frame the
wrapper's render() call returned, with the terminations and truncations the test
saw; the test cuts each env's frames into episodes itself, from the autoreset
mode's rule, and every file must hold exactly that episode's frames (PSNR
against the frames rendered; x264 lossless in 4:4:4 as the reference).
"""

from __future__ import annotations

import os
from pathlib import Path

import av
import gymnasium as gym
import numpy as np
import pytest
from gl_child import need, run_child
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorWrapper

import glrec.gym
from glrec.gym import RecordVectorVideo

LOSSLESS = {"qp": 0, "pix_fmt": "yuv444p"}
N = 3


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)


def decode(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


class Tap(VectorWrapper):
    """Keeps a copy of each render() the wrapper above asks for."""

    def __init__(self, env) -> None:
        super().__init__(env)
        self.renders: list[list[np.ndarray]] = []

    def render(self):
        frames = self.env.render()
        self.renders.append([np.array(f) for f in frames])
        return frames


def cartpoles(kind=SyncVectorEnv, mode=AutoresetMode.NEXT_STEP):
    return kind([lambda: gym.make("CartPole-v1", render_mode="rgb_array") for _ in range(N)], autoreset_mode=mode)


def episodes_expected(renders, dones, mode) -> dict[tuple[int, int], list[np.ndarray]]:
    """(env, episode) -> frames, cut by the autoreset rule (renders[0] at reset, renders[t] after step t)."""
    out: dict[tuple[int, int], list[np.ndarray]] = {}
    for env in range(N):
        episode = 0
        for t, frames in enumerate(renders):
            # NEXT_STEP: the step after the terminating one only resets the env; SAME_STEP: the terminating
            # step's frame is already the next episode's reset.
            lag = 2 if mode == AutoresetMode.NEXT_STEP else 1
            new = t >= lag and dones[t - lag][env]
            episode += bool(new)
            out.setdefault((env, episode), []).append(frames[env])
    return out


@pytest.mark.parametrize(
    ("kind", "mode"),
    [
        (SyncVectorEnv, AutoresetMode.NEXT_STEP),
        (SyncVectorEnv, AutoresetMode.SAME_STEP),
        (AsyncVectorEnv, AutoresetMode.NEXT_STEP),
        (AsyncVectorEnv, AutoresetMode.SAME_STEP),
    ],
)
def test_each_env_episode_in_its_file_where_the_autoreset_mode_puts_it(tmp_path, kind, mode) -> None:
    tap = Tap(cartpoles(kind, mode))
    envs = RecordVectorVideo(tap, str(tmp_path), episode_trigger=lambda e: True, **LOSSLESS)
    envs.reset(seed=1)
    envs.action_space.seed(1)
    dones = []
    for _ in range(70):
        _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
        dones.append(np.logical_or(terminated, truncated))
    envs.close()
    expected = episodes_expected(tap.renders, dones, mode)
    names = {f"rl-video-env{env}-episode-{e}.mp4": frames for (env, e), frames in expected.items()}
    assert sorted(os.listdir(tmp_path)) == sorted(names)
    assert sum(1 for d in dones for x in d if x) >= N  # episodes did end, so the boundaries are tested
    for name, frames in names.items():
        decoded = decode(tmp_path / name)
        assert len(decoded) == len(frames), name
        assert min(psnr(a, b) for a, b in zip(decoded, frames, strict=True)) >= 40, name
    assert sorted(envs.videos) == sorted(str(tmp_path / n) for n in names)


def test_disabled_autoreset_starts_episodes_at_masked_resets(tmp_path) -> None:
    tap = Tap(cartpoles(mode=AutoresetMode.DISABLED))
    envs = RecordVectorVideo(tap, str(tmp_path), episode_trigger=lambda e: e % 2 == 0, **LOSSLESS)
    envs.reset(seed=2)
    envs.action_space.seed(2)
    lengths = {env: [0] for env in range(N)}  # steps of each episode of each env
    firsts = {env: [tap.renders[0][env]] for env in range(N)}  # the reset frame that starts each
    for _ in range(60):
        _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
        for env in range(N):
            lengths[env][-1] += 1
        done = np.logical_or(terminated, truncated)
        if done.any():
            before = len(tap.renders)
            envs.reset(options={"reset_mask": done})
            for env in np.flatnonzero(done):
                lengths[int(env)].append(0)
                reset_frame = tap.renders[-1][int(env)] if len(tap.renders) > before else None
                firsts[int(env)].append(reset_frame)
    envs.close()
    for env in range(N):
        assert len(lengths[env]) >= 2  # an episode ended, so a masked reset started the next
        for e, steps in enumerate(lengths[env]):
            path = tmp_path / f"rl-video-env{env}-episode-{e}.mp4"
            if e % 2:  # odd episodes are not recorded
                assert not path.exists()
                continue
            decoded = decode(path)
            assert len(decoded) == 1 + steps, (path, len(decoded), steps)  # its reset frame, then each step's
            assert psnr(decoded[0], firsts[env][e]) >= 40


def test_step_trigger_and_video_length_as_gymnasium_counts_them(tmp_path) -> None:
    envs = RecordVectorVideo(cartpoles(), str(tmp_path), step_trigger=lambda s: s == 3, video_length=10,
                             envs=[0, 2])  # fmt: skip
    envs.reset(seed=3)
    envs.action_space.seed(3)
    for _ in range(30):
        envs.step(envs.action_space.sample())
    envs.close()
    assert sorted(os.listdir(tmp_path)) == ["rl-video-env0-step-3.mp4", "rl-video-env2-step-3.mp4"]
    assert len(decode(tmp_path / "rl-video-env0-step-3.mp4")) == 11  # the starting frame + video_length


class BatchRender(gym.vector.VectorEnv):
    """A vector env whose render() returns one (N, H, W, 3) array, as GPU simulators do."""

    def __init__(self, n: int = 4) -> None:
        self.num_envs = n
        self.render_mode = "rgb_array"
        self.metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_fps": 25}
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        self.observation_space = gym.spaces.Box(0, 1, (n, 1))
        self.t = 0
        self.batches: dict[int, np.ndarray] = {}  # by step

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros((self.num_envs, 1)), {}

    def step(self, actions):
        self.t += 1
        done = np.array([self.t % (5 + i) == 0 for i in range(self.num_envs)])
        return np.zeros((self.num_envs, 1)), np.zeros(self.num_envs), done, np.zeros(self.num_envs, bool), {}

    def render(self):
        rng = np.random.default_rng(self.t)
        batch = rng.integers(0, 255, (self.num_envs, 32, 48, 3), dtype=np.uint8)
        self.batches[self.t] = batch.copy()
        return batch


def test_a_batch_render_goes_in_as_it_is(tmp_path, monkeypatch) -> None:
    import glrec.batch.recorder as recorder_module

    seen = []
    real = recorder_module.inspect_batch
    monkeypatch.setattr(recorder_module, "inspect_batch", lambda frames: seen.append(type(frames)) or real(frames))
    env = BatchRender()
    envs = RecordVectorVideo(env, str(tmp_path), episode_trigger=lambda e: e == 1, **LOSSLESS)
    envs.reset()
    for _ in range(12):
        envs.step(envs.action_space.sample())
    envs.close()
    assert set(seen) == {np.ndarray}  # the array itself, not a list made of it
    # env 0: episodes end at steps 5 and 10 (NEXT_STEP): episode 1 is the frames after steps 6..10
    decoded = decode(tmp_path / "rl-video-env0-episode-1.mp4")
    assert len(decoded) == 5
    assert min(psnr(a, env.batches[6 + i][0]) for i, a in enumerate(decoded)) >= 40
    assert envs.frames_per_sec == 25


def test_mujoco_vector_env_with_egl(tmp_path) -> None:
    need("mujoco", "gymnasium")
    out = run_child(
        f"""
import gymnasium as gym, numpy as np, os
import glrec.gym
from gymnasium.vector import SyncVectorEnv
make = lambda: gym.make("InvertedPendulum-v5", render_mode="rgb_array", width=64, height=48, max_episode_steps=8)
envs = SyncVectorEnv([make, make])
renders = []
class Tap(gym.vector.VectorWrapper):
    def render(self):
        frames = self.env.render(); renders.append([np.array(f) for f in frames]); return frames
envs = glrec.gym.RecordVectorVideo(Tap(envs), r"{tmp_path}", episode_trigger=lambda e: e == 0, **LOSSLESS)
envs.reset(seed=0)
envs.action_space.seed(0)
first_done = [None, None]
for t in range(1, 13):
    _, _, te, tr, _ = envs.step(envs.action_space.sample())
    for i in range(2):
        if first_done[i] is None and (te[i] or tr[i]):
            first_done[i] = t
envs.close()
files = sorted(os.listdir(r"{tmp_path}"))
videos = {{f: decode(os.path.join(r"{tmp_path}", f)) for f in files}}
done(files=files, counts=[len(v) for v in videos.values()], first_done=first_done,
     psnr=min(psnr(a, renders[i][int(f[12])]) for f, v in videos.items() for i, a in enumerate(v)),
     distinct=psnr(renders[0][0], renders[8][0]))
""",
        {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"},
        timeout=240,
    )
    assert out["files"] == ["rl-video-env0-episode-0.mp4", "rl-video-env1-episode-0.mp4"]
    # NEXT_STEP: the reset frame and a frame per step up to the one that ended the episode (<= 8: truncated)
    assert out["counts"] == [d + 1 for d in out["first_done"]]
    assert out["psnr"] >= 40 and out["distinct"] < 40


def test_the_wrapper_is_glrec_gym_s() -> None:
    assert glrec.gym.RecordVectorVideo is RecordVectorVideo
