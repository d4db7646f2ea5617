"""Options declared once: the Python API, every subcommand and the docs come from one table.

Regression tests for the drift that five separate declarations caused (flags that did
nothing, values one side accepted and the other refused, different defaults).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

import av
import pytest
from crash_helpers import child_env
from where import ROOT

import glrec
from glrec.cli import build_parser, main
from glrec.options import DEFAULT_SECONDS, InputOptions, LengthOptions, PipelineOptions, VideoOptions, reference

# Flags a subcommand handles itself (not recording options); everything else must be a declared option.
_OWN = {
    "record": {"scene", "output", "overwrite"},
    "stream": {"scene", "measure", "to"},
    "serve": {"scene", "measure", "host", "port", "token", "max_viewers"},
}
_COMMON = {"help", "verbose", "quiet", "func"}
#: What a live command cannot use, so does not offer (issue 35 item 4): JPEG quality (nothing live carries JPEG)
#: and --no-audio (live commands send video only).
_NOT_OFFERED = {"record": set(), "stream": {"quality", "drop_audio"}, "serve": {"quality", "drop_audio"}}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", sorted(_OWN))
def test_every_flag_of_a_recording_command_is_a_declared_option(command):
    tables = (VideoOptions, PipelineOptions, LengthOptions, InputOptions)
    declared = set().union(*(t.names() for t in tables))
    dests = {a.dest for a in _subparser(command)._actions}
    assert dests - declared - _OWN[command] - _COMMON == set()
    # and every declared option with a flag is offered (none silently missing from one command), but for
    # those the command cannot use
    offered = {f.name for t in tables for f, spec in _declared(t) if spec.flags}
    assert offered - _NOT_OFFERED[command] <= dests
    assert not _NOT_OFFERED[command] & dests


def _declared(table):
    from glrec.options import declared

    return declared(table)


def test_messages_spell_each_option_as_the_command_line_takes_it():
    """What a message calls an option on the command line is the flag the command takes (issue 35 item 6)."""
    from glrec._declare import cli_spelling, named

    record = {s for a in _subparser("record")._actions for s in a.option_strings}
    with cli_spelling():
        for table in (VideoOptions, PipelineOptions, LengthOptions, InputOptions):
            for f, spec in _declared(table):
                if spec.flags:
                    assert named(f.name) == spec.flags[0] and spec.flags[0] in record, f.name
        assert named("overwrite", True) == "--overwrite (-y)" and {"--overwrite", "-y"} <= record
    assert named("overwrite", True) == "overwrite=True" and named("crf") == "crf"  # Python's own words outside


def test_stream_rc_with_the_cpu_encoder_is_refused_not_ignored(capsys):
    code = main(["stream", "cube", "--to", "udp://127.0.0.1:5999", "--frames", "1", "--rc", "cbr", "-q"])
    assert code == 2
    assert "tuning and rc are NVENC settings" in capsys.readouterr().err


def test_stream_handoff_reaches_the_pipeline(gl, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="glrec"):
        code = main(
            ["stream", "cube", "--to", "udp://127.0.0.1:5999", "--frames", "2", "--size", "64x64", "--handoff",
             "host", "-q", "-v"]
        )  # fmt: skip
    assert code == 0
    plans = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan:")]
    assert plans == ["plan: encoder cpu via PBO host readback (host handoff asked for)"]


def test_bitrate_takes_the_same_values_in_python_and_on_the_cli(gl, tmp_path):
    assert VideoOptions.create(bitrate="8M").bitrate == 8_000_000
    assert VideoOptions.create(bitrate="2500k").bitrate == 2_500_000
    args = build_parser().parse_args(["record", "bars", "-o", "x.mp4", "--bitrate", "8M"])
    assert VideoOptions.create(bitrate=args.bitrate).bitrate == 8_000_000
    result = glrec.record("bars", tmp_path / "b.mp4", size=(64, 64), fps=30, frames=3, bitrate="300k")
    assert result.frames == 3
    with pytest.raises(glrec.ConfigError, match="bitrate 'fast' is not a number such as 8M"):
        VideoOptions.create(bitrate="fast")


def _frames(path: Path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def test_default_length_is_the_same_in_python_and_on_the_cli(gl, tmp_path):
    fps = 4  # 5 s at 4 fps: 20 frames, quick to make
    py = glrec.record("bars", tmp_path / "py.mp4", size=(64, 64), fps=fps)
    assert main(["record", "bars", "-o", str(tmp_path / "cli.mp4"), "--size", "64x64", "--fps", str(fps), "-q"]) == 0
    expected = round(DEFAULT_SECONDS * fps)
    assert py.frames == expected == _frames(tmp_path / "py.mp4") == _frames(tmp_path / "cli.mp4")


def test_verbose_prints_one_summary_line(gl, tmp_path):
    out = tmp_path / "v.mp4"
    env = child_env()
    proc = subprocess.run(
        [sys.executable, "-m", "glrec", "record", "bars", "-o", str(out), "--size", "64x64", "--frames", "3", "-v"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "frames (" in ln and "Mbit/s" in ln]
    assert len(lines) == 1, lines
    assert "plan: encoder cpu" in proc.stderr  # -v still shows the log


def test_unknown_keyword_names_the_closest_option(tmp_path):
    with pytest.raises(glrec.ConfigError, match="Unknown option 'bitrat'. Did you mean 'bitrate'"):
        glrec.Recorder(tmp_path / "x.mp4", bitrat="8M")
    assert not (tmp_path / "x.mp4").exists()


def test_encoder_options_reach_the_encoder(gl, tmp_path):
    """The escape hatch: libx264's own keyint through encoder_options (and -x on the CLI)."""
    path = tmp_path / "k.mkv"
    glrec.record("bars", path, size=(64, 64), fps=30, frames=15, encoder_options={"x264-params": "keyint=5:scenecut=0"})
    with av.open(str(path)) as c:
        keys = [i for i, p in enumerate(c.demux(video=0)) if p.size and p.is_keyframe]
    assert keys == [0, 5, 10]
    cli = tmp_path / "cli.mkv"
    args = ["record", "bars", "-o", str(cli), "--size", "64x64", "--frames", "15", "-q", "-x", "x264-params=keyint=7"]
    assert main(args) == 0
    with av.open(str(cli)) as c:
        keys = [i for i, p in enumerate(c.demux(video=0)) if p.size and p.is_keyframe]
    assert keys[:2] == [0, 7]
    with pytest.raises(glrec.ConfigError, match="not KEY=VALUE"):
        VideoOptions.create(encoder_options=["keyint"])


