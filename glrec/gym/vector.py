"""``glrec.gym.RecordVectorVideo``: a Gymnasium ``VectorEnv``'s envs, each episode of each env in its own file.

Gymnasium's vector ``RecordVideo`` tiles every env into one picture, counts
episodes by env 0 and keeps the frames in a list until the video ends. This one
records each env's own episodes with the single-env wrapper's triggers and
names: ``episode_trigger(e)`` is asked for env i's episode e,
``step_trigger(s)`` starts a stretch of ``video_length`` steps in every
selected env, and the files are ``{name_prefix}-env{i}-episode-{e}.mp4`` and
``{name_prefix}-env{i}-step-{s}.mp4``. Frames stream to a
:class:`glrec.BatchRecorder` each step, so memory stays flat; a render that
returns one batch (an array or a CUDA tensor, as GPU simulators do) goes in as
it is, and a tuple of frames (``SyncVectorEnv``, ``AsyncVectorEnv``) without a
stack.

Where an episode ends follows the env's autoreset mode
(``env.metadata["autoreset_mode"]``):

- ``NEXT_STEP`` (Gymnasium's default): the frame after the terminating step is
  the episode's last; the next step only resets the env, and its frame is the
  next episode's first.
- ``SAME_STEP``: the env resets inside the terminating step, so the frame after
  it is already the next episode's first (the final frame is never rendered,
  as Gymnasium's own wrapper notes).
- ``DISABLED``: episodes start where ``reset(options={"reset_mask": mask})``
  resets the envs in ``mask``.

For all envs tiled into one video, use :class:`glrec.BatchRecorder` with
``layout="grid"``. Extra keywords are :class:`glrec.BatchRecorder` / :class:`glrec.Recorder` options.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

try:
    from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"glrec.gym needs Gymnasium: pip install glrec[gym] ({exc})") from exc

import numpy as np

from ..batch import BatchRecorder, BatchResult
from .record_video import episode_trigger_for

log = logging.getLogger("glrec")

__all__ = ["RecordVectorVideo"]


class RecordVectorVideo(VectorWrapper):
    """Record each env's episodes (or stretches of steps) of a vector env (see the module docstring).

    ``envs``: the envs recorded (indices, or a callable ``env -> bool``; default all).
    :attr:`results` holds the :class:`~glrec.BatchResult` of each finished recorder.

    >>> envs = gymnasium.make_vec("CartPole-v1", num_envs=8, render_mode="rgb_array")  # doctest: +SKIP
    >>> envs = glrec.gym.RecordVectorVideo(envs, "videos", episode_trigger=lambda e: e % 10 == 0)  # doctest: +SKIP
    """

    def __init__(
        self,
        env: VectorEnv,
        video_folder: str,
        episode_trigger: Callable[[int], bool] | None = None,
        step_trigger: Callable[[int], bool] | None = None,
        video_length: int = 0,
        name_prefix: str = "rl-video",
        fps: float | None = None,
        disable_logger: bool = True,
        *,
        envs: Sequence[int] | Callable[[int], bool] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(env)
        self.episode_trigger = episode_trigger_for(env, "RecordVectorVideo", episode_trigger, step_trigger)
        self.step_trigger = step_trigger
        self.video_length: float = video_length if video_length else float("inf")
        self.name_prefix = name_prefix
        self.disable_logger = disable_logger
        self.video_folder = os.path.abspath(video_folder)
        os.makedirs(self.video_folder, exist_ok=True)
        self.frames_per_sec = float(fps if fps is not None else self.metadata.get("render_fps", 30))
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        n = self.num_envs
        chosen = range(n) if envs is None else [i for i in range(n) if envs(i)] if callable(envs) else envs
        self.selected = sorted({int(i) for i in chosen})
        self.episode_id = [-1] * n  # each env's episode
        self.step_id = -1
        self.recording = [False] * n
        self.recorded_frames = [0] * n  # frames of each env's current video
        self._names: list[list[str]] = [[] for _ in range(n)]  # env's k-th video, as the recorder counts them
        self._pending = np.zeros(n, dtype=bool)  # NEXT_STEP: envs that reset at their next step
        self._options = {"fps": self.frames_per_sec, **options}
        self._recorder: BatchRecorder | None = None
        self.results: list[BatchResult] = []

    # -- the recorder and each env's videos

    def _path(self, env: int, k: int) -> str:
        return os.path.join(self.video_folder, f"{self._names[env][k]}.mp4")

    def _rec(self) -> BatchRecorder:
        if self._recorder is None:
            self._recorder = BatchRecorder(self._path, **self._options)
        return self._recorder

    def start_recording(self, env: int, video_name: str) -> None:
        """Start env ``env``'s video ``video_name`` (finishing the one it is recording first)."""
        if self.recording[env]:
            self.stop_recording(env)
        self._names[env].append(f"{self.name_prefix}-env{env}-{video_name}")
        self.recording[env] = True
        self.recorded_frames[env] = 0

    def stop_recording(self, env: int) -> None:
        """Finish env ``env``'s video (a video of no frames leaves no file)."""
        if not self.recording[env]:
            return
        self.recording[env] = False
        if self._recorder is not None and self._recorder.envs:
            self._recorder.end_episode(env)
        else:  # no frame was written: the recorder never counted this video
            self._names[env].pop()

    def _new_episode(self, env: int) -> None:
        self.episode_id[env] += 1
        if self.recording[env] and self.video_length == float("inf"):
            self.stop_recording(env)
        if self.episode_trigger is not None and self.episode_trigger(self.episode_id[env]):
            self.start_recording(env, f"episode-{self.episode_id[env]}")

    def _capture(self, only: Any = None) -> None:
        active = [i for i in self.selected if self.recording[i] and (only is None or only[i])]
        if not active:
            return  # no env records this step: nothing rendered
        frames = self.env.render()
        self._rec().write(frames, active=active)
        for i in active:
            self.recorded_frames[i] += 1
            if self.recorded_frames[i] > self.video_length:
                self.stop_recording(i)

    # -- the VectorEnv API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs (those of ``options["reset_mask"]``); each reset env starts an episode."""
        mask = None if options is None else options.get("reset_mask")  # read first: the vector env pops it
        if mask is not None:
            mask = np.array(mask, dtype=bool)
        obs, info = self.env.reset(seed=seed, options=options)
        for i in self.selected:
            if mask is None or mask[i]:
                self._new_episode(i)
        self._pending[:] = False if mask is None else self._pending & ~mask
        self._capture(mask)  # the envs reset now: the others' frames did not change
        return obs, info

    def step(self, actions: Any) -> Any:
        """Step every env (as the wrapped vector env does) and record the frame each recorded env shows after it."""
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        self.step_id += 1
        done = np.logical_or(terminations, truncations)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            starting, self._pending = self._pending.copy(), done.copy()
        elif self.autoreset_mode == AutoresetMode.SAME_STEP:
            starting = done
        else:  # DISABLED: episodes start at reset(options={"reset_mask": ...})
            starting = np.zeros(self.num_envs, dtype=bool)
        for i in self.selected:
            if starting[i]:
                self._new_episode(i)
        if self.step_trigger is not None and self.step_trigger(self.step_id):
            for i in self.selected:
                self.start_recording(i, f"step-{self.step_id}")
        self._capture()
        return obs, rewards, terminations, truncations, infos

    def close(self, **kwargs: Any) -> None:
        """Finish every video, then close the envs."""
        try:
            for i in self.selected:
                self.stop_recording(i)
            recorder, self._recorder = self._recorder, None
            if recorder is not None:
                result = recorder.close()
                self.results.append(result)
                if not self.disable_logger:
                    log.info("%s", result.summary())
        finally:
            super().close(**kwargs)

    @property
    def videos(self) -> list[str]:
        """The files written so far, in the order they were finished."""
        return [str(v.path) for r in self.results for v in r.videos]
