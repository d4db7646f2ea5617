"""The output folder of a dataset: what it holds, whether it may be written, and which shards are done.

Layout (``webdataset``)::

    OUT/dataset.json            spec, identity hash, status, keys, classes
    OUT/manifest.jsonl          one line per sample (written when all shards are done)
    OUT/shard-000000.tar ...    the shards
    OUT/.glrec/shard-000000.json  a shard's record: written last, so its presence means "shard complete"

The ``folder`` layout has ``OUT/KEY/`` sample folders instead of tar files.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from ..errors import OutputError, OutputExistsError
from .spec import DatasetSpec
from .writers import PARTIAL, atomic_write

__all__ = ["DatasetFolder"]

FORMAT = "glrec-dataset"
FORMAT_VERSION = 1
_OURS = re.compile(r"^(dataset\.json|manifest\.jsonl|shard-\d+\.tar|\d{6,})(\.partial)?$")


class DatasetFolder:
    """``OUT`` for one spec. :meth:`prepare` applies the resume/overwrite rules before anything is written."""

    def __init__(self, root: str | Path, spec: DatasetSpec) -> None:
        self.root = Path(root)
        self.spec = spec
        self.records = self.root / ".glrec"

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
                self.wipe()
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

    def wipe(self) -> None:
        """Remove what a glrec dataset consists of (and nothing else)."""
        shutil.rmtree(self.records, ignore_errors=True)
        for p in self.root.iterdir():
            if _OURS.match(p.name):
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()

    def write_info(self, info: dict[str, Any]) -> None:
        atomic_write(self.info_path, (json.dumps(info, indent=2) + "\n").encode())

    # -- shards ------------------------------------------------------------------------------

    def complete(self, shard: int) -> dict[str, Any] | None:
        """The shard's record if it is complete (record present, file there with the recorded size)."""
        try:
            record = json.loads(self.record_path(shard).read_text())
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
            for i in self.spec.shard_range(shard):
                for p in (self.root / self.spec.key(i), self.root / (self.spec.key(i) + PARTIAL)):
                    shutil.rmtree(p, ignore_errors=True)

    def write_record(self, shard: int, record: dict[str, Any]) -> None:
        atomic_write(self.record_path(shard), (json.dumps(record) + "\n").encode())

    def write_manifest(self, records: list[dict[str, Any]]) -> None:
        lines = [json.dumps(s) for r in records for s in r["samples"]]
        atomic_write(self.manifest_path, ("\n".join(lines) + "\n").encode())
