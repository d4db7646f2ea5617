"""NVENC pieces that need no driver: colour tags in the bitstream, the rgba colour measurement, loading, doctor.

The colour-tag writer is checked on real H.264 / HEVC / AV1 bitstreams from the
CPU encoders (which glrec asks for no colour tags here), read back by ffprobe.
"""

from __future__ import annotations

import argparse
import importlib.abc
import json
import shutil
import subprocess
import sys
import types
from fractions import Fraction

import av
import numpy as np
import pytest

import glrec
from glrec.colour import ColourSpec
from glrec.encoders.nvenc.colour import CANDIDATES, rank_conversions
from glrec.encoders.nvenc.probe import load_pynvvideocodec
from glrec.encoders.nvenc.vui import VuiWriter
from glrec.frame import Packet

ENCODERS = {"h264": ("libx264", {}), "hevc": ("libx265", {"x265-params": "log-level=none"}),
            "av1": ("libsvtav1", {"svtav1-params": "lp=1"})}  # fmt: skip


def _untagged_packets(codec: str, n: int = 4) -> list[Packet]:
    name, opts = ENCODERS[codec]
    cc = av.CodecContext.create(name, "w")
    cc.width, cc.height, cc.pix_fmt, cc.time_base, cc.options = 64, 64, "yuv420p", Fraction(1, 30), opts
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        frame = av.VideoFrame.from_ndarray(rng.integers(16, 235, (96, 64), dtype=np.uint8), format="yuv420p")
        frame.pts = i
        out += cc.encode(frame)
    out += cc.encode(None)
    return [Packet(bytes(p), i, i, bool(p.is_keyframe)) for i, p in enumerate(out)]


def _probe(path, codec: str) -> dict:
    fmt = ["-f", "obu"] if codec == "av1" else []
    done = subprocess.run(["ffprobe", "-v", "error", *fmt, "-show_entries",
                           "stream=color_range,color_space,color_primaries,color_transfer", "-of", "json", str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout)["streams"][0]


def _luma(path, codec: str) -> list[np.ndarray]:
    with av.open(str(path), format="obu" if codec == "av1" else None) as c:
        return [f.to_ndarray()[:64] for f in c.decode(video=0)]


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffprobe (apt-get install ffmpeg)")
@pytest.mark.parametrize("codec", ["h264", "hevc", "av1"])
@pytest.mark.parametrize("colour, expect", [
    (ColourSpec("bt709", "limited"), {"color_range": "tv", "color_space": "bt709", "color_primaries": "bt709",
                                      "color_transfer": "bt709"}),
    (ColourSpec("bt601", "limited"), {"color_range": "tv", "color_space": "bt470bg", "color_primaries": "bt470bg",
                                      "color_transfer": "smpte170m"}),
    (ColourSpec("bt709", "full"), {"color_range": "pc", "color_space": "bt709"}),
])  # fmt: skip
def test_vui_writer_tags_real_bitstreams_and_leaves_pictures_alone(tmp_path, codec, colour, expect):
    packets = _untagged_packets(codec)
    before, after = tmp_path / f"before.{codec}", tmp_path / f"after.{codec}"
    before.write_bytes(b"".join(p.data for p in packets))
    tagged = VuiWriter(codec, colour).write(packets)
    after.write_bytes(b"".join(p.data for p in tagged))
    assert _probe(before, codec).get("color_space", "unknown") == "unknown"  # the CPU encoders wrote none here
    got = _probe(after, codec)
    assert {k: got.get(k) for k in expect} == expect
    assert [(p.pts, p.keyframe) for p in tagged] == [(p.pts, p.keyframe) for p in packets]
    a, b = _luma(before, codec), _luma(after, codec)
    assert len(a) == len(b) == 4 and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_vui_writer_refuses_what_it_cannot_parse():
    with pytest.raises(glrec.EncoderError, match="Writing colour tags"):
        VuiWriter("h264", ColourSpec()).write([Packet(b"\x00\x00\x00\x01\x67\xff\xff", 0, 0, True)])


@pytest.mark.parametrize("truth", CANDIDATES)
def test_rgb_conversion_measurement_finds_the_conversion_used(truth):
    """Decoded planes made with ``truth`` (4:2:0, plus coding noise) are attributed to ``truth``."""
    rng = np.random.default_rng(7)
    bars = np.repeat(np.repeat(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), 20, axis=0), 20, axis=1)
    frames = [np.roll(bars, 7 * i, axis=1) for i in range(3)]
    decoded = []
    for rgb in frames:
        yuv = truth.to_yuv(rgb / 255.0)
        planes = [yuv[..., 0]] + [yuv[..., c].reshape(60, 2, 80, 2).mean(axis=(1, 3)) for c in (1, 2)]
        decoded.append([np.clip(np.round(p + rng.normal(0, 1.0, p.shape)), 0, 255).astype(np.uint8) for p in planes])
    ranking = rank_conversions(decoded, frames)
    assert ranking[0][0] == truth
    assert ranking[0][1] > ranking[1][1] + 6, ranking  # well apart: the tag rests on a clear answer


