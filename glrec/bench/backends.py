"""glrec backends the benchmark knows, and the stage-alone rows that go with each.

A backend is a way :class:`glrec.Recorder` can run (its ``encoder`` and
``codec`` options and the file type), plus the rows that time its stages
alone. Every encoder of the registry (:mod:`glrec.encoders.registry`) is a
backend; ``glrec bench --backends all`` runs every one and reports those
this machine lacks as skipped with the reason the Recorder gave, so a
backend's rows appear on machines that have it without further changes.

An encoder's stage-alone rows, and other ways to run it (``cpu-cuda``), are
entries here. ``stage:handoff:NAME`` (the GL thread
alone, built as the Recorder builds it) works for any backend; other
stage-alone rows are functions registered with :func:`glrec.bench.spec.row`
(``stages.py``, ``gpu_stages.py``) and named in ``stage_rows``. ``parallel_stages``
lists the rows whose stages run concurrently in the pipeline, one thread or
engine each; pipeline efficiency is end-to-end frames/s over the slowest of
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..encoders.registry import ENCODERS
from ..sinks.registry import CODEC_SUFFIX


@dataclass(frozen=True)
class Backend:
    """One way to run the glrec pipeline."""

    name: str
    #: Keyword arguments for glrec.Recorder that select this backend.
    options: dict[str, Any] = field(default_factory=dict)
    #: Output file extension for the end-to-end row.
    suffix: str = ".mp4"
    #: Stage-alone rows for this backend (names in glrec.bench.spec.ROWS).
    stage_rows: tuple[str, ...] = ()
    #: Of those, the rows that run side by side in the pipeline (efficiency = e2e / slowest).
    parallel_stages: tuple[str, ...] = ()
    #: Rows whose work every loop must do whatever its pipeline (rendering, encoding): their CPU
    #: time per frame bounds what any pipeline can gain where everything runs on the CPU.
    floor_stages: tuple[str, ...] = ()
    #: True where the parallel stages take turns on one GPU (GL and a CUDA encoder: glrec.pipeline.turns)
    #: instead of overlapping: efficiency is then end-to-end frames/s over their serial bound.
    turns: bool = False
    #: True when the backend encodes with libx264, so --preset/--crf apply.
    x264: bool = False
    note: str = ""

    @property
    def row(self) -> str:
        """The name of this backend's end-to-end row."""
        return f"glrec:{self.name}"


#: What the benchmark knows of an encoder beyond its row: its stage-alone rows and how they run side by side.
#: An encoder of the registry without an entry here is still a backend, with the rows any backend has.
_STAGES: dict[str, dict[str, Any]] = {
    "cpu": dict(
        stage_rows=("stage:render", "stage:handoff:cpu", "stage:encode-cpu"),
        # The GL thread renders, converts and reads back while the worker thread encodes.
        parallel_stages=("stage:handoff:cpu", "stage:encode-cpu"),
        floor_stages=("stage:render", "stage:encode-cpu"),
        x264=True,
        note="GL convert -> PBO readback -> PyAV libx264",
    ),
    "nvjpeg": dict(
        stage_rows=("stage:render", "stage:handoff:nvjpeg", "stage:encode-nvjpeg"),
        parallel_stages=("stage:handoff:nvjpeg", "stage:encode-nvjpeg"),
        turns=True,
        note="GL pack to RGB -> CUDA handoff -> nvJPEG (GL and CUDA in turns) -> Motion-JPEG in Matroska",
    ),
    "nvenc": dict(note="GL convert -> CUDA handoff -> NVENC H.264"),
    "gl": dict(note="GL JPEG in the GL context -> its own readback of the bytes -> Motion-JPEG in Matroska"),
}
#: Ways to run an encoder other than its own default, each a backend of its own after the encoder's.
_VARIANTS: dict[str, tuple[Backend, ...]] = {
    "cpu": (
        Backend(
            "cpu-cuda",
            {"encoder": "cpu", "codec": "h264", "handoff": "register"},
            ".mp4",
            stage_rows=("stage:render", "stage:handoff:cpu-cuda", "stage:encode-cpu"),
            parallel_stages=("stage:handoff:cpu-cuda", "stage:encode-cpu"),
            x264=True,
            note="GL convert -> CUDA register handoff -> PyAV libx264",
        ),
    ),
}


def _backends() -> dict[str, Backend]:
    """A backend per encoder of the registry (the host's first), each followed by its variants.

    GPU backends' rows run wherever the Recorder opens them and are reported as skipped, with the
    Recorder's reason, elsewhere (no CUDA, no NVENC, no nvImageCodec).
    """
    out: dict[str, Backend] = {}
    for row in sorted(ENCODERS.values(), key=lambda r: r.context != "host"):
        codec = row.codecs[0]
        known = {"stage_rows": ("stage:render", f"stage:handoff:{row.name}"), "note": row.note,
                 **_STAGES.get(row.name, {})}  # fmt: skip
        out[row.name] = Backend(row.name, {"encoder": row.name, "codec": codec}, CODEC_SUFFIX[codec], **known)
        out.update((v.name, v) for v in _VARIANTS.get(row.name, ()))
    return out


BACKENDS: dict[str, Backend] = _backends()


def pick_backends(names: list[str]) -> list[Backend]:
    """Backends by name; ``all`` means every registered one."""
    from ..options import check_choice

    if "all" in names:
        return list(BACKENDS.values())
    return [BACKENDS[check_choice("backend", n, list(BACKENDS))] for n in names]
