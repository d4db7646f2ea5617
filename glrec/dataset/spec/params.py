"""Randomised parameters: distributions named in a dataset spec, and seeds.

A parameter in the spec's ``[params]`` table is either a constant (number,
string, list) or a one-key table naming a distribution::

    objects = { int = [3, 8] }                    # integer in 3..8, both ends included
    distance = { uniform = [2.5, 4.0] }           # float in [2.5, 4.0)
    height = { normal = [1.5, 0.2], clip = [1, 2] }
    exposure = { loguniform = [0.5, 2.0] }
    palette = { choice = ["warm", "cool"], weights = [3, 1] }
    shadows = { bool = 0.25 }                     # True with probability 0.25
    colour = [0.6, 0.5, 0.4]                      # a constant

Draws are counter-based (format version 2): every random number is a hash
(splitmix64's finaliser) of (meta-seed, sample index, stream name, draw number),
so sample ``i`` is a pure function of the meta-seed and ``i`` and a whole batch
of samples is drawn at once with numpy, whatever the batch size. Sample ``i``
has the 64-bit seed :func:`sample_seed` ``(m, i)``; each parameter draws from
its own stream, keyed by its name under that seed, so adding or reordering
parameters never changes the values of the others. (Format version 1 drew
through a ``SeedSequence`` per sample and per parameter: the same guarantees, one
sample at a time.)
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...scenes.draws import sample_seed, sample_seeds, stream_key, uniforms

__all__ = [
    "KINDS",
    "Distribution",
    "params_batch",
    "parse_param",
    "rng_for",
    "sample_params",
    "sample_seed",
    "sample_seeds",
    "stream_key",
    "uniforms",
]

#: Distribution kinds and what their value is.
KINDS: dict[str, str] = {
    "uniform": "[low, high]: a float in [low, high)",
    "loguniform": "[low, high]: a float whose log is uniform, low > 0",
    "normal": "[mean, std], optional clip = [low, high]",
    "int": "[low, high]: an integer, both ends included",
    "choice": "[a, b, ...], optional weights = [...]",
    "bool": "p: True with probability p",
    "constant": "any value",
}
_MODIFIERS = {"normal": {"clip"}, "choice": {"weights"}}


@dataclass(frozen=True)
class Distribution:
    """One parameter's distribution (``kind`` in :data:`KINDS`)."""

    name: str
    kind: str
    args: Any
    clip: tuple[float, float] | None = None
    weights: tuple[float, ...] | None = None

    def draw(self, seeds: np.ndarray) -> list[Any]:
        """One value per sample seed in ``seeds`` (uint64), as plain Python (JSON-ready) values.

        Value ``j`` depends on ``seeds[j]`` and this parameter's name alone, never on the other seeds.
        """
        k, a, n = self.kind, self.args, len(seeds)
        if k == "constant":
            return [a] * n
        u = uniforms(seeds, "param:" + self.name, 2 if k == "normal" else 1)
        u0 = u[:, 0]
        if k == "uniform":
            return [float(v) for v in a[0] + (a[1] - a[0]) * u0]
        if k == "loguniform":
            lo, hi = math.log(a[0]), math.log(a[1])
            return [float(v) for v in np.minimum(np.exp(lo + (hi - lo) * u0), a[1])]
        if k == "normal":  # Box-Muller; 1 - u is in (0, 1], so the log is finite
            v = a[0] + a[1] * np.sqrt(-2.0 * np.log1p(-u0)) * np.cos(2.0 * math.pi * u[:, 1])
            if self.clip is not None:
                v = np.clip(v, self.clip[0], self.clip[1])
            return [float(x) for x in v]
        if k == "int":
            span = a[1] - a[0] + 1
            return [int(x) for x in a[0] + np.minimum(np.floor(u0 * span), span - 1).astype(np.int64)]
        if k == "choice":
            w = np.ones(len(a)) if self.weights is None else np.asarray(self.weights, np.float64)
            cdf = np.cumsum(w) / np.sum(w)
            picks = np.minimum(np.searchsorted(cdf, u0, side="right"), len(a) - 1)
            while True:  # never a zero-weight item at the top end's rounding
                bad = w[picks] == 0
                if not bad.any():
                    break
                picks[bad] -= 1
            return [a[int(i)] for i in picks]
        if k == "bool":
            return [bool(x) for x in u0 < a]
        raise AssertionError(k)  # parse_param admits only the kinds above


