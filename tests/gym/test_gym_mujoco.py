"""glrec.gym.RecordVideo on Gymnasium's HalfCheetah-v5 (``MUJOCO_GL=egl``): frames from MuJoCo's framebuffer.

Real gymnasium + mujoco on Mesa, each test in a child process (MuJoCo reads MUJOCO_GL at import):

- the same file names and frame counts as Gymnasium's own RecordVideo on the same seeded episodes
  (every episode, and a step trigger with a video length), the frames equal to the env's own
  ``render()`` output (PSNR >= 40 dB at near-lossless settings, upright), ``env.render()`` itself
  unchanged while recording, and MuJoCo's read-back skipped after the first frame;
- the GL state glrec's capture sees in MuJoCo's context is the same after it, and a context the
  caller had current at a step is current again after it;
- where the frame is not what MuJoCo's framebuffer holds (a wrapper drawing on it, a marker only
  env.render() drew), MuJoCo does not render with EGL (``MUJOCO_GL=osmesa``) or no recorder can
  work in MuJoCo's context, env.render()'s frames are recorded, with the reason logged at debug.
  With OSMesa that also checks glrec's own EGL context leaves MuJoCo's OSMesa context bound: the
  two share Mesa's GL dispatch, and Gymnasium makes its context current only once (black frames
  before glrec.gl.osmesa).
"""

from __future__ import annotations

import ctypes.util
import os

import pytest
from gl_child import need, run_child

pytestmark = pytest.mark.gl

