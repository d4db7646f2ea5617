"""The glrec command, end to end."""

import subprocess
import sys

import av
import pytest

from glrec.cli import main


def test_record_end_to_end_in_a_subprocess(gl, tmp_path):
    out = tmp_path / "cube.mp4"
    proc = subprocess.run(
        [sys.executable, "-m", "glrec", "record", "cube", "-o", str(out), "--size", "320x240", "--seconds", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "30 frames" in proc.stdout and "fps" in proc.stdout and "Mbit/s" in proc.stdout
    with av.open(str(out)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 30


def test_refuses_to_overwrite(gl, tmp_path, capsys):
    out = tmp_path / "a.mp4"
    out.write_bytes(b"precious")
    assert main(["record", "plasma", "-o", str(out), "--frames", "2", "--size", "64x64"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"precious"
    assert main(["record", "plasma", "-o", str(out), "--frames", "2", "--size", "64x64", "--overwrite", "-q"]) == 0
    assert out.read_bytes() != b"precious"


def test_y_is_the_overwrite_flag_as_in_ffmpeg(gl, tmp_path, capsys):
    out = tmp_path / "a.mp4"
    assert main(["record", "plasma", "-o", str(out), "--frames", "2", "--size", "64x64", "-q"]) == 0
    assert main(["record", "plasma", "-o", str(out), "--frames", "3", "--size", "64x64", "-q"]) == 1
    err = capsys.readouterr().err
    assert "-y" in err and "Traceback" not in err
    assert main(["record", "plasma", "-o", str(out), "--frames", "5", "--size", "64x64", "-y", "-q"]) == 0
    with av.open(str(out)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 5


@pytest.mark.parametrize(
    "args, words",
    [
        (["--codec", "h265"], "Unknown codec 'h265'. Valid: av1, gif, h264, hevc, mjpeg, png, vp9."),
        (["--encoder", "quantum"], "Unknown encoder 'quantum'"),
        (["--size", "641x480"], "--pad"),
        (["--size", "0x480"], "must be positive"),
        (["--fps", "0"], "must be above 0"),
    ],
)
def test_bad_input_exit_2_with_message(tmp_path, capsys, args, words):
    assert main(["record", "cube", "-o", str(tmp_path / "x.mp4"), "--frames", "1", *args]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "x.mp4").exists()


def test_missing_output_directory(tmp_path, capsys):
    assert main(["record", "cube", "-o", str(tmp_path / "no" / "x.mp4"), "--frames", "1"]) == 1
    assert "does not exist; create it first" in capsys.readouterr().err


def test_missing_scene_file(gl, tmp_path, capsys):
    assert main(["record", str(tmp_path / "nope.py"), "-o", str(tmp_path / "x.mp4"), "--frames", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_scenes_lists_builtins(capsys):
    assert main(["scenes"]) == 0
    out = capsys.readouterr().out
    for name in ("cube", "plasma", "particles", "bars"):
        assert name in out
