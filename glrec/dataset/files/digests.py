"""The digest of every file in a dataset's manifest and of every tar shard in its record: BLAKE3 by default.

``[output] digest`` picks it: ``"blake3"`` (the default), ``"sha256"`` (what glrec
wrote before; ``sha256sum`` checks it), or ``"none"`` (sizes only). The manifest
names the algorithm in each file's entry (``{"bytes": 1234, "blake3": "..."}``), and
``dataset.json`` says it once (``"digest"``).

Why BLAKE3: a 640x480 sample of five passes is 1.3 MB, hashed twice (its files
for the manifest, the tar for the shard's record). On the H200 machine's 16 cores,
16 shard workers made 1,335 samples/s with SHA-256 and 1,827 with no digest at all
(``benchmarks/dataset_workers.py``, ``GLREC_BENCH_WHAT_IF=no-digests``): SHA-256
took 3 ms of CPU a sample, a third of the worker's time. BLAKE3 is a cryptographic
hash as strong for this use, about 3.5 times as fast as SHA-256 with SHA-NI on one
core (6.3 against 1.8 GB/s on the 2-core development machine), and its official
Python package (``blake3``, from the BLAKE3 authors) releases the GIL on large
inputs and has wheels for Linux, macOS and Windows. ``b3sum`` checks a file from
the shell.

A dataset keeps the digest it was begun with: ``--resume`` of a folder written by a
glrec that wrote SHA-256 (its ``dataset.json`` has no ``"digest"``) goes on with
SHA-256 unless the spec names another, which is refused (one manifest, one digest);
so is a folder whose digest this glrec does not know.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from ...errors import ConfigError
from ..spec.document import DIGESTS

__all__ = ["DEFAULT_DIGEST", "DIGESTS", "Hasher", "entry", "file_digests", "hasher", "resolve_digest"]

#: The digest of a new dataset whose spec names none.
DEFAULT_DIGEST = "blake3"
#: What a dataset written before glrec recorded its digest used.
OLDER_DIGEST = "sha256"


class Hasher(Protocol):
    def update(self, data: bytes, /) -> Any: ...

    def hexdigest(self) -> str: ...


def hasher(name: str) -> Hasher | None:
    """A new hash object for ``name`` (one of :data:`DIGESTS`), or None for ``"none"``."""
    if name == "blake3":
        from blake3 import blake3  # a declared dependency; imported here so `import glrec` stays light

        return blake3()
    if name == "sha256":
        return hashlib.sha256()
    if name == "none":
        return None
    raise ConfigError(f"[output] digest {name!r} is not one of {', '.join(DIGESTS)}.")


def entry(nbytes: int, name: str, h: Hasher | None) -> dict[str, Any]:
    """What the manifest or a shard's record says of ``nbytes`` hashed by ``h`` (``name``'s; None for ``"none"``):
    the size, and the digest under the algorithm's name."""
    return {"bytes": nbytes} if h is None else {"bytes": nbytes, name: h.hexdigest()}


def file_digests(files: dict[str, bytes], name: str) -> dict[str, dict[str, Any]]:
    """Each file's manifest :func:`entry`."""
    out: dict[str, dict[str, Any]] = {}
    for file, data in files.items():
        h = hasher(name)
        if h is not None:
            h.update(data)
        out[file] = entry(len(data), name, h)
    return out


def resolve_digest(wanted: str | None, old: dict[str, Any] | None, where: str) -> str:
    """The digest a run uses: the spec's (``wanted``), else the resumed folder's (``old``: its dataset.json), else
    :data:`DEFAULT_DIGEST`. A spec naming another digest than a resumed folder's is refused."""
    if old is None:
        return wanted or DEFAULT_DIGEST
    had = old.get("digest", OLDER_DIGEST)
    if had not in DIGESTS:
        raise ConfigError(
            f"Output folder {where!r} was begun with a digest this glrec does not know ({had!r}; it knows "
            f"{', '.join(DIGESTS)}): finish it with the glrec that began it, or use --overwrite to make it again."
        )
    if wanted is not None and wanted != had:
        raise ConfigError(
            f"Output folder {where!r} was begun with [output] digest = {had!r}; it is resumed with that one. "
            f"Set digest = {had!r} or leave it out, or use --overwrite to make the dataset again with {wanted!r}."
        )
    return had
