"""Processing stages: your code on every frame between render and encode.

``Recorder(..., process=fn)`` (CLI: ``--process my.py:fn``) calls ``fn`` with
each frame as an H x W x 4 uint8 RGBA array, rows top-down:

- on the CUDA path (NVIDIA), a torch CUDA tensor (else a CuPy array) over the
  frame's own CUDA memory, with glrec's stream as the current stream: a model
  or kernel works on it in place, and the result goes on to convert and
  encode with no copy through the host;
- on the host path (any GL, e.g. Mesa), a numpy array in host memory: the
  same contract.

``fn`` returns None (frame changed in place), a new frame, or an
:class:`Overlay` of shapes (:class:`Boxes`, :class:`Points`, :class:`Lines`,
:class:`Mask`) that GL draws on the frame before it is encoded.
:class:`Process` adds options (output size, array library, memory);
:class:`OpenCLKernel` runs an OpenCL kernel instead of a function
(:mod:`glrec.process.opencl` says how it reaches the frame).

>>> def invert(frame):  # doctest: +SKIP
...     frame[..., :3] = 255 - frame[..., :3]
>>> glrec.record("cube", "inverted.mp4", process=invert)  # doctest: +SKIP
"""

from .draw import Boxes, Lines, Mask, Overlay, OverlayScene, Points
from .spec import OpenCLKernel, Process, load_process, parse_process

__all__ = [
    "Boxes", "Lines", "Mask", "OpenCLKernel", "Overlay", "OverlayScene", "Points", "Process", "load_process",
    "parse_process",
]  # fmt: skip
