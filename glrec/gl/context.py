"""OpenGL contexts: glrec's own headless EGL context, or the caller's current one.

glrec renders without a display: by default moderngl works through a
core-profile context glrec creates with EGL (glcontext's ``egl`` backend), on
the NVIDIA driver or on Mesa's llvmpipe. With ``context="current"`` glrec
instead borrows the context current on the calling thread (MuJoCo's,
pyrender's, your own) and records inside it.

Either way glrec shares the thread with other GL users, so it is current only
around its own calls: :meth:`GLContext.active` makes glrec's context current
and afterwards restores exactly what the caller had current (display, draw and
read surfaces, context, or nothing), and in a borrowed context it also saves
and restores the GL state glrec touches (:mod:`glrec.gl.state`). A context
belongs to the thread that made it; :meth:`GLContext.check_thread` turns a
call from any other thread into a clear error instead of corrupted state.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import moderngl

from ..errors import ConfigError, ContextError, ContextThreadError
from . import egl

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
        return software_renderer(self.renderer)


class _Activation:
    """``with gl.active():`` -- glrec's context current for the block, the caller's put back after it.

    Re-entrant: nested blocks (and a block entered while glrec's context is
    already current) cost two EGL queries. Only the outermost block of a
    borrowed context saves and restores GL state.
    """

    __slots__ = ("_gl",)

    def __init__(self, gl: GLContext) -> None:
        self._gl = gl

    def __enter__(self) -> GLContext:
        self._gl._activate()
        return self._gl

    def __exit__(self, *exc: Any) -> None:
        self._gl._deactivate(exc[0] is not None if exc else False)


class _Loader:
    """What moderngl calls to load GL functions, and on ``with ctx:`` / ``ctx.release()``.

    moderngl's ``Context.__enter__``/``__exit__`` land here, so ``with rec.ctx:``
    means glrec's :meth:`GLContext.active`, not glcontext's exit that leaves no
    context current at all. ``release`` does nothing: :meth:`GLContext.release`
    destroys glrec's own EGL context once it is no longer current.
    """

    def __init__(self) -> None:
        self.gl: GLContext | None = None

    def load_opengl_function(self, name: str) -> int:
        return _get_proc_address(name.encode())

    def __enter__(self) -> None:
        assert self.gl is not None
        self.gl._activate()

    def __exit__(self, *exc: Any) -> None:
        assert self.gl is not None
        self.gl._deactivate(False)

    def release(self) -> None:
        pass


def software_renderer(renderer: str) -> bool:
    """Whether the GL renderer named ``renderer`` (``GL_RENDERER``) is one of Mesa's CPU rasterisers
    (llvmpipe, softpipe), where the GPU's work is the CPU's."""
    r = renderer.lower()
    return "llvmpipe" in r or "softpipe" in r


def software_gl(ctx: moderngl.Context) -> bool:
    """:func:`software_renderer` of ``ctx``'s renderer (``ctx.info`` queries every GL limit: once per object)."""
    return software_renderer(str(ctx.info.get("GL_RENDERER", "")))


def _get_proc_address(name: bytes) -> int:
    fn = egl.lib().eglGetProcAddress
    fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    return int(fn(name) or 0)


