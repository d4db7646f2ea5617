"""Helpers for the reliability tests: a recording child process, and reading back what a file holds."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import av

from glrec.scenes.bars import read_time_code
from glrec.sinks.trim import _vint

ROOT = Path(__file__).resolve().parent.parent
CHILD = ROOT / "tests" / "record_child.py"


def child_env() -> dict[str, str]:
    """The environment for a child: this checkout's glrec first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


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
    head = _vint(data, 0, keep_marker=True)
    size = _vint(data, head[1], keep_marker=False)
    at = head[1] + size[1] + size[0]
    seg = _vint(data, at, keep_marker=True)
    seg_size = _vint(data, at + seg[1], keep_marker=False)
    at += seg[1] + seg_size[1]
    counts = []
    while (el := _vint(data, at, keep_marker=True)) is not None:
        el_size = _vint(data, at + el[1], keep_marker=False)
        if el_size is None:
            break
        body = at + el[1] + el_size[1]
        end = min(body + el_size[0], len(data))
        if el[0] == 0x1F43B675:  # Cluster
            n, inner = 0, body
            while inner < end and (child := _vint(data, inner, keep_marker=True)) is not None:
                child_size = _vint(data, inner + child[1], keep_marker=False)
                if child_size is None:
                    break
                n += child[0] == 0xA3  # SimpleBlock
                inner += child[1] + child_size[1] + child_size[0]
            counts.append(n)
        at = end
    return counts
