"""Output files go to the disk as they grow (glrec.sinks.write_behind), so that the fsync at the end is short.

The kernel is asked to start writing the file out every WRITE_BEHIND bytes; where
it refuses, the file is written as before and made durable by the fsync at the end.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

import av
import numpy as np
import pytest
from media import indexed_picture, indices_of

import glrec
from glrec.sinks import write_behind

FRAMES = 24


def _frames(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [indexed_picture(i, rng) for i in range(n)]


class _Spy:
    def __init__(self, result: int = 0, err: int = 0) -> None:
        self.calls: list[tuple[int, int, int, int]] = []
        self.result, self.err = result, err

    def __call__(self, fd: int, offset: int, nbytes: int, flags: int) -> int:
        self.calls.append((fd, offset, nbytes, flags))
        ctypes.set_errno(self.err)
        return self.result


def test_a_recording_asks_for_its_bytes_to_go_out_as_it_grows_and_decodes_whole(tmp_path, monkeypatch):
    spy = _Spy()
    monkeypatch.setattr(write_behind, "WRITE_BEHIND", 16 << 10)
    monkeypatch.setattr(write_behind, "_CALL", spy)
    out = tmp_path / "out.mkv"
    frames = _frames(FRAMES)
    glrec.write_video(out, frames, fps=30, codec="mjpeg", encoder="cpu")
    size = out.stat().st_size
    assert size > 4 * (16 << 10)
    # At most one request per 16 KiB taken (Matroska's writes come half a second of video at a time here),
    # each for the whole file (offset 0, length 0) and only to start the writes.
    assert 2 <= len(spy.calls) <= size // (16 << 10) + 1
    assert {c[1:] for c in spy.calls} == {(0, 0, write_behind._SYNC_FILE_RANGE_WRITE)}
    assert indices_of(out) == list(range(FRAMES))


def test_a_refused_request_turns_it_off_for_that_file_and_loses_nothing(tmp_path, monkeypatch, caplog):
    spy = _Spy(result=-1, err=errno.EINVAL)
    monkeypatch.setattr(write_behind, "WRITE_BEHIND", 16 << 10)
    monkeypatch.setattr(write_behind, "_CALL", spy)
    out = tmp_path / "out.mkv"
    with caplog.at_level("DEBUG", logger="glrec"):
        glrec.write_video(out, _frames(FRAMES), fps=30, codec="mjpeg", encoder="cpu")
    assert len(spy.calls) == 1
    assert "sync_file_range refused" in caplog.text
    with av.open(str(out)) as c:
        assert sum(1 for _ in c.decode(video=0)) == FRAMES


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_the_kernel_takes_the_request_on_this_file_system(tmp_path, monkeypatch):
    assert write_behind._CALL is not None
    monkeypatch.setattr(write_behind, "WRITE_BEHIND", 4096)
    data = np.random.default_rng(1).integers(0, 256, 1 << 20, np.uint8).tobytes()
    path = tmp_path / "bytes.bin"
    f = write_behind.WriteBehindFile(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    for i in range(0, len(data), 10_000):
        f.write(data[i : i + 10_000])
    assert f._on  # every request was taken (a refusal would have turned it off)
    f.close()
    assert path.read_bytes() == data