@pytest.mark.parametrize(
    "flag, value, words",
    [
        ("--bitrate", "inf", "bitrate inf must be finite"),
        ("--seconds", "inf", "seconds 'inf' must be finite"),
        ("--fps", "nan", "fps nan must be above 0"),
        ("--fps", "1e-4", "fps 0.0001 must be above 0 (0.01 at least)"),
    ],
)
def test_non_finite_numbers_are_one_line_errors(tmp_path, capsys, flag, value, words):
    assert main(["record", "bars", "-o", str(tmp_path / "x.mp4"), "--frames", "3", flag, value]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_options_reference_is_current():
    """docs/options.md is generated from the declarations: python -m glrec.options > docs/options.md."""
    assert (ROOT / "docs" / "options.md").read_text() == reference() + "\n"


def test_recorder_signal_handlers_are_put_back_exactly(gl, tmp_path):
    def mine(signum, frame):
        pass

    previous = {s: signal.signal(s, mine) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with glrec.Recorder(tmp_path / "s.mp4", size=(64, 64), fps=30) as rec:
            rec.render("bars")
            # while open, glrec's gate stands in front of the program's handler ...
            assert signal.getsignal(signal.SIGINT) is not mine
        # ... and after close the program's own handlers are back, the very objects
        assert signal.getsignal(signal.SIGINT) is mine and signal.getsignal(signal.SIGTERM) is mine
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def test_an_option_declared_once_is_on_every_surface(gl, tmp_path):
    """threads was added as one declaration: Python keyword, CLI flag, docs, and it reaches libx264."""
    py, cli = tmp_path / "py.h264", tmp_path / "cli.h264"
    glrec.record("bars", py, size=(64, 64), fps=30, frames=2, threads=1)
    assert main(["record", "bars", "-o", str(cli), "--size", "64x64", "--frames", "2", "--threads", "3", "-q"]) == 0
    # x264 writes its settings into the stream (an SEI): the thread count is among them
    assert b" threads=1 " in py.read_bytes() and b" threads=3 " in cli.read_bytes()
    assert "`--threads`" in (ROOT / "docs" / "options.md").read_text()
    with pytest.raises(glrec.ConfigError, match="threads 0 is outside 1..256"):
        VideoOptions.create(threads=0)


def test_serve_tells_the_viewer_the_encoded_size(gl, monkeypatch):
    """An odd size padded for 4:2:0 reaches the browser as the size its decoder gets (66x48, not 65x48)."""
    pytest.importorskip("websockets")
    import glrec.sinks.viewer as viewer

    sizes = []

    class Recording(viewer.StreamServer):
        def __init__(self, *, size, **kwargs):
            sizes.append(size)
            super().__init__(size=size, **kwargs)

    monkeypatch.setattr(viewer, "StreamServer", Recording)
    assert main(["serve", "bars", "--size", "65x48", "--pad", "--frames", "2", "--port", "0", "-q"]) == 0
    assert sizes == [(66, 48)]
