"""What one benchmark row is asked to do, and the registry of row kinds.

A *row* is one measured loop in a fresh process: a baseline (the naive loop
users write), a glrec backend end to end, or one stage alone. Row functions
take a :class:`RowSpec` and return a dict of figures; they register
themselves with :func:`row` under a name such as ``naive-imageio`` or
``stage:encode-cpu``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RowResult = dict[str, Any]
RowFunction = Callable[["RowSpec"], RowResult]

#: Row kinds by name; filled by the modules that define them (baselines, pipeline, stages).
ROWS: dict[str, RowFunction] = {}


def row(name: str) -> Callable[[RowFunction], RowFunction]:
    """Register a row function under ``name``."""

    def add(fn: RowFunction) -> RowFunction:
        ROWS[name] = fn
        return fn

    return add


@dataclass(frozen=True)
class RowSpec:
    """One row to run: which loop, on what scene and size, with which encoder settings.

    ``options`` are extra keyword arguments for :class:`glrec.Recorder` (the
    backend's encoder and codec); ``preset`` and ``crf`` apply to libx264
    everywhere so baselines and glrec encode with equal settings.
    """

    row: str
    scene: str = "plasma"
    size: tuple[int, int] = (1280, 720)
    frames: int = 120
    fps: float = 30.0
    preset: str = "veryfast"
    crf: float = 20.0
    backend: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    suffix: str = ".mp4"
    workdir: str = "."
    gl_clock: str = "auto"
    tag: str = ""  # distinguishes repeated runs of the same row in file names
    processes: int = 1  # glrec-xN rows: recordings at once
    workers: str = ""  # dataset rows: local workers ("auto": the default count)
    dataset_shard_size: int = 50  # dataset rows: samples per shard

    @property
    def output(self) -> Path:
        w, h = self.size
        name = f"{self.row.replace(':', '-').replace('+', '-')}_{self.scene}_{w}x{h}_{self.frames}{self.tag}"
        return Path(self.workdir) / f"{name}{self.suffix}"

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["size"] = f"{self.size[0]}x{self.size[1]}"
        d["video_fps"] = d.pop("fps")  # the frame rate written in the file; "fps" is the measured one
        d.pop("workdir")
        return d
