"""The GL JPEG encoder as it was before its entropy coding went parallel (main 2568e0f), for ``benchmarks/gl_jpeg.py``.

Four passes per frame: DCT (one invocation per block), Huffman (one invocation per restart
segment, coding its MCUs serially: the latency-bound pass), a one-work-group scan of the
segment lengths, and the assembly. Its shaders are kept in ``benchmarks/before/gl_jpeg/``.
Not shipped, not used by glrec: the benchmark's BEFORE column and the tests' second opinion
(the new encoder must give the same bytes at the same restart interval).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import moderngl
import numpy as np

from glrec.encoders.gl_jpeg import tables
from glrec.errors import ConfigError
from glrec.gl.fences import Fence, dispatch_compute

log = logging.getLogger("glrec")
SHADERS = Path(__file__).resolve().parent / "before" / "gl_jpeg"

SUBSAMPLING = {"yuv420p": "420", "yuv444p": "444"}
_SSBO = moderngl.SHADER_STORAGE_BARRIER_BIT


@dataclass(frozen=True)
class JpegGeometry:
    """The block structure of a ``width`` x ``height`` JPEG with ``subsampling`` and ``restart`` MCUs per segment."""

    width: int
    height: int
    subsampling: str  # "420" or "444"
    restart: int

    @property
    def sub(self) -> int:
        return 2 if self.subsampling == "420" else 1

    @property
    def blocks_per_mcu(self) -> int:
        return self.sub * self.sub + 2

    @property
    def mcus_x(self) -> int:
        return -(-self.width // (8 * self.sub))

    @property
    def mcus_y(self) -> int:
        return -(-self.height // (8 * self.sub))

    @property
    def mcus(self) -> int:
        return self.mcus_x * self.mcus_y

    @property
    def segments(self) -> int:
        return -(-self.mcus // self.restart)

    @property
    def segment_words(self) -> int:
        """Words of one segment's slot: its worst case (:data:`BLOCK_BYTES_MAX` a block) and the marker."""
        worst = self.restart * self.blocks_per_mcu * tables.BLOCK_BYTES_MAX + tables.SEGMENT_EXTRA_BYTES
        return -(-worst // 4)

    @property
    def max_bytes(self) -> int:
        """The bound on the entropy-coded bytes of a frame (what the output buffers hold)."""
        return self.segments * self.segment_words * 4

    @property
    def blocks(self) -> int:
        return self.mcus * self.blocks_per_mcu

    @property
    def coefficient_bytes(self) -> int:
        return self.blocks * 64 * 4


#: The most blocks one restart segment (one invocation of the Huffman pass) may hold. Mesa's
#: llvmpipe ends a shader invocation's loops after 65,535 iterations in all (gallivm's
#: LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop), which truncated segments of about
#: 150 blocks of noise at quality 100; 64 blocks stay well under it.
MAX_SEGMENT_BLOCKS = 64


def geometry(size: tuple[int, int], pix_fmt: str, restart: int | None = None) -> JpegGeometry:
    """The geometry for ``size`` and ``pix_fmt`` (yuv420p / yuv444p).

    ``restart`` (MCUs per segment) defaults to the most that fit :data:`MAX_SEGMENT_BLOCKS`
    (10 MCUs at 4:2:0, 21 at 4:4:4), or one MCU row if that is shorter.
    """
    width, height = size
    if pix_fmt not in SUBSAMPLING:
        raise ConfigError(f"The GL JPEG encoder takes pix_fmt yuv420p or yuv444p, not {pix_fmt!r}.")
    if width < 1 or height < 1 or max(width, height) > 65535:
        raise ConfigError(f"JPEG sizes are 1..65535 pixels a side, not {width}x{height}.")
    sub = 2 if pix_fmt == "yuv420p" else 1
    per_mcu = sub * sub + 2
    most = MAX_SEGMENT_BLOCKS // per_mcu
    restart = min(-(-width // (8 * sub)), most) if restart is None else restart
    if not 1 <= restart <= most:
        raise ConfigError(
            f"restart interval {restart} must be 1..{most} MCUs at {pix_fmt} (at most {MAX_SEGMENT_BLOCKS} blocks "
            "per segment: software GL stops longer shader loops)."
        )
    return JpegGeometry(width, height, SUBSAMPLING[pix_fmt], restart)


def check_limits(ctx: moderngl.Context, geo: JpegGeometry, source_size: tuple[int, int]) -> None:
    """Refuse what this GL cannot hold (texture size, storage-buffer size), before any GL object is made."""
    max_tex = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
    w, h = source_size
    if max(w, h) > max_tex:
        raise ConfigError(
            f"Size {w}x{h} exceeds this GPU's largest texture ({max_tex} pixels a side); "
            f"use a size of at most {max_tex}x{max_tex}."
        )
    max_ssbo = int(ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE") or 0)
    largest = max(geo.max_bytes + 4, geo.coefficient_bytes)
    if max_ssbo and largest > max_ssbo:
        side = int(math.sqrt(max_ssbo / largest) * min(geo.width, geo.height)) // 16 * 16
        raise ConfigError(
            f"A {geo.width}x{geo.height} JPEG needs a {largest >> 20} MiB storage buffer (its worst case); this GL "
            f"allows {max_ssbo >> 20} MiB. Use a smaller size (about {side} pixels on the short side at this "
            "aspect), or yuv420p instead of yuv444p."
        )
    groups = int(ctx.info["GL_MAX_COMPUTE_WORK_GROUP_COUNT"][0])
    if max(-(-geo.blocks // 64), geo.segments) > groups * groups:
        raise ConfigError(
            f"{geo.width}x{geo.height} needs more work groups than this GL can dispatch; use a smaller size "
            "or a larger restart interval."
        )


def _grid(n: int, limit: int = 65535) -> tuple[int, int]:
    return (n, 1) if n <= limit else (limit, -(-n // limit))


class GlJpegStage:
    """Encode frames of the texture given to :meth:`run` into JPEGs on the GPU; a ring of ``depth`` outputs.

    ``size`` is the JPEG's size; ``source_size`` (default ``size``) the texture's: a larger
    JPEG repeats the texture's last column and row (``pad``). ``quality`` 1..100 (default 90),
    ``pix_fmt`` yuv420p or yuv444p, ``restart`` MCUs per segment (default: see :func:`geometry`).

    >>> stage = GlJpegStage(ctx, (640, 360))  # doctest: +SKIP
    >>> stage.run(target.colour); done = stage.submit(0) + stage.drain()  # doctest: +SKIP
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
        batch: int = 1,  # what the pipeline passes the new stage; the old one encodes a frame at a time
    ) -> None:
        if batch != 1:
            raise ValueError("the old GL JPEG stage encodes one frame at a time")
        if not 1 <= quality <= 100:
            raise ConfigError(f"JPEG quality {quality} is outside 1..100.")
        if depth < 2:
            raise ConfigError(f"JPEG readback ring depth {depth} must be at least 2 for reads to overlap the GPU.")
        geo = geometry(size, pix_fmt, restart)
        self.source_size: tuple[int, int] = source_size or size
        if any(s > g for s, g in zip(self.source_size, size, strict=True)):
            raise ConfigError(f"The texture {self.source_size} is larger than the JPEG {size}; glrec does not crop.")
        check_limits(ctx, geo, self.source_size)  # before any GL object
        self.ctx, self.geometry, self.quality, self.pix_fmt = ctx, geo, quality, pix_fmt
        self.header = tables.header(geo.width, geo.height, quality, geo.subsampling, geo.restart)
        self._objects: list[moderngl.Buffer | moderngl.ComputeShader] = []
        try:
            self._build(depth)
        except BaseException:
            self.release()
            raise
        self._pending: deque[tuple[int, int, Fence]] = deque()  # (frame index, slot, fence)
        self._slot = 0
        log.info("encoder: GL JPEG %dx%d quality %d, %s, %d segments of %d MCUs, bound %d kB/frame",
                 geo.width, geo.height, quality, pix_fmt, geo.segments, geo.restart, geo.max_bytes >> 10)  # fmt: skip

    def _buffer(self, **kwargs: object) -> moderngl.Buffer:
        buf = self.ctx.buffer(**kwargs)  # type: ignore[arg-type]
        self._objects.append(buf)
        return buf

    def _shader(self, name: str, defines: dict[str, object]) -> moderngl.ComputeShader:
        text = (SHADERS / name).read_text()
        first, _, rest = text.partition("\n")
        lines = "".join(f"#define {k} {v}\n" for k, v in defines.items())
        shader = self.ctx.compute_shader(f"{first}\n{lines}{rest}")
        self._objects.append(shader)
        return shader

    def _build(self, depth: int) -> None:
        geo = self.geometry
        order = tables.zigzag()
        position = np.empty(64, dtype=np.int32)
        position[order] = np.arange(64, dtype=np.int32)
        u, x = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
        basis = np.cos((2 * x + 1) * u * np.pi / 16) * np.where(u == 0, 1 / np.sqrt(2), 1.0) / 2
        quant = np.concatenate(
            [tables.scale_quant(tables.LUMA_QUANT, self.quality), tables.scale_quant(tables.CHROMA_QUANT, self.quality)]
        )
        table_data = np.concatenate([quant, position, np.rint(basis * 8192).astype(np.int32).ravel()])
        codes = np.concatenate([tables.code_table(spec) for spec in tables.HUFFMAN])
        defines: dict[str, object] = {
            "SUB": geo.sub,
            "BLOCKS": geo.blocks_per_mcu,
            "RESTART": geo.restart,
            "SEG_WORDS": geo.segment_words,
        }
        self._tables = self._buffer(data=table_data.astype(np.int32).tobytes())
        self._codes = self._buffer(data=codes.astype(np.uint32).tobytes())
        self._coef = self._buffer(reserve=geo.coefficient_bytes)
        self._segments = self._buffer(reserve=geo.segments * geo.segment_words * 4)
        self._lengths = self._buffer(reserve=geo.segments * 4)
        self._offsets = self._buffer(reserve=(geo.segments + 1) * 4)
        self._outputs = [self._buffer(reserve=geo.max_bytes + 4) for _ in range(depth)]
        self._dct = self._shader("jpeg_dct.comp", defines)
        self._huffman = self._shader("jpeg_huffman.comp", defines)
        self._scan = self._shader("jpeg_scan.comp", defines)
        self._assemble = self._shader("jpeg_assemble.comp", defines)
        self._dct["frame"].value = 0
        self._dct["tex_size"].value = self.source_size
        self._dct["mcus_x"].value = geo.mcus_x
        self._dct["blocks"].value = geo.blocks
        for shader in (self._huffman, self._scan, self._assemble):
            shader["segments"].value = geo.segments
        self._huffman["mcus"].value = geo.mcus

    @property
    def nbytes(self) -> int:
        """GPU memory of its buffers (what the pipeline logs for the frames in flight)."""
        return sum(obj.size for obj in self._objects if isinstance(obj, moderngl.Buffer))

    @property
    def depth(self) -> int:
        return len(self._outputs)

    def run(self, texture: moderngl.Texture) -> None:
        """Queue the encoding of ``texture`` into the next output of the ring (returns at once)."""
        if tuple(texture.size) != self.source_size:
            raise ConfigError(f"This GL JPEG stage encodes {self.source_size} textures, not {tuple(texture.size)}.")
        geo, out = self.geometry, self._outputs[self._slot]
        texture.use(0)
        for binding, buf in enumerate((self._coef, self._tables, self._codes, self._segments, self._lengths,
                                       self._offsets, out)):  # fmt: skip
            buf.bind_to_storage_buffer(binding)
        dispatch_compute(self._dct.glo, *_grid(-(-geo.blocks // 64)))
        self.ctx.memory_barrier(_SSBO)
        dispatch_compute(self._huffman.glo, -(-geo.segments // 64), 1)
        self.ctx.memory_barrier(_SSBO)
        dispatch_compute(self._scan.glo, 1, 1)
        self.ctx.memory_barrier(_SSBO)
        dispatch_compute(self._assemble.glo, *_grid(geo.segments))
        # The host reads the output with glGetBufferSubData: it must see the shader's writes.
        self.ctx.memory_barrier(_SSBO | moderngl.BUFFER_UPDATE_BARRIER_BIT)

    def submit(self, index: int) -> list[tuple[int, bytes]]:
        """Fence the frame :meth:`run` queued as frame ``index``; return (index, JPEG) of frames that completed."""
        self._pending.append((index, self._slot, Fence()))
        self._slot = (self._slot + 1) % len(self._outputs)
        done = []
        while len(self._pending) >= len(self._outputs):  # the next run() must find its output free
            done.append(self._collect())
        return done

    def drain(self) -> list[tuple[int, bytes]]:
        """Wait for and return every frame still in flight, oldest first."""
        return [self._collect() for _ in range(len(self._pending))]

    def _collect(self) -> tuple[int, bytes]:
        index, slot, fence = self._pending.popleft()
        fence.wait()
        out = self._outputs[slot]
        total = int(np.frombuffer(out.read(4), dtype=np.uint32)[0])
        if not 0 < total <= self.geometry.max_bytes:  # cannot happen within the bound; never hand on garbage
            raise AssertionError(f"GL JPEG frame {index}: {total} bytes is outside 1..{self.geometry.max_bytes}.")
        return index, self.header + out.read(total, offset=4) + tables.EOI

    def encode_now(self, texture: moderngl.Texture) -> bytes:
        """One JPEG of ``texture``, waited for (datasets, tests); not while frames of :meth:`submit` are in flight."""
        if self._pending:
            raise RuntimeError("encode_now() with frames in flight: drain() them first.")
        self.run(texture)
        self._pending.append((0, self._slot, Fence()))
        self._slot = (self._slot + 1) % len(self._outputs)
        return self._collect()[1]

    def profile(self, frames: Sequence[moderngl.Texture]) -> dict[str, dict[str, float]]:
        """Milliseconds of each pass of one frame of ``frames[0]``: ``gpu`` (timer queries), ``wall`` (to a glFinish).

        The per-pass timing ``benchmarks/gl_jpeg.py`` used before (each pass alone, finished).
        """
        ctx, geo = self.ctx, self.geometry
        frames[0].use(0)
        for binding, buf in enumerate((self._coef, self._tables, self._codes, self._segments, self._lengths,
                                       self._offsets, self._outputs[0])):  # fmt: skip
            buf.bind_to_storage_buffer(binding)
        passes = {
            "dct": (self._dct, (*_grid(-(-geo.blocks // 64)), 1)),
            "huffman": (self._huffman, (-(-geo.segments // 64), 1, 1)),
            "scan": (self._scan, (1, 1, 1)),
            "assemble": (self._assemble, (*_grid(geo.segments), 1)),
        }
        gpu, wall = {}, {}
        for name, (shader, groups) in passes.items():
            query = ctx.query(time=True)
            ctx.finish()
            t0 = time.perf_counter()
            with query:
                dispatch_compute(shader.glo, *groups)
                ctx.memory_barrier(_SSBO)
            ctx.finish()
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
        self._outputs = []
