"""Running the process function on a slot, and what comes out of it.

:class:`FunctionRunner` calls ``fn`` on the slot's frame (through an array
adapter, on host or CUDA memory) and turns its return value into a
:class:`Processed`: where the output frame is, the shapes to draw, the mask,
and what GL must wait for before it reads the slot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ProcessOutputError
from .arrays import CudaArrays, HostArrays, import_cupy, import_torch
from .draw import Mask, Overlay
from .memory import CudaMemory, HostMemory, Region

log = logging.getLogger("glrec")


@dataclass
class Processed:
    """One frame through the function: GL reads ``region`` once ``wait()`` has returned."""

    region: Region
    shapes: tuple[Any, ...] = ()
    mask: Mask | None = None
    mask_scale: float = 1.0
    data: Any = None
    wait: Callable[[], None] = lambda: None


def _array_library(array: str, memory_kind: str) -> str:
    """The library the function's frames come from (``cuda``: raw CUDA array views)."""
    if array != "auto":
        return array
    if memory_kind == "host":
        return "numpy"
    try:
        if import_torch().cuda.is_available():  # a CPU-only build cannot take CUDA memory
            return "torch"
    except ImportError:
        pass
    try:
        import_cupy()
        return "cupy"
    except ImportError:
        return "cuda"


class FunctionRunner:
    """Calls ``fn`` on slot frames held in ``memory``; frames in host memory when ``host`` is set.

    ``host`` on :class:`CudaMemory` is the host round trip (a copy to host memory and
    back per frame, for functions that want numpy). ``writes_out``: ``fn(frame, out)``
    fills the output view itself (the OpenCL host-copy path).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        label: str,
        memory: HostMemory | CudaMemory,
        *,
        array: str,
        host: bool,
        writes_out: bool = False,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.fn, self.label, self.memory = fn, label, memory
        self._on_close = on_close
        self.host = host or memory.kind == "host"
        self.writes_out = writes_out
        library = _array_library(array, "host" if self.host else "cuda")
        if self.host and library == "cupy":
            raise ProcessOutputError(f"{label}: array 'cupy' needs frames in CUDA memory; use numpy or torch here.")
        self.library = library
        layout = memory.layout
        self.out_region: Region = "out" if layout.separate_out else "in"
        self.arrays: HostArrays | CudaArrays
        if self.host:
            self.arrays = HostArrays(library, label)
            views = [{r: self.arrays.wrap(memory.host(s, r), layout.shape(r)) for r in ("in", "out", "mask")}
                     for s in range(memory.count)]  # fmt: skip
        else:
            assert isinstance(memory, CudaMemory)
            self.arrays = CudaArrays(library, label, memory.device)
            views = [{r: self.arrays.wrap(memory.ptr(s, r), layout.shape(r)) for r in ("in", "out", "mask")}
                     for s in range(memory.count)]  # fmt: skip
        self._views: list[dict[str, Any]] = views  # made once per slot: no allocation per frame

    @property
    def description(self) -> str:
        where = "host memory" if self.host else "CUDA memory on glrec's stream"
        if self.host and self.memory.kind == "cuda":
            where = "host memory (copied from and back to CUDA memory each frame)"
        return f"{self.label} on {self.library} arrays in {where}"

    def run(self, slot: int) -> Processed:
        """Call the function on the frame in ``slot`` (GL has finished writing it)."""
        memory, layout, views = self.memory, self.memory.layout, self._views[slot]
        if self.host:
            memory.download(slot, "in")
        out_shape = layout.shape("out")
        with self.arrays.stream():
            if self.writes_out:
                result = self.fn(views["in"], views[self.out_region])
                frame = views[self.out_region]
            else:
                result = self.fn(views["in"])
                frame = result.frame if isinstance(result, Overlay) else result
            if result is not None and not isinstance(result, Overlay) and not _is_frame(result):
                raise ProcessOutputError(
                    f"{self.label} returned {type(result).__name__}; return None (frame changed in place), "
                    "a frame, or an Overlay (glrec.process.Overlay)."
                )
            if frame is None and self.out_region == "out" and not self.writes_out:
                raise ProcessOutputError(
                    f"{self.label} returned no frame, but Process(size={layout.dst}) declares a new size; "
                    f"return an array of shape {out_shape}."
                )
            if frame is not None:
                self.arrays.store(views[self.out_region], frame, out_shape)
            done = Processed(self.out_region)
            if isinstance(result, Overlay):
                done.shapes = tuple(s for s in result.shapes if not isinstance(s, Mask))
                done.data = result.data
                done.mask = result.mask
                if done.mask is not None:
                    done.mask_scale = self.arrays.store_mask(
                        views["mask"], done.mask.values, layout.shape("mask"), done.mask.palette is not None
                    )
            if isinstance(self.arrays, CudaArrays):
                event = self.arrays.ready_event(self.memory.event(slot))  # type: ignore[union-attr]
                done.wait = lambda: _synchronize(event)
        if self.host:
            memory.upload(slot, self.out_region)
            if done.mask is not None:
                memory.upload(slot, "mask")
        return done

    def close(self) -> None:
        self._views = []
        if isinstance(self.arrays, CudaArrays):
            self.arrays.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


def _is_frame(value: object) -> bool:
    return hasattr(value, "shape") or hasattr(value, "__cuda_array_interface__")


def _synchronize(event: Any) -> None:
    from ..cuda.driver import call

    call("cuEventSynchronize", event)
