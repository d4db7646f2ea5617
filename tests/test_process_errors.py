"""A --process function that raises, or returns something unusable, is one line, once: its name and the frame."""

from __future__ import annotations

from glrec.cli import main


def _run(tmp_path, capsys, body: str) -> tuple[int, str]:
    (tmp_path / "fn.py").write_text(f"def fn(frame):\n    {body}\n")
    code = main(["record", "plasma", "--size", "64x48", "--frames", "4", "-o", str(tmp_path / "o.mkv"),
                 "--process", f"{tmp_path / 'fn.py'}:fn"])  # fmt: skip
    return code, capsys.readouterr().err


def test_a_raising_function_is_one_line_with_its_name_and_frame(gl, tmp_path, capsys):
    code, err = _run(tmp_path, capsys, "raise ValueError('bad pixel')")
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "fn" in lines[0] and "ValueError" in lines[0] and "frame 0" in lines[0] and "bad pixel" in lines[0]


def test_an_unusable_return_value_is_printed_once(gl, tmp_path, capsys):
    code, err = _run(tmp_path, capsys, "return 'text'")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, err
    assert "returned str" in lines[0]


def test_write_video_of_one_picture_says_it_is_not_a_batch(tmp_path):
    import numpy as np
    import pytest

    import glrec
    from glrec.errors import ConfigError

    with pytest.raises(ConfigError, match="one picture"):
        glrec.write_video(tmp_path / "one.mp4", np.zeros((64, 64, 3), np.uint8))
    assert not (tmp_path / "one.mp4").exists()