class GLContext:
    """An OpenGL context glrec works in, owned by one thread.

    Make it with :func:`create_context` (glrec's own) or :func:`glrec.gl.borrowed.borrow_current_context`
    (the caller's). ``with gl:`` makes it current for the block and releases it
    after; ``with gl.active():`` only makes it current.
    """

    def __init__(self, ctx: moderngl.Context, device_index: int | None, binding: egl.Binding, *,
                 headless: egl.Headless | None = None, _token: object = None) -> None:  # fmt: skip
        if _token is not _FACTORY:
            raise TypeError("GLContext is made by glrec.gl.context.create_context(), not constructed directly.")
        self._ctx: moderngl.Context | None = ctx
        self._owner = threading.get_ident()
        self._binding = binding
        self._headless = headless  # glrec's own EGL context, destroyed on release; None when borrowed
        self.owned = headless is not None
        self._saved: list[egl.Binding | None] = []  # one per open activation, outermost first
        self._state: Any = None
        self._guard: Any = None  # a StateGuard, for borrowed contexts
        self._activation = _Activation(self)
        self.info = ContextInfo(
            renderer=str(ctx.info.get("GL_RENDERER", "?")),
            vendor=str(ctx.info.get("GL_VENDOR", "?")),
            version=str(ctx.info.get("GL_VERSION", "?")),
            max_texture_size=int(ctx.info.get("GL_MAX_TEXTURE_SIZE", 0)),
            device_index=device_index,
        )

    @property
    def mgl(self) -> moderngl.Context:
        """The moderngl context, for creating GL objects (inside :meth:`active`)."""
        if self._ctx is None:
            raise ContextError("This GL context has been released; create a new recorder.")
        return self._ctx

    @property
    def binding(self) -> egl.Binding:
        """The EGL display, surfaces and context glrec makes current."""
        return self._binding

    @property
    def version_code(self) -> int:
        """OpenGL version as 100 * major + 10 * minor, e.g. 450."""
        return int(self.mgl.version_code)

    def owned_by_current_thread(self) -> bool:
        return threading.get_ident() == self._owner

    def check_thread(self) -> None:
        """Raise ContextThreadError unless called from the thread that owns the context."""
        if threading.get_ident() != self._owner:
            raise ContextThreadError(
                "This glrec object's GL context belongs to another thread. Use it from the thread "
                "that created it, or create one recorder per thread."
            )

    def active(self) -> _Activation:
        """Make this context current for a ``with`` block; afterwards the caller's is current again.

        >>> with gl.active():  # doctest: +SKIP
        ...     texture = gl.mgl.texture((4, 4), 4)
        """
        return self._activation

    @contextlib.contextmanager
    def teardown(self) -> Iterator[bool]:
        """For finishing up: like :meth:`active` (yields True), or, when the context is gone, yields False.

        A context that can no longer be made current (destroyed by its owner, its
        display terminated) must not have glrec's deletes land in whatever context
        is current instead: the block then runs with *no* context current, where GL
        calls do nothing, and ContextError is raised after it.
        """
        try:
            self._activate()
        except ContextThreadError:
            raise
        except ContextError as exc:
            lost: ContextError | None = exc
        else:
            lost = None
        if lost is None:
            failing = True
            try:
                yield True
                failing = False
            finally:
                self._deactivate(failing)
            return
        previous = egl.Binding.current()
        egl.Binding(0, 0, 0, 0).make_current(release_on=previous.display)
        try:
            yield False
        finally:
            previous.make_current(release_on=previous.display)
        raise lost

    def _activate(self) -> None:
        self.check_thread()
        if self._ctx is None:
            raise ContextError("This GL context has been released; create a new recorder.")
        if egl.current_context() == self._binding.context:
            self._saved.append(None)
        else:
            previous = egl.Binding.current()
            error = self._binding.make_current()
            if error:
                previous.make_current(release_on=self._binding.display)
                raise ContextError(self._lost_message(error))
            self._saved.append(previous)
        if self._guard is not None and len(self._saved) == 1:
            try:
                self._state = self._guard.enter()
            except BaseException:
                saved = self._saved.pop()
                if saved is not None:
                    saved.make_current(release_on=self._binding.display)
                raise

    def _deactivate(self, failing: bool) -> None:
        problem = None
        try:
            if self._guard is not None and len(self._saved) == 1:
                state, self._state = self._state, None
                problem = self._guard.leave(state)
        finally:
            previous = self._saved.pop()
            if previous is not None:
                error = previous.make_current(release_on=self._binding.display)
                if error:
                    # Its owner destroyed it (or terminated its display) while it was current: it
                    # ceased to exist once glrec's became current, so nothing is current now.
                    egl.Binding(0, 0, 0, 0, previous.api).make_current(release_on=self._binding.display)
                    level = logging.DEBUG if error in egl.GONE else logging.WARNING
                    log.log(level, "The caller's EGL context could not be made current again (%s); none is "
                            "current now.", egl.error_text(error))  # fmt: skip
        if problem and not failing:
            raise ContextError(problem)

    def _lost_message(self, error: int) -> str:
        if self.owned:
            return (
                f"glrec's EGL context could not be made current ({egl.error_text(error)}). If another library "
                "terminated the EGL display (MuJoCo does at exit), close the recorder before that happens."
            )
        return (
            f"The GL context this recorder records in (context='current') cannot be made current any more "
            f"({egl.error_text(error)}): it was probably destroyed. Close the recorder before the renderer "
            "that owns the context (e.g. call rec.close() before renderer.close())."
        )

    def release(self) -> None:
        """Destroy glrec's context (a borrowed one is only let go). Safe to call twice."""
        if self._ctx is None:
            return
        try:
            with self.active():
                ctx, self._ctx = self._ctx, None
                ctx.release()
        except ContextError as exc:  # the context is gone already: nothing left to free
            log.debug("GL context not released: %s", exc)
        finally:
            self._ctx = None
            headless, self._headless = self._headless, None
            if headless is not None:
                headless.destroy()  # freed by EGL once no longer current anywhere

    def __enter__(self) -> GLContext:
        self._activate()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.release()
        finally:
            self._deactivate(True)

    def __repr__(self) -> str:
        kind = "own" if self.owned else "borrowed"
        return f"<GLContext {kind} {self.info.renderer!r} GL {self.info.version!r} device={self.info.device_index}>"


