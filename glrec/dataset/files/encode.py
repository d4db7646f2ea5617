"""Pass arrays to file bytes: PNG (glrec's own writer), JPEG (FFmpeg's through PyAV, or a GPU encoder), ``.npy``.

Masks and depth are always lossless (16-bit PNG or ``.npy``); colour is PNG
or JPEG. PNG files come from :mod:`glrec.encoders.png.writer` (NumPy row filter, zlib-ng
deflate, the GIL released); a shard worker on a GPU gets its PNG passes' rows filtered there already
(:class:`~glrec.encoders.png.writer.ScanLines`, :mod:`glrec.dataset.rendering.scanlines`). Colour goes
through a :class:`ColourEncoder` made for the encoder row ``[output] rgb_encoder`` names in the encoder registry
(:mod:`glrec.encoders.registry`): a row that encodes on the host is the CPU
path, one that reads the GL texture (``gl``) or CUDA memory (``nvjpeg``) encodes
on the GPU (:mod:`.gl_jpeg_colour`, :mod:`.nvjpeg_colour`). An encoder glrec
has no row for plugs in with :func:`register_colour_encoder`.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from ...encoders.png.writer import DEFAULT_LEVEL, ScanLines
from ...encoders.png.writer import encode_png as _png
from ...errors import ConfigError, EncoderError, EncoderUnavailableError
from ...scenes.passes import PASS_ROWS, PassRow
from ..rendering.colour import BatchColour, ColourEncoder, ColourImage
from ..spec.document import OutputSpec

if TYPE_CHECKING:
    pass

log = logging.getLogger("glrec")

__all__ = [
    "COLOUR_ENCODERS",
    "BatchColour",
    "ColourEncoder",
    "ColourImage",
    "check_colour_encoder",
    "encode_jpeg",
    "encode_pass",
    "encode_png",
    "file_array",
    "npy_bytes",
    "register_colour_encoder",
]


def _encode_image(
    codec: str, array: np.ndarray, fmt: str, options: dict[str, str], out_fmt: str | None = None
) -> bytes:
    import av  # PyAV for JPEG colour on the CPU only: a PNG worker starts without it

    h, w = array.shape[:2]
    try:
        cc = cast(av.VideoCodecContext, av.CodecContext.create(codec, "w"))
        cc.width, cc.height = w, h
        cc.pix_fmt = out_fmt or fmt
        cc.thread_count = 1  # one image per context: FFmpeg's default made a thread per core for each image
        if codec == "mjpeg":
            cc.color_range = 2  # JPEG is full range (JFIF)
            q = int(options.pop("q"))
            cc.qmin = cc.qmax = q
        cc.options = options
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format=fmt)
        if out_fmt is not None:
            frame = frame.reformat(format=out_fmt)
        data = b"".join(bytes(p) for p in cc.encode(frame)) + b"".join(bytes(p) for p in cc.encode(None))
    except (av.FFmpegError, ValueError) as exc:
        raise EncoderError(f"Encoding a {w}x{h} {fmt} image with {codec} failed: {exc}") from exc
    return data


def encode_png(array: np.ndarray, level: int = DEFAULT_LEVEL) -> bytes:
    """A PNG of an (h, w) uint8/uint16 or (h, w, 3) uint8 array, ``level`` 0..9 (:mod:`glrec.encoders.png.writer`).

    Lossless. :class:`~glrec.encoders.png.writer.ScanLines` (filtered on the GPU) are deflated as they are."""
    if isinstance(array, ScanLines):
        return array.png(level)
    if array.ndim == 3 and array.shape[2] != 3:
        raise EncoderError(f"PNG takes (h, w) uint8/uint16 or (h, w, 3) uint8, not {array.dtype} {array.shape}.")
    return _png(array, level)


def jpeg_qscale(quality: int) -> int:
    """FFmpeg's JPEG quantiser (2 best .. 31 worst) for a 1..100 quality."""
    return max(2, min(31, round(31 - (quality - 1) * 29 / 99)))


def encode_jpeg(rgb: np.ndarray, quality: int = 90) -> bytes:
    """A baseline JPEG (4:2:0, BT.601 full range as JFIF decoders assume) of an (h, w, 3) uint8 array."""
    return _encode_image("mjpeg", rgb, "rgb24", {"q": str(jpeg_qscale(quality))}, out_fmt="yuvj420p")


