"""A stream's batches: which samples each holds (computed, never listed), and its arguments checked up front.

A spec of 2**63 - 1 samples is how an endless training stream is asked for,
so nothing here is proportional to the number of samples or batches: batch
``k`` is worked out when it is reached, and ``len()`` is arithmetic.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, overload

from ...errors import ConfigError
from ..spec.document import DatasetSpec, real_number, whole_number
from .devices import check_egl_device

__all__ = ["BatchRanges", "StreamArgs", "check_stream_args", "parse_device", "sample_bytes"]

#: Bytes per pixel of each pass in a batch buffer (the GPU packer's sections; normals by format).
_PIXEL_BYTES = {"rgb": 3, "depth": 4, "instance": 2, "semantic": 2}


class BatchRanges(Sequence[range]):
    """The batches of samples ``start..stop-1`` that part ``part[0]`` of ``part[1]`` renders.

    Batch k holds samples ``start + k * batch_size`` onwards (the last may be short);
    part p takes batches k = p, p + parts, p + 2 * parts, ... So every sample is in
    exactly one part, and a DataLoader, which takes one batch from each worker in
    turn, delivers the batches in index order whatever the number of workers.

    >>> list(BatchRanges(0, 10, 4, (1, 2)))
    [range(4, 8)]
    """

    def __init__(self, start: int, stop: int, batch_size: int, part: tuple[int, int] = (0, 1)) -> None:
        self.start, self.stop, self.batch_size = start, stop, batch_size
        self.part, self.parts = part
        self.batches = -(-(stop - start) // batch_size)  # of all parts
        self._len = max(0, -(-(self.batches - self.part) // self.parts))

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> range: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[range]: ...
    def __getitem__(self, i: int | slice) -> range | Sequence[range]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"batch {i} of {self._len}")
        first = self.start + (self.part + i * self.parts) * self.batch_size
        return range(first, min(self.stop, first + self.batch_size))

    def __iter__(self) -> Iterator[range]:
        return (self[i] for i in range(self._len))

    @property
    def samples(self) -> int:
        """Samples in these batches: all full but the stream's last batch, if it is this part's."""
        n = self._len * self.batch_size
        last = self.batches - 1
        if self._len and last % self.parts == self.part:
            n -= self.batches * self.batch_size - (self.stop - self.start)
        return n

    def __repr__(self) -> str:
        return f"BatchRanges({self.start}, {self.stop}, {self.batch_size}, ({self.part}, {self.parts}))"


def parse_device(device: object) -> int | None:
    """``"cpu"`` -> None; ``"cuda"`` / ``"cuda:N"`` -> the CUDA ordinal; anything else is a ConfigError."""
    if device == "cpu":
        return None
    m = re.fullmatch(r"cuda(?::(\d+))?", device) if isinstance(device, str) else None
    if m is None:
        raise ConfigError(f"Unknown device {device!r}. Valid: cpu, cuda, cuda:N (N a CUDA device ordinal).")
    return int(m.group(1) or 0)


def sample_bytes(spec: DatasetSpec) -> int:
    """Bytes of one sample in a batch buffer: its frames, each the packed passes (16-byte sections, 256 a frame)."""
    w, h = spec.size
    padded = (w * h + 3) // 4 * 4
    frame = 0
    for name in spec.output.passes:
        width = _PIXEL_BYTES.get(name, 3 if spec.output.normal == "png" else 12)
        frame += (width * padded + 15) // 16 * 16
    return spec.frames * ((frame + 255) // 256 * 256)


def _memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None


class StreamArgs:
    """The arguments of a stream, checked: what :func:`check_stream_args` returns."""

    def __init__(self, stop: int, cuda: int | None, slot_batch: int) -> None:
        self.stop = stop
        self.cuda = cuda
        self.slot_batch = slot_batch  # samples a batch buffer holds: batch_size, or fewer if the stream is shorter


def check_stream_args(
    spec: DatasetSpec, batch_size: Any, *, device: Any, start: Any, stop: Any, part: Any, buffers: Any,
    gl_device: Any, timeout: Any,
) -> StreamArgs:  # fmt: skip
    """Raise ConfigError (DeviceError) for any argument a stream of ``spec`` cannot use; else the values in effect."""
    whole_number("batch_size", batch_size, 1, None, "64")
    whole_number("start", start, 0, None, "0")
    stop = spec.samples if stop is None else stop
    whole_number("stop", stop, 0, None, f"{spec.samples}, the spec's samples")
    if not start <= stop <= spec.samples:
        raise ConfigError(
            f"Samples {start}..{stop - 1} are outside the spec's 0..{spec.samples - 1}; "
            "use 0 <= start <= stop <= samples."
        )
    if not (isinstance(part, (tuple, list)) and len(part) == 2):
        raise ConfigError(f"part {part!r} must be (p, parts) with 0 <= p < parts.")
    parts = whole_number("part's parts", part[1], 1, None, "(0, 2)")
    whole_number("part's p", part[0], 0, parts - 1, "(0, 2)")
    whole_number("buffers", buffers, 2, None, "3 (one rendered while one is read, and one held)")
    real_number("timeout", timeout, "30 seconds", positive=True)
    check_egl_device(gl_device, "gl_device")
    cuda = parse_device(device)
    slot_batch = max(1, min(batch_size, stop - start))
    need = buffers * slot_batch * sample_bytes(spec)
    have = _memory()
    if cuda is None and have is not None and need > have:
        raise ConfigError(
            f"batch_size {batch_size} needs {need / 1e9:.3g} GB of batch buffers ({buffers} buffers of "
            f"{slot_batch} samples of {sample_bytes(spec) / 1e6:.3g} MB), more than this machine's "
            f"{have / 1e9:.3g} GB of memory; use a smaller batch_size (or fewer buffers)."
        )
    if cuda is not None:
        from .cuda import check_cuda

        check_cuda(cuda)  # here, in the caller's thread: a missing GPU is one clear error
    return StreamArgs(stop, cuda, slot_batch)
