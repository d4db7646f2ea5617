"""glrec next to MuJoCo (``MUJOCO_GL=egl``) in one process and one thread: the real library, Mesa's EGL.

- With glrec's own context, MuJoCo's frames before, while and after a recorder
  exists are identical and not black, whichever of the two is made first
  (the bug: black frames, or glrec failing with "cannot map the buffer").
- ``context="current"`` inside MuJoCo's context records what MuJoCo drew: the
  decoded video matches ``Renderer.render()`` (PSNR >= 40 dB at lossless
  settings), upright, and MuJoCo's GL state is the same before and after.
- Gymnasium's HalfCheetah-v5 renders the same frames with a recorder open,
  and recording its context gives its frames.
"""

from __future__ import annotations

import pytest
from gl_child import assert_frames_alongside, assert_recorded_its_context, need, run_child

pytestmark = pytest.mark.gl

MUJOCO_ENV = {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"}

# A scene that is not symmetric top to bottom or left to right: a red box, a green ball up and right.
SETUP = """
import mujoco
XML = '''<mujoco><worldbody>
  <light pos="0 0 3"/>
  <geom type="plane" size="2 2 .1" rgba=".3 .3 .8 1"/>
  <geom type="box" pos="0 0 .2" size=".2 .2 .2" rgba="1 0 0 1"/>
  <body pos=".35 0 .55"><joint type="slide" axis="1 0 0"/><geom type="sphere" size=".12" rgba="0 1 0 1"/></body>
  <camera name="c" pos="0 -1.4 .45" xyaxes="1 0 0 0 .25 1"/>
</worldbody></mujoco>'''
model = mujoco.MjModel.from_xml_string(XML)
data = mujoco.MjData(model)
mujoco.mj_forward(model, data)
W, H = 96, 64

def shot(renderer):
    renderer.update_scene(data, camera="c")
    return renderer.render().copy()
"""


def test_mujoco_frames_unchanged_by_a_recorder_in_both_orders(tmp_path) -> None:
    need("mujoco")
    out = run_child(
        SETUP
        + f"""
results = {{}}
for order, renderer, before, rec in both_orders("mujoco", lambda: mujoco.Renderer(model, H, W), shot, r"{tmp_path}"):
    during = []
    for i in range(4):
        rec.render("plasma")
        during.append(shot(renderer))
    result = rec.close()
    after = shot(renderer)
    results[order] = frames_alongside(before, during, after, result)
    renderer.close()
done(**results)
""",
        MUJOCO_ENV,
    )
    assert_frames_alongside(out, 4, "MuJoCo")


def test_recording_mujocos_context_matches_its_frames(tmp_path) -> None:
    need("mujoco")
    out = run_child(
        SETUP
        + f"""
renderer = mujoco.Renderer(model, H, W)
first = shot(renderer)  # MuJoCo's context is current from here on

def draw(i):
    data.qpos[0] = -0.06 * i  # the ball slides: every frame differs
    mujoco.mj_forward(model, data)
    return shot(renderer)

figures, frames = record_current_context(r"{tmp_path}/mj.mkv", (W, H), draw, 6)
done(**figures, mujoco_after=bool((shot(renderer) == frames[-1]).all()))
""",
        MUJOCO_ENV,
    )
    assert_recorded_its_context(out, 6, "MuJoCo")
    assert out["mujoco_after"]


def test_halfcheetah_frames_with_a_recorder_and_recorded_from_its_context(tmp_path) -> None:
    need("mujoco", "gymnasium")
    out = run_child(
        f"""
import gymnasium as gym
import glrec

def episode(env, steps, each=None):
    env.reset(seed=3)
    env.action_space.seed(3)
    frames = [env.render().copy()]
    for _ in range(steps):
        env.step(env.action_space.sample())
        frames.append(env.render().copy())
        if each is not None:
            each()
    return frames

env = gym.make("HalfCheetah-v5", render_mode="rgb_array", width=96, height=64)
alone = episode(env, 5)
rec = glrec.Recorder(r"{tmp_path}/own.mp4", size=(64, 64))
with_recorder = episode(env, 5, each=lambda: rec.render("plasma"))
rec.close()
after = episode(env, 5)

# The env's renderer context is current after env.render(): record it.
rec = glrec.Recorder(r"{tmp_path}/cheetah.mkv", size=(96, 64), context="current", **LOSSLESS)
env.reset(seed=3)
env.action_space.seed(3)
shown = []
for _ in range(6):
    env.step(env.action_space.sample())
    shown.append(env.render().copy())
    rec.capture()
result = rec.close()
video = decode(result.path)
env.close()
done(
    mean=float(alone[0].mean()),
    same_with=all(bool((a == b).all()) for a, b in zip(alone, with_recorder)),
    same_after=all(bool((a == b).all()) for a, b in zip(alone, after)),
    frames=result.frames, decoded=len(video),
    psnr=[psnr(a, b) for a, b in zip(shown, video)],
)
""",
        MUJOCO_ENV,
        timeout=180,
    )
    assert out["mean"] > 20, "HalfCheetah's frame is black"
    assert out["same_with"] and out["same_after"]
    assert out["frames"] == out["decoded"] == 6
    assert min(out["psnr"]) >= 40, out["psnr"]


def test_a_dataset_stream_beside_mujoco_leaves_its_frames_and_current_context_alone() -> None:
    # The stream renders on its own thread and context, plans on two more threads and draws chunks into layered
    # targets; MuJoCo's frames on the main thread, between batches and after, are the ones it drew before.
    need("mujoco")
    out = run_child(
        SETUP
        + """
import ctypes
import numpy as np
import glrec.dataset
egl = ctypes.CDLL("libEGL.so.1")
egl.eglGetCurrentContext.restype = ctypes.c_void_p
renderer = mujoco.Renderer(model, H, W)
before = shot(renderer)
current = egl.eglGetCurrentContext()
spec = glrec.dataset.DatasetSpec.from_dict({
    "dataset": {"scene": "table", "samples": 12, "size": "64x48", "seed": 3},
    "params": {"objects": {"int": [2, 5]}, "camera_azimuth": {"uniform": [0, 360]}},
})
between, drawn = [], 0
with glrec.dataset.stream(spec, 4) as s:
    for batch in s:
        between.append(bool(np.array_equal(shot(renderer), before)))
        drawn += int((np.asarray(batch["instance"]) > 0).any(axis=(1, 2)).sum())
after = shot(renderer)
done(black=bool(before.max() == 0), between=between, after=bool(np.array_equal(after, before)),
     same_context=egl.eglGetCurrentContext() == current, drawn=drawn)
renderer.close()
""",
        MUJOCO_ENV,
    )
    assert not out["black"]
    assert out["between"] == [True, True, True] and out["after"]
    assert out["same_context"]
    assert out["drawn"] == 12  # every streamed sample has objects in its instance pass
