"""Output paths: what may be written where, for every kind of output file.

One rule for every output (container, raw bitstream, image sequence):

- **Links are refused**, dangling or not, for the named path and for every
  existing frame of an image sequence. Writing through a link changes a file
  the user did not name (the link's target, perhaps on another disk or
  somewhere shared), and replacing the link would silently undo how the user
  arranged their files; refusing, with the target named, lets them choose.
- **An existing file is replaced only with overwrite** (the Python API's default,
  as in imageio and PyAV; the CLI's ``--overwrite``/``-y``, as ffmpeg's), and only once the new
  recording is complete: until then glrec writes beside it
  (``.NAME.glrec-new.EXT``), and renames over it at the end. A recording that
  fails, or makes no frame, leaves the old file as it was.
- **Nothing appears before the first byte of video**: a file is created when
  its first packet is written, so a recording stopped before its first frame
  (or killed, or refused) leaves no empty file to block the next run.
- **Image sequences**: any existing file of the sequence (any name the
  pattern makes) counts as existing. With overwrite the new frames are
  written beside the old ones and renamed into place at the end, and frames
  of the old sequence past the new one's are removed: only names the pattern
  makes, nothing else in the folder.
- A FIFO or character device at the path (a pipe to a player, ``/dev/null``)
  is written in place: it stores nothing that could be lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .._declare import spelled
from ..errors import OutputError, OutputExistsError
from .write_behind import WriteBehindFile

__all__ = ["OutputFile", "check_output_path", "frame_path", "has_frame_pattern", "sequence_frames", "staging_name"]

_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?([diuxXo])")
_BASES = {"d": 10, "i": 10, "u": 10, "x": 16, "X": 16, "o": 8}


def has_frame_pattern(path: str | os.PathLike[str]) -> bool:
    """True for a name with one printf integer field, such as ``frame_%06d.jpg``."""
    text = os.fspath(path)
    if text.count("%") != 1:
        return False
    try:
        text % 0
    except (TypeError, ValueError):
        return False
    return True


def frame_path(path: str | os.PathLike[str], index: int) -> str:
    """The file name of frame ``index`` in an image-sequence pattern."""
    return os.fspath(path) % index


def staging_name(path: Path) -> Path:
    """Where a file that replaces ``path`` is written until it is complete."""
    return path.with_name(f".{path.name}.glrec-new{path.suffix}")


def sequence_frames(pattern: Path) -> Iterator[tuple[int, Path]]:
    """The files in the pattern's folder that the pattern makes: (frame index, path).

    A name counts only if formatting its index with the pattern gives the name
    back, so ``f_000001.jpg`` belongs to ``f_%06d.jpg`` and ``f_1.jpg`` or
    ``f_000001 (copy).jpg`` do not.
    """
    name = pattern.name
    m = _SPEC.search(name)
    folder = pattern.parent if str(pattern.parent) else Path(".")
    if m is None or not folder.is_dir():
        return
    head, tail, base = name[: m.start()], name[m.end() :], _BASES[m.group(1)]
    for entry in os.scandir(folder):
        n = entry.name
        if not (n.startswith(head) and n.endswith(tail)) or len(n) <= len(head) + len(tail):
            continue
        try:
            index = int(n[len(head) : len(n) - len(tail)], base)
        except ValueError:
            continue
        if index >= 0 and name % index == n:
            yield index, folder / n


def _kind(path: Path) -> str:
    """'missing', 'link', 'file', 'dir', 'stream' (FIFO, character device) or 'other'."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    return "other"


def _refuse_link(path: Path, what: str = "Output") -> None:
    raise OutputError(
        f"{what} {str(path)!r} is a symbolic link (to {os.readlink(path)!r}); glrec does not write through links, "
        "so that nothing but the path you named changes. Give the link's target as the output, or remove the link."
    )


