"""glrec next to pyrender + trimesh (``PYOPENGL_PLATFORM=egl``) in one process and one thread.

- pyrender's frames before, while and after a recorder exists are identical,
  in both creation orders (the bug: ``GLError 1282 glGenVertexArrays``).
- ``renderer.delete()`` terminates pyrender's EGL display; glrec's own context
  lives on a display of its own and keeps recording.
- ``context="current"`` inside pyrender's context records what it drew
  (PSNR >= 40 dB at lossless settings, upright), pyrender's GL state unchanged.
"""

from __future__ import annotations

import pytest
from gl_child import assert_frames_alongside, assert_recorded_its_context, need, run_child

pytestmark = pytest.mark.gl

PYRENDER_ENV = {"PYOPENGL_PLATFORM": "egl"}

SETUP = """
import numpy as np, trimesh, pyrender
W, H = 96, 64

def make_scene(shift=0.0):
    scene = pyrender.Scene(bg_color=[0.1, 0.2, 0.3, 1.0], ambient_light=[0.2, 0.2, 0.2])
    box = trimesh.creation.box(extents=(1, 1, 1))
    box.visual.face_colors = [255, 40, 40, 255]
    at = np.eye(4)
    at[0, 3] = shift
    scene.add(pyrender.Mesh.from_trimesh(box, smooth=False), pose=at)
    ball = trimesh.creation.icosphere(radius=0.3)
    ball.visual.face_colors = [40, 255, 40, 255]
    at = np.eye(4)
    at[:2, 3] = 1.1, 0.7  # up and to the right
    scene.add(pyrender.Mesh.from_trimesh(ball, smooth=False), pose=at)
    pose = np.eye(4); pose[2, 3] = 3.5
    scene.add(pyrender.PerspectiveCamera(yfov=0.9), pose=pose)
    scene.add(pyrender.DirectionalLight(intensity=3.0), pose=pose)
    return scene

scene = make_scene()

def shot(renderer, s=None):
    colour, _ = renderer.render(s or scene)
    return colour.copy()
"""


def test_pyrender_frames_unchanged_by_a_recorder_in_both_orders(tmp_path) -> None:
    need("pyrender", "trimesh")
    out = run_child(
        SETUP
        + f"""
results = {{}}
for order, renderer, before, rec in both_orders("pyrender", lambda: pyrender.OffscreenRenderer(W, H), shot,
                                                r"{tmp_path}"):
    during = []
    for i in range(3):
        rec.render("cube")
        during.append(shot(renderer))
    renderer.delete()  # terminates pyrender's EGL display; glrec's context is on its own
    rec.render("cube")
    renderer = pyrender.OffscreenRenderer(W, H)  # a new one after the old display went
    rec.render("cube")
    after = shot(renderer)
    renderer.delete()
    result = rec.close()
    results[order] = frames_alongside(before, during, after, result)
done(**results)
""",
        PYRENDER_ENV,
    )
    assert_frames_alongside(out, 5, "pyrender")


def test_recording_pyrenders_context_matches_its_frames(tmp_path) -> None:
    need("pyrender", "trimesh")
    out = run_child(
        SETUP
        + f"""
renderer = pyrender.OffscreenRenderer(W, H)
shot(renderer)  # pyrender's context is current from here on (it never releases it)
# capture() reads what pyrender leaves bound for reading: its resolved colour framebuffer.
figures, frames = record_current_context(
    r"{tmp_path}/pr.mkv", (W, H), lambda i: shot(renderer, make_scene(shift=-0.15 * i)), 5
)
again = shot(renderer, make_scene(shift=-0.6))
renderer.delete()
done(**figures, pyrender_after=bool((again == frames[-1]).all()))
""",
        PYRENDER_ENV,
    )
    assert_recorded_its_context(out, 5, "pyrender")
    assert out["pyrender_after"]
