"""Shards checked as their workers complete them: finish writes the same manifest, and still sees what changed."""

import json

import pytest
from test_dataset_workers import spec_for, tree

from glrec.dataset import generate
from glrec.dataset.files import checked as checked_module
from glrec.dataset.files.folder import DatasetFolder
from glrec.errors import DatasetError


def written(tmp_path, layout="webdataset"):
    spec = spec_for(tmp_path, layout=layout)
    out = tmp_path / f"one-{layout}"
    generate(spec, out, workers=1)
    info = json.loads((out / "dataset.json").read_text())
    info["status"] = "incomplete"
    return spec, out, info


@pytest.mark.parametrize("layout", ["webdataset", "folder"])
def test_finish_from_checked_shards_writes_the_manifest_it_reads_from_disk(tmp_path, layout):
    spec, out, info = written(tmp_path, layout)
    want = (out / "manifest.jsonl").read_bytes()
    folder = DatasetFolder(out, spec)
    for shard in range(spec.shards):
        folder.check_done(shard)
    assert all(s in folder.checked for s in range(spec.shards))
    (out / "manifest.jsonl").unlink()
    taken = []
    real = folder.checked.take
    folder.checked.take = lambda shard, path: taken.append(real(shard, path)) or taken[-1]
    folder.finish(info)
    assert (out / "manifest.jsonl").read_bytes() == want
    assert len(taken) == spec.shards and all(t is not None for t in taken)  # none read again
    assert folder.checked.bytes == 0  # given up as taken


def test_a_shard_changed_after_its_check_is_read_again_and_refused(tmp_path):
    spec, out, info = written(tmp_path)
    folder = DatasetFolder(out, spec)
    for shard in range(spec.shards):
        folder.check_done(shard)
    with open(out / "shard-000002.tar", "ab") as f:
        f.write(b"\0" * 512)  # the tar no longer has its recorded size
    with pytest.raises(DatasetError, match=r"Shard 2 .* not complete on disk: shard-000002.tar has \d+ bytes"):
        folder.finish(info)


def test_a_record_replaced_after_its_check_is_the_one_the_manifest_takes(tmp_path):
    spec, out, info = written(tmp_path)
    folder = DatasetFolder(out, spec)
    for shard in range(spec.shards):
        folder.check_done(shard)
    path = folder.record_path(1)
    record = json.loads(path.read_text())
    record["samples"][0]["params"]["note"] = "edited after the check"
    tmp = path.with_name("x.json")
    tmp.write_text(json.dumps(record) + "\n")
    tmp.replace(path)  # another inode: not the record that was checked
    folder.finish(info)
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert json.loads(lines[3])["params"]["note"] == "edited after the check"


def test_an_incomplete_shard_is_not_kept_and_kept_lines_are_bounded(tmp_path):
    spec, out, _ = written(tmp_path)
    folder = DatasetFolder(out, spec)
    (out / "shard-000001.tar").unlink()
    folder.check_done(1)
    folder.check_done(99)  # no record at all
    assert 1 not in folder.checked and 99 not in folder.checked
    small = DatasetFolder(out, spec)
    small.checked = checked_module.CheckedShards(out, max_bytes=1)
    small.check_done(0)
    assert 0 not in small.checked and small.checked.bytes == 0  # over the bound: finish reads it again


def test_a_run_on_workers_checks_each_shard_as_it_completes(tmp_path, monkeypatch):
    spec = spec_for(tmp_path)
    calls = []
    real = DatasetFolder.check_done
    monkeypatch.setattr(DatasetFolder, "check_done", lambda self, shard: calls.append(shard) or real(self, shard))
    generate(spec, tmp_path / "two", workers=2)
    assert sorted(calls) == list(range(spec.shards))
    generate(spec, tmp_path / "one", workers=1)
    assert tree(tmp_path / "two") == tree(tmp_path / "one")  # the same manifest as one process writes
