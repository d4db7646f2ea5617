"""Synthetic datasets: randomised scenes rendered with pixel-aligned ground truth into shards.

>>> from glrec.dataset import DatasetSpec, generate, render_sample
>>> generate("examples/dataset.toml", "out/")  # doctest: +SKIP
>>> for batch in stream("examples/dataset.toml", batch_size=16):  # arrays, no files  # doctest: +SKIP
...     batch["rgb"].shape

See ``glrec dataset --help`` and the README's "Datasets" section.
"""

from .api import DatasetResult, generate, render_sample
from .files.encode import register_colour_encoder
from .files.only import write_samples
from .rendering.sample import Sample
from .spec.document import PASSES, DatasetSpec, OutputSpec
from .streaming.tensors import Batch, SampleStream, stream


def __getattr__(name: str) -> object:
    if name == "StreamDataset":  # torch only when asked for
        from .streaming.torch_data import StreamDataset

        return StreamDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PASSES",
    "Batch",
    "DatasetResult",
    "DatasetSpec",
    "OutputSpec",
    "Sample",
    "SampleStream",
    "StreamDataset",
    "generate",
    "register_colour_encoder",
    "render_sample",
    "stream",
    "write_samples",
]
