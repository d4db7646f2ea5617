"""Each encoder is one room and one row (issue 31): the pipeline names none, the rows say what the plan needs.

Pure Python (the sources read as text, the rows as data, a stand-in CUDA device),
and, for the batch interface and ``glrec info``, GL on Mesa with PyAV decoding.
"""

from __future__ import annotations

import ast
from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr

import glrec
from glrec.encoders import registry
from glrec.encoders.nvenc import probe as nvenc_probe
from glrec.encoders.nvjpeg import row as nvjpeg_row
from glrec.frame import EncodedFrame, HostFrame
from glrec.options import PipelineOptions, VideoOptions
from glrec.pipeline import plan as select
from glrec.sinks.registry import output_kind

GLREC = Path(glrec.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, type-only ones too, as absolute names (``from . import x``: ``pkg.x``)."""
    package = ".".join(path.relative_to(GLREC.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            out.add(module)
            out |= {f"{module}.{a.name}" for a in node.names}
    return out


def _rooms() -> set[str]:
    """The encoders' rooms: the package of each row's encoder (``glrec.encoders.cpu``, ...)."""
    return {".".join(row.encoder.partition(":")[0].split(".")[:3]) for row in registry.ENCODERS.values()}


def test_the_pipeline_imports_no_encoder_module():
    rooms = _rooms()
    assert {"glrec.encoders.cpu", "glrec.encoders.nvenc", "glrec.encoders.nvjpeg", "glrec.encoders.gl_jpeg"} <= rooms
    files = sorted((GLREC / "pipeline").glob("*.py"))
    assert files
    for path in files:
        named = {m for m in _imports(path) if any(m == r or m.startswith(r + ".") for r in rooms)}
        assert not named, f"{path.name} imports {sorted(named)}: the row hands the pipeline what it needs"


def test_every_row_lives_in_its_encoders_room():
    for spec in registry.ROWS:
        module, _, _ = spec.partition(":")
        row = registry._load(spec)
        room = module.rsplit(".", 1)[0]
        assert module == f"{room}.row" and row.encoder.startswith(room + "."), (spec, row.encoder)
        # its option table is its room's own, or one the encoders share (glrec/encoders/*.py)
        owner = row.options.__module__
        assert owner.startswith(room + ".") or owner.count(".") == 2, (row.name, owner)


def test_rows_state_their_batch_and_the_context_their_encode_runs_in():
    rows = registry.ENCODERS
    contexts = {"cpu": "host", "nvenc": "cuda", "nvjpeg": "cuda", "gl": "gl"}
    assert {name: rows[name].context for name in contexts} == contexts
    assert rows["nvjpeg"].batch > 1  # nvImageCodec takes a list of frames in one call
    assert rows["nvjpeg"].turn_batch == 1  # ... yet a recording's turns are fastest one frame a call (measured)
    assert all(rows[name].batch == 1 for name in ("cpu", "nvenc", "gl"))
    # what the pipeline builds for each comes from the row: host readers name their input, GL readers their slots
    facts = VideoOptions.create((64, 48), 30, codec="mjpeg").facts
    assert rows["cpu"].input_format is not None and rows["cpu"].input_format(facts) == "yuvj420p"
    assert rows["gl"].gl_slots is not None and all(rows[n].gl_slots is None for n in ("cpu", "nvenc", "nvjpeg"))
    assert rows["nvjpeg"].convert(facts) == "rgb24"


@pytest.fixture
def gpu_without_nvenc(monkeypatch):
    class _Device:
        ordinal = 0

        def release(self):
            pass

    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (_Device(), None))
    monkeypatch.setattr(nvenc_probe, "nvenc_problem", lambda c, d: "NV_ENC_ERR_UNSUPPORTED_DEVICE (2)")
    monkeypatch.setattr(nvjpeg_row, "nvjpeg_problem", lambda: None)


def _plan(**kwargs):
    video = VideoOptions.create((64, 64), 30, **kwargs)
    return select.make_plan(video, PipelineOptions(), output_kind("out.mkv", video.codec))


@pytest.mark.parametrize("option", [{"crf": 20}, {"preset": "fast"}, {"gop": 30}, {"bframes": 0}])
def test_a_jpeg_encoder_refuses_the_video_rate_options_in_their_tables_words(gpu_without_nvenc, option):
    """The registry refuses another table's option for any encoder; nvJPEG once took these silently."""
    (name,) = option
    for encoder in ("nvjpeg", "gl"):
        with pytest.raises(glrec.ConfigError, match=f"settings of the video encoders .*does not take; drop {name}"):
            _plan(encoder=encoder, codec="mjpeg", **option)
    # under auto the CPU's mjpeg encoder refuses them too: it took them and did nothing (every JPEG a keyframe
    # sized by quality), so no encoder records them, and the error says what to drop
    with pytest.raises(glrec.ConfigError, match=f"drop {name}"):
        _plan(codec="mjpeg", **option)


def _cpu_frames(n: int, size: tuple[int, int]) -> list[HostFrame]:
    """Smooth moving pictures (a ramp that shifts each frame): an encoder's choices change them little, where
    libx264's other choices for noise (it makes them now and then, see below) changed whole pictures."""
    w, h = size
    y, x = np.mgrid[: h * 3 // 2, :w]
    return [HostFrame(i, "yuv420p", w, h, (40 + x + y + 3 * i).astype(np.uint8)) for i in range(n)]


def _decoded(packets, codec: str) -> list[np.ndarray]:
    cc = av.CodecContext.create(codec, "r")
    out = []
    for p in packets:
        out += [f.to_ndarray(format="gray") for f in cc.decode(av.Packet(p.data))]
    return out + [f.to_ndarray(format="gray") for f in cc.decode(None)]


@pytest.mark.parametrize("codec", ["mjpeg", "h264"])
def test_encode_batch_gives_the_packets_of_encode_frame_by_frame(codec):
    """Batches cut anywhere give encode's packets: the same bytes where the encoder is deterministic (FFmpeg's
    MJPEG); for libx264 the same timestamps, picture types and pictures (libx264 on one thread has been seen
    to write other bytes for the same frames on the development machine: 2a72b13)."""
    video = VideoOptions.create((64, 48), 30, threads=1, codec=codec)
    asked = video.request("cpu")
    row = registry.ENCODERS["cpu"]
    one, batched = row.open(asked), row.open(asked)
    frames = _cpu_frames(6, (64, 48))
    each = [p for f in frames for p in one.encode(f)] + one.flush()
    together = batched.encode_batch(frames[:4]) + batched.encode_batch(frames[4:]) + batched.flush()
    one.close()
    batched.close()
    assert [(p.pts, p.dts, p.keyframe) for p in together] == [(p.pts, p.dts, p.keyframe) for p in each]
    assert sorted(p.pts for p in each) == list(range(6))
    if codec == "mjpeg":
        assert [p.data for p in together] == [p.data for p in each]
    else:
        a, b = _decoded(each, codec), _decoded(together, codec)
        assert len(a) == len(b) == 6
        assert all(psnr(x, y) > 40 for x, y in zip(a, b, strict=True))


def test_the_gl_encoders_batch_wraps_each_jpeg_in_frame_order():
    encoder = registry.ENCODERS["gl"].open(VideoOptions.create((16, 16), 30, codec="mjpeg").request("gl"))
    frames = [EncodedFrame(i, "mjpeg", 16, 16, bytes([0xFF, 0xD8, i])) for i in range(3)]
    packets = encoder.encode_batch(frames)
    assert [(p.pts, p.keyframe, p.data) for p in packets] == [(f.index, True, f.data) for f in frames]
    with pytest.raises(glrec.EncoderError, match="JPEGs of its own GL stage"):
        encoder.encode(_cpu_frames(1, (16, 16))[0])


def test_info_lists_every_encoder_of_the_registry(gl):
    from glrec.diagnostics import info_lines

    lines = [line.strip() for line in info_lines()]
    for name in registry.ENCODERS:
        assert any(line.startswith(f"{name}:") or line.startswith(f"{name} ") for line in lines), (name, lines)


def test_the_gl_encoder_records_through_its_own_slots(gl, tmp_path):
    out = tmp_path / "gl.mkv"
    result = glrec.record("bars", out, size=(64, 48), fps=30, frames=4, encoder="gl", codec="mjpeg")
    assert result.encoder == "gl (GL-compute JPEG)" and result.frames == 4
    with av.open(str(out)) as c:
        times = [float(f.time) for f in c.decode(video=0)]
    assert times == pytest.approx([i / 30 for i in range(4)], abs=1e-3)


@pytest.mark.parametrize("option", [{"crf": 20}, {"qp": 3}, {"bitrate": "2M"}, {"gop": 5}, {"bframes": 0}])
@pytest.mark.parametrize("codec", ["mjpeg", "gif"])
def test_the_cpu_picture_encoders_refuse_what_they_would_ignore(tmp_path, option, codec):
    """FFmpeg's mjpeg and gif take crf, qp, bitrate, gop and bframes and write the same pictures: refused, nothing
    written."""
    (name,) = option
    out = tmp_path / ("m.mkv" if codec == "mjpeg" else "m.gif")
    with pytest.raises(glrec.ConfigError, match=f"{codec}\\) has no rate control.*drop {name}"):
        glrec.record("plasma", out, size=(64, 48), frames=2, codec=codec, encoder="cpu", **option)
    assert not out.exists()
