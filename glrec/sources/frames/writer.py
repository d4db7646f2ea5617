"""The source stage of written frames: each checked frame to the source for where it lives.

:class:`FrameWriter` is built with the pipeline but makes its sources at their
first frame, so a recording of host arrays never touches CUDA and a recording
of scenes makes no upload buffers at all.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...frame import HostFrame
from .array import ArraySource
from .written import FrameIn, HostFrameIn

log = logging.getLogger("glrec")

if TYPE_CHECKING:
    from ...cuda.driver import CudaDevice
    from .cuda_array import CudaArraySource, CudaToHost
    from .direct import DirectFrames


class FrameWriter:
    """Puts frames into ``texture`` (the render target's colour, ``size``).

    ``device`` is the CUDA device of a CUDA handoff (None for the host readback):
    CUDA frames stay on it, or are copied to the host once where there is none;
    ``cuda_input`` (the handoff's kind) says how they get into GL. With
    ``gl_on_cuda`` (an encoder that works in the GL context, so no CUDA device was
    opened for the handoff), the first CUDA frame opens its own device, and its
    frames go into GL on the GPU if the GL context runs on that device.
    With ``direct`` (software GL, see :mod:`.direct`) host frames skip GL:
    :meth:`encoder_frame` makes them ready for the CPU encoder instead.
    """

    def __init__(self, ctx: Any, texture: Any, size: tuple[int, int], *, device: CudaDevice | None,
                 cuda_input: str = "register", ring: int = 3, direct: DirectFrames | None = None,
                 gl_on_cuda: bool = False) -> None:  # fmt: skip
        self.ctx = ctx
        self.texture = texture
        self.size = size
        self.device = device
        self.cuda_input = cuda_input  # "shared" or "register", as the CUDA handoff
        self.ring = ring
        self.direct = direct
        self._host: ArraySource | None = None
        self._cuda: CudaArraySource | None = None
        self._to_host: CudaToHost | None = None
        self._gl_on_cuda = gl_on_cuda
        self._own_device: CudaDevice | None = None  # opened here for a GL-context encoder; released here

    def check(self, frame: FrameIn, index: int) -> None:
        """ConfigError unless ``frame`` (frame ``index`` of the recording) has the recording's size."""
        if frame.size != self.size and index == 0:  # the recording's size came from before any frame
            raise ConfigError(
                f"Frame 0 is {frame.size[0]}x{frame.size[1]}; this recording is {self.size[0]}x{self.size[1]}, "
                "set before any frame (its size=, or the default where the size could not wait for the first frame, "
                f"as with context='current' or after render()); pass size=({frame.size[0]}, {frame.size[1]})."
            )
        if frame.size != self.size:
            raise ConfigError(
                f"Frame {index} is {frame.size[0]}x{frame.size[1]}; this recording is {self.size[0]}x{self.size[1]} "
                "and every frame of a video has its size. Resize the frame, or start a new Recorder for the new size."
            )

    def encoder_frame(self, frame: FrameIn, index: int) -> HostFrame | None:
        """``frame`` ready for the CPU encoder where host frames skip GL (None: it goes through :meth:`put`)."""
        if self.direct is None:
            return None
        self.check(frame, index)
        if not isinstance(frame, HostFrameIn):
            frame = self._cuda_to_host(frame)
        return self.direct.frame(frame, index)

    def put(self, frame: FrameIn, index: int) -> None:
        """Fill the target with ``frame`` (frame ``index`` of the recording); ConfigError if it does not fit."""
        self.check(frame, index)
        if isinstance(frame, HostFrameIn):
            self._host_source().put(frame)
        elif self.device is not None or self._open_frames_device(frame.device):
            self._cuda_source().put(frame)
        else:
            self._host_source().put(self._cuda_to_host(frame))

    def _open_frames_device(self, ordinal: int) -> bool:
        """For a GL-context encoder: open CUDA device ``ordinal`` (once) if the GL context runs on it."""
        if not self._gl_on_cuda:
            return False
        self._gl_on_cuda = False  # one try: a device that does not fit is not asked again
        from ...cuda.driver import CudaDevice
        from ...cuda.vmm import EXTENSION
        from ...errors import GlrecError
        from ...gl.devices import verify_gl_device

        try:
            device = CudaDevice.open(ordinal)
        except GlrecError as exc:
            log.info("CUDA frames go through host memory: CUDA device %d does not open (%s)", ordinal, exc)
            return False
        if verify_gl_device(ordinal) is not True:
            device.release()
            log.info("CUDA frames go through host memory: the GL context is not on CUDA device %d", ordinal)
            return False
        self.device = self._own_device = device
        # shared where GL imports CUDA memory, as the handoff's auto (glrec.interop.handoff.cuda_handoff_kind)
        self.cuda_input = "shared" if EXTENSION in self.ctx.extensions else "register"
        return True

    def _cuda_to_host(self, frame: Any) -> HostFrameIn:
        if self._to_host is None:
            from .cuda_array import CudaToHost

            self._to_host = CudaToHost()
        return self._to_host.to_host(frame)

    def _host_source(self) -> ArraySource:
        if self._host is None:
            self._host = ArraySource(self.ctx, self.texture, self.size, self.ring)
        return self._host

    def _cuda_source(self) -> CudaArraySource:
        if self._cuda is None:
            from .cuda_array import CudaArraySource

            assert self.device is not None
            self._cuda = CudaArraySource(self.ctx, self.texture, self.size, self.device,
                                         shared=self.cuda_input == "shared")  # fmt: skip
        return self._cuda

    def release(self) -> None:
        """Release every source made. Safe twice."""
        for name in ("_host", "_cuda", "_to_host"):
            source = getattr(self, name)
            setattr(self, name, None)
            if source is not None:
                source.release()
        device, self._own_device = self._own_device, None
        if device is not None:  # after the source that copied on it
            self.device = None
            device.release()
