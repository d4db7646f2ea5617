"""GL and a CUDA encoder taking turns on the GL thread (glrec.pipeline.turns): chunks, order, failures, output.

The pure-Python tier checks the bookkeeping with a stand-in encoder; a GL test forces turns on the CPU path
(where the worker thread would encode) and compares the file with the worker's, packet for packet; the GPU
tier does the same with nvJPEG, where turns are the default.
"""

from __future__ import annotations

import av
import pytest

import glrec
from glrec.encoders.cpu.row import ROW as CPU
from glrec.encoders.nvjpeg.row import ROW as NVJPEG
from glrec.frame import Packet
from glrec.pipeline import turns
from glrec.pipeline.turns import Turns
from glrec.pipeline.worker import Encoded, EncodeWorker


class _Frame:
    """Stands in for a DeviceFrame: an index, and whether its buffer went back to the pool."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.released = False

    def release(self) -> None:
        self.released = True


class _Encoder:
    """Encodes each chunk it is given into one packet per frame; fails at chunk ``fail_at`` if set."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.chunks: list[list[int]] = []
        self.fail_at = fail_at

    def encode_batch(self, frames):
        if len(self.chunks) == self.fail_at:
            raise ZeroDivisionError("encoder failed")
        self.chunks.append([f.index for f in frames])
        for f in frames:
            f.release()  # as nvJPEG does once it has encoded a frame
        return [Packet(b"%d" % f.index, f.index, f.index, True) for f in frames]


def test_a_batch_is_encoded_in_chunks_of_the_rows_batch_in_order():
    encoder, out = _Encoder(), []
    frames = [_Frame(i) for i in range(70)]
    Turns(encoder, 32).deliver(frames, out.append)
    assert [len(c) for c in encoder.chunks] == [32, 32, 6]
    assert [e.frames for e in out] == [32, 32, 6]
    assert [p.pts for e in out for p in e.packets] == list(range(70))


def test_after_a_failed_chunk_the_frames_not_encoded_go_back_to_their_pool():
    encoder, out = _Encoder(fail_at=1), []
    frames = [_Frame(i) for i in range(10)]
    with pytest.raises(ZeroDivisionError):
        Turns(encoder, 4).deliver(frames, out.append)
    assert [p.pts for e in out for p in e.packets] == [0, 1, 2, 3]  # the first chunk reached the worker
    assert all(f.released for f in frames)  # 0-3 by the encoder, 4-9 by the turns


def test_turns_are_for_cuda_encoders_of_recordings_not_live_ones():
    enc = _Encoder()
    assert Turns.open(NVJPEG, enc, live=False) is not None
    assert Turns.open(NVJPEG, enc, live=True) is None  # latency: every frame to the worker at once
    assert Turns.open(CPU, enc, live=False) is None  # its work overlaps GL's on the worker thread


class _Sink:
    path = "x"
    packets = 0
    bytes_written = 0

    def __init__(self) -> None:
        self.got: list[int] = []

    def write(self, packets):
        self.got += [p.pts for p in packets]
        self.packets += len(packets)

    def close(self):
        pass


class _Never:
    name, codec = "never", "mjpeg"

    def encode(self, frame):
        raise AssertionError("the worker must not encode packets encoded already")

    def flush(self):
        return []

    def close(self):
        pass


def test_the_worker_writes_encoded_packets_and_counts_their_frames():
    sink = _Sink()
    worker = EncodeWorker(_Never(), sink)  # type: ignore[arg-type]
    worker.put(Encoded([Packet(b"a", 0, 0, True), Packet(b"b", 1, 1, True)], 2))
    worker.put(Encoded([], 3))  # an encoder with a delay: frames taken, no packet yet
    worker.finish()
    assert sink.got == [0, 1] and worker.frames_encoded == 5


def _packets(path):
    with av.open(str(path)) as c:
        return [bytes(p) for p in c.demux(video=0) if p.size]


@pytest.mark.gl
def test_turns_on_the_cpu_path_write_the_same_file_as_the_worker(tmp_path, monkeypatch):
    """Forced on where the worker would encode: the same JPEG packets, in the same order."""
    paths = {}
    for forced in (False, True):
        monkeypatch.setattr(turns, "TURNS", forced)
        paths[forced] = tmp_path / f"t{int(forced)}.mkv"
        result = glrec.record("plasma", paths[forced], size=(96, 64), fps=30, frames=40, encoder="cpu",
                              codec="mjpeg")  # fmt: skip
        assert result.frames == 40
    assert _packets(paths[True]) == _packets(paths[False]) and len(_packets(paths[True])) == 40


@pytest.mark.gpu
def test_nvjpeg_in_turns_writes_the_same_pictures_as_the_worker(tmp_path, monkeypatch):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs an NVIDIA GPU with pip install glrec[nvjpeg]")
    paths = {}
    for forced in (False, None):  # None: the default, turns for nvJPEG
        monkeypatch.setattr(turns, "TURNS", forced)
        paths[forced] = tmp_path / f"n{forced}.mkv"
        with glrec.Recorder(paths[forced], size=(320, 240), fps=30, encoder="nvjpeg", codec="mjpeg") as rec:
            assert (rec._session.turns is not None) == (forced is None)  # type: ignore[union-attr]
            for _ in range(70):  # more than one batch of the handoff, and a partial one
                rec.render("plasma")
        assert rec.close().frames == 70
    assert _packets(paths[None]) == _packets(paths[False]) and len(_packets(paths[None])) == 70
