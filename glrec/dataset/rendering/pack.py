"""Ground-truth passes packed on the GPU: the bytes each file holds, read back in one copy.

After a sample's draw, one compute pass (``shaders/dataset_pack.comp``) writes,
rows top-down, the colour as RGB bytes, depth as float32, instance and class ids
as uint16 and normals as 8-bit ``round((n + 1) * 127.5)`` (or float32) into one
buffer, and a second pass (``shaders/dataset_boxes.comp``) finds each instance's
tight box and pixel count and the largest ids. The host then reads only that
buffer and a small table, instead of reading every render target in full and
converting, flipping and reducing them in numpy. The arithmetic is numpy's
(float32, no fused multiply-add, round half to even), so the files are the bytes
the host path writes; ``tests/test_dataset_gpu.py`` checks them against it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import TypeAlias

import moderngl
import numpy as np

from ...encoders.png.writer import ScanLines, layout
from ...errors import EncoderError
from ...gl import glsl
from ...gl.fences import Fence, dispatch_compute, gl_function
from ...scenes.camera import mask_boxes
from ...scenes.passes import PASS_ROWS, GBuffer
from .scanlines import ROW_PASSES, RowsFilter

__all__ = ["MAX_IDS", "PackTarget", "PackedFrame", "PassPacker"]

#: Instance ids the box table holds (1..MAX_IDS-1); a frame with a larger id falls back to the mask.
MAX_IDS = 4096
_UNITS = {"rgb": 0, "depth": 1, "instance": 2, "semantic": 3, "normal": 4}
#: Where :meth:`PassPacker.run` puts the packed bytes: a host uint8 array, or a GL buffer and byte offset.
PackTarget: TypeAlias = "np.ndarray | tuple[moderngl.Buffer, int]"
_GL_R32UI, _GL_RED_INTEGER, _GL_UNSIGNED_INT = 0x8236, 0x8D94, 0x1405


def pack_defines(wanted: set[str], normal: str, **extra: object) -> dict[str, object]:
    """The ``dataset_pack.comp`` switches for the passes ``wanted`` (``normal``: its file format) and ``extra``."""
    normal_switch = 0 if "normal" not in wanted else 1 if normal == "png" else 2
    return {"RGB": int("rgb" in wanted), "DEPTH": int("depth" in wanted), "INSTANCE": int("instance" in wanted),
            "SEMANTIC": int("semantic" in wanted), "NORMAL": normal_switch, **extra}  # fmt: skip


def set_sections(shaders: tuple[moderngl.ComputeShader | None, ...], size: tuple[int, int],
                 sections: dict[str, tuple[int, int]]) -> None:  # fmt: skip
    """Give the pack and box shaders the frame size and each pass's section (in 32-bit words)."""
    words = {name: off // 4 for name, (off, _) in sections.items()}
    values = {"size": size, **{f"at_{n}": words.get(n, 0) for n in _UNITS}}
    for shader in (s for s in shaders if s is not None):
        for key, value in values.items():
            uniform = shader.get(key, None)  # unused sections are compiled out
            if uniform is not None:
                uniform.value = value  # type: ignore[union-attr]


def clear_table(table: moderngl.Buffer, split: int, nbytes: int) -> None:
    """A box table's first ``split`` bytes (header, counts, x1, y1) to 0, the rest up to ``nbytes`` (x0, y0) to ~0."""
    clear = gl_function("glClearNamedBufferSubData", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_ssize_t,
                        ctypes.c_ssize_t, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)  # fmt: skip
    zero, ones = ctypes.c_uint(0), ctypes.c_uint(0xFFFFFFFF)
    clear(table.glo, _GL_R32UI, 0, split, _GL_RED_INTEGER, _GL_UNSIGNED_INT, ctypes.byref(zero))
    clear(table.glo, _GL_R32UI, split, nbytes - split, _GL_RED_INTEGER, _GL_UNSIGNED_INT, ctypes.byref(ones))


def release_attributes(obj: object, names: tuple[str, ...]) -> None:
    """Release the GL objects ``obj`` holds under ``names`` and set them to None; safe twice."""
    for name in names:
        held = getattr(obj, name)
        setattr(obj, name, None)
        if held is not None:
            held.release()


@dataclass
class PackedFrame:
    """One frame's passes as their files' arrays (views into one host buffer) and its boxes.

    ``arrays``: ``rgb`` (h, w, 3) uint8, ``depth`` (h, w) float32, ``instance`` /
    ``semantic`` (h, w) uint16, ``normal`` (h, w, 3) uint8 (png) or float32 (npy).
    ``boxes``: instance id -> (``[x0, y0, x1, y1)``, pixel count), as
    :func:`glrec.scenes.camera.mask_boxes` gives; None when not asked for.
    """

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    boxes: dict[int, tuple[list[int], int]] | None = None
    max_ids: dict[str, int] = field(default_factory=dict)


class PassPacker:
    """Packs the passes ``wanted`` of ``gbuffer`` after each draw; :meth:`run` returns a :class:`PackedFrame`.

    ``normal`` is the normal pass's file format (``png``: 8 bit, ``npy``: float32);
    ``boxes`` asks for the per-instance boxes and pixel counts.
    """

    GROUP = 64  # local_size_x of both shaders

    def __init__(self, ctx: moderngl.Context, gbuffer: GBuffer, wanted: set[str], *, normal: str = "png",
                 boxes: bool = False, scanlines: bool = False) -> None:  # fmt: skip
        self.ctx = ctx
        self.gbuffer = gbuffer
        self.wanted = {p for p in wanted if p in _UNITS}
        self.want_boxes = boxes
        w, h = gbuffer.size
        self.size = (w, h)
        padded = (w * h + 3) // 4 * 4  # the shader writes whole groups of 4 pixels
        widths = {"rgb": 3, "depth": 4, "instance": 2, "semantic": 2, "normal": 3 if normal == "png" else 12}
        self._normal = normal
        self.normal = normal
        # With scanlines, the passes filed as PNG (ids, 8-bit normals) are packed into a scratch buffer on the GPU
        # and filtered from there into the sections the host reads (:mod:`.scanlines`).
        lines = (
            {p for p in ROW_PASSES if p in self.wanted and (p != "normal" or normal == "png")} if scanlines else set()
        )
        self._sections: dict[str, tuple[int, int]] = {}  # pass -> (byte offset, bytes), where the host reads it
        self._pack_at: dict[str, tuple[int, int]] = {}  # where the pack shader writes it (scratch: the lines)
        at = scratch = 0
        for name in _UNITS:
            if name not in self.wanted:
                continue
            span = (widths[name] * padded + 15) // 16 * 16
            if name in lines:
                self._pack_at[name] = (scratch, widths[name] * w * h)
                scratch += span
                self._sections[name] = (at, RowsFilter.lines_nbytes(widths[name], (w, h)))
                at += (self._sections[name][1] + 15) // 16 * 16
            else:
                self._sections[name] = self._pack_at[name] = (at, widths[name] * w * h)
                at += span
        self.nbytes = at
        #: Bytes a sample's PNG passes take in the GPU-only scratch buffer (0: no scanlines).
        self.scratch_nbytes = scratch
        self._out: moderngl.Buffer | None = ctx.buffer(reserve=max(16, at))
        self._table_bytes = 16 + 5 * MAX_IDS * 4
        self._table: moderngl.Buffer | None = ctx.buffer(reserve=self._table_bytes)
        self._ids = bool(self.wanted & {"instance", "semantic"}) or boxes
        self._scratch: moderngl.Buffer | None = ctx.buffer(reserve=scratch) if lines else None
        self.rows: RowsFilter | None = None
        #: The PNG (bit depth, colour type, bytes per pixel) of each pass filtered into scanlines: its file array's.
        self._kinds = {n: layout(np.empty((1, 1, *PASS_ROWS[n].tail), PASS_ROWS[n].stream_dtype(normal=normal)))
                       for n in lines}  # fmt: skip
        if lines:
            where = {n: (self._pack_at[n][0], self._sections[n][0], widths[n]) for n in lines}
            self.rows = RowsFilter(ctx, (w, h), where)
        defines = pack_defines(self.wanted, normal, ROWS=int(bool(lines)))
        self._pack: moderngl.ComputeShader | None = glsl.compute(ctx, "dataset_pack.comp", defines) if at else None
        self._boxes: moderngl.ComputeShader | None = (
            glsl.compute(ctx, "dataset_boxes.comp", {"MAX_IDS": MAX_IDS}) if self._ids else None
        )
        set_sections((self._pack, self._boxes), (w, h), self._pack_at)

    @property
    def sections(self) -> dict[str, tuple[int, int]]:
        """Where each pass lies in the packed bytes: pass -> (byte offset, bytes); offsets are 16-byte aligned."""
        return dict(self._sections)

    @property
    def pack_sections(self) -> dict[str, tuple[int, int]]:
        """Where the pack shader writes each pass: :attr:`sections`, but in the scratch buffer for the passes
        filtered into scanlines (:attr:`rows`)."""
        return dict(self._pack_at)

    def run(self, *, into: PackTarget | None = None) -> PackedFrame:
        """Pack the frame drawn last; waits for the GPU (with the GIL released) and reads the result.

        ``into`` (default: the packer's own buffer, read back into a new host array):
        a host uint8 array of at least :attr:`nbytes` to read the packed bytes into
        (the arrays are views of it), or ``(buffer, offset)``, a GL buffer and a byte
        offset (a multiple of 256) to pack into and leave there (``arrays`` is then
        empty: whoever owns that buffer reads it, e.g. CUDA through shared memory).
        """
        assert self._out is not None and self._table is not None, "released"
        w, h = self.size
        out, offset, host = self._out, 0, None
        if isinstance(into, tuple):
            out, offset = into
        elif into is not None:
            host = into
        for name, tex in self.gbuffer.textures.items():
            if name not in _UNITS:  # a pass added by a row: read back as rendered (see the renderer)
                continue
            if name in ("instance", "semantic"):
                tex.bind_to_image(_UNITS[name], read=True, write=False)
            else:
                tex.use(_UNITS[name])
        if self._pack is not None:
            out.bind_to_storage_buffer(0, offset=offset, size=self.nbytes)
            if self._scratch is not None:
                self._scratch.bind_to_storage_buffer(6)
            dispatch_compute(self._pack.glo, ((w * h + 3) // 4 + self.GROUP - 1) // self.GROUP, 1)
            if self.rows is not None:
                self.rows.run(1, self.nbytes, self.scratch_nbytes)
        if self._boxes is not None:
            self._clear_table()
            self._table.bind_to_storage_buffer(1)
            dispatch_compute(self._boxes.glo, (h + self.GROUP - 1) // self.GROUP, 1)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT)
        Fence().wait()  # through ctypes: other threads run Python while the GPU (or llvmpipe) works
        frame = PackedFrame()
        if self._sections and out is self._out:
            data = np.empty(self.nbytes, np.uint8) if host is None else host[: self.nbytes]
            self._out.read_into(data)
            for name, (off, n) in self._sections.items():
                frame.arrays[name] = self._view(name, data[off : off + n])
        if self._ids:
            self._read_table(frame)
        return frame

    def view(self, name: str, raw: np.ndarray) -> np.ndarray:
        """Pass ``name``'s packed bytes ``raw`` as its array (its file's dtype and shape)."""
        return self._view(name, raw)

    def _view(self, name: str, raw: np.ndarray) -> np.ndarray:
        w, h = self.size
        if self.rows is not None and name in self.rows.passes:
            return ScanLines.of(raw, w, self._kinds[name])
        row = PASS_ROWS[name]
        return raw.view(row.stream_dtype(normal=self._normal)).reshape(h, w, *row.tail)

    def _clear_table(self) -> None:
        assert self._table is not None
        clear_table(self._table, 16 + 3 * MAX_IDS * 4, self._table_bytes)  # header, count, x1, y1 | x0, y0

    def _read_table(self, frame: PackedFrame) -> None:
        assert self._table is not None
        header = np.frombuffer(self._table.read(16), np.uint32)
        frame.max_ids = {"instance": int(header[0]), "semantic": int(header[1])}
        for name in ("instance", "semantic"):
            if name in self.wanted and frame.max_ids[name] > 65535:
                raise EncoderError(f"{name} id {frame.max_ids[name]} exceeds the 16 bits of {name}.png (65535).")
        if not self.want_boxes:
            return
        top = frame.max_ids["instance"]
        if top >= MAX_IDS:  # beyond the table: the mask itself, as the host path does
            frame.boxes = mask_boxes(self.gbuffer.read("instance"))
            return
        table = np.frombuffer(self._table.read(5 * MAX_IDS * 4, offset=16), np.uint32).reshape(5, MAX_IDS)
        count, x1, y1, x0, y0 = table[:, : top + 1]
        frame.boxes = {
            int(i): ([int(x0[i]), int(y0[i]), int(x1[i]), int(y1[i])], int(count[i]))
            for i in np.flatnonzero(count[1:]) + 1
        }

    def release(self) -> None:
        """Free the buffers and shaders; safe twice."""
        release_attributes(self, ("_out", "_table", "_pack", "_boxes", "_scratch", "rows"))
