"""The manifest's file digests and the shard records': BLAKE3 by default, SHA-256 or none on request, and a resumed
folder keeps the digest it was begun with (one written before glrec recorded it: SHA-256)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from blake3 import blake3
from helpers import shard_members
from where import EXAMPLES

from glrec.dataset import DatasetSpec, generate
from glrec.dataset.files.digests import file_digests, hasher
from glrec.errors import ConfigError


def spec(**output: object) -> DatasetSpec:
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": 4, "size": "48x32", "seed": 5, "shard_size": 2},
            "output": {"passes": ["rgb", "depth", "instance"], **output},
            "params": {"objects": {"int": [1, 4]}},
        }
    )


def manifest(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]


def records(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((root / ".glrec").glob("shard-*.json"))]


def digest_of(algorithm: str, data: bytes) -> str:
    return blake3(data).hexdigest() if algorithm == "blake3" else hashlib.sha256(data).hexdigest()


def check_digests(root: Path, algorithm: str) -> None:
    """Every member and every shard has its size and its digest under ``algorithm`` (recomputed here)."""
    members = shard_members(root)
    lines = manifest(root)
    assert len(lines) == 4
    for line in lines:
        for name, entry in line["files"].items():
            data = members[f"{line['key']}.{name}"]
            want = {"bytes": len(data)} | ({} if algorithm == "none" else {algorithm: digest_of(algorithm, data)})
            assert entry == want, (line["key"], name)
    for record in records(root):
        data = (root / record["file"]).read_bytes()
        assert record["bytes"] == len(data)
        assert {k for k in record if k in ("blake3", "sha256")} == ({algorithm} - {"none"})
        if algorithm != "none":
            assert record[algorithm] == digest_of(algorithm, data)
    assert json.loads((root / "dataset.json").read_text())["digest"] == algorithm


def test_blake3_is_blake3():  # the reference vectors of the BLAKE3 specification
    for data, want in (
        (b"", "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        (b"abc", "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"),
    ):
        h = hasher("blake3")
        assert h is not None
        h.update(data)
        assert h.hexdigest() == want
    assert file_digests({"a.bin": b"abc"}, "none") == {"a.bin": {"bytes": 3}}


@pytest.mark.parametrize("algorithm", [None, "blake3", "sha256", "none"])
def test_each_digest_is_what_the_manifest_and_records_hold(tmp_path, algorithm):
    made = {} if algorithm is None else {"digest": algorithm}
    generate(spec(**made), tmp_path / "o", workers=1)
    check_digests(tmp_path / "o", algorithm or "blake3")


def test_the_digest_changes_no_file_and_not_the_identity(tmp_path):
    generate(spec(digest="blake3"), tmp_path / "b", workers=1)
    generate(spec(digest="sha256"), tmp_path / "s", workers=1)
    assert shard_members(tmp_path / "b") == shard_members(tmp_path / "s")
    assert spec(digest="sha256").identity() == spec().identity() == spec(digest="none").identity()


def older_folder(tmp_path: Path) -> Path:
    """A dataset as a glrec without ``digest`` left it: SHA-256 digests, no "digest" in dataset.json or its spec,
    its second shard not written yet."""
    root = tmp_path / "old"
    generate(spec(digest="sha256"), root, workers=1)
    info = json.loads((root / "dataset.json").read_text())
    del info["digest"], info["spec"]["output"]["digest"]
    (root / "dataset.json").write_text(json.dumps({**info, "status": "incomplete"}))
    (root / "manifest.jsonl").unlink()
    (root / ".glrec" / "shard-000001.json").unlink()
    (root / "shard-000001.tar").unlink()
    return root


def test_a_folder_written_before_the_digest_was_recorded_is_resumed_with_sha256(tmp_path):
    root = older_folder(tmp_path)
    first = (root / "shard-000000.tar").read_bytes()
    generate(spec(), root, resume=True, workers=1)  # the spec names no digest: the folder's is kept
    assert (root / "shard-000000.tar").read_bytes() == first
    check_digests(root, "sha256")


def test_resuming_with_another_digest_is_refused_and_touches_nothing(tmp_path):
    root = older_folder(tmp_path)
    before = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    with pytest.raises(ConfigError, match=r"begun with \[output\] digest = 'sha256'.*--overwrite") as got:
        generate(spec(digest="blake3"), root, resume=True, workers=1)
    assert "\n" not in str(got.value)
    assert {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} == before


def test_an_unknown_digest_is_one_line_naming_the_choices():
    with pytest.raises(ConfigError, match="digest 'md5'.*blake3, none, sha256") as got:
        spec(digest="md5")
    assert "\n" not in str(got.value)


def test_per_sample_folders_list_each_files_digest(tmp_path):
    root = tmp_path / "f"
    generate(spec(layout="folder", digest="sha256"), root, workers=1)
    lines = manifest(root)
    assert len(lines) == 4
    for line in lines:
        for name, entry in line["files"].items():
            data = (root / line["location"] / name).read_bytes()
            assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}, (line["key"], name)
    assert [(r["file"], {"blake3", "sha256"} & r.keys()) for r in records(root)] == [(None, set())] * 2


def test_the_example_keeps_the_identity_glrec_gave_it_before_the_digest_option():
    # computed by main c0b5db2, the last glrec without [output] digest: its folders resume under this version
    got = DatasetSpec.load(EXAMPLES / "dataset.toml").identity()
    assert got == "019cdfa51dd271541d91a2069772f6dd21c02b2224235cabb8559e902ed57ea8"


def test_a_folder_begun_with_a_digest_this_glrec_does_not_know_is_refused_and_touched_not(tmp_path):
    root = older_folder(tmp_path)
    info = json.loads((root / "dataset.json").read_text())
    (root / "dataset.json").write_text(json.dumps({**info, "digest": "xxh3"}))  # as a later glrec might write
    before = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    with pytest.raises(ConfigError, match=r"digest this glrec does not know \('xxh3'.*--overwrite") as got:
        generate(spec(), root, resume=True, workers=1)
    assert "\n" not in str(got.value)
    assert {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} == before
