"""Pass arrays to file bytes: PNG and JPEG through PyAV (FFmpeg's image encoders), NumPy ``.npy``.

Masks and depth are always lossless (16-bit PNG or ``.npy``); colour is PNG
or JPEG. Colour goes through a :class:`ColourEncoder` picked from
:data:`COLOUR_ENCODERS` by ``(format, encoder)``, so a GPU encoder (nvJPEG,
reading the colour texture without a host copy) plugs in with
:func:`register_colour_encoder` without touching the rest.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Protocol, cast

import av
import numpy as np

from ..errors import ConfigError, EncoderError
from .spec import OutputSpec

__all__ = [
    "COLOUR_ENCODERS",
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


class ColourImage:
    """The colour of one rendered sample, handed to a colour encoder.

    ``texture`` is the live RGBA8 GL texture (rows bottom-up, as GL stores
    them) for encoders that read GPU memory; :meth:`array` reads it back to an
    (h, w, 3) uint8 top-down array once, for encoders that work on the host.
    """

    def __init__(self, texture: object, read: Callable[[], np.ndarray]) -> None:
        self.texture = texture
        self._read = read
        self._array: np.ndarray | None = None

    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = self._read()
        return self._array


class ColourEncoder(Protocol):
    """Turns a :class:`ColourImage` into the bytes of one image file with extension :attr:`ext`.

    Two optional class attributes tell the dataset runner what an encoder reads
    (absent, it assumes the most: the live texture, and the host array):

    - ``host_only = True``: ``encode`` reads only ``image.array()``, so it may run
      on a worker thread after the next sample has been drawn over the texture;
    - ``needs_array = False``: ``encode`` never calls ``image.array()`` (a GPU
      encoder reading the texture), so the colour is not read back to the host.
    """

    ext: str

    def encode(self, image: ColourImage) -> bytes: ...


def _encode_image(
    codec: str, array: np.ndarray, fmt: str, options: dict[str, str], out_fmt: str | None = None
) -> bytes:
    h, w = array.shape[:2]
    try:
        cc = cast(av.VideoCodecContext, av.CodecContext.create(codec, "w"))
        cc.width, cc.height = w, h
        cc.pix_fmt = out_fmt or fmt
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


def encode_png(array: np.ndarray, level: int = 3) -> bytes:
    """A PNG of an (h, w) uint8/uint16 or (h, w, 3) uint8 array, zlib ``level`` 0..9. Lossless."""
    if array.dtype == np.uint16 and array.ndim == 2:
        fmt = "gray16be"  # PyAV swaps the bytes from native order
    elif array.dtype == np.uint8 and array.ndim == 2:
        fmt = "gray"
    elif array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3:
        fmt = "rgb24"
    else:
        raise EncoderError(f"PNG takes (h, w) uint8/uint16 or (h, w, 3) uint8, not {array.dtype} {array.shape}.")
    return _encode_image("png", array, fmt, {"compression_level": str(level)})


def jpeg_qscale(quality: int) -> int:
    """FFmpeg's JPEG quantiser (2 best .. 31 worst) for a 1..100 quality."""
    return max(2, min(31, round(31 - (quality - 1) * 29 / 99)))


def encode_jpeg(rgb: np.ndarray, quality: int = 90) -> bytes:
    """A baseline JPEG (4:2:0, BT.601 full range as JFIF decoders assume) of an (h, w, 3) uint8 array."""
    return _encode_image("mjpeg", rgb, "rgb24", {"q": str(jpeg_qscale(quality))}, out_fmt="yuvj420p")


