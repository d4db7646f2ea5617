"""A local dataset worker process: ``python -m glrec._dataset_worker FD PARENT``.

It serves the parent as :mod:`glrec.dataset.files.local` says. This module imports
nothing heavy itself: ``python -m glrec.dataset.files.local`` would import all of
``glrec.dataset`` before its first line ran.

Workers make their EGL context when they first draw. Beginning it on a thread as
the worker started, to overlap the imports, was measured on the H200 (2026-12-05,
16 workers, GL JPEG shards) and removed: the first sample came 0.8-1.1 s later and
the run was 3-8 % slower from the start.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from .dataset.files.local_worker import main as serve

    return serve(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
