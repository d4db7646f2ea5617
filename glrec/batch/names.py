"""Where per-env files go: a pattern with ``{env}`` (and ``{episode}``, ``{part}``), or a callable
``(env, episode) -> path``.

``{part}`` numbers the files of one episode cut every ``segment_seconds`` (as FFmpeg's segment muxer does).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import ConfigError

PathLike = str | os.PathLike[str]


def has_field(path: object, name: str) -> bool:
    return not isinstance(path, (str, os.PathLike)) or "{" + name in os.fspath(path)


#: ``(env, episode, part) -> path``.
Namer = Callable[[int, int, int], str]


def namer(path: PathLike | Callable[[int, int], PathLike]) -> Namer:
    """``(env, episode, part) -> path`` for per-env files; ConfigError for a pattern without ``{env}``."""
    if not isinstance(path, (str, os.PathLike)):
        call = path

        def called(env: int, episode: int, part: int = 0) -> str:
            return os.fspath(call(env, episode))

        return called
    pattern = os.fspath(path)
    try:
        names = {pattern.format(env=e, episode=0, part=0) for e in (0, 1)}
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"The path pattern {pattern!r} has a field other than {{env}}, {{episode}} and {{part}} ({exc})."
        ) from None
    if len(names) < 2:
        raise ConfigError(
            f"Per-env files need {{env}} in the path, e.g. 'videos/env{{env:02d}}.mp4' (and {{episode}} for a file "
            f"per episode); got {pattern!r}. For one video of all envs use layout='grid'."
        )

    def formatted(env: int, episode: int, part: int = 0) -> str:
        return pattern.format(env=env, episode=episode, part=part)

    return formatted


def segment_frames(path: object, seconds: float | None, fps: float, *, layout: str, clips: bool) -> int | None:
    """Frames per file for ``segment_seconds`` (None: one file per env or episode); ConfigError where it cannot be."""
    if seconds is None:
        return None
    if not seconds > 0:
        raise ConfigError(f"segment_seconds must be above 0, got {seconds!r}.")
    if layout != "files" or clips:
        raise ConfigError("segment_seconds cuts per-env files; the grid is one stream and clips are bounded by their "
                          "ring already. Use layout='files' without keep=/ring_seconds=.")  # fmt: skip
    if not isinstance(path, (str, os.PathLike)) or "{part" not in os.fspath(path):
        raise ConfigError("segment_seconds needs {part} in the path pattern to number each env's files, e.g. "
                          "'videos/env{env:02d}-{part:03d}.mkv' (a callable path cannot take it).")  # fmt: skip
    return max(1, round(seconds * fps))
