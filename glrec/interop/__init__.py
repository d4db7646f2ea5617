"""Handoffs between GL and the encoder: host PBO readback, CUDA register, CUDA shared memory.

Each runs after the convert stage and has one interface, :class:`Handoff`:
``before_frame()`` is called before a frame's GL work is issued (a handoff
that paces GL against its consumer waits there), ``submit(index)`` queues the
convert stage's current planes as frame ``index`` and returns the frames that
completed, ``drain()`` returns the rest, oldest first. Host frames are
:class:`~glrec.frame.HostFrame`; CUDA frames are :class:`~glrec.cuda.pool.DeviceFrame`.
"""

from ..frame import Frame
from .host import HostReadback
from .protocol import Handoff

__all__ = ["Frame", "Handoff", "HostReadback"]
