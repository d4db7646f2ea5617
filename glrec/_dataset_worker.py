"""A local dataset worker process: ``python -m glrec._dataset_worker FD PARENT DEVICE``.

It begins its EGL context on a thread (:mod:`glrec.gl.early`; ``DEVICE`` is the
EGL device index, or ``default``) before it imports the dataset modules, so the
two overlap, then serves the parent as :mod:`glrec.dataset.files.local` says.
This module imports nothing heavy itself: ``python -m glrec.dataset.files.local``
would import all of ``glrec.dataset`` before its first line ran.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from .gl.early import begin

    begin(None if argv[2] == "default" else int(argv[2]))
    from .dataset.files.local_worker import main as serve

    return serve(argv[:2])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
