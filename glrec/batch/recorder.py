"""``glrec.BatchRecorder``: a vectorised simulator's steps, ``(N, H, W, C)`` each, into N files, a grid or clips.

Per step, :meth:`BatchRecorder.write` checks the batch (:mod:`.frames`), hands
it to the route of the chosen encoder (:mod:`.routes`, :mod:`.gl_route`), and
queues each env's frame for the worker that owns the env (:mod:`.pool`), which
encodes it into the env's file or ring (:mod:`.stream`). The grid layout tiles
the step (:mod:`.grid`) into one :class:`glrec.Recorder`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from .._lifecycle import deferred_signals, track, untrack
from ..encoders.options import RateOptions
from ..errors import ConfigError, GlrecError, RecorderClosedError
from ..options import split_options, with_output_codec
from ..sinks.paths import check_output_path
from ..sinks.registry import output_kind
from ..timebase import frame_rate
from .frames import Batch, BatchShape, CudaBatch, active_envs, inspect_batch
from .grid_stream import GridStream
from .mux_procs import ProcessPool, choose_pool
from .names import PathLike, has_field, namer, segment_frames
from .plan import FILES_PIPELINE, plan_files, video_options
from .pool import POLICIES, Backpressure, EncodePool
from .result import BatchResult, BatchVideo
from .ring import GopRing
from .routes import Route
from .stream import EnvStream

log = logging.getLogger("glrec")

Layout = Literal["files", "grid"]
#: Where env frames come from: fixed by the first batch (auto), or promised (a batch elsewhere is refused).
DeviceKind = Literal["auto", "host", "cuda"]


class BatchRecorder:
    """Record ``(N, H, W, C)`` uint8 batches, one per step, into per-env files, a grid, or clips kept by outcome.

    ``path``: for ``layout="files"`` a pattern with ``{env}`` (and ``{episode}`` for a file per
    episode), e.g. ``"videos/env{env:02d}-ep{episode}.mp4"``, or a callable ``(env, episode) -> path``;
    for ``layout="grid"`` one path. ``envs``: the envs recorded (default all): indices, or a callable
    ``env -> bool``. Frames: numpy, a sequence of N host frames, or a CUDA tensor (PyTorch, CuPy,
    JAX via DLPack); the size, N and C are fixed by the first batch. Other keywords are
    :class:`glrec.Recorder`'s options (``codec``, ``encoder``, ``crf``, ``preset``, ``quality``, ...).

    ``keep=lambda info: ...`` (or ``ring_seconds=``) records clips instead of whole files: each env
    encodes into a ring of GOPs holding ``ring_seconds`` (default 60) and at most ``ring_bytes``
    (default 64 MiB) per env; :meth:`end_episode` keeps the episode as a file where ``keep(info)``
    is true, and :meth:`save_last` writes an env's last seconds. ``backpressure`` is ``block``
    (default), ``drop`` or ``repeat`` (see :mod:`glrec.batch.pool`), with ``abort_after`` frames
    of one env behind in a row raising EncoderError. ``workers``: encode threads (default: the
    cores for the CPU encoders and NVENC; where the GPU made the JPEGs and the workers only mux,
    one thread, and from 16 envs on 2 processes: :mod:`glrec.batch.mux_procs`). ``labels=True``
    draws each grid tile's env index (and :meth:`write`'s ``labels``). ``segment_seconds``: each
    env's file is cut every that many seconds of video, ``{part}`` in the name numbering them (as
    FFmpeg's segment muxer): normal files, and the muxers' indexes stay bounded however long.

    >>> with glrec.BatchRecorder("videos/env{env}.mp4", fps=30) as rec:  # doctest: +SKIP
    ...     for _ in range(300):
    ...         rec.write(envs.render())  # (N, H, W, 3)
    """

    def __init__(
        self,
        path: PathLike | Callable[[int, int], PathLike],
        *,
        fps: float = 30.0,
        layout: Layout = "files",
        envs: Sequence[int] | Callable[[int], bool] | None = None,
        keep: Callable[[Any], bool] | None = None,
        ring_seconds: float | None = None,
        ring_bytes: int = 64 << 20,
        backpressure: Backpressure = "block",
        abort_after: int | None = None,
        workers: int | None = None,
        queue_steps: int = 4,
        segment_seconds: float | None = None,
        labels: bool = False,
        device: DeviceKind = "auto",
        overwrite: bool = True,
        **options: Any,
    ) -> None:
        if layout not in ("files", "grid"):
            raise ConfigError(f"Unknown layout {layout!r}. Valid: files, grid.")
        if backpressure not in POLICIES:
            raise ConfigError(f"Unknown backpressure {backpressure!r}. Valid: {', '.join(POLICIES)}.")
        if device not in ("auto", "host", "cuda"):
            raise ConfigError(f"Unknown device {device!r}. Valid: auto, host, cuda.")
        self.fps = float(frame_rate(fps))
        self.layout = layout
        self._video, self._pipeline = split_options(options)  # unknown names raise here
        if isinstance(path, (str, os.PathLike)):  # the codec the extension implies, as Recorder takes it
            self._video = with_output_codec(self._video, os.fspath(path))
        clips = keep is not None or ring_seconds is not None
        if layout == "grid":
            self._check_grid(path, clips, backpressure)
        else:
            if set(self._pipeline) - set(FILES_PIPELINE):
                extra = sorted(set(self._pipeline) - set(FILES_PIPELINE))
                raise ConfigError(f"{', '.join(extra)} configure the single-stream pipeline; per-env files take "
                                  f"only {', '.join(FILES_PIPELINE)} of those (the grid takes them all).")  # fmt: skip
            self._namer = namer(path)
        self.path = path
        self._select = envs
        self._keep = keep
        self._ring = (ring_seconds if ring_seconds is not None else 60.0, int(ring_bytes)) if clips else None
        self._segment = segment_frames(path, segment_seconds, self.fps, layout=layout, clips=clips)
        self._backpressure: Backpressure = backpressure
        self._abort_after = abort_after
        self._workers = workers
        self._queue_steps = queue_steps
        self._labels = labels
        self._overwrite = overwrite
        self._shape: BatchShape | None = None
        if device != "auto":
            self._promised = device
        self.steps = 0
        self.frames = 0
        self._route: Route | None = None
        self._pool: EncodePool | None = None
        self._grid: GridStream | None = None
        self._episodes: dict[int, int] = {}
        self._closed = False
        self._started = time.perf_counter()
        self._encoder_name = "none"
        self._codec = str(self._video.get("codec") or "h264")
        self._result: BatchResult | None = None
        track(self)  # finished at interpreter exit if nobody closes it

    _promised: str | None = None
    _selection: list[int]

    def _check_grid(self, path: object, clips: bool, backpressure: str) -> None:
        if not isinstance(path, (str, os.PathLike)) or "{" in os.fspath(path):
            raise ConfigError("layout='grid' writes one video: give one path, without {env} or {episode}.")
        if clips:
            raise ConfigError("keep= and ring_seconds= cut clips per env; use layout='files' for them.")
        if backpressure == "repeat":
            raise ConfigError("backpressure 'repeat' is for per-env files; for the grid use 'drop' (a dropped "
                              "step leaves the previous picture on screen for its time) or 'block'.")  # fmt: skip

    # -- steps

    @property
    def envs(self) -> int:
        """N, fixed by the first batch (0 before it)."""
        return self._shape.envs if self._shape is not None else 0

    def write(self, frames: object, *, active: Sequence[int] | Sequence[bool] | None = None,
              labels: Sequence[object] | None = None) -> int:  # fmt: skip
        """Record one step: ``frames`` is ``(N, H, W, C)`` (see the class docstring); returns the step index.

        ``active``: the envs recorded this step (indices or a mask of N; default the selected
        envs), e.g. only those whose episode is being recorded. ``labels``: per env a value drawn
        beside its index on the grid (an episode return). A batch of the wrong shape, dtype, N or
        device raises ConfigError and records nothing; the recording stays open. The caller may
        reuse or free ``frames`` when this returns.
        """
        self._check_open()
        batch = inspect_batch(frames)
        try:
            self._check(batch)
            if self._shape is None:
                self._start(batch)
            chosen = self._active(active)
            if self._grid is not None:
                self._grid.write(batch, labels)
            else:
                self._write_files(batch, chosen)
        except GlrecError as exc:
            if isinstance(exc, ConfigError) and self._shape is not None:
                raise  # a bad batch: nothing of it was queued, the recording goes on
            self._stop_after(exc)
            raise
        finally:
            batch.release()
        self.frames += len(chosen) if self.layout == "files" else self.envs
        self.steps += 1
        return self.steps - 1

    def _check(self, batch: Batch) -> None:
        if self._promised is not None and batch.kind != self._promised:
            where = "device=" if self._shape is None else "first batch"
            hint = "tensor.cuda()" if self._promised == "cuda" else "tensor.cpu() or numpy"
            raise ConfigError(f"Step {self.steps} is a {batch.kind} batch; this recording takes {self._promised} "
                              f"batches (its {where}). Pass every step the same way ({hint}).")  # fmt: skip
        if self._shape is not None:
            self._shape.check(batch, self.steps)
        self._promised = batch.kind

    def _selected(self, n: int) -> list[int]:
        select = self._select
        if select is None:
            return list(range(n))
        if callable(select):
            return [i for i in range(n) if select(i)]
        chosen = sorted({int(i) for i in select})
        bad = [i for i in chosen if not 0 <= i < n]
        if bad:
            raise ConfigError(f"envs {bad} are outside this batch's 0..{n - 1}.")
        return chosen

    def _active(self, active: Sequence[int] | Sequence[bool] | None) -> list[int]:
        assert self._shape is not None
        return active_envs(active, self._shape.envs, self._selection)

    def _start(self, batch: Batch) -> None:
        """The first batch: N, size and device are known; plan the route, open the pool (nothing written yet)."""
        shape = BatchShape.of(batch)
        self._selection = self._selected(shape.envs)
        if self.layout == "grid":
            cuda = batch.device if isinstance(batch, CudaBatch) else None
            options = {**self._video, **self._pipeline, "fps": self.fps}
            assert isinstance(self.path, (str, os.PathLike))  # checked by _check_grid
            self._grid = GridStream(os.fspath(self.path), shape, options, overwrite=self._overwrite,
                                    drop=self._backpressure == "drop", labels=self._labels,
                                    cuda_device=cuda)  # fmt: skip
            self._shape = shape
            return
        opts = video_options(self._video, shape, self.fps)
        if isinstance(self.path, (str, os.PathLike)):
            output_kind(os.fspath(self.path), opts.codec)  # the extension takes the codec
        if opts.codec == "gif" and (self._ring is not None or self._segment is not None):
            raise ConfigError("Clips and segments are cut at keyframes, and a GIF has one, its first frame: "
                              "record clips and segments as .mp4 (codec h264).")  # fmt: skip
        if self._ring is not None and opts.codec not in ("mjpeg", "png"):  # JPEG and PNG: every frame a keyframe
            # Clips cut at keyframes: one a second, and the ones asked for are IDR (a clip starts there).
            rate = opts.table(RateOptions)
            extra = dict(rate.encoder_options)
            extra.setdefault("forced-idr", "1")
            opts = video_options({**self._video, "gop": rate.gop or max(1, round(self.fps)),
                                  "encoder_options": extra}, shape, self.fps)  # fmt: skip
        patterned = isinstance(self.path, (str, os.PathLike))  # a callable names files as they come
        for env in self._selection if patterned else ():  # an output that cannot be written: refused now
            first = Path(self._namer(env, 0, 0))
            first.parent.mkdir(parents=True, exist_ok=True)
            check_output_path(first, self._overwrite)
        if opts.encoder == "nvenc" and self._backpressure == "repeat":
            raise ConfigError("backpressure 'repeat' encodes an env's last frame again, which per-env NVENC does not "
                              "keep (its device slot is reused once encoded); use 'block' or 'drop'.")  # fmt: skip
        route, facts = plan_files(opts, shape, self._pipeline, len(self._selection))
        self._route, self._encoder_name, self._codec = route, route.name, facts.codec
        self._shape = shape

        ring = None if self._ring is None else (max(1, round(self._ring[0] * self.fps)), self._ring[1])

        def make_stream(env: int) -> EnvStream:
            return EnvStream(env, facts, route.stream_encoder, self._namer, overwrite=self._overwrite,
                             split_episodes=has_field(self.path, "episode"),
                             ring=GopRing(*ring) if ring is not None else None, segment=self._segment)  # fmt: skip

        self._pool = choose_pool(route, shape.envs, len(self._selection), self.path, facts, make_stream,
                                 workers=self._workers, ring=ring, segment=self._segment, overwrite=self._overwrite,
                                 queue_steps=self._queue_steps, backpressure=self._backpressure,
                                 abort_after=self._abort_after)  # fmt: skip
        # Still nothing written after a failure here: the pool and the route go with the recorder.
        log.info("batch: %d envs %dx%d, %d recorded into files via %s, %d %s", shape.envs, *shape.size,
                 len(self._selection), route.name, self._pool.workers,
                 "processes" if isinstance(self._pool, ProcessPool) else "workers")  # fmt: skip

    def _write_files(self, batch: Batch, active: list[int]) -> None:
        assert self._route is not None and self._pool is not None
        self._pool.hand_on(self._route.frames(batch, active, self.steps))

    # -- episodes and clips

    def end_episode(self, env: int, info: Any = None) -> None:
        """Env ``env``'s episode ended with its last written frame.

        Files named with ``{episode}``: its file is finished, the next frame starts the next one.
        Clips: ``keep(info)`` decides whether the episode (from its first frame, a keyframe) is
        written. Otherwise (one file per env, the grid) the episode is only counted.
        """
        self._check_open()
        self._episodes[env] = self._episodes.get(env, 0) + 1
        if self._pool is None:
            return
        keep = bool(self._keep(info)) if self._keep is not None else False
        self._pool.marker(self.steps - 1, "end_episode", env, keep, None)

    def save_last(self, seconds: float, env: int, path: PathLike | None = None) -> Path:
        """Write env ``env``'s last ``seconds`` (from the keyframe at or before them) to ``path``.

        Needs clips (``keep=`` or ``ring_seconds=``). The file is complete at the next keyframe
        (asked for at the env's next frame) or at :meth:`close`. Returns the path.
        """
        self._check_open()
        if self._ring is None or self._pool is None:
            raise ConfigError("save_last cuts from the ring of encoded GOPs: make the recorder with ring_seconds= "
                              "(or keep=), and write a step first.")  # fmt: skip
        episode = self._episodes.get(env, 0)
        target = (
            Path(path)
            if path is not None
            else Path(self._namer(env, episode, 0)).with_stem(
                f"{Path(self._namer(env, episode, 0)).stem}-last{self.steps}"
            )
        )
        self._pool.marker(self.steps - 1, "save_last", env, max(1, round(seconds * self.fps)), os.fspath(target))
        return target

    # -- life

    def _check_open(self) -> None:
        if self._closed:
            raise RecorderClosedError("This BatchRecorder is closed; make a new one to record again.")

    def _stop_after(self, error: BaseException) -> None:
        try:
            self.close()
        except BaseException as err:
            if err is not error:
                log.warning("While finishing the batch recording after %r, closing failed too: %r", error, err)

    def close(self) -> BatchResult:
        """Finish every file (frames in flight encoded, trailers written, clips decided on). Safe twice.

        Ctrl-C and SIGTERM arriving meanwhile wait until the files are finished.
        """
        if self._result is not None:
            return self._result
        self._closed = True
        untrack(self)
        with deferred_signals("finishing the batch recording"):
            return self._finish()

    def _finish(self) -> BatchResult:
        error: BaseException | None = None
        try:
            if self._route is not None and self._pool is not None and self._pool.error is None:
                # Encoded steps still on the GPU: kept, whatever the policy; then the markers after them.
                self._pool.hand_on(self._route.drain(), wait=True)
                self._pool.release_markers(before=math.inf)
        except BaseException as exc:
            error = exc
        finally:
            try:
                if self._pool is not None:
                    self._pool.finish()
            except BaseException as exc:
                error = error or exc
            finally:
                self._release()
                self._result = self._make_result()
        if error is not None:
            raise error
        log.info("%s", self._result.summary(), extra={"glrec_summary": True})
        return self._result

    def _finish_at_exit(self) -> None:
        """The interpreter is exiting with this recorder open: finish its files."""
        if not self._closed:
            log.warning("BatchRecorder for %s was never closed; finishing it at exit (use 'with' or call close()).",
                        self.path)  # fmt: skip
            self.close()

    def _release(self) -> None:
        route, self._route = self._route, None
        if route is not None:
            route.release()

    def _make_result(self) -> BatchResult:
        n = self.envs
        videos: list[BatchVideo] = []
        dropped, repeated = [0] * n, [0] * n
        peak = 0
        if self._pool is not None:
            found, peak = self._pool.outcome()
            videos += found
            dropped, repeated = self._pool.dropped, self._pool.repeated
        if self._grid is not None:
            video = self._grid.close()
            videos += [video] if video is not None else []
            self._encoder_name = self._grid.rec.close().encoder
            self._codec = self._grid.rec.options.codec
            dropped = [self._grid.dropped] * n
        return BatchResult(tuple(videos), self.layout, n, self.steps, self.frames, tuple(dropped), tuple(repeated),
                           time.perf_counter() - self._started, self._encoder_name, self._codec, peak)  # fmt: skip

    def __enter__(self) -> BatchRecorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
            return
        try:
            self.close()
        except Exception as err:
            if err is not exc[1]:
                log.warning("While finishing the batch recording after an error, closing failed too: %r", err)
