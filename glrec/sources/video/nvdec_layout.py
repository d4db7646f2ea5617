"""Where the planes of a PyNvVideoCodec picture are, and whether NVDEC takes a stream: arithmetic, no GPU.

PyNvVideoCodec hands a decoded picture out as ``__cuda_array_interface__``
views, one per plane, tightly packed (luma rows ``width`` samples apart, the
chroma plane right after the luma plane). Two things in those views differ
from what the interface promises, and glrec has to allow for both:

- the ``strides`` count samples, not bytes: a P016 (10/16-bit) luma view of
  width ``w`` says ``w`` while its rows are ``2 * w`` bytes apart;
- the chroma view's shape halves the luma size rounding down, while the
  decoder writes ``ceil(h / 2)`` chroma rows for an odd height.

So the copy geometry comes from the luma view's size and the plane format's
subsampling, and a stride too small for a row of samples is read as samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import UnsupportedInputError
from .formats import Texture


@dataclass(frozen=True)
class PlaneCopy:
    """One plane of a decoded picture: where it starts and how to copy its rows (a ``cuMemcpy2D``)."""

    src: int  # device pointer of the first row
    pitch: int  # bytes from one source row to the next
    texels: int  # texels per row (a texel holds ``comps`` samples)
    rows: int
    row_bytes: int  # bytes of picture per row, the copy's width


def _itemsize(cai: dict[str, Any]) -> int:
    typestr = str(cai.get("typestr", "|u1"))
    return int(typestr[2:]) if typestr[2:].isdigit() else 1


def _pitch(cai: dict[str, Any], row_bytes: int) -> int:
    strides = cai.get("strides")
    if not strides:
        return row_bytes  # C-contiguous by the interface's rules
    stride = int(strides[0])
    if stride >= row_bytes:
        return stride  # bytes, as the interface defines them
    if stride * _itemsize(cai) >= row_bytes:
        return stride * _itemsize(cai)  # samples (PyNvVideoCodec's views of 16-bit surfaces)
    raise UnsupportedInputError(
        f"NVDEC returned a plane whose rows ({stride} apart) are shorter than its {row_bytes} bytes of picture; "
        "use decoder='cpu' and please report this input."
    )


def plane_copies(cais: list[dict[str, Any]], textures: tuple[Texture, ...], size: tuple[int, int]) -> list[PlaneCopy]:
    """The copy of each of ``textures`` (a :class:`~glrec.sources.video.formats.PlaneFormat`'s) from a decoded frame.

    ``cais`` are the ``__cuda_array_interface__`` dicts of the frame's views: one per texture, or one over
    all planes stacked (then ``size``, the picture's width and height, gives the luma size).
    """
    if not cais:
        raise UnsupportedInputError("NVDEC returned a picture without planes; use decoder='cpu'.")
    if len(cais) == len(textures):
        shape = [int(v) for v in cais[0]["shape"]]
        width, height = shape[1] * (shape[2] if len(shape) > 2 else 1) // textures[0][0], shape[0]
    elif len(cais) == 1:
        width, height = size
    else:
        raise UnsupportedInputError(
            f"NVDEC returned {len(cais)} planes for a format of {len(textures)}; use decoder='cpu'."
        )
    out: list[PlaneCopy] = []
    for i, (comps, nbytes, sx, sy) in enumerate(textures):
        texels, rows = -(-width // sx), -(-height // sy)
        row_bytes = texels * comps * nbytes
        if len(cais) == 1:  # the planes follow one another in the one view, rows equally far apart
            pitch = _pitch(cais[0], width * textures[0][0] * textures[0][1])
            src = int(cais[0]["data"][0]) if not out else out[-1].src + out[-1].pitch * out[-1].rows
        else:
            pitch = _pitch(cais[i], row_bytes)
            src = int(cais[i]["data"][0])
        out.append(PlaneCopy(src, pitch, texels, rows, row_bytes))
    return out


def caps_problem(caps: Any, what: str, size: tuple[int, int]) -> str | None:
    """Why NVDEC's capability answer ``caps`` (PyNvVideoCodec's ``GetDecoderCaps`` dict) rules out ``what``
    at ``size``; None when it does not."""
    if not isinstance(caps, dict):
        return None  # not the dict of PyNvVideoCodec 2.x: advice we cannot read, the decoder decides
    supported = caps.get("supported", 1 if caps.get("width_max") else 0)
    if not supported or not caps.get("width_max"):
        engines = caps.get("num_decoder_engines")
        return (
            f"This GPU's NVDEC does not decode {what} (the driver's capability query says unsupported"
            f"{f', {engines} NVDEC engines' if engines is not None else ''})"
        )
    w, h = size
    top, bottom = (caps["width_max"], caps.get("height_max", h)), (caps.get("width_min", 0), caps.get("height_min", 0))
    if w > top[0] or h > top[1]:
        return f"{w}x{h} is larger than this GPU's NVDEC takes for {what} ({top[0]}x{top[1]})"
    if w < bottom[0] or h < bottom[1]:
        return f"{w}x{h} is smaller than this GPU's NVDEC takes for {what} ({bottom[0]}x{bottom[1]})"
    return None


__all__ = ["PlaneCopy", "caps_problem", "plane_copies"]
