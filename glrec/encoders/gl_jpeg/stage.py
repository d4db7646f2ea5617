"""A baseline JPEG encoder in GL compute: render targets become JFIF bytes inside glrec's GL context.

Two compute passes per batch of frames, each one dispatch over all of them
(the frame is ``gl_WorkGroupID.z``), one barrier after each:

1. ``shaders/jpeg_segment.comp``: one work group per restart segment per frame
   does everything from texels to stuffed bytes: colour conversion (JFIF: BT.601,
   full range), 4:2:0 or 4:4:4 chroma, integer DCT and quantisation (Annex K
   tables scaled by ``quality`` as libjpeg scales them), then Huffman coding
   parallel over blocks: 4 invocations per block each count the bits of 16
   coefficients (runs of zeros from the block's non-zero mask, the DC difference
   from the neighbouring block's DC), a prefix sum gives every invocation its bit
   offset, each ORs its codes into the segment's bits; the 0xFF bytes are counted,
   prefix-summed and every output word gathers its stuffed bytes, then the RSTn
   marker. The longest serial loop is 16 coefficients, not a segment.
2. ``shaders/jpeg_assemble.comp``: one work group per segment finds where its
   segment starts with a two-level prefix sum (tile totals of 64 segments, which
   pass 1 added up with atomics, then the lengths in its tile: no single-group
   scan, no chain of dispatches that grows with the picture) and writes the
   output words that start in its segment. The frame's length word comes first.

Why a segment per work group: a restart resets the DC predictions, so a segment
is the largest unit whose bits depend on nothing outside it; coding it in shared
memory costs no global round trip between the DCT and the entropy coder, and
two dispatches and two barriers per batch keep a GPU that pays per dispatch
busy. Why this restart interval (10 MCUs at 4:2:0, 21 at 4:4:4, or an MCU row
when shorter): 60-63 blocks fill a 240-252 invocation group and 31 KiB of shared
memory (GL 4.3 promises 32); 1080p has 816 segments, about six groups for each of
an H200's 132 SMs, and the markers and padding cost about 2.5 bytes per segment
(1.3 % of a 1080p plasma frame at quality 90). It is the interval glrec used before, so
the bytes are unchanged (``benchmarks/gl_jpeg_before.py`` keeps the old encoder).
Four invocations per block rather than 8: Mesa's llvmpipe pays per invocation at
every barrier (with 8 it spent 1.3x the CPU time per frame).

Only the bytes come back: a batch goes to the next output of a ring, a fence
follows it, and an output is read (its length words, then that many bytes per
frame) only when the ring wraps. The header and EOI are added on the host.
Integer arithmetic, and only order-free atomics (OR into disjoint bits, sums),
so the same frames give the same bytes on every run, every GL and every batch
size. No CUDA: any GPU with OpenGL 4.3 compute, and Mesa's llvmpipe.

Buffers are sized for the worst case of every block (``BLOCK_BYTES_MAX``, 432
bytes per 8x8 block with stuffing, plus 4 per segment), so noise at quality 100
never overruns them; sizes or batches whose buffers exceed the GL's limits are
refused before any GL object is made. GPU memory: (depth + 1) x batch x that bound.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence

import moderngl
import numpy as np

from ...errors import ConfigError
from ...gl import glsl
from ...gl.fences import Fence, dispatch_compute
from ...gl.mapped import CLIENT_MAPPED_BARRIER, MappedBuffer
from . import tables
from .blocks import (
    GL_MAX_COMPUTE_TEXTURE_IMAGE_UNITS,
    LANES,
    SUBSAMPLING,
    TILE,
    JpegGeometry,
    check_limits,
    geometry,
    gl_integer,
)

__all__ = ["SUBSAMPLING", "TILE", "Frames", "GlJpegStage", "JpegGeometry", "check_limits", "geometry"]

log = logging.getLogger("glrec")

_SSBO = moderngl.SHADER_STORAGE_BARRIER_BIT
#: Textures one dispatch samples (a sampler array); GL 4.3 promises 16 units to compute shaders.
MAX_UNITS = 16
#: What :meth:`GlJpegStage.encode_batch` takes: textures of the stage's source size, or an array texture's layers.
Frames = Sequence[moderngl.Texture] | moderngl.TextureArray


def _grid(n: int, limit: int = 65535) -> tuple[int, int]:
    return (n, 1) if n <= limit else (limit, -(-n // limit))


def _glsl_array(values: np.ndarray) -> str:
    return f"int[{values.size}]({', '.join(str(int(v)) for v in values.ravel())})"


class GlJpegStage:
    """Encode frames into JPEGs on the GPU, ``batch`` frames per dispatch; a ring of ``depth`` outputs.

    ``size`` is the JPEG's size; ``source_size`` (default ``size``) the textures': a larger
    JPEG repeats the texture's last column and row (``pad``). ``quality`` 1..100 (default 90),
    ``pix_fmt`` yuv420p or yuv444p, ``restart`` MCUs per segment (default: see :func:`geometry`),
    ``batch`` the most frames one dispatch encodes (default 1; buffers grow with it); ``top_down``:
    the textures' rows are top row first (arrays uploaded as they lie: :mod:`glrec.batch`), not GL's bottom-up.

    >>> stage = GlJpegStage(ctx, (256, 256), batch=64)  # doctest: +SKIP
    >>> jpegs = stage.encode_batch(textures)  # 64 textures, or a TextureArray of 64 layers  # doctest: +SKIP
    >>> stage.run(target.colour); done = stage.submit(0) + stage.drain()  # one frame at a time  # doctest: +SKIP
    >>> done[0][1][:2]  # doctest: +SKIP
    b'\\xff\\xd8'
    """

    def __init__(
        self,
        ctx: moderngl.Context,
        size: tuple[int, int],
        *,
        quality: int = 90,
        pix_fmt: str = "yuv420p",
        restart: int | None = None,
        depth: int = 3,
        source_size: tuple[int, int] | None = None,
        batch: int = 1,
        top_down: bool = False,
    ) -> None:
        if not 1 <= quality <= 100:
            raise ConfigError(f"JPEG quality {quality} is outside 1..100.")
        if depth < 2:
            raise ConfigError(f"JPEG readback ring depth {depth} must be at least 2 for reads to overlap the GPU.")
        if batch < 1:
            raise ConfigError(f"JPEG batch {batch} must be at least 1 frame.")
        geo = geometry(size, pix_fmt, restart)
        self.source_size: tuple[int, int] = source_size or size
        if any(s > g for s, g in zip(self.source_size, size, strict=True)):
            raise ConfigError(f"The texture {self.source_size} is larger than the JPEG {size}; glrec does not crop.")
        check_limits(ctx, geo, self.source_size, batch)  # before any GL object
        self.ctx, self.geometry, self.quality, self.pix_fmt, self.batch = ctx, geo, quality, pix_fmt, batch
        self.top_down = top_down  # frames' rows top row first (batches uploaded as arrays lie), not GL's bottom-up
        self.header = tables.header(geo.width, geo.height, quality, geo.subsampling, geo.restart)
        units = gl_integer(ctx, GL_MAX_COMPUTE_TEXTURE_IMAGE_UNITS) or MAX_UNITS
        self._units = max(1, min(batch, MAX_UNITS, units))
        self._objects: list[moderngl.Buffer | moderngl.ComputeShader] = []
        self._outputs: list[MappedBuffer] = []  # the ring the host reads finished JPEGs from
        self._pending: deque[tuple[tuple[int, ...], int, Fence]] = deque()  # (frame indices, slot, fence)
        self._slot = 0
        self._parity = 0  # which set of tile totals the next batch adds into (the other is being cleared)
        self._cut_short = False  # pass 1 of a batch ran, pass 2 not (an error between): tile totals not clean
        self._layers_shader: moderngl.ComputeShader | None = None
        try:
            self._build(depth)
        except BaseException:
            self.release()
            raise
        log.info("encoder: GL JPEG %dx%d quality %d, %s, %d segments of %d MCUs, batch %d, bound %d kB/frame",
                 *size, quality, pix_fmt, geo.segments, geo.restart, batch, geo.max_bytes >> 10)  # fmt: skip

    def _buffer(self, **kwargs: object) -> moderngl.Buffer:
        buf = self.ctx.buffer(**kwargs)  # type: ignore[arg-type]
        self._objects.append(buf)
        return buf

    def _shader(self, name: str, defines: dict[str, object]) -> moderngl.ComputeShader:
        shader = glsl.compute(self.ctx, name, defines)
        self._objects.append(shader)
        return shader

    def _build(self, depth: int) -> None:
        geo, batch = self.geometry, self.batch
        position = np.empty(64, dtype=np.int32)
        position[tables.zigzag()] = np.arange(64, dtype=np.int32)
        u, x = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
        basis = np.cos((2 * x + 1) * u * np.pi / 16) * np.where(u == 0, 1 / np.sqrt(2), 1.0) / 2
        quant = np.concatenate(
            [tables.scale_quant(tables.LUMA_QUANT, self.quality), tables.scale_quant(tables.CHROMA_QUANT, self.quality)]
        )
        self._defines: dict[str, object] = {
            "SUB": geo.sub,
            "BLOCKS": geo.blocks_per_mcu,
            "RESTART": geo.restart,
            "NB": geo.segment_blocks,
            "LANES": LANES,
            "CHUNK": 64 // LANES,
            "NT": LANES * geo.segment_blocks,
            "SEG_WORDS": geo.segment_words,
            "BITS_WORDS": geo.bits_words,
            "UNITS": self._units,
            "LAYERS": 0,
            "TOP_DOWN": 0,
            "QUANT": _glsl_array(quant),
            "BASIS": _glsl_array(np.rint(basis * 8192).astype(np.int32)),
            "ZIGZAG_POS": _glsl_array(position),
        }
        codes = np.concatenate([tables.code_table(spec) for spec in tables.HUFFMAN])
        self._codes = self._buffer(data=codes.astype(np.uint32).tobytes())
        self._segments = self._buffer(reserve=batch * geo.max_bytes)
        self._lengths = self._buffer(reserve=batch * geo.segments * 4)
        self._tiles = self._buffer(data=bytes(2 * batch * geo.tiles * 4))  # two sets, both zero to start
        for _ in range(depth):
            self._outputs.append(MappedBuffer(4 * batch + batch * geo.max_bytes, "the GL JPEG output buffer"))
        self._segment = self._segment_shader(layers=False)
        self._assemble = self._shader("jpeg_assemble.comp", {"SEG_WORDS": geo.segment_words})
        for name, value in (("segments", geo.segments), ("tiles", geo.tiles), ("frames_held", batch),
                            ("frame_words", geo.max_bytes // 4), ("clear_count", batch * geo.tiles)):  # fmt: skip
            self._assemble[name].value = value

    def _segment_shader(self, *, layers: bool) -> moderngl.ComputeShader:
        geo = self.geometry
        shader = self._shader(
            "jpeg_segment.comp", {**self._defines, "LAYERS": int(layers), "TOP_DOWN": int(self.top_down)}
        )
        for name, value in (("tex_size", self.source_size), ("mcus_x", geo.mcus_x), ("mcus", geo.mcus),
                            ("segments", geo.segments), ("tiles", geo.tiles)):  # fmt: skip
            shader[name].value = value
        return shader

    @property
    def depth(self) -> int:
        return len(self._outputs)

    @property
    def nbytes(self) -> int:
        """GPU memory of its buffers (the segment slots and the output ring, each sized for the worst case)."""
        buffers = sum(obj.size for obj in self._objects if isinstance(obj, moderngl.Buffer))
        return buffers + sum(out.nbytes for out in self._outputs)

    # -- the passes of one batch (run, profile)

    def _check(self, frames: Frames) -> int:
        if isinstance(frames, moderngl.TextureArray):
            sizes, n = {(frames.width, frames.height)}, frames.layers
        else:
            sizes, n = {tuple(t.size) for t in frames}, len(frames)
        wrong = sorted(str(s) for s in sizes if s != self.source_size)
        if wrong:
            raise ConfigError(f"This GL JPEG stage encodes {self.source_size} textures, not {', '.join(wrong)}.")
        return n

    def _passes(self, frames: Frames, first: int, n: int, slot: int) -> list[tuple[str, Callable[[], None]]]:
        """The dispatches that encode frames ``first .. first + n`` of ``frames`` into output ``slot``."""
        geo, parity = self.geometry, self._parity
        tile_sets = self.batch * geo.tiles

        def segments() -> None:
            if self._cut_short:  # a batch whose assembly never ran left its tile totals: start from zeros
                self.ctx.memory_barrier(moderngl.BUFFER_UPDATE_BARRIER_BIT)
                self._tiles.write(bytes(self._tiles.size))
            self._cut_short = True
            for binding, buf in enumerate((self._codes, self._segments, self._lengths, self._tiles)):
                buf.bind_to_storage_buffer(binding)
            if isinstance(frames, moderngl.TextureArray):
                if self._layers_shader is None:
                    self._layers_shader = self._segment_shader(layers=True)
                shader, chunks = self._layers_shader, [(0, n)]
                frames.use(0)
                shader["layer_base"].value = first
            else:
                shader, step = self._segment, self._units
                chunks = [(i, min(step, n - i)) for i in range(0, n, step)]
            shader["tile_base"].value = parity * tile_sets
            for start, count in chunks:  # one dispatch for array layers and for batches of <= 16 textures
                if not isinstance(frames, moderngl.TextureArray):
                    for unit in range(count):
                        frames[first + start + unit].use(unit)
                shader["frame_base"].value = start
                dispatch_compute(shader.glo, *_grid(geo.segments), count)
            self.ctx.memory_barrier(_SSBO)

        def assemble() -> None:
            for binding, buf in enumerate((self._segments, self._lengths, self._tiles), 1):
                buf.bind_to_storage_buffer(binding)
            self._outputs[slot].bind(4)
            self._assemble["tile_base"].value = parity * tile_sets
            self._assemble["clear_base"].value = (1 - parity) * tile_sets
            dispatch_compute(self._assemble.glo, *_grid(geo.segments), n)
            # The host reads the output through its mapping once the fence has signalled: it must see the writes.
            self.ctx.memory_barrier(_SSBO | CLIENT_MAPPED_BARRIER)
            self._parity, self._cut_short = 1 - parity, False

        return [("segments", segments), ("assemble", assemble)]

    def run(self, texture: moderngl.Texture) -> None:
        """Queue the encoding of ``texture`` into the next output of the ring (returns at once)."""
        self.run_batch([texture])

    def run_batch(self, frames: Frames, count: int | None = None) -> None:
        """Queue the encoding of ``frames`` (at most ``batch``; the first ``count`` only, if given) into the next
        output of the ring."""
        n = self._check(frames)
        if count is not None:
            if not 1 <= count <= n:
                raise ConfigError(f"Cannot encode the first {count} of {n} frames.")
            n = count
        if not 1 <= n <= self.batch:
            raise ConfigError(f"This GL JPEG stage encodes batches of 1..{self.batch} frames, not {n}.")
        for _, dispatch in self._passes(frames, 0, n, self._slot):
            dispatch()

    def submit(self, index: int) -> list[tuple[int, bytes]]:
        """Fence the frame :meth:`run` queued as frame ``index``; return (index, JPEG) of frames that completed."""
        return self.submit_batch([index])

    def submit_batch(self, indices: Sequence[int]) -> list[tuple[int, bytes]]:
        """Fence the batch :meth:`run_batch` queued, its frames numbered ``indices``; return completed frames."""
        self._pending.append((tuple(indices), self._slot, Fence()))
        self._slot = (self._slot + 1) % len(self._outputs)
        done = []
        while len(self._pending) >= len(self._outputs):  # the next run must find its output free
            done += self._collect()
        return done

    def drain(self) -> list[tuple[int, bytes]]:
        """Wait for and return every frame still in flight, oldest first."""
        done = []
        while self._pending:
            done += self._collect()
        return done

    def _collect(self) -> list[tuple[int, bytes]]:
        indices, slot, fence = self._pending.popleft()
        fence.wait()
        out, most = self._outputs[slot], self.geometry.max_bytes
        totals = np.frombuffer(out.read(4 * len(indices)), dtype=np.uint32)
        done = []
        header, eoi, start = self.header, tables.EOI, 4 * self.batch
        for f, (index, total) in enumerate(zip(indices, totals.tolist(), strict=True)):
            if not 0 < total <= most:  # cannot happen within the bound; never hand on garbage
                raise AssertionError(f"GL JPEG frame {index}: {total} bytes is outside 1..{most}.")
            done.append((index, b"".join((header, out.read(total, offset=start + f * most), eoi))))
        return done

    def encode_now(self, texture: moderngl.Texture) -> bytes:
        """One JPEG of ``texture``, waited for (datasets, tests); not while frames of :meth:`submit` are in flight."""
        return self.encode_batch([texture])[0]

    def encode_batch(self, frames: Frames) -> list[bytes]:
        """JPEGs of ``frames`` (textures, or every layer of an array texture), waited for, in order.

        Encoded ``batch`` frames per dispatch; the bytes of a frame do not depend on the batch.
        Not while frames of :meth:`submit` are in flight.
        """
        if self._pending:
            raise RuntimeError("encode_batch() with frames in flight: drain() them first.")
        n = self._check(frames)
        out: list[bytes] = []
        for first in range(0, n, self.batch):
            count = min(self.batch, n - first)
            for _, dispatch in self._passes(frames, first, count, self._slot):
                dispatch()
            self._pending.append((tuple(range(count)), self._slot, Fence()))
            self._slot = (self._slot + 1) % len(self._outputs)
            out += [data for _, data in self._collect()]
        return out

    def profile(self, frames: Frames) -> dict[str, dict[str, float]]:
        """Milliseconds of each pass of one batch of ``frames``: ``gpu`` from GL timer queries, ``wall`` to a glFinish.

        Each pass runs alone, finished before and after, so the total is an upper bound on a
        batch's GPU time in the stream of :meth:`run_batch`. On llvmpipe the queries close before
        its threads finish the work; read the wall times there. The output is discarded.
        """
        if self._pending:
            raise RuntimeError("profile() with frames in flight: drain() them first.")
        n = self._check(frames)
        gpu, wall = {}, {}
        for name, dispatch in self._passes(frames, 0, min(n, self.batch), self._slot):
            query = self.ctx.query(time=True)
            self.ctx.finish()
            t0 = time.perf_counter()
            with query:
                dispatch()
            self.ctx.finish()
            wall[name] = (time.perf_counter() - t0) * 1e3
            gpu[name] = query.elapsed / 1e6
        gpu["total"], wall["total"] = sum(gpu.values()), sum(wall.values())
        return {"gpu": gpu, "wall": wall}

    def release(self) -> None:
        """Release every buffer and shader; safe twice."""
        while getattr(self, "_pending", None):
            self._pending.popleft()[2].release()
        objects, self._objects = self._objects, []
        for obj in reversed(objects):
            obj.release()
        outputs, self._outputs = self._outputs, []
        for out in outputs:
            out.release()
        self._layers_shader = None
