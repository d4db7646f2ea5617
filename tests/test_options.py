"""Option validation (pure Python: no GL)."""

from fractions import Fraction

import pytest

import glrec
from glrec.colour import ColourSpec
from glrec.options import VideoOptions, parse_size
from glrec.sinks.paths import check_output_path
from glrec.sinks.registry import output_kind
from glrec.timebase import frame_rate


def test_defaults():
    o = VideoOptions.create()
    assert o.size == (1280, 720) and o.fps == 30 and o.codec == "h264" and o.pix_fmt == "yuv420p"
    assert o.colour == ColourSpec("bt709", "limited")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"codec": "h265"}, ["Unknown codec 'h265'", "av1, gif, h264, hevc, mjpeg, png, vp9"]),
        ({"encoder": "gpu"}, ["Unknown encoder 'gpu'", "auto, cpu, gl, nvenc, nvjpeg, png"]),
        ({"pix_fmt": "rgb48"}, ["Unknown pixel format", "nv12, rgb24, rgba, yuv420p, yuv444p"]),
        ({"pix_fmt": "rgb24"}, ["pix_fmt rgb24 is PNG's", "h264 takes yuv420p"]),
        ({"size": (0, 720)}, ["must be positive"]),
        ({"size": (-2, 720)}, ["must be positive"]),
        ({"size": "12x"}, ["not WIDTHxHEIGHT"]),
        ({"fps": 0}, ["fps 0.0 must be above 0"]),
        ({"fps": -5}, ["must be above 0"]),
        ({"fps": "fast"}, ["not a number"]),
        ({"size": (641, 480)}, ["641x480 has an odd dimension", "--pad", "642x480", "yuv444p"]),
        ({"crf": 18, "qp": 0}, ["at most one of crf, qp and bitrate"]),
        ({"crf": 99}, ["crf 99 is outside"]),
        ({"gop": 0}, ["gop 0 must be at least 1"]),
        ({"codec": "av1", "pix_fmt": "yuv444p"}, ["SVT-AV1", "yuv420p only"]),
        ({"codec": "mjpeg", "colour_range": "limited"}, ["full range"]),
        ({"matrix": "bt2020"}, ["Unknown colour matrix 'bt2020'"]),
    ],
)
def test_bad_options_name_value_and_fix(kwargs, words):
    with pytest.raises(glrec.ConfigError) as info:
        VideoOptions.create(**kwargs)
    for w in words:
        assert w in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, glrec.GlrecError)


def test_odd_size_with_pad_encodes_even():
    o = VideoOptions.create((641, 481), pad=True)
    assert o.size == (641, 481) and o.encoded_size == (642, 482) and o.odd_size == "pad"
    assert VideoOptions.create((641, 481), pix_fmt="yuv444p").encoded_size == (641, 481)


def test_parse_size():
    assert parse_size("1920x1080") == (1920, 1080)
    assert parse_size((64, 48)) == (64, 48)


@pytest.mark.parametrize(
    "fps, rate",
    [(30, Fraction(30)), (29.97, Fraction(30000, 1001)), (59.94, Fraction(60000, 1001)), (24, Fraction(24))],
)
def test_frame_rate_is_exact(fps, rate):
    assert frame_rate(fps) == rate


def test_output_kind_and_codec_mismatch():
    assert output_kind("a.MP4", "h264").name == "mp4"
    with pytest.raises(glrec.ConfigError, match=r"\.mp4 file cannot carry av1.*\.ivf"):
        output_kind("a.mp4", "av1")
    with pytest.raises(glrec.ConfigError, match="Unknown output type '.flv'"):
        output_kind("a.flv", "h264")
    with pytest.raises(glrec.ConfigError, match=r"\.webm file cannot carry h264.*use codec vp9"):
        output_kind("a.webm", "h264")


def test_output_path_checks(tmp_path):
    with pytest.raises(glrec.OutputError, match="does not exist; create it first"):
        check_output_path(tmp_path / "missing" / "a.mp4", overwrite=False)
    existing = tmp_path / "a.mp4"
    existing.write_bytes(b"keep me")
    with pytest.raises(glrec.OutputExistsError, match="--overwrite") as info:
        check_output_path(existing, overwrite=False)
    assert isinstance(info.value, FileExistsError)
    assert existing.read_bytes() == b"keep me"
    assert check_output_path(existing, overwrite=True) == existing


def test_colour_reference_values():
    # White and black map to the ends of limited range; grey has neutral chroma.
    yuv = ColourSpec().to_yuv([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]])
    assert yuv[0] == pytest.approx([235, 128, 128])
    assert yuv[1] == pytest.approx([16, 128, 128])
    assert yuv[2][1:] == pytest.approx([128, 128])
    assert ColourSpec(range="full").to_yuv([1.0, 1.0, 1.0]) == pytest.approx([255, 128, 128])
    # BT.709 red: Y = 16 + 219 * 0.2126
    assert ColourSpec().to_yuv([1.0, 0, 0])[0] == pytest.approx(16 + 219 * 0.2126)