def npy_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` file of ``array`` (as ``numpy.save`` writes it)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


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
    from .gl_jpeg_colour import GlJpegColour  # -- gl-jpeg hook: the GL-compute JPEG encoder

    return GlJpegColour(output)


#: (format, encoder) -> factory of a ColourEncoder for an OutputSpec.
COLOUR_ENCODERS: dict[tuple[str, str], Callable[[OutputSpec], ColourEncoder]] = {
    ("png", "cpu"): _CpuColour,
    ("jpg", "cpu"): _CpuColour,
    ("jpg", "nvjpeg"): _nvjpeg_colour,
    ("jpg", "gl"): _gl_jpeg_colour,
}


def register_colour_encoder(fmt: str, encoder: str, factory: Callable[[OutputSpec], ColourEncoder]) -> None:
    """Make ``[output] rgb = fmt, rgb_encoder = encoder`` use ``factory(output)``.

    >>> register_colour_encoder("jpg", "nvjpeg", NvJpegColour)  # doctest: +SKIP
    """
    COLOUR_ENCODERS[(fmt, encoder)] = factory


def check_colour_encoder(output: OutputSpec) -> None:
    """Raise ConfigError unless a colour encoder is registered for ``output`` (before any folder is touched)."""
    if (output.rgb, output.rgb_encoder) not in COLOUR_ENCODERS:
        have = ", ".join(f"{f}/{e}" for f, e in sorted(COLOUR_ENCODERS))
        raise ConfigError(
            f"[output] rgb_encoder {output.rgb_encoder!r}: no colour encoder for {output.rgb!r} has that name "
            f"(have: {have}). Use one of those, or register yours with glrec.dataset.register_colour_encoder."
        )


def colour_encoder(output: OutputSpec) -> ColourEncoder:
    """The colour encoder the spec asks for, or a ConfigError listing those available."""
    factory = COLOUR_ENCODERS.get((output.rgb, output.rgb_encoder))
    if factory is None:
        have = ", ".join(f"{f}/{e}" for f, e in sorted(COLOUR_ENCODERS))
        raise ConfigError(
            f"No colour encoder {output.rgb_encoder!r} for {output.rgb!r} on this machine (have: {have}). "
            'Use rgb_encoder = "cpu".'
        )
    return factory(output)


def depth_units(depth: np.ndarray, scale: float) -> np.ndarray:
    """Depth as uint16 ``round(depth * scale)``; 0 stays 0 (no surface), beyond 65535 is an error."""
    units = np.rint(depth.astype(np.float64) * scale)
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


def file_array(name: str, array: np.ndarray, output: OutputSpec) -> np.ndarray:
    """A pass as rendered (float32 depth and normals, uint32 ids) -> the array its file holds.

    Depth stays float32 (``png16`` scales it when encoding); ids become uint16;
    normals become 8 bit for ``png``. The GPU packer (:mod:`glrec.dataset.gpu_pack`)
    makes these same arrays on the GPU.
    """
    if name == "depth":
        return array.astype(np.float32, copy=False)
    if name in ("instance", "semantic"):
        return ids16(array, name)
    if name == "normal":
        return normal8(array) if output.normal == "png" else array.astype(np.float32, copy=False)
    raise ConfigError(f"Unknown pass {name!r}.")


def encode_pass(name: str, array: np.ndarray, output: OutputSpec, *, packed: bool = False) -> tuple[str, bytes]:
    """File name (``depth.npy``, ``instance.png``, ...) and bytes of one ground-truth pass of one image.

    ``array`` is the pass as rendered, or with ``packed`` already its file's array (:func:`file_array`).
    """
    arr = array if packed else file_array(name, array, output)
    if name == "depth":
        if output.depth == "npy":
            return "depth.npy", npy_bytes(arr)
        return "depth.png", encode_png(depth_units(arr, output.depth_scale), output.png_compression)
    if name in ("instance", "semantic"):
        return f"{name}.png", encode_png(arr, output.png_compression)
    if name == "normal":
        if output.normal == "npy":
            return "normal.npy", npy_bytes(arr)
        return "normal.png", encode_png(arr, output.png_compression)
    raise ConfigError(f"Unknown pass {name!r}.")


def encode_clip_pass(
    name: str, frames: list[np.ndarray], output: OutputSpec, *, packed: bool = False
) -> tuple[str, bytes]:
    """One ``.npy`` stack (frames first) of a pass over a clip, in the pass's image encoding's dtype."""
    arr = np.stack(frames if packed else [file_array(name, f, output) for f in frames])
    if name == "depth":
        return "depth.npy", npy_bytes(arr if output.depth == "npy" else depth_units(arr, output.depth_scale))
    if name in ("instance", "semantic", "normal"):
        return f"{name}.npy", npy_bytes(arr)
    raise ConfigError(f"Unknown pass {name!r}.")
