"""Where per-env files go: a pattern with ``{env}`` (and ``{episode}``), or a callable ``(env, episode) -> path``."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import ConfigError

PathLike = str | os.PathLike[str]


def has_field(path: object, name: str) -> bool:
    return not isinstance(path, (str, os.PathLike)) or "{" + name in os.fspath(path)


def namer(path: PathLike | Callable[[int, int], PathLike]) -> Callable[[int, int], str]:
    """``(env, episode) -> path`` for per-env files; ConfigError for a pattern without ``{env}``."""
    if not isinstance(path, (str, os.PathLike)):
        return lambda env, episode: os.fspath(path(env, episode))
    pattern = os.fspath(path)
    try:
        names = {pattern.format(env=e, episode=0) for e in (0, 1)}
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"The path pattern {pattern!r} has a field other than {{env}} and {{episode}} ({exc})."
        ) from None
    if len(names) < 2:
        raise ConfigError(
            f"Per-env files need {{env}} in the path, e.g. 'videos/env{{env:02d}}.mp4' (and {{episode}} for a file "
            f"per episode); got {pattern!r}. For one video of all envs use layout='grid'."
        )
    return lambda env, episode: pattern.format(env=env, episode=episode)
