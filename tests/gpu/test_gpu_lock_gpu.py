"""``gpu_lock=True`` on the GPU: an nvJPEG recording holds the GPU's turn lock for each turn and lets go between
turns; two processes recording with it at once both finish whole files, frame for frame."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import av
import numpy as np
import pytest

import glrec

pytestmark = pytest.mark.gpu

SIZE = (320, 240)


def _grey(i: int) -> float:
    return (40 + 2 * (i % 90)) / 255.0


def _record(path: Path, frames: int, probe=None) -> list[bool]:
    """Record ``frames`` flat grey frames (a level per index) with nvJPEG and the lock; ``probe`` after each."""
    seen = []
    with glrec.Recorder(path, size=SIZE, fps=30, encoder="nvjpeg", codec="mjpeg", gpu_lock=True) as rec:
        for i in range(frames):
            with rec.frame():
                rec.ctx.clear(_grey(i), _grey(i), _grey(i), 1.0)
            if probe is not None:
                seen.append(probe())
    return seen


def _levels(path: Path) -> list[float]:
    with av.open(str(path)) as c:
        return [float(np.mean(f.to_ndarray(format="gray"))) for f in c.decode(video=0)]


def test_an_nvjpeg_recording_holds_the_lock_through_each_turn_and_lets_go_after_it(tmp_path: Path) -> None:
    pytest.importorskip("nvidia.nvimgcodec")
    from helpers import locked_elsewhere

    from glrec.cuda.driver import device_info
    from glrec.cuda.gpu_lock import lock_path

    lock = lock_path(device_info(0).uuid)
    seen = _record(tmp_path / "l.mkv", 70, lambda: locked_elsewhere(lock))
    # Held after every frame except those that end a turn (the turn's frames encoded, the lock given back).
    ends = [i for i, held in enumerate(seen) if not held]
    assert seen[0] and 1 <= len(ends) <= 35, seen
    assert all(b - a == ends[0] + 1 for a, b in itertools.pairwise(ends)), ends  # turns of one size
    assert not locked_elsewhere(lock)  # let go at close
    levels = _levels(tmp_path / "l.mkv")
    assert len(levels) == 70
    assert np.allclose(levels, [255 * _grey(i) for i in range(70)], atol=3.0), levels


def test_two_processes_with_the_lock_both_write_whole_files(tmp_path: Path) -> None:
    pytest.importorskip("nvidia.nvimgcodec")
    child = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from test_gpu_lock_gpu import _record
        _record(Path(sys.argv[1]), 200)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", child, str(tmp_path / f"p{k}.mkv")]) for k in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    for k in range(2):
        levels = _levels(tmp_path / f"p{k}.mkv")
        assert len(levels) == 200
        assert np.allclose(levels, [255 * _grey(i) for i in range(200)], atol=3.0)
