"""NVDEC picture geometry and capability checks, without a GPU.

The views are laid out as PyNvVideoCodec 2.2 builds them for its decoded
frames (``GetCAIMemoryViewAndDLPack``): planes packed back to back, strides
counted in samples. The copies must cover exactly the bytes the decoder wrote.
"""

from __future__ import annotations

import pytest

import glrec
from glrec.sources.video.formats import FORMATS
from glrec.sources.video.nvdec import _nv_format
from glrec.sources.video.nvdec_layout import caps_problem, plane_copies

BASE = 0x7F00_0000_0000


def _view(shape, strides, typestr, data):
    return {"shape": shape, "strides": strides, "typestr": typestr, "data": (data, False), "version": 3}


def nv_views(fmt: str, w: int, h: int) -> list[dict]:
    """PyNvVideoCodec's views of a decoded NV12 or P016 picture of ``w`` x ``h``."""
    if fmt == "NV12":
        return [_view((h, w, 1), (w, 1, 1), "|u1", BASE),
                _view((h // 2, w // 2, 2), (w // 2 * 2, 2, 1), "|u1", BASE + w * h)]  # fmt: skip
    return [_view((h, w, 1), (w, 1, 1), "|u2", BASE),
            _view((h // 2, w // 2, 2), (w // 2 * 2, 2, 1), "|u2", BASE + 2 * w * h)]  # fmt: skip


def test_nv12_planes_are_copied_as_the_decoder_packed_them():
    luma, chroma = plane_copies(nv_views("NV12", 320, 180), FORMATS["nv12"].textures, (320, 180))
    assert (luma.src, luma.pitch, luma.texels, luma.rows, luma.row_bytes) == (BASE, 320, 320, 180, 320)
    assert (chroma.src, chroma.pitch, chroma.texels, chroma.rows, chroma.row_bytes) == (
        BASE + 320 * 180, 320, 160, 90, 320)  # fmt: skip


def test_p016_strides_in_samples_become_byte_pitches():
    # The view says 256 (samples) for rows 512 bytes apart; a 512-byte copy with a 256-byte source
    # pitch is what cuMemcpy2D refused with CUDA_ERROR_INVALID_VALUE.
    fmt = _nv_format("P016", 10)
    luma, chroma = plane_copies(nv_views("P016", 256, 144), fmt.textures, (256, 144))
    assert (luma.pitch, luma.row_bytes, luma.texels, luma.rows) == (512, 512, 256, 144)
    assert (chroma.src, chroma.pitch, chroma.row_bytes, chroma.texels, chroma.rows) == (
        BASE + 2 * 256 * 144, 512, 512, 128, 72)  # fmt: skip
    for plane in (luma, chroma):
        assert plane.pitch >= plane.row_bytes


def test_true_byte_strides_are_taken_as_they_are():
    views = [_view((144, 256, 1), (1024, 2, 2), "|u2", BASE),
             _view((72, 128, 2), (1024, 4, 2), "|u2", BASE + 1024 * 144)]  # fmt: skip
    luma, chroma = plane_copies(views, _nv_format("P016", 10).textures, (256, 144))
    assert (luma.pitch, luma.row_bytes, chroma.pitch, chroma.row_bytes) == (1024, 512, 1024, 512)


def test_an_odd_height_copies_every_chroma_row():
    # The chroma view's shape rounds 181 / 2 down; the decoder writes ceil(181 / 2) = 91 rows.
    _, chroma = plane_copies(nv_views("NV12", 320, 181), FORMATS["nv12"].textures, (320, 181))
    assert chroma.rows == 91


def test_one_view_over_stacked_planes_is_split_at_each_plane_end():
    view = _view((270, 320), (320, 1), "|u1", BASE)  # NV12 as one 1.5-height array
    luma, chroma = plane_copies([view], FORMATS["nv12"].textures, (320, 180))
    assert (luma.src, luma.rows, chroma.src, chroma.rows, chroma.pitch) == (BASE, 180, BASE + 320 * 180, 90, 320)


def test_rows_shorter_than_the_picture_are_refused():
    views = [_view((144, 256, 1), (100, 1, 1), "|u2", BASE), _view((72, 128, 2), (100, 2, 1), "|u2", BASE)]
    with pytest.raises(glrec.UnsupportedInputError, match="shorter than its 512 bytes"):
        plane_copies(views, _nv_format("P016", 10).textures, (256, 144))


def test_caps_answers():
    caps = {"codec_id": 11, "chromaformat_id": 1, "bitdepth": 8, "supported": 1, "num_decoder_engines": 7,
            "width_max": 8192, "height_max": 8192, "mb_num_max": 262144,
            "width_min": 128, "height_min": 128}  # fmt: skip
    assert caps_problem(caps, "av1 420 at 8 bits", (256, 144)) is None
    no = caps_problem({**caps, "supported": 0, "width_max": 0, "height_max": 0}, "av1 420 at 8 bits", (256, 144))
    assert no is not None and "does not decode av1 420 at 8 bits" in no and "7 NVDEC engines" in no
    assert "larger" in caps_problem(caps, "h264", (9000, 144))
    assert "smaller" in caps_problem(caps, "h264", (64, 144))
    assert caps_problem(object(), "h264", (64, 64)) is None  # an answer of another shape is only advice
