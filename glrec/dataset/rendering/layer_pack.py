"""A chunk of samples' passes packed on the GPU from the layers of a :class:`~glrec.scenes.layers.LayeredGBuffer`.

The same bytes as :class:`~glrec.dataset.rendering.pack.PassPacker` makes for one
sample (the same shader, ``LAYERED``), for every layer at once: sample j's
packed frame lands ``j * stride`` bytes after the target's start, so a chunk is
one dispatch per shader, one fence and, on the host, one read of the whole
chunk. Boxes and pixel counts of every layer come from one more dispatch
(``shaders/dataset_boxes_layers.comp``) into a table sized by the largest
instance id the chunk's layouts can have, read in one call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any, overload

import moderngl
import numpy as np

from ...errors import EncoderError
from ...gl import glsl
from ...gl.context import software_gl
from ...gl.fences import Fence, dispatch_compute, gl_function
from ...gl.mapped import CLIENT_MAPPED_BARRIER, MappedBuffer
from ...scenes.camera import mask_boxes
from ...scenes.layers import LayeredGBuffer
from .memory import HostChunks, LentMappings
from .pack import _UNITS, PackTarget, PassPacker, clear_table, pack_defines, release_attributes, set_sections

__all__ = ["BoxTable", "LayerPacker", "LayerResult"]

_GL_R32UI = 0x8236
_DRAWN_UNIT = 5  # the depth-test buffer, where targets are masked (dataset_pack.comp's drawn_tex)
_READ_ONLY = 0x88B8
Boxes = dict[int, tuple[list[int], int]]
#: How a chunk's packed bytes reach the host: ``"get"`` reads the GL buffer (``glGetBufferSubData``);
#: ``"copy"`` has the GPU copy them into a buffer mapped for reading (:class:`~glrec.gl.mapped.MappedBuffer`)
#: before the fence, then copies them out of the mapping (or, ``run(lend=...)``, lends the mapping's own bytes);
#: ``"direct"`` packs into the mapped buffer itself.
#: ``"auto"``: ``copy`` on hardware GL, ``get`` on software GL (Mesa llvmpipe, where the GPU's copy is one more
#: memcpy on the CPU: two workers on the 2-core machine wrote about 7 % fewer samples/s with ``copy``).
#: A benchmark switch too (``benchmarks/dataset_workers.py --readback``); the bytes are the same in every mode.
#: On the H200 (2026-12-03, 16 shard workers, 640x480, five passes) ``copy`` wrote 470.7 samples/s, ``direct``
#: 402.1 and ``get`` 330.7 (results/..._eighth-b-readback.json).
READBACK = "auto"
#: Seconds between asks while waiting for a chunk's fence (None: block in the driver, which may spin a core).
#: A benchmark switch too (``GLREC_BENCH_FENCE_POLL``); 0.0005 saved 2.9 ms of CPU a sample on 16 H200 workers
#: and wrote no more samples/s (453 against 465), so it is off.
FENCE_POLL_S: float | None = None


class LayerResult:
    """What :meth:`LayerPacker.run` gives: per layer the boxes (or None) and the passes' arrays on the host;
    ``meanwhile``: what the CPU work run while the GPU packed returned."""

    def __init__(
        self, boxes: Sequence[Boxes | None], arrays: list[dict[str, np.ndarray]], meanwhile: Any = None
    ) -> None:
        self.boxes = boxes
        self.arrays = arrays
        self.meanwhile = meanwhile


class BoxTable(Sequence[Boxes | None]):
    """Per layer, its boxes (instance id -> (``[x0, y0, x1, y1)``, pixels)) from the box pass's table, each made
    into a dict when first asked for (a stream whose metadata is never read never makes them). ``over``: the
    layers whose ids went beyond the table, boxed from their masks (on the GL thread, at once)."""

    def __init__(self, table: np.ndarray, tops: np.ndarray, over: dict[int, Boxes]) -> None:
        self._table, self._tops, self._made = table, tops, over  # table: (count, x1, y1, x0, y0) x (n, ids)

    def __len__(self) -> int:
        return len(self._tops)

    @overload
    def __getitem__(self, j: int) -> Boxes | None: ...
    @overload
    def __getitem__(self, j: slice) -> list[Boxes | None]: ...
    def __getitem__(self, j: int | slice) -> Boxes | list[Boxes | None] | None:
        if isinstance(j, slice):
            return [self[k] for k in range(len(self))[j]]
        made = self._made.get(j)
        if made is None:
            count, x1, y1, x0, y0 = (part[j] for part in self._table)
            seen = (np.flatnonzero(count[1 : int(self._tops[j]) + 1]) + 1).tolist()
            rows = np.stack([x0, y0, x1, y1], axis=1)[seen].tolist()
            made = self._made[j] = dict(zip(seen, zip(rows, count[seen].tolist(), strict=True), strict=True))
        return made

    def lookup(self, layers: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For objects (layer, instance id), whether each has a box and the boxes ``(m, 4)`` int64 (``[x0, y0, x1,
        y1)``; rows without a box are garbage): what indexing the layers' dicts gives, for all at once."""
        count, x1, y1, x0, y0 = self._table
        ok = (ids >= 1) & (ids <= self._tops[layers]) & (ids < count.shape[1])
        at = np.where(ok, ids, 0)
        seen = ok & (count[layers, at] > 0)
        boxes = np.stack([x0[layers, at], y0[layers, at], x1[layers, at], y1[layers, at]], axis=1).astype(np.int64)
        for j, made in self._made.items():  # layers boxed from their masks, and dicts made already (same values)
            for r in np.flatnonzero(layers == j).tolist():
                box = made.get(int(ids[r]), (None, 0))[0]
                seen[r] = box is not None
                if box is not None:
                    boxes[r] = box
        return seen, boxes