def check_output_path(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Apply the rules above before anything is made; return the path.

    Refuses a directory, a missing folder, a link, a block device or socket, and
    an existing file (or any existing frame of a sequence) unless ``overwrite``.
    """
    p = Path(path)
    kind = _kind(p)
    if kind == "link":
        _refuse_link(p)
    if kind == "dir":
        raise OutputError(f"Output {str(p)!r} is a directory; give a file name such as {str(p / 'out.mp4')!r}.")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"Output directory {str(parent)!r} does not exist; create it first (mkdir -p {parent}).")
    if has_frame_pattern(p):
        if "%" in str(p.parent):
            raise OutputError(f"The frame number pattern of {str(p)!r} must be in the file name, not in its folder.")
        existing = sorted(sequence_frames(p))
        for _, frame in existing:
            if _kind(frame) == "link":
                _refuse_link(frame, f"Frame {frame.name!r} of {str(p)!r}")
        if existing and not overwrite:
            raise OutputExistsError(
                f"Output {str(p)!r} would replace {len(existing)} existing frame(s) of that sequence (the first is "
                f"{existing[0][1].name!r}); pass {_overwrite()} to replace the sequence, or choose "
                "another name."
            )
        return p
    if kind == "other":
        raise OutputError(f"Output {str(p)!r} is a block device or socket; give a regular file name.")
    if kind == "file" and not overwrite:
        raise OutputExistsError(f"Output {str(p)!r} exists; pass {_overwrite()} to replace it.")
    return p


def _overwrite() -> str:
    """The option that lets an output be replaced, as the reader spells it."""
    return spelled("overwrite=True (--overwrite or -y)", "--overwrite (-y)")


class OutputFile:
    """One output file as a sink writes it: created at the first byte, committed when complete.

    ``work`` is where the bytes go: ``final`` itself for a new file or a stream
    (FIFO, device), :func:`staging_name` when an existing file is being
    replaced. :meth:`commit` renames the finished work file over ``final``;
    without it the old file stays untouched.
    """

    def __init__(self, final: Path, overwrite: bool) -> None:
        self.final = final
        kind = _kind(final)
        if kind == "link":
            _refuse_link(final)
        if kind == "file" and not overwrite:
            raise OutputExistsError(f"Output {str(final)!r} exists; pass {_overwrite()} to replace it.")
        self.stream = kind == "stream"
        self.replacing = kind == "file"
        self.work = staging_name(final) if self.replacing else final
        self.created = False

    @property
    def regular(self) -> bool:
        """True when the output is a regular file, which can be read back, cut and removed."""
        return not self.stream

    def open(self) -> BinaryIO:
        """Create the work file (unbuffered); a new file must still not exist (another writer got there first)."""
        flags = os.O_WRONLY
        if not self.stream:
            flags |= os.O_CREAT | os.O_EXCL
        if self.replacing:
            self.work.unlink(missing_ok=True)  # left by an earlier, interrupted replacement of the same file
        try:
            fd = os.open(self.work, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            raise OutputExistsError(
                f"Output {str(self.final)!r} appeared while the recording started; glrec does not replace it without "
                f"{_overwrite()}."
            ) from None
        except OSError as exc:
            raise OutputError(f"Cannot open {str(self.final)!r} for writing: {exc.strerror}.") from exc
        self.created = True
        if self.stream:
            return open(fd, "wb", buffering=0)
        return WriteBehindFile(fd)  # on its way to the disk as it grows: commit's fsync is short

    def commit(self, source: Path | None = None) -> None:
        """The work file (or ``source``, made from it) is complete: make it the output.

        It is fsynced first, so a power cut after the rename cannot leave an empty file.
        """
        if not self.created or self.stream:
            return
        source = self.work if source is None else source
        with contextlib.suppress(OSError):  # fsync is for durability; a file system without it still renames
            fd = os.open(source, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if source != self.final:
            os.replace(source, self.final)
        if self.work not in (source, self.final):
            self.work.unlink(missing_ok=True)
        self.work = self.final

    def discard(self) -> None:
        """Remove the work file (a recording of no frames); a replaced file is left as it was."""
        if self.created and self.regular:
            self.work.unlink(missing_ok=True)
            self.created = False

    def describe_kept(self, kept: int | None) -> str:
        """Where the frames a failed recording kept are, for its error message."""
        if not self.replacing:
            return ""
        if kept:
            return (
                f"; they are in {str(self.work)!r} (rename it to keep them), and {str(self.final)!r} was left as it was"
            )
        return f"; {str(self.final)!r} was left as it was"