_FACTORY = object()


def _wrap(loader: _Loader, require: int) -> moderngl.Context:
    """A moderngl Context on the current GL context, leaving moderngl's default context as it was.

    moderngl remembers the last context it made as the process default
    (``moderngl.get_context()``, and what a plain ``moderngl.create_context()``
    returns); glrec's contexts must not become the user's.
    """
    store = getattr(moderngl, "_store", None)
    default = getattr(store, "default_context", None)
    try:
        return moderngl.create_context(require=require, context=loader)  # type: ignore[arg-type]
    finally:
        if store is not None:
            store.default_context = default


def create_context(device: int | None = None) -> GLContext:
    """Create a headless OpenGL >= 4.3 core context through EGL, on a display of glrec's own where EGL allows.

    ``device`` is the EGL device index (``None``: EGL's first device, or
    ``GLCONTEXT_DEVICE_INDEX`` if set). The renderer in use is logged. The
    calling thread's current context (if any) is current again on return; use
    ``with gl:`` or ``with gl.active():`` around GL work.

    >>> with create_context() as gl:
    ...     gl.info.renderer  # doctest: +SKIP
    'llvmpipe (LLVM 15.0.6, 256 bits)'
    """
    if device is not None and (isinstance(device, bool) or not isinstance(device, int) or device < 0):
        raise ConfigError(f"device {device!r} must be a non-negative EGL device index, e.g. 0.")
    if device is None and os.environ.get("GLCONTEXT_DEVICE_INDEX", "").strip():
        device = int(os.environ["GLCONTEXT_DEVICE_INDEX"])
    try:
        headless = egl.create_headless(device, REQUIRED_GL // 100, REQUIRED_GL % 100 // 10)
    except (OSError, RuntimeError) as exc:
        raise ContextError(
            f"Could not create a headless EGL OpenGL {REQUIRED_GL // 100}.{REQUIRED_GL % 100 // 10} context "
            f"({exc}). On a machine without a GPU install Mesa's EGL driver "
            "(apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri); with an NVIDIA GPU make sure "
            "the driver's EGL vendor file is visible (__EGL_VENDOR_LIBRARY_FILENAMES)."
        ) from exc
    mine = egl.Binding(headless.display, 0, 0, headless.context)
    previous = egl.Binding.current()
    error = mine.make_current()
    loader = _Loader()
    try:
        if error:
            raise ContextError(f"glrec's new EGL context could not be made current ({egl.error_text(error)}).")
        try:
            ctx = _wrap(loader, REQUIRED_GL)
        except Exception as exc:
            raise ContextError(f"Could not set up OpenGL on the new EGL context: {exc}") from exc
        gl = GLContext(ctx, device, mine, headless=headless, _token=_FACTORY)
    except BaseException:
        previous.make_current(release_on=mine.display)
        headless.destroy()
        raise
    loader.gl = gl
    previous.make_current(release_on=mine.display)
    log.info("GL context: %s, OpenGL %s (EGL display: %s)", gl.info.renderer, gl.info.version, headless.how)
    return gl


def create_cuda_context(cuda_ordinal: int, cuda_pci: str | None, device: int | None = None) -> GLContext:
    """Create a context on the EGL device that is CUDA device ``cuda_ordinal`` (see :mod:`glrec.gl.devices`).

    ``device`` (an EGL index) is checked, not trusted: a device that is not the
    CUDA device raises DeviceError instead of rendering on the wrong GPU.
    """
    from ..errors import DeviceError
    from .devices import egl_devices, match_egl_device, verify_gl_device

    index = match_egl_device(egl_devices(), cuda_ordinal, cuda_pci, device)
    gl = create_context(index)
    try:
        with gl.active():
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
