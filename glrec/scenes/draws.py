"""Counter-based random draws: every number a hash of (seed, stream name, draw number), vectorised with numpy.

A dataset's sample ``i`` has the seed ``sample_seed(meta_seed, i)``; a stream (a
parameter, or a part of a scene's layout) under that seed yields uniform floats
``uniforms(seeds, stream, draws, first)``, each a pure function of (seed, stream,
draw number). So a batch of samples is drawn at once, and sample ``i`` is the
same whatever batch it is drawn in. The hash is splitmix64's finaliser over
uint64 arrays (wrapping arithmetic).

>>> u = uniforms(sample_seeds(7, [0, 1, 2]), "param:fov", 2)
>>> bool((uniforms(sample_seeds(7, [2]), "param:fov", 2) == u[2:]).all())
True
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["sample_seed", "sample_seeds", "stream_key", "uniforms"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic): a bijection that scrambles every bit."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def stream_key(stream: str) -> int:
    """A 64-bit key for a stream name (a parameter's ``"param:" + name``, ``"scene:objects"``, ...)."""
    return int.from_bytes(hashlib.blake2b(stream.encode(), digest_size=8).digest(), "little")


def sample_seeds(meta_seed: int, indices: np.ndarray | list[int] | range) -> np.ndarray:
    """The 64-bit seeds (uint64 array) of samples ``indices`` of a dataset with ``meta_seed``.

    A pure function of (meta-seed, index): ``sample_seeds(m, [3, 9])[1] == sample_seed(m, 9)``.
    """
    m = _mix(np.asarray([int(meta_seed) & 0xFFFFFFFFFFFFFFFF], np.uint64) ^ _GOLDEN)
    idx = np.asarray(indices, np.int64).astype(np.uint64)
    return _mix(_mix(m + (idx + np.uint64(1)) * _GOLDEN))


def sample_seed(meta_seed: int, index: int) -> int:
    """The 64-bit seed of sample ``index`` (see :func:`sample_seeds`).

    >>> sample_seed(7, 0) == sample_seed(7, 0) != sample_seed(7, 1)
    True
    """
    return int(sample_seeds(meta_seed, [index])[0])


def uniforms(seeds: np.ndarray, stream: str, draws: int, first: int = 0) -> np.ndarray:
    """Uniform floats in [0, 1), shape ``(len(seeds), draws)``: row ``j`` column ``d`` is a pure function of
    (``seeds[j]``, ``stream``, ``first + d``), 53 random bits each.
    """
    s = np.asarray(seeds, np.uint64)
    key = _mix(s ^ np.uint64(stream_key(stream)))
    counters = (np.arange(first, first + draws, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    bits = _mix(key[:, None] + counters[None, :])
    out: np.ndarray = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return out
