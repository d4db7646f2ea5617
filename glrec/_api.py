"""The one-call front doors: :func:`record` (a scene to a file) and :func:`write_video` (frames to a file)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .errors import ConfigError
from .options import VideoOptions, frame_count
from .recorder import Recorder
from .result import RecordResult
from .scenes import load_scene

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options_typed import RecordOptions, WriteVideoOptions
    from .scenes import Scene


def record(
    scene: Scene | str,
    path: str | os.PathLike[str],
    *,
    seconds: float | None = None,
    frames: int | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Unpack[RecordOptions],
) -> RecordResult:
    """Render ``scene`` for ``seconds`` or ``frames`` (default 5 s, as the CLI) and write it to ``path``.

    ``options`` are :class:`~glrec.Recorder`'s keyword arguments (size, fps, codec,
    crf, ...; see ``docs/options.md``). ``progress`` is called with the number of
    frames submitted after each one.

    >>> glrec.record("cube", "cube.mp4", size=(1280, 720), fps=30, seconds=3)  # doctest: +SKIP
    RecordResult(path=PosixPath('cube.mp4'), frames=90, ...)
    """
    fps = VideoOptions.parse({"fps": options.get("fps")}).fps
    n = frame_count(fps, seconds, frames)
    scene = load_scene(scene)  # an unknown scene fails here, before any GL object or file exists
    with Recorder(path, **options) as rec:
        for _ in range(n):
            rec.render(scene)
            if progress is not None:
                progress(rec.frames_submitted)
    return rec.close()


def write_video(
    path: str | os.PathLike[str],
    frames: Iterable[object],
    *,
    fps: float | None = None,
    progress: Callable[[int], None] | None = None,
    **options: Unpack[WriteVideoOptions],
) -> RecordResult:
    """Write every picture of ``frames`` to ``path`` in one call; the size is the first frame's.

    ``frames`` is any iterable of what :meth:`~glrec.Recorder.write` takes (numpy
    arrays, PIL images, matplotlib figures, CUDA tensors), or one ``N×H×W×C``
    array. ``fps`` defaults to 30; ``options`` are :class:`~glrec.Recorder`'s
    keyword arguments. Frames are encoded as they come, so a generator is never
    held in memory. No frames: no file.

    >>> glrec.write_video("out.mp4", frames, fps=30)  # doctest: +SKIP
    RecordResult(path=PosixPath('out.mp4'), frames=90, ...)
    """
    shape = getattr(frames, "shape", None)
    if shape is not None and len(shape) == 3 and shape[-1] in (3, 4):
        # Iterating it would give its rows as frames (H frames of W×C pixels).
        raise ConfigError(
            f"write_video got one picture (an array of shape {tuple(shape)}), not a batch of frames; pass "
            "[picture] for a single frame, or an N×H×W×C array."
        )
    with Recorder(path, fps=fps, **options) as rec:
        for frame in frames:
            rec.write(frame)
            if progress is not None:
                progress(rec.frames_submitted)
    return rec.close()
