"""glrec.gym's fast path for Gymnasium's MuJoCo envs: record MuJoCo's offscreen framebuffer where it lies.

A ``MujocoEnv`` in ``rgb_array`` mode renders through Gymnasium's offscreen
viewer: ``mjv_updateScene``, ``mjr_render`` into MuJoCo's (multisampled)
offscreen framebuffer, then ``mjr_readPixels`` of colour *and* depth to the
host, flipped into a numpy array, which a recorder would upload to GL again.
:class:`MujocoFrames` draws the frame the same way but stops before the read
back, and a :class:`~glrec.Recorder` made with ``context="current"`` inside
MuJoCo's EGL context copies it from that framebuffer with
:meth:`~glrec.Recorder.capture` (the blit resolves the multisampling as
``mjr_readPixels`` does). The frame reaches host memory only as the encoder's
YUV (on NVIDIA, with a CUDA handoff, not at all).

It is used only where the recording equals ``env.render()``: the env's
``render``, its renderer and its offscreen viewer are Gymnasium's own
classes; every wrapper in between passes ``render()`` through unchanged;
MuJoCo draws with EGL (``MUJOCO_GL=egl``); and, once, the first frame drawn
this way is read back and found equal to what ``env.render()`` returned.
:func:`find` and :meth:`MujocoFrames.verify` log why not at debug, and the
wrapper then records ``env.render()``'s frames as for any env.

MuJoCo's EGL context stays what Gymnasium left current (its renderer never
makes it current again after creating it): when another context is current
at a step, MuJoCo's is made current for the frame and the other one put back.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import ContextError
from ..gl import egl
from ..recorder import Recorder

log = logging.getLogger("glrec")

#: The render mode whose output is the offscreen viewer's RGB frame.
_MODE = "rgb_array"


def find(env: Any) -> MujocoFrames | None:
    """A :class:`MujocoFrames` for ``env`` (a wrapper chain) when its frames can be drawn as its render() does."""
    why = _unsupported(env)
    if why:
        log.debug("glrec.gym: recording env.render() frames: %s", why)
        return None
    return MujocoFrames(env.unwrapped.mujoco_renderer)


def _unsupported(env: Any) -> str | None:
    """Why ``env``'s frames cannot be taken from MuJoCo's framebuffer, or None when they can."""
    # Present exactly when a MuJoCo env exists: nothing is imported for other envs.
    envs = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")
    rendering = sys.modules.get("gymnasium.envs.mujoco.mujoco_rendering")
    if envs is None or rendering is None or not isinstance(env.unwrapped, envs.MujocoEnv):
        return "not a Gymnasium MujocoEnv"
    base = env.unwrapped
    if type(base).render is not envs.MujocoEnv.render:
        return f"{type(base).__name__} overrides render()"
    if base.render_mode != _MODE:
        return f"render_mode is {base.render_mode!r}, not {_MODE!r}"
    renderer = getattr(base, "mujoco_renderer", None)
    if type(renderer) is not rendering.MujocoRenderer:
        return f"its mujoco_renderer is a {type(renderer).__name__}, not Gymnasium's MujocoRenderer"
    from gymnasium import Wrapper
    from gymnasium.wrappers.common import OrderEnforcing, PassiveEnvChecker

    # Wrappers whose render() returns the inner env's frame untouched (the checks they make passed at reset).
    passing = {Wrapper.render, OrderEnforcing.render, PassiveEnvChecker.render}
    layer = env
    while isinstance(layer, Wrapper):
        if type(layer).render not in passing:
            return f"wrapper {type(layer).__name__} has its own render()"
        layer = layer.env
    return None


class MujocoFrames:
    """Draws a Gymnasium MuJoCo env's frame into MuJoCo's offscreen framebuffer, as ``env.render()`` does.

    Make it with :func:`find`; :meth:`verify` once against a frame ``env.render()``
    just returned, then :meth:`open` recorders in MuJoCo's context and :meth:`record`
    each frame into them.
    """

    def __init__(self, renderer: Any) -> None:
        self._renderer = renderer  # Gymnasium's MujocoRenderer
        self._viewer: Any = None  # its offscreen viewer, once verified
        self._context = 0  # MuJoCo's EGL context, once verified

    @property
    def size(self) -> tuple[int, int]:
        """The frame's width and height (the viewer's viewport)."""
        viewport = self._viewer.viewport
        return int(viewport.width), int(viewport.height)

    def verify(self, frame: object) -> bool:
        """Whether a frame drawn here equals ``frame``, what ``env.render()`` returned for the same state.

        Call right after that ``env.render()``. Draws once more and reads the
        colour back (the one host copy the fast path ever makes), so a Gymnasium
        or MuJoCo version that renders differently keeps the plain path.
        """
        rendering = sys.modules["gymnasium.envs.mujoco.mujoco_rendering"]
        viewer = self._renderer._viewers.get(_MODE)
        if type(viewer) is not rendering.OffScreenViewer:
            return _no(f"the offscreen viewer is a {type(viewer).__name__}, not Gymnasium's OffScreenViewer")
        if viewer.backend != "egl":
            return _no(f"MuJoCo renders with MUJOCO_GL={viewer.backend}; glrec records EGL contexts (MUJOCO_GL=egl)")
        width, height = int(viewer.viewport.width), int(viewer.viewport.height)
        if not isinstance(frame, np.ndarray) or frame.shape != (height, width, 3) or frame.dtype != np.uint8:
            return _no(f"env.render() returned {type(frame).__name__} {getattr(frame, 'shape', '')}, not the viewport")
        self._viewer = viewer
        previous = egl.Binding.current()
        viewer.make_context_current()
        self._context = egl.current_context()
        try:
            import mujoco

            self._draw(viewer)
            rgb = np.empty((height, width, 3), np.uint8)
            mujoco.mjr_readPixels(rgb, None, viewer.viewport, viewer.con)
        finally:
            self._put_back(previous)
        if not np.array_equal(rgb[::-1], frame):
            self._viewer = None
            diff = int(np.abs(rgb[::-1].astype(np.int16) - frame).max())
            return _no(f"a frame drawn without read-back differs from env.render()'s (by up to {diff})")
        return True

    def open(self, path: str, **options: Any) -> Recorder:
        """A Recorder in MuJoCo's context for ``path`` (``context="current"``, the viewer's size)."""
        with self._current():
            rec = Recorder(path, size=self.size, context="current", **options)
        log.debug("glrec.gym: recording %dx%d frames from MuJoCo's offscreen framebuffer", *self.size)
        return rec

    def record(self, rec: Recorder, *, draw: bool = True) -> None:
        """Draw the env's current state and record it as ``rec``'s next frame (``draw=False``: already drawn)."""
        with self._current() as viewer:
            if draw:
                self._draw(viewer)
            rec.capture(fbo=viewer.con.offFBO)

    @contextmanager
    def _current(self) -> Iterator[Any]:
        # What env.render() does first: Gymnasium's renderer hands out (and, when it holds several, makes
        # current) its viewer for the mode.
        viewer = self._renderer._get_viewer(render_mode=_MODE)
        if viewer is not self._viewer:
            raise ContextError(
                "The MuJoCo env's offscreen viewer changed during the recording (was the env closed?); "
                "finish the recording before closing or re-creating the env's renderer."
            )
        previous = egl.Binding.current()
        switch = previous.context != self._context
        if switch:
            viewer.make_context_current()
        try:
            yield viewer
        finally:
            if switch:
                self._put_back(previous)

    def _put_back(self, previous: egl.Binding) -> None:
        if previous.context != self._context:
            previous.make_current(release_on=egl.Binding.current().display)

    def _draw(self, viewer: Any) -> None:
        """The drawing half of Gymnasium's ``OffScreenViewer.render`` for rgb_array: scene, markers, overlays."""
        import mujoco

        camera = self._renderer.camera_id
        if camera is not None:
            viewer.cam.type = mujoco.mjtCamera.mjCAMERA_FREE if camera == -1 else mujoco.mjtCamera.mjCAMERA_FIXED
            viewer.cam.fixedcamid = camera
        mujoco.mjv_updateScene(
            viewer.model, viewer.data, viewer.vopt, viewer.pert, viewer.cam, mujoco.mjtCatBit.mjCAT_ALL, viewer.scn
        )
        for marker in viewer._markers:
            viewer._add_marker_to_scene(marker)
        mujoco.mjr_render(viewer.viewport, viewer.scn, viewer.con)
        for grid, (left, right) in viewer._overlays.items():
            font = mujoco.mjtFontScale.mjFONTSCALE_150
            mujoco.mjr_overlay(font, grid, viewer.viewport, left.encode(), right.encode(), viewer.con)
        viewer._markers.clear()  # markers last one frame, as env.render() treats them


def _no(why: str) -> bool:
    log.debug("glrec.gym: recording env.render() frames: %s", why)
    return False
