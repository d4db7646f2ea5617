"""A shard worker's shards pipelined (ShardWorker.run_shards): the next is drawn while the one before is encoded,
written and committed; at most two are in flight; a worker whose feed has nothing yet finishes what it took."""

import threading

import pytest
from helpers import shard_members

from glrec.dataset import DatasetSpec
from glrec.dataset.files.feed import ShardFeed
from glrec.dataset.files.folder import DatasetFolder
from glrec.dataset.files.runner import ShardWorker
from glrec.dataset.files.writers import TarWriter

pytestmark = pytest.mark.gl


def small_spec(samples: int = 12, shard_size: int = 3) -> DatasetSpec:
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": "48x32", "seed": 11, "shard_size": shard_size},
            "output": {"passes": ["rgb", "depth", "instance"]},
            "params": {"objects": {"int": [1, 4]}, "camera_azimuth": {"uniform": [0, 360]}},
        }
    )


def folder_at(tmp_path, name: str, spec: DatasetSpec) -> DatasetFolder:
    root = tmp_path / name
    root.mkdir()
    folder = DatasetFolder(root, spec)
    folder.records.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_next_shard_is_begun_before_the_one_before_is_complete_and_the_bytes_do_not_change(tmp_path):
    spec = small_spec()
    folder = folder_at(tmp_path, "pipelined", spec)
    events: list[tuple[str, int]] = []
    with ShardWorker(spec, folder, threads=2) as worker:  # two encode threads: samples wait to be written
        records = worker.run_shards(
            ShardFeed.of(range(spec.shards)),
            opened=lambda s: events.append(("open", s)),
            done=lambda r: events.append(("done", r["shard"])),
        )
    at = {event: i for i, event in enumerate(events)}
    assert sorted(at) == sorted([("open", s) for s in range(4)] + [("done", s) for s in range(4)])
    for s in range(1, spec.shards):
        assert at[("open", s)] < at[("done", s - 1)]  # drawn while the one before was still being finished
    for s in range(2, spec.shards):
        assert at[("done", s - 2)] < at[("open", s)]  # never more than two in flight
    assert [r["shard"] for r in records] == list(range(spec.shards))

    one_by_one = folder_at(tmp_path, "one-by-one", spec)
    with ShardWorker(spec, one_by_one, threads=1) as worker:  # no encode threads: one shard at a time
        alone = [worker.run(s) for s in range(spec.shards)]
    assert shard_members(folder.root) == shard_members(one_by_one.root)
    assert [r["samples"] for r in records] == [r["samples"] for r in alone]
    assert [r["blake3"] for r in records] == [r["blake3"] for r in alone]


def test_a_feed_with_nothing_come_yet_finds_every_shard_taken_complete_before_it_waits(tmp_path):
    spec = small_spec()
    folder = folder_at(tmp_path, "out", spec)
    waiting, opened, done = list(range(spec.shards)), [], []
    complete_when_asked = []

    def get():  # what a local worker's connection does: wait for the parent, who waits for the done shards
        complete_when_asked.append(sorted(done) == sorted(opened))
        return waiting.pop(0) if waiting else None

    with ShardWorker(spec, folder, threads=2) as worker:
        worker.run_shards(ShardFeed(lambda: False, get), opened=opened.append, done=lambda r: done.append(r["shard"]))
    assert len(complete_when_asked) == spec.shards + 1 and all(complete_when_asked)
    assert done == list(range(spec.shards))


def test_an_error_in_a_later_shard_keeps_the_complete_ones_and_removes_those_in_flight(tmp_path, monkeypatch):
    spec = small_spec()
    folder = folder_at(tmp_path, "out", spec)
    real = ShardWorker._encode

    def encode(self, sample, video):
        if sample.index == 7:  # the second sample of shard 2
            raise RuntimeError("encoder broke")
        return real(self, sample, video)

    monkeypatch.setattr(ShardWorker, "_encode", encode)
    done: list[int] = []
    with ShardWorker(spec, folder, threads=2) as worker:
        with pytest.raises(RuntimeError, match="encoder broke"):
            worker.run_shards(ShardFeed.of(range(spec.shards)), done=lambda r: done.append(r["shard"]))
        assert (worker.failed_index, worker.failed_shard) == (7, 2)
    # Shard 3 was drawn while shard 2 was written: both go, the complete ones stay with their records.
    assert done == [0, 1]
    assert sorted(p.name for p in folder.root.glob("shard-*")) == ["shard-000000.tar", "shard-000001.tar"]
    assert sorted(p.name for p in folder.records.glob("*.json")) == ["shard-000000.json", "shard-000001.json"]


def test_shard_feed_peeks_takes_and_keeps_its_end():
    feed = ShardFeed.of([3, 4])
    assert feed.peek() == 3 and feed.take(block=False) == 3
    assert feed.take(block=True) == 4
    assert feed.take(block=False) is None and feed.take(block=True) is None and feed.peek() is None

    arrived: list[int] = []
    later = ShardFeed(lambda: bool(arrived), lambda: arrived.pop(0) if arrived else None)
    assert later.peek() is None and later.take(block=False) is None  # nothing has come: not the end
    arrived.append(9)
    assert later.peek() == 9 and later.take(block=False) == 9


@pytest.mark.parametrize("threads", [1, 2])
def test_shards_are_written_and_synced_on_the_write_thread_with_or_without_encode_threads(
    tmp_path, monkeypatch, threads
):
    # A worker with one thread (16 workers on 16 cores) used to write its shards and wait for their fsync on the
    # GL thread; now every worker's shards are written and committed on a write thread of their own.
    spec = small_spec()
    folder = folder_at(tmp_path, "out", spec)
    where: dict[str, set[str]] = {"add": set(), "commit": set()}
    real_add, real_commit = TarWriter.add, TarWriter.commit

    def add(self, key, files):
        where["add"].add(threading.current_thread().name)
        return real_add(self, key, files)

    def commit(self):
        where["commit"].add(threading.current_thread().name)
        return real_commit(self)

    monkeypatch.setattr(TarWriter, "add", add)
    monkeypatch.setattr(TarWriter, "commit", commit)
    with ShardWorker(spec, folder, threads=threads) as worker:
        records = worker.run_shards(ShardFeed.of(range(spec.shards)))
    assert [r["shard"] for r in records] == list(range(spec.shards))
    main = threading.main_thread().name
    assert where["add"] and where["commit"] and main not in where["add"] | where["commit"]
    assert all(name.startswith("glrec-dataset-write") for name in where["add"] | where["commit"])
