"""Accounting for what a recording leaves behind: GL objects, fences, threads, memory.

Used by the leak tests and the soak benchmark, and handy when a long-running
program grows: take a :func:`snapshot` now and later and compare.

GL objects are counted from the Python side: every moderngl object (texture,
buffer, framebuffer, program, ...) that is still reachable and has not been
released. glrec releases each one it makes before its context goes, so after
``close()`` none of a recorder's objects should be left.

>>> before = snapshot()
>>> # ... record ...
>>> snapshot().grew_from(before)  # doctest: +SKIP
{}
"""

from __future__ import annotations

import gc
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import moderngl

from .fences import Fence

#: Name prefix of every thread glrec starts (the encode worker is ``glrec-encode``).
THREAD_PREFIX = "glrec"


def live_gl_objects(ctx: moderngl.Context | None = None) -> list[Any]:
    """moderngl objects that are alive and not released (of ``ctx`` only, if given)."""
    gc.collect()  # drop unreachable wrappers first: they are garbage, not live objects
    live = []
    for obj in gc.get_objects():
        if type(obj).__module__ != "moderngl" or isinstance(obj, moderngl.Context):
            continue
        mglo = getattr(obj, "mglo", None)
        owner = getattr(obj, "ctx", None)
        if mglo is None or owner is None or isinstance(mglo, moderngl.InvalidObject):
            continue
        if isinstance(obj, moderngl.Framebuffer) and obj.glo == 0:
            continue  # the default framebuffer: part of the context, nothing to release
        if ctx is None or owner is ctx:
            live.append(obj)
    return live


def live_fences() -> int:
    """GL fence syncs made by glrec and not yet deleted."""
    # type() rather than isinstance(): the latter asks some objects (torch's deprecated aliases) and they warn.
    return sum(1 for obj in gc.get_objects() if type(obj) is Fence and obj._sync is not None)


def glrec_threads() -> list[threading.Thread]:
    """Threads glrec started that are still running."""
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX) and t.is_alive()]


def rss_bytes() -> int:
    """The process's resident memory now (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Snapshot:
    """Counts of what is alive at one moment; compare two with :meth:`grew_from`."""

    gl_objects: dict[str, int] = field(default_factory=dict)
    fences: int = 0
    threads: int = 0
    rss: int = 0

    def grew_from(self, earlier: Snapshot) -> dict[str, int]:
        """What there is more of than in ``earlier`` (GL objects by type, fences, threads); RSS is left out."""
        grown = {k: n - earlier.gl_objects.get(k, 0) for k, n in self.gl_objects.items()}
        grown["fences"] = self.fences - earlier.fences
        grown["threads"] = self.threads - earlier.threads
        return {k: n for k, n in grown.items() if n > 0}


def snapshot(ctx: moderngl.Context | None = None) -> Snapshot:
    """Count live GL objects (of ``ctx``, or all), glrec fences and threads, and the RSS."""
    counts = Counter(type(o).__name__ for o in live_gl_objects(ctx))
    return Snapshot(dict(counts), live_fences(), len(glrec_threads()), rss_bytes())