class _Refuse(importlib.abc.MetaPathFinder):
    """Import of PyNvVideoCodec fails as it does without libnvidia-encode.so.1: RuntimeError, not ImportError."""

    def find_spec(self, name, path, target=None):
        if name == "PyNvVideoCodec":
            raise RuntimeError("libnvidia-encode.so.1: cannot open shared object file: No such file or directory\n"
                               "\n=== TROUBLESHOOTING STEPS ===\n...")  # fmt: skip
        return None


def test_a_pynvvideocodec_that_cannot_load_is_unavailable_not_a_crash(monkeypatch):
    monkeypatch.delitem(sys.modules, "PyNvVideoCodec", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Refuse(), *sys.meta_path])
    with pytest.raises(glrec.EncoderUnavailableError, match="PyNvVideoCodec cannot load: libnvidia-encode.so.1") as e:
        load_pynvvideocodec()
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video" in str(e.value) and "\n" not in str(e.value)


def test_an_old_pynvvideocodec_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", types.SimpleNamespace(__version__="2.0.3"))
    with pytest.raises(glrec.EncoderUnavailableError, match="2.0.3 is older than 2.1"):
        load_pynvvideocodec()


def test_doctor_fails_a_required_check_that_did_not_run(monkeypatch, capsys):
    from glrec.cli import doctor
    from glrec.diagnostics import Check

    monkeypatch.setattr(doctor, "run_doctor", lambda workdir: [Check("CPU encode", "ok", "fine")])
    assert doctor._cmd_doctor(argparse.Namespace(require=["nvenc"])) == 1
    assert "nvenc" in capsys.readouterr().out.lower()


def _clip_made_with(spec: ColourSpec, path, frames: list[np.ndarray]) -> int:
    """A lossless x264 stream of ``frames`` converted to 4:2:0 with ``spec``, as NVENC would return one; packets."""
    h, w = frames[0].shape[:2]
    cc = av.CodecContext.create("libx264", "w")
    cc.width, cc.height, cc.pix_fmt, cc.time_base, cc.options = w, h, "yuv420p", Fraction(1, 30), {"qp": "0"}
    out = []
    for i, rgb in enumerate(frames):
        yuv = spec.to_yuv(rgb / 255.0)
        planes = [yuv[..., 0]] + [yuv[..., c].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3)) for c in (1, 2)]
        flat = np.concatenate([np.clip(np.floor(p + 0.5), 0, 255).astype(np.uint8).reshape(-1) for p in planes])
        frame = av.VideoFrame.from_ndarray(flat.reshape(h * 3 // 2, w), format="yuv420p")
        frame.pts = i
        out += cc.encode(frame)
    out += cc.encode(None)
    path.write_bytes(b"".join(bytes(p) for p in out))
    return len(out)


@pytest.mark.parametrize("truth", [ColourSpec("bt601", "limited"), ColourSpec("bt709", "full")])
def test_doctors_rgba_verdict_names_the_conversion_and_checks_glrecs_tag(tmp_path, truth):
    from glrec.diagnostics.nvenc_rgb import verdict

    rng = np.random.default_rng(5)
    bars = np.repeat(np.repeat(rng.integers(0, 256, (3, 4, 3), dtype=np.uint8), 16, axis=0), 16, axis=1)
    frames = [np.roll(bars, 8 * i, axis=1) for i in range(3)]
    packets = _clip_made_with(truth, tmp_path / "c.h264", frames)
    status, detail = verdict(tmp_path / "c.h264", frames, packets)
    assert detail.startswith(f"NVENC converted rgba input as {truth.matrix} {truth.range} "), detail
    assert status == ("ok" if truth == ColourSpec("bt601", "limited") else "FAIL"), detail  # glrec's tag is 601
    short, _ = verdict(tmp_path / "c.h264", frames + frames[:1], packets)
    (tmp_path / "empty.h264").write_bytes(b"")
    empty = verdict(tmp_path / "empty.h264", frames, 0)
    assert short == "FAIL" and empty[0] == "FAIL" and "nothing to measure" in empty[1], empty
