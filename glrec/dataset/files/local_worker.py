"""A local dataset worker's side of :mod:`glrec.dataset.files.local`: it reads its set-up, renders the shards the
parent sends (a :class:`~glrec.dataset.files.runner.ShardWorker`), reports as it goes, and on the parent's None
lets go of the folder and closes its socket before it tears down its GL context and interpreter.

Started as ``python -m glrec._dataset_worker FD PARENT``, which calls :func:`main` (it makes its EGL context
when it first draws).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..._children import die_with_parent
from ..spec.document import DatasetSpec
from .feed import ShardFeed
from .folder import DatasetFolder
from .runner import ShardWorker

__all__ = ["PROGRESS_S", "main"]

#: A worker reports samples written at most this often (seconds), and always before each draw and a shard's
#: ``done``: one message a sample was 2,000 messages a second to the parent at full speed (16 H200 workers).
PROGRESS_S = 0.1


class _Written:
    """Samples written, reported to the parent together: at most every :data:`PROGRESS_S`, before each draw
    and before each shard's ``done``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.count = 0
        self.sent = time.monotonic()

    def add(self, n: int) -> None:
        self.count += n
        if time.monotonic() - self.sent >= PROGRESS_S:
            self.flush()

    def flush(self) -> None:
        if self.count:
            self.conn.send(("progress", self.count))
            self.count = 0
        self.sent = time.monotonic()

    def before_draw(self, index: int) -> None:
        """Sample ``index`` (or the chunk it begins) is drawn next: what was written is reported first (a draw
        may take a while), then the sample, which the parent names if this worker dies."""
        self.flush()
        self.conn.send(("sample", index))


def _serve(conn: Connection) -> None:
    setup = conn.recv()
    logging.basicConfig(format="glrec worker %(process)d: %(message)s", level=setup["log_level"])
    spec: DatasetSpec = setup["spec"]
    factory = pickle.loads(setup["colour"])
    if factory is not None:
        from .encode import register_colour_encoder

        register_colour_encoder(spec.output.rgb, spec.output.rgb_encoder, factory)
    for fd in setup["keep"]:
        os.set_inheritable(fd, False)  # held until its shards are done; not by what it may start
    folder = DatasetFolder(setup["root"], spec, owner=setup["owner"])
    folder.scratch = Path(setup["scratch"])
    written = _Written(conn)

    def done(record: dict[str, Any]) -> None:
        written.flush()  # the parent counts a shard's samples before it hears the shard is done
        conn.send(("done", record["shard"], record))

    with ShardWorker(spec, folder, setup["device"], threads=setup["threads"]) as worker:
        try:
            worker.run_shards(
                ShardFeed(lambda: conn.poll(0), conn.recv),
                progress=written.add,
                started=written.before_draw,
                opened=lambda shard: conn.send(("start", shard)),
                done=done,
            )
        except (EOFError, BrokenPipeError):
            raise  # the parent went away
        except BaseException as exc:
            blob: bytes | None = None
            with contextlib.suppress(Exception):
                data = pickle.dumps(exc)
                pickle.loads(data)  # only what the parent can read back
                blob = data
            tb = "".join(traceback.format_exception(exc))
            conn.send(("failed", worker.failed_shard, worker.failed_index, blob, type(exc).__name__, str(exc), tb))
        else:
            # Every shard it was sent is complete: it lets go of the folder (its copy of the lock) and closes its
            # end of the socket, so the parent may return, before the slow part (0.1-0.2 s on the 2-core machine,
            # in runs of 2-3 s): its GL context released and its interpreter torn down.
            for fd in setup["keep"]:
                os.close(fd)
            conn.close()


def main(argv: list[str]) -> int:
    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    conn = Connection(fd)
    try:
        _serve(conn)
    except (EOFError, BrokenPipeError):
        return 1  # the parent went away
    finally:
        conn.close()
    return 0