MUJOCO_ENV = {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"}

# Run an env through seeded episodes; the policy and seeds are the same for every wrapper.
EPISODES = """
import logging, os
import gymnasium as gym
import glrec, glrec.gym

W, H = 96, 64

class Log(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []
    def emit(self, record):
        self.lines.append(record.getMessage())

seen = Log()
logging.getLogger("glrec").addHandler(seen)
logging.getLogger("glrec").setLevel(logging.DEBUG)

def make(steps=12):
    env = gym.make("HalfCheetah-v5", render_mode="rgb_array", width=W, height=H, max_episode_steps=steps)
    # MuJoCo draws its shadow map, 4096x4096 by default, for every frame: 67 ms a frame on llvmpipe (2-core
    # machine), 16 ms at 512x512. The shadow pass and its framebuffer stay, smaller; set before the env's
    # renderer is made at its first render, and every env of a test (theirs, ours, the reference) is made here.
    env.unwrapped.model.vis.quality.shadowsize = 512
    return env

def episodes(env, n, each=None):
    env.action_space.seed(1)
    for episode in range(n):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if each is not None:
                each(env)
            done = terminated or truncated
    env.close()
    return env

def reference(n, steps=12):
    '''The frames env.render() gives on those episodes, without any wrapper: episode -> list.'''
    env = make(steps)
    env.action_space.seed(1)
    out = {}
    for episode in range(n):
        env.reset(seed=episode)
        frames, done = [env.render().copy()], False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            frames.append(env.render().copy())
            done = terminated or truncated
        out[episode] = frames
    env.close()
    return out

def counts(folder):
    return {name: len(decode(os.path.join(folder, name))) for name in sorted(os.listdir(folder))}

class Counting(gym.wrappers.RecordVideo):
    '''Gymnasium's wrapper, noting how many frames it captured for each video.'''
    captured = {}
    def stop_recording(self):
        if self.recorded_frames:
            Counting.captured[self._video_name + ".mp4"] = len(self.recorded_frames)
        super().stop_recording()

FAST = "recording 96x64 frames from MuJoCo's offscreen framebuffer"
"""


def test_same_files_as_gymnasium_and_the_frames_render_gives(tmp_path) -> None:
    need("mujoco", "gymnasium", "moviepy")
    out = run_child(
        EPISODES
        + f"""
import warnings
warnings.filterwarnings("ignore")
results = {{}}
for name, kw in [("episodes", dict(episode_trigger=lambda e: True)),
                 ("steps", dict(step_trigger=lambda s: s % 10 == 0, video_length=6))]:
    Counting.captured = {{}}
    episodes(Counting(make(), r"{tmp_path}/gym-" + name, **kw), 2)
    renders, reads = [], []
    def each(env):
        if len(renders) < 3:  # the env's own render() while glrec records: what a user calls still works
            renders.append(env.render().copy())
    base = make()
    counter = base.unwrapped.mujoco_renderer
    calls = []
    real = counter.render
    counter.render = lambda mode: calls.append(mode) or real(mode)
    seen.lines.clear()
    env = episodes(glrec.gym.RecordVideo(base, r"{tmp_path}/glrec-" + name, **kw, **LOSSLESS), 2, each)
    results[name] = dict(
        theirs=Counting.captured, theirs_files=counts(r"{tmp_path}/gym-" + name),
        ours=counts(r"{tmp_path}/glrec-" + name), results=[v.frames for v in env.videos],
        fast=sum(FAST in line for line in seen.lines), render_calls=len(calls), user_renders=len(renders),
    )
    if name == "episodes":
        ref = reference(2)
        videos = [decode(r"{tmp_path}/glrec-episodes/rl-video-episode-" + str(e) + ".mp4") for e in range(2)]
        results[name]["psnr"] = [psnr(a, b) for e in range(2) for a, b in zip(ref[e], videos[e])]
        results[name]["flipped"] = psnr(ref[0][0], videos[0][0][::-1])
        results[name]["distinct"] = psnr(ref[0][0], ref[0][-1])
        results[name]["renders_equal"] = all(bool((a == b).all()) for a, b in zip(renders, ref[0][1:4]))
done(**results)
""",
        MUJOCO_ENV,
        timeout=240,
    )
    for name, r in out.items():
        assert list(r["ours"]) == list(r["theirs"]) and r["ours"], (name, r)
        assert r["ours"] == r["theirs"], (name, r)  # glrec writes every frame Gymnasium's wrapper captured
        for video, n in r["theirs_files"].items():
            assert n in (r["theirs"][video], r["theirs"][video] - 1), (name, video)  # moviepy's rounding
        assert r["results"] == list(r["ours"].values()), (name, r)
        assert r["fast"] == len(r["ours"]), f"{name}: the fast path was not taken for every video: {r}"
        # env.render() ran once for the first frame (which checked the fast path), plus the user's calls
        assert r["render_calls"] == 1 + r["user_renders"], (name, r)
    r = out["episodes"]
    assert len(r["psnr"]) == sum(r["ours"].values()) and min(r["psnr"]) >= 40, r["psnr"]
    assert r["flipped"] < 25, "the video is upside down"
    assert r["distinct"] < 40, "the episode's frames do not differ, so the comparison proves little"
    assert r["user_renders"] == 3 and r["renders_equal"], "env.render() gives other frames while glrec records"


def test_gl_state_and_the_callers_current_context_unchanged(tmp_path) -> None:
    need("mujoco", "gymnasium")
    out = run_child(
        EPISODES
        + f"""
from glrec.gl import egl
from glrec.gl.state import StateGuard

changed, restored = [], []
real_capture = glrec.Recorder.capture
def capture(self, *args, **kwargs):  # glrec's capture inside MuJoCo's context: the full state around it
    full = StateGuard(full=True)
    before = full.capture()
    index = real_capture(self, *args, **kwargs)
    changed.extend(StateGuard.diff(before, full.capture()))
    return index
glrec.Recorder.capture = capture

other = egl.create_headless(None)  # a context of the caller's own, current during some steps
theirs = egl.Binding(other.display, 0, 0, other.context)
env = glrec.gym.RecordVideo(make(), r"{tmp_path}/v", episode_trigger=lambda e: True, **LOSSLESS)
env.action_space.seed(1)
env.reset(seed=0)
mujocos = egl.current_context()
for step in range(8):
    mine = step % 2 == 1
    if mine:
        theirs.make_current()
    before = egl.current_context()
    env.step(env.action_space.sample())
    restored.append(egl.current_context() == before == (other.context if mine else mujocos))
    if mine:
        egl.Binding(0, 0, 0, 0).make_current(release_on=other.display)
        env.unwrapped.mujoco_renderer.viewer.make_context_current()
env.close()
other.destroy()
ref = reference(1, steps=12)[0][:9]
video = decode(r"{tmp_path}/v/rl-video-episode-0.mp4")
done(changed=changed, restored=restored, frames=len(video), psnr=[psnr(a, b) for a, b in zip(ref, video)],
     fast=sum(FAST in line for line in seen.lines))
""",
        MUJOCO_ENV,
        timeout=180,
    )
    assert out["fast"] == 1 and out["frames"] == 9, out
    assert out["changed"] == [], f"glrec changed MuJoCo's GL state: {out['changed']}"
    assert all(out["restored"]) and len(out["restored"]) == 8, out["restored"]
    assert min(out["psnr"]) >= 40, out["psnr"]  # also the steps taken with the caller's context current


def test_falls_back_to_render_frames_where_the_framebuffer_is_not_the_frame(tmp_path) -> None:
    need("mujoco", "gymnasium")
    out = run_child(
        EPISODES
        + f"""
import numpy as np
from glrec.gym import mujoco as gym_mujoco
from glrec.errors import ContextError

class Marked(gym.Wrapper):
    '''A wrapper that draws on the frame: what is recorded must be its output, not MuJoCo's framebuffer.'''
    def render(self):
        frame = self.env.render().copy()
        frame[:8, :8] = (255, 0, 255)
        return frame

def run(env, name, **kw):
    seen.lines.clear()
    episodes(glrec.gym.RecordVideo(env, r"{tmp_path}/" + name, episode_trigger=lambda e: True, **LOSSLESS, **kw), 1)
    video = decode(r"{tmp_path}/" + name + "/rl-video-episode-0.mp4")
    why = [line for line in seen.lines if "recording env.render() frames" in line]
    return video, why, sum(FAST in line for line in seen.lines)

ref = reference(1)[0]
results = {{}}
video, why, fast = run(Marked(make()), "marked")
results["marked"] = dict(why=why, fast=fast, frames=len(video), corner=video[0][:8, :8].reshape(-1, 3).mean(0).tolist(),
                         psnr=min(psnr(a[8:], b[8:]) for a, b in zip(ref, video)))

marker = make()  # a marker env.render() draws in the first frame: a second drawing differs, so no fast path
marker.reset(seed=0)
marker.render()
marker.unwrapped.mujoco_renderer.viewer.add_marker(pos=np.array([0.0, 0.0, 0.5]), size=np.array([0.3, 0.3, 0.3]),
                                                     rgba=np.array([1.0, 1.0, 0.0, 1.0]))
video, why, fast = run(marker, "marker")
results["marker"] = dict(why=why, fast=fast, frames=len(video), psnr=[psnr(a, b) for a, b in zip(ref, video)])

def refuse(self, path, **options):
    raise ContextError("pretend MuJoCo's context is OpenGL 3.3")
gym_mujoco.MujocoFrames.open = refuse
video, why, fast = run(make(), "no-context")
results["no-context"] = dict(why=why, fast=fast, frames=len(video), psnr=min(psnr(a, b) for a, b in zip(ref, video)))

video, why, fast = run(make(), "off", fast_path=False)
results["off"] = dict(why=why, fast=fast, frames=len(video), psnr=min(psnr(a, b) for a, b in zip(ref, video)))
done(**results)
""",
        MUJOCO_ENV,
        timeout=240,
    )
    frames = 13  # the reset frame and 12 steps
    r = out["marked"]
    assert r["fast"] == 0 and any("Marked has its own render()" in w for w in r["why"]), r
    assert r["frames"] == frames and r["psnr"] >= 40, r
    assert abs(r["corner"][0] - 255) < 8 and r["corner"][1] < 8 and abs(r["corner"][2] - 255) < 8, r["corner"]
    r = out["marker"]
    assert r["fast"] == 0 and any("differs from env.render()" in w for w in r["why"]), r
    assert r["frames"] == frames and r["psnr"][0] < 30, r  # the marker env.render() drew is in frame 0
    assert min(r["psnr"][1:]) >= 40, r
    r = out["no-context"]
    assert r["fast"] == 0 and any("no recorder in MuJoCo's context" in w for w in r["why"]), r
    assert r["frames"] == frames and r["psnr"] >= 40, r
    r = out["off"]
    assert r["fast"] == 0 and r["frames"] == frames and r["psnr"] >= 40, r


def test_osmesa_rendering_records_render_frames(tmp_path) -> None:
    need("mujoco", "gymnasium")
    if ctypes.util.find_library("OSMesa") is None:
        what = "needs Mesa's OSMesa library (apt-get install libosmesa6) for MUJOCO_GL=osmesa"
        if os.environ.get("GLREC_REQUIRE_GL") == "1":
            pytest.fail(what)
        pytest.skip(what)
    out = run_child(
        EPISODES
        + f"""
episodes(glrec.gym.RecordVideo(make(), r"{tmp_path}/v", episode_trigger=lambda e: True, **LOSSLESS), 1)
video = decode(r"{tmp_path}/v/rl-video-episode-0.mp4")
ref = reference(1)[0]
done(why=[line for line in seen.lines if "recording env.render() frames" in line], frames=len(video),
     want=len(ref), psnr=[psnr(a, b) for a, b in zip(ref, video)], fast=sum(FAST in line for line in seen.lines))
""",
        {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"},
        timeout=180,
    )
    assert out["fast"] == 0 and any("MUJOCO_GL=osmesa" in w for w in out["why"]), out
    assert out["frames"] == out["want"] == 13 and min(out["psnr"]) >= 40, out
