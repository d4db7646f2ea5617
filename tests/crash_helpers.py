"""Helpers for the reliability tests: a recording child process, and reading back what a file holds."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import av

from glrec.scenes.bars import read_time_code
from glrec.sinks.trim import ebml_elements, mkv_segment_start

ROOT = Path(__file__).resolve().parent.parent
CHILD = ROOT / "tests" / "record_child.py"


def child_env(*front: str | os.PathLike[str], **extra: str) -> dict[str, str]:
    """The environment for a child Python: this checkout's glrec (then ``front``) ahead of the PYTHONPATH this
    process has, which on the GPU machine holds the carried packages; ``extra`` variables on top."""
    env = dict(os.environ)
    paths = [str(ROOT), *map(str, front), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return {**env, **extra}


def start_child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def decode_indices(path: Path, fps: float) -> list[int]:
    """Decode every frame with PyAV and read the ``bars`` time code: the frame index of each, in display order."""
    out = []
    with av.open(str(path)) as c:
        for f in c.decode(video=0):
            luma = f.to_ndarray(format="gray")
            out.append(round(read_time_code(luma) * fps / 1000))
    return out


def contiguous_prefix(indices: list[int]) -> int:
    """How many of ``indices`` are exactly 0, 1, 2, ... from the start."""
    n = 0
    while n < len(indices) and indices[n] == n:
        n += 1
    return n


def _boxes(data: bytes, start: int = 0, end: int | None = None):
    at, end = start, len(data) if end is None else end
    while at + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, at)
        header = 8
        if size == 1:
            size, header = struct.unpack_from(">Q", data, at + 8)[0], 16
        if size < header or at + size > end:
            return
        yield kind, at + header, at + size
        at += size


def mp4_fragment_samples(path: Path) -> list[int]:
    """The number of samples in each fragment (moof/traf/trun) of a fragmented MP4."""
    data = path.read_bytes()
    counts = []
    for kind, body, end in _boxes(data):
        if kind != b"moof":
            continue
        n = 0
        for k2, b2, e2 in _boxes(data, body, end):
            if k2 == b"traf":
                for k3, b3, _ in _boxes(data, b2, e2):
                    if k3 == b"trun":
                        n += struct.unpack_from(">I", data, b3 + 4)[0]  # after version+flags
        counts.append(n)
    return counts


def mkv_cluster_blocks(path: Path) -> list[int]:
    """The number of SimpleBlocks in each Matroska Cluster."""
    data = path.read_bytes()
    start = mkv_segment_start(data)
    assert start is not None, f"{path} is not Matroska"
    return [
        sum(1 for child, _, _ in ebml_elements(data, body, end) if child == 0xA3)  # SimpleBlock
        for element, body, end in ebml_elements(data, start, len(data))
        if element == 0x1F43B675  # Cluster
    ]
