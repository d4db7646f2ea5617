"""Shards written behind the GL thread, and the ways packed passes are read back: the same bytes every way."""

import errno
import tarfile
import threading

import numpy as np
import pytest
from blake3 import blake3
from test_dataset_workers import spec_for, tree

from glrec.dataset import generate
from glrec.dataset.files.writers import TarWriter, WriteBehind
from glrec.errors import DiskFullError


def samples(count: int = 9) -> list[tuple[str, dict[str, bytes]]]:
    rng = np.random.default_rng(5)
    return [(f"{k:06d}", {n: rng.bytes(int(rng.integers(1, 40_000))) for n in ("rgb.png", "meta.json")})
            for k in range(count)]  # fmt: skip


def test_written_behind_is_the_shard_written_in_place(tmp_path):
    direct, behind = TarWriter(tmp_path / "a.tar"), WriteBehind(TarWriter(tmp_path / "b.tar"), limit=2)
    for key, files in samples():
        direct.add(key, files)
        behind.add(key, files)
    one, two = direct.commit(), behind.commit()
    data = (tmp_path / "b.tar").read_bytes()
    assert data == (tmp_path / "a.tar").read_bytes()
    assert two["blake3"] == one["blake3"] == blake3(data).hexdigest() and two["bytes"] == len(data)


class Failing(TarWriter):
    """A tar writer whose third add finds the disk full, and which records the threads that wrote."""

    def __init__(self, path):
        super().__init__(path)
        self.adds, self.threads = 0, set()

    def add(self, key, files):
        self.adds += 1
        self.threads.add(threading.get_ident())
        if self.adds == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().add(key, files)


def test_an_add_that_fails_is_raised_to_the_caller_and_abort_leaves_nothing(tmp_path):
    inner = Failing(tmp_path / "s.tar")
    writer = WriteBehind(inner, limit=8)
    with pytest.raises(OSError) as info:
        for key, files in samples():
            writer.add(key, files)
        writer.commit()
    assert info.value.errno == errno.ENOSPC
    assert threading.get_ident() not in inner.threads  # the adds ran on the writer's thread
    writer.abort()
    assert list(tmp_path.iterdir()) == []


class Gated(TarWriter):
    """A tar writer whose adds wait for ``gate`` (the disk is slow)."""

    def __init__(self, path):
        super().__init__(path)
        self.gate, self.started = threading.Event(), threading.Semaphore(0)

    def add(self, key, files):
        self.started.release()
        assert self.gate.wait(30)
        super().add(key, files)


def test_adds_wait_only_once_the_files_queued_pass_the_byte_limit(tmp_path):
    inner = Gated(tmp_path / "s.tar")
    writer = WriteBehind(inner, limit=100, limit_bytes=2500)
    files = {"depth.npy": b"x" * 1000}
    for k in range(3):  # 3,000 bytes queued, the first add being written: the caller has not waited
        writer.add(f"k{k}", files)
    assert inner.started.acquire(timeout=30)
    done = threading.Event()
    late = threading.Thread(target=lambda: (writer.add("k3", files), done.set()))
    late.start()
    assert not done.wait(0.3)  # past 2,500 bytes: the fourth waits for the first to be written
    inner.gate.set()
    assert done.wait(30)
    late.join()
    result = writer.commit()
    assert result["file"] is not None
    with tarfile.open(tmp_path / "s.tar") as tar:
        assert [m.name for m in tar.getmembers()] == [f"k{k}.depth.npy" for k in range(4)]


def test_a_full_disk_while_writing_behind_keeps_finished_shards(tmp_path, monkeypatch):
    """The run's disk-full error still names the shard, and the shards finished before it stay."""
    from glrec.dataset.files import writers

    real, calls = writers.TarWriter.add, [0]

    def add(self, key, files):
        calls[0] += 1
        if calls[0] == 5:  # shard 1's second sample (shards of 3)
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, key, files)

    monkeypatch.setattr(writers.TarWriter, "add", add)
    with pytest.raises(DiskFullError, match="shard 1"):
        generate(spec_for(tmp_path), tmp_path / "out", workers=1)
    assert sorted(p.name for p in (tmp_path / "out").glob("*.tar*")) == ["shard-000000.tar"]


@pytest.mark.gl
@pytest.mark.parametrize("mode", ["copy", "direct"])
def test_every_readback_writes_the_shards_of_the_buffer_read(tmp_path, monkeypatch, mode):
    from glrec.dataset.rendering import layer_pack

    spec = spec_for(tmp_path)
    monkeypatch.setattr(layer_pack, "READBACK", "get")
    generate(spec, tmp_path / "get", workers=1)
    monkeypatch.setattr(layer_pack, "READBACK", mode)
    generate(spec, tmp_path / mode, workers=1)
    assert tree(tmp_path / mode) == tree(tmp_path / "get")


def test_a_polled_fence_waits_for_the_gpu_and_then_is_spent(gl):
    """``Fence.wait(poll_s=...)``: the work before the fence is done when it returns (a buffer the GPU cleared)."""
    from glrec.gl.fences import Fence

    buf = gl.mgl.buffer(reserve=1 << 22)
    buf.clear()
    buf.write(b"\x07" * (1 << 22))
    fence = Fence()
    fence.wait(poll_s=0.0002)
    assert fence.signalled()  # released: a spent fence reads as signalled
    assert buf.read(16) == b"\x07" * 16
    buf.release()


@pytest.mark.gl
def test_auto_reads_back_with_a_copy_on_hardware_gl_and_a_read_on_software_gl(tmp_path, monkeypatch):
    from glrec.dataset.rendering import layer_pack
    from glrec.gl.context import create_context

    with create_context() as gl:
        software = gl.info.is_software
    made = []
    real = layer_pack.LayerPacker._own_mapped
    monkeypatch.setattr(layer_pack.LayerPacker, "_own_mapped", lambda self, n: made.append(n) or real(self, n))
    monkeypatch.setattr(layer_pack, "READBACK", "auto")
    generate(spec_for(tmp_path), tmp_path / "auto", workers=1)
    assert bool(made) is not software  # llvmpipe's copy would be one more memcpy on the CPU
    monkeypatch.setattr(layer_pack, "READBACK", "copy")
    generate(spec_for(tmp_path), tmp_path / "copy", workers=1)
    assert made  # asked for, the copy is made on any GL
    assert tree(tmp_path / "copy") == tree(tmp_path / "auto")
