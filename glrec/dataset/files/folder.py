"""The output folder of a dataset: what it holds, whether it may be written, and which shards are done.

Layout (``webdataset``)::

    OUT/dataset.json            spec, identity hash, status, keys, classes
    OUT/manifest.jsonl          one line per sample (written when all shards are done)
    OUT/shard-000000.tar ...    the shards
    OUT/.glrec/shard-000000.json  a shard's record: written last, so its presence means "shard complete"
    OUT/.glrec/lock             held by the run writing the folder (glrec.dataset.files.lock); gone when it ends

The ``folder`` layout has ``OUT/KEY/`` sample folders instead of tar files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import DatasetError, OutputError, OutputExistsError
from ...scenes.passes import PASS_ROWS
from ..spec.document import DatasetSpec
from .checked import Checked, CheckedShards, files_problem, stat_key
from .lock import LOCK_NAME, check_owner, probe
from .writers import PARTIAL, atomic_write, atomic_write_chunks

__all__ = ["DatasetFolder"]

log = logging.getLogger("glrec")

FORMAT = "glrec-dataset"
#: 2: counter-based draws (glrec.scenes.draws): the same spec makes other samples than version 1 did.
FORMAT_VERSION = 2
# Scratch files a clip shard writes in .glrec/ while it encodes a sample's video.
_CLIP_SCRATCH = re.compile(r"^clip-\d+-\d+\.mp4$")
_SHARD_FILE = re.compile(r"shard-(\d{6,})\.tar")
_RECORD_FILE = re.compile(r"shard-(\d{6,})\.json")


class DatasetFolder:
    """``OUT`` for one spec. :meth:`prepare` applies the resume/overwrite rules before anything is written.

    ``owner``: the token of the run that holds the folder's lock (:mod:`glrec.dataset.files.lock`); a
    worker given one checks before each shard that its run still holds the folder.
    """

    def __init__(self, root: str | Path, spec: DatasetSpec, owner: str | None = None) -> None:
        self.root = Path(root)
        self.spec = spec
        self.owner = owner
        self.records = self.root / ".glrec"
        self.scratch = self.records  # where clip videos are encoded before they join their sample
        #: Shards checked as they completed (:meth:`check_done`), for :meth:`finish`.
        self.checked = CheckedShards(self.root)

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

    def check(
        self, *, resume: bool, overwrite: bool, info: dict[str, Any], held: bool = False
    ) -> dict[str, Any] | None:
        """Apply the rules without writing anything; returns the dataset found there (its ``dataset.json``).

        A run that holds the folder now is named first (:func:`~glrec.dataset.files.lock.probe`),
        unless ``held``: this run holds the lock itself.
        """
        if not held:
            probe(self.root)
        root = self.root
        if root.exists() and not root.is_dir():
            raise OutputError(f"Output {str(root)!r} is a file; give a folder for the dataset.")
        old = self.existing() if root.is_dir() else None
        if old is None and root.is_dir() and holds_anything(root):
            raise OutputExistsError(
                f"Output folder {str(root)!r} is not empty and holds no glrec dataset; glrec will not write "
                "into it (nor delete what it holds). Choose an empty or new folder."
            )
        if old is not None and not overwrite:
            same = old.get("identity") == info["identity"]
            if not resume:
                what = "this dataset" if same else "another dataset"
                raise OutputExistsError(
                    f"Output folder {str(root)!r} holds {what} ({old.get('status', '?')}, "
                    f"{old.get('samples', '?')} samples). Pass --resume (resume=True) to finish it"
                    f"{'' if same else ' (only with the same spec)'}, or --overwrite (overwrite=True) to replace it."
                )
            version = old.get("format_version")
            if version != info.get("format_version", FORMAT_VERSION):
                raise OutputExistsError(
                    f"Output folder {str(root)!r} holds a dataset of format version {version}; this glrec writes "
                    f"version {FORMAT_VERSION}, whose samples differ (parameters are drawn another way), so it "
                    "cannot be resumed. Use another folder, or --overwrite to make it again."
                )
            if not same:
                raise OutputExistsError(
                    f"Output folder {str(root)!r} holds a dataset made from a different spec "
                    f"(identity {str(old.get('identity'))[:12]}..., this spec {info['identity'][:12]}...), so it "
                    "cannot be resumed with this one. Use the spec it was made with, another folder, or --overwrite."
                )
        return old

    def prepare(self, *, resume: bool, overwrite: bool, info: dict[str, Any]) -> None:
        """Make the folder ready: refuse another dataset unless ``overwrite``; keep this one's shards on ``resume``.

        ``info`` is the ``dataset.json`` to write (status "incomplete"). Called with the folder's
        lock held (:class:`~glrec.dataset.files.lock.FolderLock`), the rules are applied again under it.
        """
        old = self.check(resume=resume, overwrite=overwrite, info=info, held=self.owner is not None)
        if old is not None and overwrite:
            self.wipe(old)
        self.root.mkdir(parents=True, exist_ok=True)
        self.records.mkdir(exist_ok=True)
        self.remove_scratch()
        self.write_info(info)

    def wipe(self, old: dict[str, Any]) -> None:
        """Remove the dataset that ``old`` (its ``dataset.json``) describes, and nothing else.

        Only the names that dataset consists of go: its description and manifest,
        its shards (or its samples' files, then their folders if that empties
        them) and its shard records. Anything else in the folder, including
        files someone added to a sample folder or to ``.glrec/``, stays. The
        folder is listed, not the dataset's names walked, so a dataset of 2**63 - 1
        samples is removed in the time its files take.
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
        width = max(6, len(str(samples - 1)))
        for entry in os.scandir(self.root):
            name = entry.name.removesuffix(PARTIAL)
            if layout == "webdataset":
                m = _SHARD_FILE.fullmatch(name)
                if m and int(m[1]) < shards and name == self.shard_name(int(m[1])):
                    _remove_one(Path(entry.path))
            elif layout == "folder" and len(name) == width and name.isdigit() and int(name) < samples:
                _remove_sample_folder(Path(entry.path), members)
        if self.records.is_dir() and not self.records.is_symlink():
            for entry in os.scandir(self.records):
                name = entry.name.removesuffix(PARTIAL)
                m = _RECORD_FILE.fullmatch(name)
                mine = m is not None and int(m[1]) < shards and name == self.record_path(int(m[1])).name
                if mine or _CLIP_SCRATCH.match(entry.name):
                    _remove_one(Path(entry.path))
            with contextlib.suppress(OSError):
                self.records.rmdir()  # only if that emptied it

    def remove_scratch(self) -> None:
        """Remove clip videos a killed run left in ``.glrec/`` (no other run writes here: the folder is locked)."""
        if not self.records.is_dir() or self.records.is_symlink():
            return
        for entry in os.scandir(self.records):
            if _CLIP_SCRATCH.match(entry.name):
                _remove_one(Path(entry.path))

    def write_info(self, info: dict[str, Any]) -> None:
        atomic_write(self.info_path, (json.dumps(info, indent=2) + "\n").encode())

    # -- shards ------------------------------------------------------------------------------

    def _record(self, shard: int) -> dict[str, Any] | None:
        try:
            record = json.loads(self.record_path(shard).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def problem(self, shard: int, record: dict[str, Any] | None) -> str | None:
        """What is wrong on disk with ``shard`` whose record is ``record``, or None if it is complete.

        Complete: the record lists the shard's samples, and every file it names is
        there with the recorded size (the tar shard, or each sample's files).
        """
        if record is None:
            return f"its record {self.record_path(shard).relative_to(self.root)} is missing or unreadable"
        problem, files = self._inspect(shard, record)
        if problem is not None:
            return problem
        return files_problem(self.root, files)

    def _inspect(self, shard: int, record: dict[str, Any]) -> tuple[str | None, list[tuple[str, object]]]:
        """What is wrong with ``shard``'s record itself (or None), and the files it names with their sizes."""
        lines = record.get("samples")
        if record.get("shard") != shard or not isinstance(lines, list):
            return "its record is not this shard's", []
        if [line.get("index") if isinstance(line, dict) else None for line in lines] != list(
            self.spec.shard_range(shard)
        ):
            return "its record lists other samples than the shard's", []
        if self.spec.output.layout == "webdataset":
            name = self.shard_name(shard)
            if record.get("file") != name:
                return f"its record names {record.get('file')!r}, not {name}", []
            return None, [(name, record.get("bytes"))]
        files: list[tuple[str, object]] = []
        for line in lines:
            named = line.get("files")
            if not isinstance(named, dict) or not isinstance(line.get("key"), str):
                return f"its record of sample {line.get('index')} lists no files", []
            files += [(f"{line['key']}/{f}", d.get("bytes") if isinstance(d, dict) else None) for f, d in named.items()]
        return None, files

    def check_done(self, shard: int) -> None:
        """Check ``shard``, which a worker has just completed, as :meth:`finish` will, and keep its manifest
        lines for it (:mod:`glrec.dataset.files.checked`): its record is read from disk, not taken from the
        worker. One that is not complete is left for :meth:`finish` to find again."""
        try:
            with open(self.record_path(shard), "rb") as f:
                key = stat_key(os.fstat(f.fileno()))
                record = json.loads(f.read())
        except (OSError, ValueError):
            return
        if not isinstance(record, dict):
            return
        problem, files = self._inspect(shard, record)
        if problem is None and files_problem(self.root, files) is None:
            self.checked.keep(shard, Checked(key, tuple(files), _manifest_lines(record["samples"])))

    def complete(self, shard: int) -> dict[str, Any] | None:
        """The shard's record if it is complete (record present, every file there with the recorded size)."""
        record = self._record(shard)
        return record if self.problem(shard, record) is None else None

    def complete_shards(self) -> set[int]:
        """The shards already complete, found by listing ``.glrec/`` (not by asking each of the spec's shards)."""
        done: set[int] = set()
        if not self.records.is_dir():
            return done
        for entry in os.scandir(self.records):
            m = _RECORD_FILE.fullmatch(entry.name)
            if m is None:
                continue
            shard = int(m[1])
            if shard < self.spec.shards and entry.name == self.record_path(shard).name and self.complete(shard):
                done.add(shard)
        return done

    def check_owner(self) -> None:
        """Raise OutputError if the run this folder object writes for no longer holds the folder's lock."""
        if self.owner is not None:
            check_owner(self.root, self.owner)

    def clean(self, shard: int) -> None:
        """Remove whatever an unfinished attempt at ``shard`` left behind (its record's temporary file too: a
        worker killed while writing the record leaves it)."""
        record = self.record_path(shard)
        record.unlink(missing_ok=True)
        record.with_name(record.name + PARTIAL).unlink(missing_ok=True)
        name = self.shard_name(shard)
        for p in (self.root / name, self.root / (name + PARTIAL)):
            p.unlink(missing_ok=True)
        if self.spec.output.layout == "folder":
            members = member_names(self.spec)
            for i in self.spec.shard_range(shard):
                for p in (self.root / self.spec.key(i), self.root / (self.spec.key(i) + PARTIAL)):
                    _remove_sample_folder(p, members)

    def discard(self, shard: int) -> None:
        """After a worker stopped on ``shard``: remove what it left unfinished, never a complete shard."""
        if self.complete(shard) is None:
            self.clean(shard)

    def write_record(self, shard: int, record: dict[str, Any]) -> None:
        atomic_write(self.record_path(shard), (json.dumps(record) + "\n").encode())

    def finish(self, info: dict[str, Any]) -> None:
        """Check every shard on disk, write the manifest from the records on disk, then mark the dataset complete.

        What the workers reported in memory is not trusted for this: a shard
        removed since it was written (by hand, or by a process that ignored the
        lock) leaves the dataset "incomplete" with a DatasetError naming it. A shard
        checked as it completed (:meth:`check_done`) is looked at again with a stat of
        its record and of each of its files.
        """
        found = self.existing()
        if found is None or found.get("identity") != info["identity"]:
            raise DatasetError(
                f"{self.info_path} no longer describes this run's dataset (it was removed or replaced while the "
                "run wrote); the dataset is left as it is: check the folder, then run again with --resume."
            )

        def lines() -> Iterator[bytes]:
            for shard in range(self.spec.shards):
                kept = self.checked.take(shard, self.record_path(shard))
                if kept is not None:  # checked as it completed, and nothing changed since
                    yield kept
                    continue
                record = self._record(shard)
                problem = self.problem(shard, record)
                if problem is not None:
                    raise DatasetError(
                        f"Shard {shard} of {self.root} is not complete on disk: {problem}. The dataset stays "
                        '"incomplete"; run again with --resume (resume=True) to render what is missing.'
                    )
                assert record is not None
                yield _manifest_lines(record["samples"])

        atomic_write_chunks(self.manifest_path, lines())
        self.write_info({**info, "status": "complete"})


def holds_anything(root: Path) -> bool:
    """Whether ``root`` holds anything but an empty ``.glrec/`` or one with only the lock in it."""
    for entry in os.scandir(root):
        if entry.name == ".glrec" and entry.is_dir(follow_symlinks=False):
            if any(e.name != LOCK_NAME for e in os.scandir(entry.path)):
                return True
            continue
        return True
    return False


def _manifest_lines(samples: list[Any]) -> bytes:
    """A shard's lines of ``manifest.jsonl``: each sample's record line as one line of JSON."""
    return b"".join((json.dumps(sample) + "\n").encode() for sample in samples)


def _remove_one(path: Path) -> None:
    """Remove ``path`` if it is a file or a link (never what a link points to)."""
    if path.is_symlink() or path.is_file():
        path.unlink()


def _remove_file(path: Path) -> None:
    """Remove ``path`` and its ``.partial`` if they are files (a link is removed, never what it points to)."""
    for p in (path, path.with_name(path.name + PARTIAL)):
        if p.is_symlink() or p.is_file():
            p.unlink()


def member_names(spec: DatasetSpec) -> list[str]:
    """The file names each sample has (``rgb.png``, ``depth.npy``, ..., ``meta.json``)."""
    order = ["rgb", *(p for p in spec.output.passes if p != "rgb")]  # colour first
    names = [PASS_ROWS[p].file_name(spec.output, spec.is_clip) for p in order]
    return [*names, "meta.json"]


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
