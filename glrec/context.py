"""Headless EGL OpenGL contexts.

glrec renders without a display: moderngl creates a core-profile context
through EGL (glcontext's ``egl`` backend), on the NVIDIA driver or on Mesa's
llvmpipe. A context belongs to the thread that made it; every GL call glrec
makes goes through that thread, and :meth:`GLContext.check_thread` turns a
call from any other thread into a clear error instead of corrupted state.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import moderngl

from .errors import ContextError, ContextThreadError

log = logging.getLogger("glrec")

#: Compute shaders (the convert stage) need GL 4.3.
REQUIRED_GL = 430


@dataclass(frozen=True)
class ContextInfo:
    """What the driver says about a context."""

    renderer: str
    vendor: str
    version: str
    max_texture_size: int
    device_index: int | None

    @property
    def is_software(self) -> bool:
        """True for Mesa's CPU rasterisers (llvmpipe, softpipe)."""
        r = self.renderer.lower()
        return "llvmpipe" in r or "softpipe" in r


class GLContext:
    """A headless OpenGL context owned by one thread. Make it with :func:`create_context`."""

    def __init__(self, ctx: moderngl.Context, device_index: int | None, *, _token: object = None) -> None:
        if _token is not _FACTORY:
            raise TypeError("GLContext is made by glrec.context.create_context(), not constructed directly.")
        self._ctx: moderngl.Context | None = ctx
        self._owner = threading.get_ident()
        self.info = ContextInfo(
            renderer=str(ctx.info.get("GL_RENDERER", "?")),
            vendor=str(ctx.info.get("GL_VENDOR", "?")),
            version=str(ctx.info.get("GL_VERSION", "?")),
            max_texture_size=int(ctx.info.get("GL_MAX_TEXTURE_SIZE", 0)),
            device_index=device_index,
        )

    @property
    def mgl(self) -> moderngl.Context:
        """The moderngl context, for creating GL objects."""
        if self._ctx is None:
            raise ContextError("This GL context has been released; create a new recorder.")
        return self._ctx

    def owned_by_current_thread(self) -> bool:
        return threading.get_ident() == self._owner

    def check_thread(self) -> None:
        """Raise ContextThreadError unless called from the thread that owns the context."""
        if threading.get_ident() != self._owner:
            raise ContextThreadError(
                "This glrec object's GL context belongs to another thread. Use it from the thread "
                "that created it, or create one recorder per thread."
            )

    def release(self) -> None:
        """Destroy the context. Safe to call twice."""
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx.release()

    def __enter__(self) -> GLContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<GLContext {self.info.renderer!r} GL {self.info.version!r} device={self.info.device_index}>"


_FACTORY = object()


def create_context(device: int | None = None) -> GLContext:
    """Create a headless OpenGL >= 4.3 core context through EGL.

    ``device`` is the EGL device index (``None``: EGL's first device, or
    ``GLCONTEXT_DEVICE_INDEX`` if set). The renderer in use is logged.

    >>> with create_context() as gl:
    ...     gl.info.renderer  # doctest: +SKIP
    'llvmpipe (LLVM 15.0.6, 256 bits)'
    """
    kwargs: dict[str, Any] = {}
    if device is not None:
        if not isinstance(device, int) or device < 0:
            from .errors import ConfigError

            raise ConfigError(f"device {device!r} must be a non-negative EGL device index, e.g. 0.")
        kwargs["device_index"] = device
    try:
        ctx = moderngl.create_context(standalone=True, backend="egl", require=REQUIRED_GL, **kwargs)  # type: ignore[arg-type]
    except Exception as exc:  # moderngl/glcontext raise plain Exceptions
        raise ContextError(
            f"Could not create a headless EGL OpenGL {REQUIRED_GL // 100}.{REQUIRED_GL % 100 // 10} context "
            f"({exc}). On a machine without a GPU install Mesa's EGL driver "
            "(apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri); with an NVIDIA GPU make sure "
            "the driver's EGL vendor file is visible (__EGL_VENDOR_LIBRARY_FILENAMES)."
        ) from exc
    gl = GLContext(ctx, device, _token=_FACTORY)
    log.info("GL context: %s, OpenGL %s", gl.info.renderer, gl.info.version)
    return gl


def create_cuda_context(cuda_ordinal: int, cuda_pci: str | None, device: int | None = None) -> GLContext:
    """Create a context on the EGL device that is CUDA device ``cuda_ordinal`` (see :mod:`glrec.devices`).

    ``device`` (an EGL index) is checked, not trusted: a device that is not the
    CUDA device raises DeviceError instead of rendering on the wrong GPU.
    """
    from .devices import egl_devices, match_egl_device, verify_gl_device
    from .errors import DeviceError

    index = match_egl_device(egl_devices(), cuda_ordinal, cuda_pci, device)
    gl = create_context(index)
    try:
        on_device = verify_gl_device(cuda_ordinal)
        if on_device is False:
            raise DeviceError(
                f"The GL context on EGL device {index} ({gl.info.renderer}) does not run on CUDA device "
                f"{cuda_ordinal}, although EGL said it would; set CUDA_VISIBLE_DEVICES or device explicitly."
            )
    except BaseException:
        gl.release()
        raise
    log.info("EGL device %d matches CUDA device %d (verified by cuGLGetDevices: %s)", index, cuda_ordinal, on_device)
    return gl
