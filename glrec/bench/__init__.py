"""``glrec bench``: glrec against the naive loop, stage by stage, in one run.

Rows (each in a fresh process) are registered by name in :data:`spec.ROWS`;
backends in :data:`backends.BACKENDS`; :func:`runner.run_bench` runs a
:class:`config.BenchConfig` and returns the result document that
:mod:`report` prints, saves and plots. See ``benchmarks/README.md``.

>>> from glrec.bench import BenchConfig, run_bench
>>> doc = run_bench(BenchConfig.quick())  # doctest: +SKIP
>>> doc["summary"][0]["row"], doc["summary"][0]["fps"]  # doctest: +SKIP
('naive-imageio', 310.2)
"""

from .backends import BACKENDS, Backend
from .config import BenchConfig
from .runner import run_bench

__all__ = ["BACKENDS", "Backend", "BenchConfig", "run_bench"]