class LayerPacker:
    """Packs the layers of ``gbuffer`` like ``packer`` (its passes, sections and formats) packs one sample."""

    GROUP = PassPacker.GROUP

    def __init__(self, ctx: moderngl.Context, gbuffer: LayeredGBuffer, packer: PassPacker) -> None:
        self.ctx = ctx
        self.gbuffer = gbuffer
        self.packer = packer
        self.wanted = packer.wanted
        self.sections = packer.sections
        self.nbytes = packer.nbytes
        self._normal = packer.normal
        self._ids = bool(self.wanted & {"instance", "semantic"}) or packer.want_boxes
        # Targets left uncleared (gbuffer.masked) are read where the depth-test buffer says a fragment was drawn.
        self._masked = bool(gbuffer.masked)
        rows = int(packer.rows is not None)  # the PNG passes filtered on the GPU (scanlines), via a scratch buffer
        defines = pack_defines(self.wanted, self._normal, LAYERED=1, MASKED=int(self._masked), ROWS=rows)
        self._pack = glsl.compute(ctx, "dataset_pack.comp", defines) if self.nbytes else None
        self._boxes: moderngl.ComputeShader | None = (
            glsl.compute(ctx, "dataset_boxes_layers.comp", {"MASKED": int(self._masked)}) if self._ids else None
        )
        set_sections((self._pack, self._boxes), gbuffer.size, packer.pack_sections)
        if rows and self._pack is not None:  # sample j's PNG passes at j * this in the scratch buffer
            self._pack["scratch_stride"].value = packer.scratch_nbytes // 4
        #: The largest storage block this GL takes, in bytes: one chunk's packed bytes must fit.
        self.max_block = int(ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE", 2**27))
        self._auto_readback = "get" if software_gl(ctx) else "copy"
        self._out: moderngl.Buffer | None = None
        self._table: moderngl.Buffer | None = None
        self._mapped: MappedBuffer | None = None
        self._scratch: moderngl.Buffer | None = None  # a chunk's PNG passes as pixels, on the GPU (scanlines)
        self._host = HostChunks()  # the chunks' host arrays, used again

    def run(
        self, n: int, stride: int, ids: int, into: PackTarget | None, fallback: Callable[[int], np.ndarray],
        meanwhile: Callable[[], Any] | None = None, *, lend: LentMappings | None = None,
    ) -> LayerResult:  # fmt: skip
        """Pack layers 0..n-1, sample j at ``j * stride`` bytes of ``into``; wait once; read boxes (and host bytes).

        ``meanwhile``: CPU work (no GL) to run while the GPU draws and packs the chunk, after the commands are
        flushed and before the wait; its result is the LayerResult's ``meanwhile``.

        ``ids``: the table's entries per layer (1 + the largest instance id the layouts have);
        a layer whose ids go beyond gets its boxes from ``fallback(layer)``, its instance mask.
        ``into``: a host uint8 array of ``n * stride`` bytes (the arrays are views of it; None: a new
        one), or ``(buffer, offset)`` to pack into a GL buffer and leave there (then no arrays).
        ``lend`` (with ``into`` None, where the GPU reads back through a mapping): the arrays are views of one
        of its mapped buffers (:class:`~glrec.dataset.rendering.memory.LentMappings`), with no copy on the host;
        its owner releases it once they are gone. With every buffer still lent, the chunk is copied as without.
        """
        w, h = self.gbuffer.size
        if n * stride > self.max_block:
            raise EncoderError(f"A chunk of {n} x {stride} bytes exceeds GL's storage block ({self.max_block} bytes).")
        mapped, readback = None, self._auto_readback if READBACK == "auto" else READBACK
        lent = None
        if isinstance(into, tuple):
            out, offset, host = into[0], into[1], None
        else:
            out, offset, host = self._own(n * stride), 0, None
            if lend is not None and into is None and readback != "get" and self.sections:
                mapped = lent = lend.free(n * stride)  # None: every buffer still lent, so copied as below
            if lent is None:  # the pool's array unless given one: the samples' views keep it (other threads)
                host = self._host.take(n * stride) if into is None else into
                if readback != "get" and self.sections:
                    mapped = self._own_mapped(n * stride)
        direct = mapped is not None and readback == "direct"  # the pack shader writes through the mapping
        bind_image = gl_function("glBindImageTexture", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_int,
                                 ctypes.c_ubyte, ctypes.c_int, ctypes.c_uint, ctypes.c_uint)  # fmt: skip
        for name, tex in self.gbuffer.textures.items():
            if name in ("instance", "semantic"):
                bind_image(_UNITS[name], tex.glo, 0, 1, 0, _READ_ONLY, _GL_R32UI)  # layered: every layer
            else:
                tex.use(_UNITS[name])
        if self._masked:
            bind_unit = gl_function("glBindTextureUnit", None, ctypes.c_uint, ctypes.c_uint)
            bind_unit(_DRAWN_UNIT, self.gbuffer.depth_texture)
        if self._pack is not None:
            self._pack["stride"].value = stride // 4
            if mapped is not None and direct:
                mapped.bind(0)
            else:
                out.bind_to_storage_buffer(0, offset=offset, size=n * stride)
            rows = self.packer.rows
            if rows is not None:
                self._own(n * self.packer.scratch_nbytes, "_scratch").bind_to_storage_buffer(6)
            dispatch_compute(self._pack.glo, ((w * h + 3) // 4 + self.GROUP - 1) // self.GROUP, n)
            if rows is not None:
                rows.run(n, stride, self.packer.scratch_nbytes)
        table = None
        ids = max(1, ids)
        if self._boxes is not None:
            table = self._clear_table(n, ids)
            self._boxes["layers"].value = n
            self._boxes["IDS"].value = ids
            table.bind_to_storage_buffer(1, size=(2 * n + 5 * n * ids) * 4)
            dispatch_compute(self._boxes.glo, (h + self.GROUP - 1) // self.GROUP, n)
        self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT | (CLIENT_MAPPED_BARRIER if direct else 0))
        if mapped is not None and not direct:  # the GPU copies the packed bytes into the mapping
            gl_function("glCopyNamedBufferSubData", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_ssize_t,
                        ctypes.c_ssize_t, ctypes.c_ssize_t)(out.glo, mapped.glo, 0, 0, n * stride)  # fmt: skip
        fence = Fence()  # one fence for the chunk
        # Flushed before anything waits: the GPU starts on the chunk while the CPU works. Waiting at once
        # without it (the fence's own flush) was 1.5x slower on llvmpipe (2-core machine, 640x480 stream).
        fence.signalled()
        extra = meanwhile() if meanwhile is not None else None
        fence.wait(poll_s=FENCE_POLL_S)  # with the GIL released
        arrays: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
        if (host is not None or lent is not None) and self.sections:
            if lend is not None and lent is not None:
                data = lend.lend(lent, n * stride)
            else:
                assert host is not None
                data = host[: n * stride]
                if mapped is not None:
                    mapped.read_into(data)
                else:
                    out.read_into(data, size=n * stride)
            for j in range(n):
                base = j * stride
                for name, (off, size) in self.sections.items():
                    arrays[j][name] = self.packer.view(name, data[base + off : base + off + size])
        boxes: Sequence[Boxes | None] = [None] * n
        if table is not None:
            boxes = self._read_table(table, n, ids, fallback)
        return LayerResult(boxes, arrays, extra)

    def _own(self, nbytes: int, name: str = "_out") -> moderngl.Buffer:
        """GL buffer ``name`` of this packer, made again where it holds fewer than ``nbytes``."""
        held: moderngl.Buffer | None = getattr(self, name)
        if held is None or held.size < nbytes:
            if held is not None:
                held.release()
            held = self.ctx.buffer(reserve=max(16, nbytes))
            setattr(self, name, held)
        return held

    def _own_mapped(self, nbytes: int) -> MappedBuffer:
        if self._mapped is None or self._mapped.nbytes < nbytes:
            if self._mapped is not None:
                self._mapped.release()
            self._mapped = MappedBuffer(max(16, nbytes), "a chunk's packed passes", client=True)
        return self._mapped

    def _clear_table(self, n: int, ids: int) -> moderngl.Buffer:
        nbytes = (2 * n + 5 * n * ids) * 4
        if self._table is None or self._table.size < nbytes:
            if self._table is not None:
                self._table.release()
            self._table = self.ctx.buffer(reserve=nbytes)
        clear_table(self._table, (2 * n + 3 * n * ids) * 4, nbytes)  # tops, count, x1, y1 | x0, y0
        return self._table

    def _read_table(
        self, table: moderngl.Buffer, n: int, ids: int, fallback: Callable[[int], np.ndarray]
    ) -> Sequence[Boxes | None]:
        words = np.frombuffer(table.read((2 * n + 5 * n * ids) * 4), np.uint32)
        tops = words[: 2 * n].reshape(n, 2)
        for k, name in enumerate(("instance", "semantic")):
            if name in self.wanted and int(tops[:, k].max(initial=0)) > 65535:
                raise EncoderError(f"{name} id {int(tops[:, k].max())} exceeds the 16 bits of {name}.png (65535).")
        if not self.packer.want_boxes:
            return [None] * n
        over = {j: mask_boxes(fallback(j)) for j in np.flatnonzero(tops[:, 0] >= ids).tolist()}
        return BoxTable(words[2 * n :].reshape(5, n, ids), tops[:, 0], over)

    def release(self) -> None:
        """Free the buffers and shaders; safe twice."""
        release_attributes(self, ("_out", "_table", "_pack", "_boxes", "_mapped", "_scratch"))
