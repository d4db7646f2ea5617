"""The processing stage: render target -> slot -> function -> GL texture (+ overlay) -> convert.

Each frame goes through three steps, pipelined so the GPU never sits idle
waiting for the host:

1. *pack*: a compute shader copies the render target into a free slot, rows
   top-down (``shaders/frame_to_buffer.comp``), and a GL fence is placed;
2. *process*: once the fence has signalled, the function runs on the slot (its
   CUDA work queued on glrec's stream, then an event recorded);
3. *emit*: once that work has finished, a compute shader copies the output
   region into the stage's output texture (``shaders/buffer_to_frame.comp``),
   the overlay is drawn on it, and the convert stage reads it.

Step 2 runs ``lag`` frames after step 1 and step 3 ``lag`` frames after step 2
(0 in live mode), so at most ``2 * lag + 1`` slots exist: the bound on frames in
flight, all allocated when the recorder is made. The frame index travels with
each frame, so a frame keeps its identity whatever the lag.

If the function raises, that frame and the ones rendered after it are dropped;
frames processed before it are still emitted, so the file is finished with
every frame before the failure, and the function's own exception propagates
once, as itself, with a note naming the function and the frame.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Union

import moderngl

from ..errors import ContextError, GlrecError, note_user_error
from ..gl import glsl
from ..gl.fences import Fence, dispatch_compute
from .arrays import host_array
from .draw import Boxes, Lines, Points
from .memory import CudaMemory, HostMemory, SlotLayout
from .overlay import OverlayRenderer
from .runner import FunctionRunner, Processed
from .spec import OpenCLKernel, Process

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice
    from .clexternal import ExternalRunner

log = logging.getLogger("glrec")

Emit = Callable[[int, moderngl.Texture], None]
Runner = Union[FunctionRunner, "ExternalRunner"]
GROUP = 16  # local_size of frame_to_buffer.comp and buffer_to_frame.comp


class ProcessStage:
    """Runs a :class:`~glrec.process.Process` on every frame; see the module docstring.

    :meth:`submit` takes the rendered texture and calls ``emit(index, texture)``
    for every frame that is ready for the convert stage (oldest first);
    :meth:`drain` emits the rest.
    """

    def __init__(self, ctx: moderngl.Context, spec: Process, memory: HostMemory | CudaMemory, runner: Runner,
                 *, lag: int) -> None:  # fmt: skip
        self.ctx, self.spec, self.memory, self.runner, self.lag = ctx, spec, memory, runner, lag
        layout = memory.layout
        self.src, self.dst = layout.src, layout.dst
        self._objects: list[Any] = []
        self._user_overlay: Any = None
        try:
            self._make_objects()
        except BaseException:
            self._release_objects()
            raise
        self._free: deque[int] = deque(range(memory.count))
        self._rendered: deque[tuple[int, int, Fence]] = deque()  # (index, slot, fence)
        self._processed: deque[tuple[int, int, Processed]] = deque()
        self.failed = False
        if spec.overlay is not None:
            try:
                spec.overlay.setup(ctx, self.dst)
            except BaseException:
                self._release_objects()
                raise
            self._user_overlay = spec.overlay

    def _make_objects(self) -> None:
        ctx = self.ctx
        self._pack = self._own(glsl.compute(ctx, "frame_to_buffer.comp"))
        self._pack["size"].value = self.src
        self._unpack = self._own(glsl.compute(ctx, "buffer_to_frame.comp"))
        self._unpack["size"].value = self.dst
        self.output = self._own(ctx.texture(self.dst, 4, dtype="f1"))
        self._fbo = self._own(ctx.framebuffer(color_attachments=[self.output]))
        self._overlay = self._own(OverlayRenderer(ctx, self.dst))

    def _release_objects(self) -> None:
        objects, self._objects = self._objects, []
        with ExitStack() as stack:
            for obj in objects:  # an ExitStack runs them in reverse
                stack.callback(obj.release)

    def _own(self, obj: Any) -> Any:
        self._objects.append(obj)
        return obj

    @property
    def in_flight(self) -> int:
        return len(self._rendered) + len(self._processed)

    def submit(self, colour: moderngl.Texture, index: int, emit: Emit) -> None:
        """Queue the rendered ``colour`` as frame ``index``; emit the frames whose turn has come."""
        if self.failed:
            raise ContextError("The processing stage failed earlier; create a new recorder.")
        slot = self._free.popleft()  # one is always free: in flight never exceeds 2 * lag
        buffer, offset = self.memory.gl(slot, "in")
        colour.use(0)
        buffer.bind_to_storage_buffer(0, offset=offset, size=self.memory.layout.nbytes("in"))
        self._dispatch(self._pack, self.src)
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT | moderngl.BUFFER_UPDATE_BARRIER_BIT)
        self._rendered.append((index, slot, Fence()))
        while len(self._rendered) > self.lag:
            self._process_oldest()
        while len(self._processed) > self.lag:
            self._emit_oldest(emit)

    def drain(self, emit: Emit) -> None:
        """Process and emit every frame still in the stage (after a failure: those processed before it)."""
        error: BaseException | None = None
        try:
            while self._rendered and not self.failed:
                self._process_oldest()
        except BaseException as exc:
            error = exc
        while self._processed:
            self._emit_oldest(emit)
        if error is not None:
            raise error

    def _process_oldest(self) -> None:
        index, slot, fence = self._rendered.popleft()
        try:
            fence.wait()  # GL wrote the slot; the function may read it
            processed = self.runner.run(slot)
        except GlrecError as exc:
            self._fail(exc, index, slot)
            raise
        except Exception as exc:
            # The user's function raised: its own exception goes on as itself (the caller's `except
            # ZeroDivisionError` catches it), with glrec's line naming the function and the frame attached.
            self._fail(exc, index, slot, note=False)
            note_user_error(exc, f"{self.spec.label} raised {type(exc).__name__} at frame {index}: {exc}")
            raise
        except BaseException as exc:
            self._fail(exc, index, slot)
            raise
        self._processed.append((index, slot, processed))

    def _emit_oldest(self, emit: Emit) -> None:
        index, slot, done = self._processed.popleft()
        try:
            done.wait()  # the function's GPU work on the slot has finished
            shapes = [_on_host(s) for s in done.shapes]
            buffer, offset = self.memory.gl(slot, done.region)
            buffer.bind_to_storage_buffer(0, offset=offset, size=self.memory.layout.nbytes(done.region))
            self.output.bind_to_image(0, read=False, write=True)
            # The previous frame's convert read this texture: its reads end before these writes start.
            self.ctx.memory_barrier(moderngl.SHADER_IMAGE_ACCESS_BARRIER_BIT | moderngl.TEXTURE_FETCH_BARRIER_BIT)
            self._dispatch(self._unpack, self.dst)
            self.ctx.memory_barrier(moderngl.TEXTURE_FETCH_BARRIER_BIT | moderngl.FRAMEBUFFER_BARRIER_BIT)
            if shapes or done.mask is not None:
                mask = None
                if done.mask is not None:
                    mask_buffer, mask_offset = self.memory.gl(slot, "mask")
                    mask = (done.mask, (mask_buffer, mask_offset, done.mask_scale))
                self._overlay.draw(self._fbo, shapes, mask)
            if done.data is not None and self._user_overlay is not None:
                self._fbo.use()
                self._user_overlay.draw(done.data)
        except BaseException as exc:
            self._fail(exc, index, slot)
            raise
        self._free.append(slot)  # GL reads it before any later GL write: command order
        emit(index, self.output)

    def _fail(self, exc: BaseException, index: int, slot: int, *, note: bool = True) -> None:
        """Drop frame ``index`` and every frame after it; the ones before stay for :meth:`drain`."""
        self.failed = True
        self._free.append(slot)
        while self._rendered:
            _, s, fence = self._rendered.popleft()
            fence.release()
            self._free.append(s)
        if self._processed and self._processed[0][0] > index:  # emit failed: later frames go too
            self._free.extend(s for _, s, _ in self._processed)
            self._processed.clear()
        # Debug only: the error itself reaches the caller (and the CLI prints it), once.
        log.debug("%s failed at frame %d: %s: %s", self.spec.label, index, type(exc).__name__, exc)
        if note and hasattr(exc, "add_note"):
            exc.add_note(f"glrec: raised by {self.spec.label} at frame {index}")

    def _dispatch(self, shader: moderngl.ComputeShader, size: tuple[int, int]) -> None:
        dispatch_compute(shader.glo, (size[0] + GROUP - 1) // GROUP, (size[1] + GROUP - 1) // GROUP)

    def release(self) -> None:
        """Release everything the stage made (frames still inside are lost). Safe twice."""
        while self._rendered:
            self._rendered.popleft()[2].release()
        self._processed.clear()
        runner, self.runner = self.runner, None  # type: ignore[assignment]
        with ExitStack() as stack:  # runs bottom-up: the overlay first, the memory last
            stack.callback(self.memory.release)
            if runner is not None:
                stack.callback(runner.close)
            stack.callback(self._release_objects)
            overlay, self._user_overlay = self._user_overlay, None
            if overlay is not None:
                stack.callback(overlay.close)


def _on_host(shape: Any) -> Any:
    """A copy of a shape with its coordinates as a host array (the GPU work has finished: no wait)."""
    if isinstance(shape, Boxes):
        return Boxes(host_array(shape.xyxy), shape.colour, shape.width)
    if isinstance(shape, Points):
        return Points(host_array(shape.xy), shape.colour, shape.radius)
    if isinstance(shape, Lines):
        return Lines(host_array(shape.segments), shape.colour, shape.width)
    return shape


def open_process(
    ctx: moderngl.Context, spec: Process, src: tuple[int, int], device: CudaDevice | None, *, live: bool
) -> ProcessStage:
    """Build the stage for ``spec``: slots in CUDA memory on the CUDA path where GL can share it, else GL + host."""
    from ..cuda.vmm import EXTENSION
    from ..errors import ConfigError

    dst = spec.size or src
    kernel = isinstance(spec.fn, OpenCLKernel)
    layout = SlotLayout(src, dst, separate_out=kernel or dst != src)
    lag = 0 if live else 1
    count = 2 * lag + 1
    shared = device is not None and EXTENSION in ctx.extensions
    if spec.memory == "cuda" and not shared:
        why = "this recorder is on the host path" if device is None else f"this GL lacks {EXTENSION}"
        raise ConfigError(f"{spec.label}: memory 'cuda' needs frames in CUDA memory, but {why}; use memory 'auto'.")
    if device is not None and not shared:
        log.warning("%s: GL lacks %s, so frames go through host memory", spec.label, EXTENSION)
    memory: HostMemory | CudaMemory
    if shared:
        assert device is not None
        memory = CudaMemory(ctx, device, layout, count)
    else:
        memory = HostMemory(ctx, layout, count)
    runner: Runner | None = None
    try:
        if isinstance(spec.fn, OpenCLKernel):
            from .opencl import open_opencl

            runner = open_opencl(spec.fn, spec.label, memory, host=spec.memory == "host")
        else:
            runner = FunctionRunner(spec.fn, spec.label, memory, array=spec.array, host=spec.memory == "host")
            log.info("processing stage: %s", runner.description)
        return ProcessStage(ctx, spec, memory, runner, lag=lag)
    except BaseException:
        if runner is not None:
            runner.close()
        memory.release()
        raise
