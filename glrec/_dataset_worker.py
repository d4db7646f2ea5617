"""A local dataset worker's entry (``python -m glrec._dataset_worker FD PARENT DEVICE``, DEVICE an EGL
index, ``-`` for the default or ``none``, started by
:mod:`glrec.dataset.files.local`): its GL context is made on a thread (:mod:`glrec.gl.early`) while the dataset
modules are imported, then the worker serves its parent (:func:`glrec.dataset.files.local.main`)."""

from __future__ import annotations

import sys

from .gl import early


def run(argv: list[str]) -> int:
    if argv[2] != "none":  # "none": clips, drawn in each Recorder's own context
        early.start(None if argv[2] == "-" else int(argv[2]))
    from .dataset.files.local import main

    return main(argv[:2])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
