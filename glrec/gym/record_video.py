"""``glrec.gym.RecordVideo``: Gymnasium's ``RecordVideo`` wrapper, streaming frames to the encoder.

Gymnasium's own wrapper keeps every frame of a recording in a list and hands
the list to moviepy when the recording stops, so memory grows with the episode
(600x400 RGB is 0.7 MB a step) and the encode happens all at once at
``reset()``. This one takes the same arguments, triggers on the same episodes
and steps, writes the same file names (``{name_prefix}-episode-{N}.mp4``,
``{name_prefix}-step-{N}.mp4``) with the same number of frames, and writes each
frame to a :class:`glrec.Recorder` as it is rendered, so memory stays flat and
encoding overlaps the simulation. For Gymnasium's MuJoCo envs (``MUJOCO_GL=egl``)
it records the frame from MuJoCo's own framebuffer instead of the numpy copy
``env.render()`` reads back (see :mod:`glrec.gym.mujoco`; ``fast_path=False``
always records ``env.render()``'s frames).

>>> env = gymnasium.make("CartPole-v1", render_mode="rgb_array")  # doctest: +SKIP
>>> env = glrec.gym.RecordVideo(env, "videos", episode_trigger=lambda e: e % 10 == 0)  # doctest: +SKIP

Extra keywords are :class:`~glrec.Recorder` options (``crf``, ``preset``,
``codec``, ...). As Gymnasium's wrapper does, it replaces videos of the same
name in ``video_folder`` (``overwrite=False`` refuses instead), and odd frame
sizes are padded by repeating the edge (``pad=False`` raises instead).
Needs ``pip install glrec[gym]``.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable
from typing import Any, Generic, SupportsFloat, TypeVar

try:
    import gymnasium as gym
    from gymnasium import logger as gym_logger
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"glrec.gym needs Gymnasium: pip install glrec[gym] ({exc})") from exc

import numpy as np

from ..errors import ContextError
from ..recorder import Recorder
from ..result import RecordResult
from . import mujoco as gym_mujoco

__all__ = ["RecordVideo"]

log = logging.getLogger("glrec")
ObsType = TypeVar("ObsType")
ActType = TypeVar("ActType")


def _looks_like_frame(frame: object) -> bool:
    return isinstance(frame, np.ndarray) or any(
        hasattr(frame, name) for name in ("__array__", "__cuda_array_interface__", "__dlpack__")
    )


def episode_trigger_for(
    env: Any, wrapper: str, episode_trigger: Callable[[int], bool] | None, step_trigger: Callable[[int], bool] | None
) -> Callable[[int], bool] | None:
    """Refuse a render mode that makes no image, in Gymnasium's words; the episode trigger, Gymnasium's
    default schedule (``capped_cubic_video_schedule``) when neither trigger is given."""
    if env.render_mode in {None, "human", "ansi"}:
        raise ValueError(
            f"Render mode is {env.render_mode}, which is incompatible with {wrapper}. "
            "Initialize your environment with a render_mode that returns an image, such as rgb_array."
        )
    if episode_trigger is None and step_trigger is None:
        from gymnasium.utils.save_video import capped_cubic_video_schedule

        return capped_cubic_video_schedule
    return episode_trigger


class RecordVideo(gym.Wrapper[ObsType, ActType, ObsType, ActType], Generic[ObsType, ActType],
                  gym.utils.RecordConstructorArgs):  # fmt: skip
    """Record episodes (or stretches of steps) of ``env`` to video files, frame by frame.

    Arguments as :class:`gymnasium.wrappers.RecordVideo`: without ``episode_trigger`` and
    ``step_trigger``, Gymnasium's ``capped_cubic_video_schedule`` picks the episodes;
    ``video_length`` 0 records whole episodes, otherwise stretches of that many steps (plus
    the frame that starts them, as Gymnasium counts); ``fps`` defaults to the env's
    ``render_fps``, else 30. ``disable_logger=False`` logs each finished video on the
    ``glrec`` logger; ``gc_trigger`` runs the garbage collector after a video when it
    returns True (Gymnasium frees its frame list that way; here there is none, so the
    default is never). :attr:`videos` lists the finished recordings. ``fast_path`` (default
    True) lets a Gymnasium MuJoCo env's frames be recorded from MuJoCo's framebuffer
    (:mod:`glrec.gym.mujoco`); False records ``env.render()``'s frames for every env.
    """

    def __init__(
        self,
        env: gym.Env[ObsType, ActType],
        video_folder: str,
        episode_trigger: Callable[[int], bool] | None = None,
        step_trigger: Callable[[int], bool] | None = None,
        video_length: int = 0,
        name_prefix: str = "rl-video",
        fps: float | None = None,
        disable_logger: bool = True,
        gc_trigger: Callable[[int], bool] | None = None,
        *,
        overwrite: bool = True,
        fast_path: bool = True,
        **options: Any,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, video_folder=video_folder, episode_trigger=episode_trigger, step_trigger=step_trigger,
            video_length=video_length, name_prefix=name_prefix, fps=fps, disable_logger=disable_logger,
            gc_trigger=gc_trigger, overwrite=overwrite, fast_path=fast_path, **options,
        )  # fmt: skip
        gym.Wrapper.__init__(self, env)
        self.episode_trigger = episode_trigger_for(env, "RecordVideo", episode_trigger, step_trigger)
        self.step_trigger = step_trigger
        self.disable_logger = disable_logger
        self.gc_trigger = gc_trigger
        self.video_folder = os.path.abspath(video_folder)
        if os.path.isdir(self.video_folder) and overwrite:
            gym_logger.warn(
                f"Overwriting existing videos at {self.video_folder} folder "
                "(try specifying a different `video_folder` for the `RecordVideo` wrapper if this is not desired)"
            )
        os.makedirs(self.video_folder, exist_ok=True)
        self.frames_per_sec: float = fps if fps is not None else self.metadata.get("render_fps", 30)
        self.name_prefix = name_prefix
        self.video_length: float = video_length if video_length != 0 else float("inf")
        self.recording = False
        self.render_history: list[Any] = []
        self.step_id = -1
        self.episode_id = -1
        self.videos: list[RecordResult] = []
        self._overwrite = overwrite
        self._options = {"pad": True, **options}
        self._recorder: Recorder | None = None
        self._video_name: str | None = None
        self._video_path = ""
        # MuJoCo's framebuffer as the source, unless the caller fixed the recorder's context or size itself.
        usable = fast_path and not {"context", "size"} & set(options)
        self._mujoco = gym_mujoco.find(env) if usable else None
        self._mujoco_verified = False  # set once a frame drawn for recording equalled env.render()'s
        self._in_mujoco = False  # whether self._recorder records in MuJoCo's context

    @property
    def frames_recorded(self) -> int:
        """Frames written to the video being recorded (0 when not recording)."""
        return self._recorder.frames_submitted if self._recorder is not None else 0

    def _capture_frame(self) -> None:
        assert self.recording, "Cannot capture a frame, recording wasn't started."
        if self._mujoco_verified and self._from_mujoco(drawn=False):
            return
        frame = self.env.render()
        if isinstance(frame, list):
            if len(frame) == 0:
                gym_logger.warn(
                    "Trying to capture render frame but 'env.render()' has just been called. "
                    "The frame cannot be captured."
                )
                return
            self.render_history += frame
            frame = frame[-1]
        if not _looks_like_frame(frame):
            self.stop_recording()
            gym_logger.warn(f"Recording stopped: expected an image array from render, got instead {type(frame)}.")
            return
        if self._mujoco is not None and not self._mujoco_verified:  # the first frame decides
            if self._mujoco.verify(frame):  # which drew it again: it is in MuJoCo's framebuffer now
                self._mujoco_verified = True
                if self._from_mujoco(drawn=True):
                    return
            else:
                self._mujoco = None
        self._write(frame)

    def _from_mujoco(self, drawn: bool) -> bool:
        """Record the frame from MuJoCo's framebuffer; False when no recorder can work in MuJoCo's context."""
        assert self._mujoco is not None
        if self._recorder is None:
            try:
                self._recorder = self._mujoco.open(self._video_path, **self._recorder_options())
            except ContextError as exc:
                log.debug("glrec.gym: recording env.render() frames: no recorder in MuJoCo's context: %s", exc)
                self._mujoco, self._mujoco_verified = None, False
                return False
            self._in_mujoco = True
        self._mujoco.record(self._recorder, draw=not drawn)
        return True

    def _recorder_options(self) -> dict[str, Any]:
        return {"fps": self.frames_per_sec, "overwrite": self._overwrite, **self._options}

    def _write(self, frame: object) -> None:
        if self._recorder is None:
            self._recorder = Recorder(self._video_path, **self._recorder_options())
        self._recorder.write(frame)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Reset the environment and, when the trigger says so, start a new recording."""
        obs, info = super().reset(seed=seed, options=options)
        self.episode_id += 1
        if self.recording and self.video_length == float("inf"):
            self.stop_recording()
        if self.episode_trigger and self.episode_trigger(self.episode_id):
            self.start_recording(f"{self.name_prefix}-episode-{self.episode_id}")
        if self.recording:
            self._capture_frame()
            if self.frames_recorded > self.video_length:
                self.stop_recording()
        return obs, info

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the environment and record the frame after the step while recording."""
        obs, rew, terminated, truncated, info = self.env.step(action)
        self.step_id += 1
        if self.step_trigger and self.step_trigger(self.step_id):
            self.start_recording(f"{self.name_prefix}-step-{self.step_id}")
        if self.recording:
            self._capture_frame()
            if self.frames_recorded > self.video_length:
                self.stop_recording()
        return obs, rew, terminated, truncated, info

    def render(self) -> Any:
        """The env's render output; in ``rgb_array_list`` mode the frames are recorded too while recording."""
        render_out = super().render()
        if self.recording and isinstance(render_out, list):
            for frame in render_out:
                self._write(frame)
        if self.render_history:
            history, self.render_history = self.render_history, []
            return history + render_out  # type: ignore[operator]
        return render_out

    def close(self) -> None:
        """Close the environment, then finish the video being recorded."""
        if self.recording and self._in_mujoco:  # MuJoCo's context goes with the env: finish the video first
            self.stop_recording()
        super().close()
        if self.recording:
            self.stop_recording()

    def start_recording(self, video_name: str) -> None:
        """Start recording ``video_folder/video_name.mp4`` (finishing the one being recorded first)."""
        if self.recording:
            self.stop_recording()
        self._video_path = os.path.join(self.video_folder, f"{video_name}.mp4")
        # A MuJoCo env's recorder is made at the first frame, in MuJoCo's context (or not, should that fail).
        self._recorder = None if self._mujoco is not None else Recorder(self._video_path, **self._recorder_options())
        self.recording = True
        self._video_name = video_name

    def stop_recording(self) -> None:
        """Finish the video being recorded (a video of no frames leaves no file, with a warning)."""
        assert self.recording, "stop_recording was called, but no recording was started"
        recorder, self._recorder = self._recorder, None
        self.recording, self._in_mujoco = False, False
        self._video_name = None
        empty = recorder is None or recorder.frames_submitted == 0
        result = recorder.close() if recorder is not None else None
        if empty or result is None:
            gym_logger.warn("Ignored saving a video as there were zero frames to save.")
        else:
            self.videos.append(result)
            if not self.disable_logger:
                log.info("%s", result.summary())
        if self.gc_trigger and self.gc_trigger(self.episode_id):
            gc.collect()

    def __del__(self) -> None:
        # glrec finishes an open recorder at exit itself; say so, as Gymnasium's wrapper warns of its lost video.
        if getattr(self, "_recorder", None) is not None:
            gym_logger.warn("The last video was not finished: call close() (glrec finishes it at exit).")
