"""The output folder of a dataset: what it holds, whether it may be written, and which shards are done.

Layout (``webdataset``)::

    OUT/dataset.json            spec, identity hash, status, keys, classes
    OUT/manifest.jsonl          one line per sample (written when all shards are done)
    OUT/shard-000000.tar ...    the shards
    OUT/.glrec/shard-000000.json  a shard's record: written last, so its presence means "shard complete"

The ``folder`` layout has ``OUT/KEY/`` sample folders instead of tar files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from ..errors import OutputError, OutputExistsError
from .spec import DatasetSpec
from .writers import PARTIAL, atomic_write

__all__ = ["DatasetFolder"]

log = logging.getLogger("glrec")

FORMAT = "glrec-dataset"
FORMAT_VERSION = 1
# Scratch files a clip shard writes in .glrec/ while it encodes a sample's video.
_CLIP_SCRATCH = re.compile(r"^clip-\d+-\d+\.mp4$")


class DatasetFolder:
    """``OUT`` for one spec. :meth:`prepare` applies the resume/overwrite rules before anything is written."""

    def __init__(self, root: str | Path, spec: DatasetSpec) -> None:
        self.root = Path(root)
        self.spec = spec
        self.records = self.root / ".glrec"
        self.scratch = self.records  # where clip videos are encoded before they join their sample

    # -- names -------------------------------------------------------------------------------

    def shard_name(self, shard: int) -> str:
        return f"shard-{shard:06d}.tar"

    def record_path(self, shard: int) -> Path:
        return self.records / f"shard-{shard:06d}.json"

    @property
    def info_path(self) -> Path:
        return self.root / "dataset.json"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.jsonl"

    # -- rules -------------------------------------------------------------------------------

    def existing(self) -> dict[str, Any] | None:
        """The ``dataset.json`` found in the folder, or None."""
        try:
            info = json.loads(self.info_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise OutputError(f"{self.info_path} exists but cannot be read ({exc}); move the folder aside.") from exc
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise OutputError(f"{self.info_path} is not a glrec dataset description; choose another folder.")
        return info

    def prepare(self, *, resume: bool, overwrite: bool, info: dict[str, Any]) -> None:
        """Make the folder ready: refuse another dataset unless ``overwrite``; keep this one's shards on ``resume``.

        ``info`` is the ``dataset.json`` to write (status "incomplete").
        """
        root = self.root
        if root.exists() and not root.is_dir():
            raise OutputError(f"Output {str(root)!r} is a file; give a folder for the dataset.")
        old = self.existing() if root.is_dir() else None
        if old is None and root.is_dir() and any(root.iterdir()):
            raise OutputExistsError(
                f"Output folder {str(root)!r} is not empty and holds no glrec dataset; glrec will not write "
                "into it (nor delete what it holds). Choose an empty or new folder."
            )
        if old is not None:
            same = old.get("identity") == info["identity"]
            if overwrite:
                self.wipe(old)
            elif not resume:
                what = "this dataset" if same else "another dataset"
                raise OutputExistsError(
                    f"Output folder {str(root)!r} holds {what} ({old.get('status', '?')}, "
                    f"{old.get('samples', '?')} samples). Pass --resume (resume=True) to finish it"
                    f"{'' if same else ' (only with the same spec)'}, or --overwrite (overwrite=True) to replace it."
                )
            elif not same:
                raise OutputExistsError(
                    f"Output folder {str(root)!r} holds a dataset made from a different spec "
                    f"(identity {str(old.get('identity'))[:12]}..., this spec {info['identity'][:12]}...), so it "
                    "cannot be resumed with this one. Use the spec it was made with, another folder, or --overwrite."
                )
        root.mkdir(parents=True, exist_ok=True)
        self.records.mkdir(exist_ok=True)
        self.write_info(info)

    def wipe(self, old: dict[str, Any]) -> None:
        """Remove the dataset that ``old`` (its ``dataset.json``) describes, and nothing else.

        Only the names that dataset consists of go: its description and manifest,
        its shards (or its samples' files, then their folders if that empties
        them) and its shard records. Anything else in the folder, including
        files someone added to a sample folder or to ``.glrec/``, stays.
        """
        try:
            shards, samples, layout = int(old["shards"]), int(old["samples"]), str(old["layout"])
            members = [str(n) for n in old["keys"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise OutputError(
                f"{self.info_path} does not say what the dataset holds ({exc!r}), so glrec cannot remove only its "
                "files; move the folder aside or delete it yourself."
            ) from None
        for name in ("dataset.json", "manifest.jsonl"):
            _remove_file(self.root / name)
        for shard in range(shards):
            if layout == "webdataset":
                _remove_file(self.root / self.shard_name(shard))
            _remove_file(self.record_path(shard))
        if layout == "folder":
            width = max(6, len(str(samples - 1)))
            for i in range(samples):
                for folder in (self.root / f"{i:0{width}d}", self.root / f"{i:0{width}d}{PARTIAL}"):
                    _remove_sample_folder(folder, members)
        if self.records.is_dir() and not self.records.is_symlink():
            for entry in os.scandir(self.records):
                if _CLIP_SCRATCH.match(entry.name):
                    _remove_file(Path(entry.path))
            with contextlib.suppress(OSError):
                self.records.rmdir()  # only if that emptied it

    def write_info(self, info: dict[str, Any]) -> None:
        atomic_write(self.info_path, (json.dumps(info, indent=2) + "\n").encode())

    # -- shards ------------------------------------------------------------------------------

    def complete(self, shard: int) -> dict[str, Any] | None:
        """The shard's record if it is complete (record present, file there with the recorded size)."""
        try:
            record: dict[str, Any] = json.loads(self.record_path(shard).read_text())
        except (FileNotFoundError, ValueError):
            return None
        name = record.get("file")
        if name is not None:
            p = self.root / name
            if not p.is_file() or p.stat().st_size != record.get("bytes"):
                return None
        else:
            keys = [s["key"] for s in record.get("samples", [])]
            if not all((self.root / k / "meta.json").is_file() for k in keys):
                return None
        return record

    def clean(self, shard: int) -> None:
        """Remove whatever an unfinished attempt at ``shard`` left behind."""
        self.record_path(shard).unlink(missing_ok=True)
        name = self.shard_name(shard)
        for p in (self.root / name, self.root / (name + PARTIAL)):
            p.unlink(missing_ok=True)
        if self.spec.output.layout == "folder":
            from .api import member_names  # here: api builds on this module

            members = member_names(self.spec)
            for i in self.spec.shard_range(shard):
                for p in (self.root / self.spec.key(i), self.root / (self.spec.key(i) + PARTIAL)):
                    _remove_sample_folder(p, members)

    def write_record(self, shard: int, record: dict[str, Any]) -> None:
        atomic_write(self.record_path(shard), (json.dumps(record) + "\n").encode())

    def write_manifest(self, records: list[dict[str, Any]]) -> None:
        lines = [json.dumps(s) for r in records for s in r["samples"]]
        atomic_write(self.manifest_path, ("\n".join(lines) + "\n").encode())


def _remove_file(path: Path) -> None:
    """Remove ``path`` and its ``.partial`` if they are files (a link is removed, never what it points to)."""
    for p in (path, path.with_name(path.name + PARTIAL)):
        if p.is_symlink() or p.is_file():
            p.unlink()


def _remove_sample_folder(folder: Path, members: list[str]) -> None:
    """Remove a sample's files (the dataset's member names), then the folder if nothing else is in it."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for name in members:
        p = folder / name
        if p.is_symlink() or p.is_file():
            p.unlink()
    try:
        folder.rmdir()
    except OSError:
        log.warning("kept %s: it holds files that are not the dataset's (%s)", folder, sorted(os.listdir(folder)))