def npy_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` file of ``array``: the bytes ``numpy.save`` writes, made with one copy of the data.

    ``numpy.save`` into a ``BytesIO`` copied a 640x480 float32 depth three times (``tobytes``, the
    stream's buffer, ``getvalue``): 7 % of a shard worker's CPU on the H200 machine. Here the header
    and a byte view of the array are joined into the file's bytes at once.
    """
    arr = np.ascontiguousarray(array)
    if arr.dtype.hasobject:
        raise EncoderError(f"A .npy pass file holds numbers, not {arr.dtype} objects.")
    header = io.BytesIO()
    meta = np.lib.format.header_data_from_array_1_0(arr)
    try:
        np.lib.format.write_array_header_1_0(header, meta)
    except ValueError:  # a header too long for format 1.0 (numpy.save's own fallback)
        np.lib.format.write_array_header_2_0(header, meta)
    return b"".join((header.getvalue(), arr.reshape(-1).view(np.uint8).data))


class _CpuColour:
    host_only = True  # PNG/JPEG of the host array: runs on the encode threads

    def __init__(self, output: OutputSpec) -> None:
        self.ext = output.rgb
        self._output = output

    def encode(self, image: ColourImage) -> bytes:
        if self.ext == "png":
            return encode_png(image.array(), self._output.png_compression)
        return encode_jpeg(image.array(), self._output.jpeg_quality)


def _nvjpeg_colour(output: OutputSpec) -> ColourEncoder:
    from .nvjpeg_colour import NvJpegColour  # CUDA and nvImageCodec only when asked for

    return NvJpegColour(output)


def _gl_jpeg_colour(output: OutputSpec) -> ColourEncoder:
    from .gl_jpeg_colour import GlJpegColour  # the GL-compute JPEG encoder, in the dataset's own context

    return GlJpegColour(output)


#: How a dataset encodes colour for an encoder row, by where the row's encode runs (its ``context``).
_BY_CONTEXT: dict[str, Callable[[OutputSpec], ColourEncoder]] = {
    "host": _CpuColour,
    "gl": _gl_jpeg_colour,
    "cuda": _nvjpeg_colour,
}

#: Colour encoders registered with :func:`register_colour_encoder` (those glrec has no encoder row for),
#: by (format, name). glrec's own come from the encoder registry's rows.
COLOUR_ENCODERS: dict[tuple[str, str], Callable[[OutputSpec], ColourEncoder]] = {}


def register_colour_encoder(fmt: str, encoder: str, factory: Callable[[OutputSpec], ColourEncoder]) -> None:
    """Make ``[output] rgb = fmt, rgb_encoder = encoder`` use ``factory(output)``: a colour encoder glrec has no
    encoder row for (glrec's own, ``cpu``, ``gl`` and ``nvjpeg``, are taken from :mod:`glrec.encoders.registry`).

    >>> register_colour_encoder("jpg", "mine", MyJpegColour)  # doctest: +SKIP
    """
    COLOUR_ENCODERS[(fmt, encoder)] = factory


def _row_factory(output: OutputSpec) -> tuple[Callable[[OutputSpec], ColourEncoder] | None, str]:
    """The factory for ``output``'s colour from the encoder registry, or None and why not."""
    from ...encoders.registry import ENCODERS

    fmt, name = output.rgb, output.rgb_encoder
    jpeg_rows = sorted(n for n, r in ENCODERS.items() if "mjpeg" in r.codecs)
    if name == "auto":
        name = auto_colour(output) if fmt == "jpg" else "cpu"
    row = ENCODERS.get(name)
    if fmt == "png":
        ok = row is not None and row.context == "host"
        return (_CpuColour if ok else None), 'png colour is encoded on the CPU: use rgb_encoder = "cpu"'
    if row is None or "mjpeg" not in row.codecs:
        what = "no encoder of that name" if row is None else f"{row.label} does not make JPEG"
        return None, f"{what}; the encoders that make JPEG: {', '.join(jpeg_rows)}"
    return _BY_CONTEXT[row.context], ""


def auto_colour(output: OutputSpec) -> str:
    """The encoder ``rgb_encoder = "auto"`` takes for JPEG colour: the first JPEG row of the registry's
    ``AUTO_ORDER`` that runs here and that auto does not pass over (GL JPEG on hardware GL, then nvJPEG,
    then the CPU); the choice and the reasons are logged. JPEG bytes then depend on the machine."""
    from ...encoders.registry import AUTO_ORDER, ENCODERS

    passed: list[str] = []
    for name in AUTO_ORDER:
        if "mjpeg" not in ENCODERS[name].codecs:
            continue
        why = _machine_problem(name, output, auto=True)
        if why is None:
            log.info("dataset colour: rgb_encoder auto -> %s%s", name, "".join(f"; not {p}" for p in passed))
            return name
        passed.append(f"{name} ({why})")
    return "cpu"


def _machine_problem(name: str, output: OutputSpec, *, auto: bool = False) -> str | None:
    """Why JPEG row ``name`` cannot run on this machine (with ``auto``: or why auto passes it over), or None."""
    from ...encoders.registry import ENCODERS
    from ...options import VideoOptions

    row = ENCODERS[name]
    # The rows' checks look at the codec and the machine, not the size.
    request = VideoOptions.create((64, 64), 30, codec="mjpeg", encoder=name, quality=output.jpeg_quality).request()
    return row.problem(request) or (row.auto_problem(request) if auto else None)


def check_colour_encoder(output: OutputSpec) -> None:
    """Raise ConfigError unless ``output``'s colour has an encoder, EncoderUnavailableError unless the one named runs
    here (both before any folder is touched)."""
    colour_factory_of(output)
    if output.rgb == "jpg" and (output.rgb, output.rgb_encoder) not in COLOUR_ENCODERS:
        name = output.rgb_encoder
        why = None if name == "auto" else _machine_problem(name, output)
        if why is not None:
            raise EncoderUnavailableError(
                f'[output] rgb_encoder {name!r} cannot run here: {why}. Use rgb_encoder = "cpu" or "auto".'
            )


def colour_factory_of(output: OutputSpec) -> Callable[[OutputSpec], ColourEncoder]:
    """The factory of ``output``'s colour encoder: a registered one, else the encoder row's; or ConfigError."""
    factory = COLOUR_ENCODERS.get((output.rgb, output.rgb_encoder))
    if factory is not None:
        return factory
    factory, why = _row_factory(output)
    if factory is None:
        mine = ", ".join(f"{f}/{e}" for f, e in sorted(COLOUR_ENCODERS))
        raise ConfigError(
            f"[output] rgb_encoder {output.rgb_encoder!r} cannot encode {output.rgb!r} colour: {why}"
            + (f" (registered: {mine})" if mine else "")
            + ". Or register your own with glrec.dataset.register_colour_encoder."
        )
    return factory


def colour_encoder(output: OutputSpec) -> ColourEncoder:
    """The colour encoder the spec asks for, or a ConfigError saying which encoders can."""
    return colour_factory_of(output)(output)


def depth_units(depth: np.ndarray, scale: float) -> np.ndarray:
    """Depth as uint16 ``round(depth * scale)``; 0 stays 0 (no surface), beyond 65535 is an error."""
    units = np.multiply(depth, scale, dtype=np.float64)  # float64 as before (the same rounding), one pass
    np.rint(units, out=units)
    if units.max(initial=0) > 65535:
        raise EncoderError(
            f"Depth {depth.max():.3f} times depth_scale {scale:g} exceeds 16 bits (65535); "
            'lower depth_scale or use depth = "npy".'
        )
    return units.astype(np.uint16)


def ids16(ids: np.ndarray, what: str) -> np.ndarray:
    if ids.max(initial=0) > 65535:
        raise EncoderError(f"{what} id {int(ids.max())} exceeds the 16 bits of {what}.png (65535).")
    return ids.astype(np.uint16)


def normal8(normal: np.ndarray) -> np.ndarray:
    """Unit normals to uint8 ``round((n + 1) * 127.5)``; pixels with no surface (n = 0) stay 0."""
    n = normal.astype(np.float32, copy=False)
    encoded = np.rint(n * np.float32(127.5) + np.float32(127.5)).clip(0, 255).astype(np.uint8)
    encoded[~n.any(axis=-1)] = 0
    return encoded


def _row(name: str) -> PassRow:
    row = PASS_ROWS.get(name)
    if row is None:
        raise ConfigError(f"Unknown pass {name!r}; passes: {', '.join(PASS_ROWS)}.")
    return row


def file_array(name: str, array: np.ndarray, output: OutputSpec) -> np.ndarray:
    """A pass as rendered (float32 depth and normals, uint32 ids) -> the array its file holds.

    The pass's row (:data:`glrec.scenes.passes.PASS_ROWS`) names the file's dtype for the encoding
    ``output`` picks: ids (uint32) become uint16 (refused past 65,535), float vectors become 8 bit
    as ``(v + 1) / 2`` (normals for ``png``), anything else is cast. Depth stays float32 (``png16``
    scales it when encoding). The GPU packer (:mod:`glrec.dataset.rendering.pack`) makes these
    same arrays on the GPU.
    """
    want = np.dtype(_row(name).file_dtype(output))
    if array.dtype == want:
        return array
    if want == np.uint16 and array.dtype.kind == "u":
        return ids16(array, name)
    if want == np.uint8 and array.dtype.kind == "f":
        return normal8(array)
    return array.astype(want, copy=False)


def encode_pass(name: str, array: np.ndarray, output: OutputSpec, *, packed: bool = False) -> tuple[str, bytes]:
    """File name (``depth.npy``, ``instance.png``, ...) and bytes of one pass of one image, as its row says.

    ``array`` is the pass as rendered, or with ``packed`` already its file's array (:func:`file_array`).
    """
    row = _row(name)
    arr = array if packed else file_array(name, array, output)
    encoding, file = row.encoding(output), row.file_name(output)
    if encoding == "npy":
        return file, npy_bytes(arr)
    if encoding == "png16":  # depth in units of depth_scale, 16 bit
        return file, encode_png(depth_units(arr, output.depth_scale), output.png_compression)
    if encoding == "png":
        return file, encode_png(arr, output.png_compression)
    raise ConfigError(f"Pass {name!r}: no writer for its encoding {encoding!r} (png, png16 or npy).")


def encode_clip_pass(
    name: str, frames: list[np.ndarray], output: OutputSpec, *, packed: bool = False
) -> tuple[str, bytes]:
    """One ``.npy`` stack (frames first) of a pass over a clip, in the pass's image encoding's dtype."""
    row = _row(name)
    arr = np.stack(frames if packed else [file_array(name, f, output) for f in frames])
    if row.encoding(output) == "png16":
        arr = depth_units(arr, output.depth_scale)
    return row.file_name(output, clip=True), npy_bytes(arr)
