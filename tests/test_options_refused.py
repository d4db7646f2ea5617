"""Values an option cannot mean are refused in one line, before anything is written (issue 30, items 4 and 7).

A boolean option takes True or False only (``overwrite="False"``, a string from a
config file, replaced the file it was meant to keep); a number an option holds is
finite; ``gop`` fits the encoders' C int; ``sink`` and ``sink_options`` are what
they say. Each refusal leaves an existing output byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import av
import numpy as np
import pytest

import glrec
from glrec.cli import main
from glrec.options import (
    MAX_GOP,
    InputOptions,
    LengthOptions,
    OutputOptions,
    PipelineOptions,
    VideoOptions,
    declared,
)

TABLES = (VideoOptions, PipelineOptions, LengthOptions, InputOptions, OutputOptions)
FRAMES = [np.full((48, 64, 3), v, np.uint8) for v in (0, 128, 255)]


@pytest.fixture
def old(tmp_path: Path) -> tuple[Path, str]:
    """An existing recording and the hash of its bytes."""
    path = tmp_path / "old.mp4"
    glrec.write_video(path, FRAMES, fps=10, encoder="cpu")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _unchanged(old: tuple[Path, str]) -> None:
    path, digest = old
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no staged file left beside it
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == len(FRAMES)


# -- booleans ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["False", "false", "0", 0, 1, "no", np.bool_(False)])
def test_overwrite_that_is_not_a_boolean_is_refused_and_the_old_file_stays(gl, old, value):
    path, _ = old
    with pytest.raises(glrec.ConfigError, match=r"^overwrite .* must be True or False\.$"):
        glrec.Recorder(path, size=(64, 48), overwrite=value)
    with pytest.raises(glrec.ConfigError, match="overwrite"):
        glrec.write_video(path, FRAMES, fps=10, overwrite=value)
    with pytest.raises(glrec.ConfigError, match="overwrite"):
        glrec.record("bars", path, size=(64, 48), frames=3, overwrite=value)
    _unchanged(old)


def test_transcode_refuses_overwrite_that_is_not_a_boolean(gl, old, tmp_path):
    from glrec import transcode

    path, _ = old
    src = tmp_path / "in.mkv"
    glrec.write_video(src, FRAMES, fps=10, encoder="cpu")
    with pytest.raises(glrec.ConfigError, match="overwrite 'False' must be True or False"):
        transcode(src, path, overwrite="False")
    src.unlink()
    _unchanged(old)


def test_every_boolean_option_takes_only_true_or_false():
    booleans = [(t, f.name) for t in TABLES for f, spec in declared(t) if spec.boolean or isinstance(f.default, bool)]
    assert {"overwrite", "pad", "live", "loop", "trust_export", "drop_audio"} <= {name for _, name in booleans}
    for table, name in booleans:
        for value in ("False", "True", 0, 1, 1.0, [], "yes"):
            with pytest.raises(glrec.ConfigError, match=f"^{name} .* must be True or False"):
                table.parse({name: value})
        assert getattr(table.parse({name: True}), name) is True


# -- numbers ----------------------------------------------------------------------------------------


def _numeric(table, name, spec) -> bool:
    try:
        parsed = spec.parse(1)
    except (glrec.ConfigError, TypeError, ValueError):
        return False
    return isinstance(parsed, (int, float)) and not isinstance(parsed, bool)


def test_every_number_option_refuses_inf_and_nan():
    numbers = [(t, f.name) for t in TABLES for f, spec in declared(t) if _numeric(t, f.name, spec)]
    assert {"fps", "crf", "gop", "seconds", "input_timeout", "cuda_device"} <= {name for _, name in numbers}
    for table, name in numbers:
        for value in (math.inf, -math.inf, math.nan, np.float64("nan"), "inf", "nan", "-inf"):
            with pytest.raises(glrec.ConfigError, match=name.replace("_", ".")) as info:
                table.parse({name: value})
            assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "flag, value, words",
    [
        ("--crf", "nan", "crf 'nan' is not a number"),
        ("--input-timeout", "inf", "input_timeout 'inf' must be finite"),
        ("--gop", "inf", "gop 'inf' must be finite"),
        ("--seconds", "-inf", "seconds '-inf' must be finite"),
    ],
)
def test_cli_refuses_a_number_that_is_not_finite_and_keeps_the_old_file(gl, old, capsys, flag, value, words):
    path, _ = old
    assert main(["record", "bars", "-y", "-o", str(path), "--size", "64x48", f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    _unchanged(old)


# -- gop: a C int -----------------------------------------------------------------------------------


@pytest.mark.parametrize("gop", [2**31, 2**31 + 5, 10**20])
def test_gop_past_a_c_int_is_refused_naming_the_range(gl, old, capsys, gop):
    path, _ = old
    with pytest.raises(glrec.ConfigError, match=r"^gop \d+ is outside 1\.\.2147483647 \(e\.g\. 60\)\.$"):
        glrec.write_video(path, FRAMES, fps=10, gop=gop)
    assert main(["record", "bars", "-y", "-o", str(path), "--size", "64x48", "--frames", "3", "--gop", str(gop)]) == 2
    err = capsys.readouterr().err
    assert err == f"glrec: error: gop '{gop}' is outside 1..2147483647 (e.g. 60).\n", err
    _unchanged(old)


@pytest.mark.parametrize("codec, name", [("h264", "g.mp4")])  # mjpeg refuses gop: every frame is a keyframe
def test_the_largest_gop_records(gl, tmp_path, codec, name):
    result = glrec.write_video(tmp_path / name, FRAMES, fps=10, gop=MAX_GOP, codec=codec, encoder="cpu")
    with av.open(str(result.path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == len(FRAMES) == result.frames


# -- sink and sink_options --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"sink": 5}, "sink 5 is not a sink: it needs write(packets), close()"),
        ({"sink": "out.mp4"}, "sink 'out.mp4' is not a sink"),
        ({"sink_options": 5}, "sink_options 5 must be a dict of keyword names to values"),
        ({"sink_options": ["audio"]}, "sink_options ['audio'] must be a dict"),
        ({"sink_options": {1: 2}}, "sink_options {1: 2} must be a dict"),
        ({"sink_options": {"bogus": 1}}, "sink_options 'bogus' are not keywords of the mp4 output. Valid: "),
        ({"sink_options": {"overwrite": False}}, "sink_options 'overwrite' are not keywords of the mp4 output"),
    ],
)
def test_sink_and_sink_options_that_cannot_work_are_one_line_naming_the_option(gl, old, kwargs, words):
    path, _ = old
    with pytest.raises(glrec.ConfigError) as info:
        glrec.write_video(path, FRAMES, fps=10, **kwargs)
    assert words in str(info.value) and "\n" not in str(info.value), str(info.value)
    _unchanged(old)


def test_sink_options_for_an_output_without_any_name_none_as_valid(gl, tmp_path):
    with pytest.raises(glrec.ConfigError, match=r"not keywords of the h264 output\. Valid: none\."):
        glrec.write_video(tmp_path / "x.h264", FRAMES, fps=10, sink_options={"audio": None})
    assert list(tmp_path.iterdir()) == []


def test_sink_options_beside_a_given_sink_are_refused_not_ignored(gl, tmp_path):
    class Listed:  # a sink of the caller's own, complete
        path, packets, bytes_written = "listed", 0, 0

        def write(self, packets):
            self.packets += len(packets)

        def close(self):
            pass

    with pytest.raises(glrec.ConfigError, match=r"sink_options \(audio\) go to the sink glrec opens for path"):
        glrec.Recorder("listed.mp4", size=(64, 48), sink=Listed(), sink_options={"audio": None})
    sink = Listed()
    with glrec.Recorder("listed.mp4", size=(64, 48), sink=sink, encoder="cpu") as rec:
        for frame in FRAMES:
            rec.write(frame)
    assert sink.packets == len(FRAMES)
    assert list(tmp_path.iterdir()) == [] and not Path("listed.mp4").exists()
