"""Synthetic datasets: randomised scenes rendered with pixel-aligned ground truth into shards.

>>> from glrec.dataset import DatasetSpec, generate, render_sample
>>> generate("examples/dataset.toml", "out/")  # doctest: +SKIP

See ``glrec dataset --help`` and the README's "Datasets" section.
"""

from .api import DatasetResult, generate, render_sample
from .encode import register_colour_encoder
from .render import Sample
from .runner import write_samples
from .spec import PASSES, DatasetSpec, OutputSpec

__all__ = [
    "PASSES",
    "DatasetResult",
    "DatasetSpec",
    "OutputSpec",
    "Sample",
    "generate",
    "register_colour_encoder",
    "render_sample",
    "write_samples",
]
