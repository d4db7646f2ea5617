"""One writer per dataset folder: an exclusive ``flock`` on ``OUT/.glrec/lock`` for the whole run.

Two runs into one folder (a ``--resume`` started while the first still writes,
say after a lost ssh session) would remove each other's shards. So every
command that writes a dataset folder (``glrec dataset`` with or without
``--resume``/``--overwrite``, ``--only``, :func:`~glrec.dataset.generate`,
:func:`~glrec.dataset.write_samples`) holds this lock from before it touches the
folder until it is done, and a second writer is refused with one line naming
the first (pid, host, since when: the lock file holds them while the lock is
held). The kernel drops the lock when its holder dies, even by SIGKILL, so a
crashed run never blocks ``--resume``; the file goes when the run ends.

Local worker processes inherit the lock's descriptor, so the lock is held while
any of them works (a worker closes it once its last shard is done, or dies).
Ray actors (other processes, maybe other machines) check before each shard
that the lock file still names their run (its ``token``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ...errors import OutputError

__all__ = ["LOCK_NAME", "FolderLock", "check_owner", "probe"]

LOCK_NAME = "lock"
#: How long a refused ``flock`` is tried again: a :func:`probe` holds the lock shared for microseconds.
_RETRY_S = 0.5


def _lock_path(root: Path) -> Path:
    return root / ".glrec" / LOCK_NAME


def _holder(fd: int) -> dict[str, Any] | None:
    """What the lock file says of its holder; None while it says nothing (it writes just after locking)."""
    deadline = time.monotonic() + _RETRY_S
    while True:
        try:
            data = json.loads(os.pread(fd, 4096, 0))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) or time.monotonic() > deadline:
            return data if isinstance(data, dict) else None
        time.sleep(0.05)


def _busy(root: Path, holder: dict[str, Any] | None) -> OutputError:
    if holder is None:
        who = "a process that has not said which"
    else:
        who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, since {holder.get('since', '?')}"
        if holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
            who += ": this process"
    return OutputError(
        f"Output folder {str(root)!r} is being written by another glrec run ({who}); two runs into one folder "
        "would remove each other's shards, so this one touched nothing. Wait for that run to finish (or stop "
        "it), then run again with --resume (resume=True)."
    )


def _flock(fd: int, how: int) -> bool:
    """``flock(fd, how | LOCK_NB)``, tried for a moment; False if another holder keeps it."""
    deadline = time.monotonic() + _RETRY_S
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def probe(root: Path) -> None:
    """Raise the one-line error if a run holds ``root``'s lock now; creates, writes and keeps nothing.

    For the refusals that need no lock (a folder that is not a dataset, a
    dataset without ``--resume``): a running writer is named first.
    """
    path = _lock_path(root)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # no lock file (or one glrec did not make): nobody holds the folder
    try:
        if not _flock(fd, fcntl.LOCK_SH):  # shared: needs only read access, and conflicts with a writer
            raise _busy(root, _holder(fd))
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class FolderLock:
    """The exclusive lock on ``root`` (``with FolderLock(root):``); made folders go again if left empty."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.area = self.root / ".glrec"
        self.path = self.area / LOCK_NAME
        #: Names this run in the lock file; workers elsewhere compare it (:func:`check_owner`).
        self.token = os.urandom(16).hex()
        self._fd: int | None = None
        self._made: list[Path] = []

    @property
    def fd(self) -> int:
        """The locked descriptor (a worker process that inherits it holds the lock too)."""
        assert self._fd is not None, "the lock is not held"
        return self._fd

    def acquire(self) -> None:
        """Take the lock, making ``root`` and ``root/.glrec`` if needed; raise OutputError if another run holds it."""
        if self._fd is not None:
            return
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"Output {str(self.root)!r} is a file; give a folder for the dataset.")
        if self.area.is_symlink():
            raise OutputError(
                f"{self.area} is a link; glrec keeps its records there and writes through no link. Remove it."
            )
        missing = [p for p in (*reversed(self.root.parents), self.root, self.area) if not p.exists()]
        for folder in missing:
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                self._remove_made()
                raise OutputError(f"Cannot make the folder {folder} ({exc.strerror or exc}).") from exc
            self._made.append(folder)
        try:
            fd = self._open_locked()
        except BaseException:
            self._remove_made()
            raise
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "token": self.token,
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        except OSError:
            os.close(fd)
            self._remove_made()
            raise
        self._fd = fd

    def _open_locked(self) -> int:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise OutputError(f"{self.path} is a link; remove it (glrec writes through no link).") from None
                raise
            try:
                locked = _flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                os.close(fd)
                raise OutputError(
                    f"Cannot lock {self.path} ({exc.strerror or exc}); glrec locks a dataset folder so that no "
                    "two runs write it at once. Use a filesystem that supports flock."
                ) from None
            if not locked:
                holder = _holder(fd)
                os.close(fd)
                raise _busy(self.root, holder)
            # The holder we waited for may have removed the file as we opened it: lock the file there now.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file, then let the lock go (safe twice)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still held: a run that opened it now finds it gone and opens anew
        os.close(fd)
        self._remove_made()

    def _remove_made(self) -> None:
        made, self._made = self._made, []
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one: a refused run leaves no trace, a finished one its dataset

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def check_owner(root: Path, token: str) -> None:
    """Raise OutputError unless ``root``'s lock file names the run ``token`` (a worker's check before it writes)."""
    path = _lock_path(root)
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        holder = None
    if isinstance(holder, dict) and holder.get("token") == token:
        return
    now = "names another run" if isinstance(holder, dict) else "is gone or unreadable"
    raise OutputError(
        f"{root} is no longer held by the run this worker belongs to (its lock file {now}); the worker stops "
        "without touching the folder."
    )