#: How deeply a constant may nest lists and tables (it is written into every sample's meta.json).
MAX_DEPTH = 16


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_constant(name: str, value: Any, depth: int = 0) -> None:
    """Refuse a constant JSON cannot hold (NaN, infinity) or that nests more than :data:`MAX_DEPTH` deep."""
    if depth > MAX_DEPTH:
        raise ConfigError(f"Parameter {name!r} nests lists or tables more than {MAX_DEPTH} deep; flatten it.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"Parameter {name!r} holds {value!r}, which is not a finite number (meta.json could not hold it)."
        )
    if isinstance(value, dict):
        for v in value.values():
            check_constant(name, v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_constant(name, v, depth + 1)


def _pair(name: str, kind: str, value: Any, *, integers: bool = False) -> tuple[Any, Any]:
    ok = isinstance(value, (list, tuple)) and len(value) == 2
    ok = ok and all(_finite(v) for v in value)
    if ok and integers:
        ok = all(isinstance(v, int) for v in value)
    if not ok:
        what = "two integers" if integers else "two finite numbers"
        raise ConfigError(f"Parameter {name!r}: {kind} takes {what} [low, high], not {value!r}.")
    return value[0], value[1]


def parse_param(name: str, value: Any) -> Distribution:
    """Turn one ``[params]`` entry into a :class:`Distribution`, or raise ConfigError naming the problem.

    >>> parse_param("n", {"int": [1, 3]}).kind
    'int'
    """
    if not isinstance(value, dict):
        check_constant(name, value)
        return Distribution(name, "constant", value)
    kinds = [k for k in value if k in KINDS]
    if len(kinds) != 1:
        valid = "; ".join(f"{k} = {v}" for k, v in KINDS.items())
        raise ConfigError(
            f"Parameter {name!r} = {value!r} must name exactly one distribution. Valid: {valid}. "
            "(For a constant table, write { constant = { ... } }.)"
        )
    kind = kinds[0]
    extra = set(value) - {kind} - _MODIFIERS.get(kind, set())
    if extra:
        allowed = ", ".join(sorted(_MODIFIERS.get(kind, set()))) or "none"
        raise ConfigError(f"Parameter {name!r}: unknown key(s) {sorted(extra)} for {kind} (allowed: {allowed}).")
    arg = value[kind]
    if kind in ("uniform", "loguniform", "normal", "int"):
        lo, hi = _pair(name, kind, arg, integers=kind == "int")
        if kind == "normal" and hi < 0:
            raise ConfigError(f"Parameter {name!r}: normal std {hi} must be >= 0.")
        if kind != "normal" and lo > hi:
            raise ConfigError(f"Parameter {name!r}: {kind} low {lo} is above high {hi}; swap them.")
        if kind == "loguniform" and lo <= 0:
            raise ConfigError(f"Parameter {name!r}: loguniform needs low > 0, not {lo}.")
        clip = _pair(name, "clip", value["clip"]) if "clip" in value else None
        if clip is not None and clip[0] > clip[1]:
            raise ConfigError(f"Parameter {name!r}: clip low {clip[0]} is above high {clip[1]}; swap them.")
        return Distribution(name, kind, (lo, hi), clip=clip)
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise ConfigError(f"Parameter {name!r}: choice takes a non-empty list, not {arg!r}.")
        check_constant(name, arg)
        weights = value.get("weights")
        if weights is not None:
            good = isinstance(weights, list) and len(weights) == len(arg)
            if not good or any(not _finite(w) or w < 0 for w in weights) or not sum(weights) > 0:
                raise ConfigError(
                    f"Parameter {name!r}: weights must be {len(arg)} finite, non-negative numbers with a positive "
                    f"sum, not {weights!r}."
                )
            weights = tuple(float(w) for w in weights)
        return Distribution(name, kind, list(arg), weights=weights)
    if kind == "bool":
        if not isinstance(arg, (int, float)) or isinstance(arg, bool) or not 0 <= arg <= 1:
            raise ConfigError(f"Parameter {name!r}: bool takes a probability in 0..1, not {arg!r}.")
        return Distribution(name, kind, float(arg))
    check_constant(name, arg)
    return Distribution(name, "constant", arg)


def rng_for(seed: int, stream: str) -> np.random.Generator:
    """An independent generator for ``stream`` (``"scene"`` for a scene's ``randomise``) under ``seed``."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(stream.encode()),)))


def params_batch(dists: dict[str, Distribution], seeds: np.ndarray) -> list[dict[str, Any]]:
    """Every parameter for each sample seed in ``seeds``, drawn for the batch at once (each from its own stream)."""
    s = np.asarray(seeds, np.uint64)
    names, columns = list(dists), [d.draw(s) for d in dists.values()]
    if not names:
        return [{} for _ in range(len(s))]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def sample_params(dists: dict[str, Distribution], seed: int) -> dict[str, Any]:
    """Draw every parameter for the sample with ``seed`` (the batch of one of :func:`params_batch`)."""
    return params_batch(dists, np.asarray([seed], np.uint64))[0]
