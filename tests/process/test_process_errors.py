"""A --process function that raises, or returns something unusable, is one line, once: its name and the frame."""

from __future__ import annotations

import numpy as np
import pytest

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
    import glrec
    from glrec.errors import ConfigError

    with pytest.raises(ConfigError, match="one picture"):
        glrec.write_video(tmp_path / "one.mp4", np.zeros((64, 64, 3), np.uint8))
    assert not (tmp_path / "one.mp4").exists()


# -- issue 30 item 9: the function's own exception reaches the caller as itself ------------------------


def _raising_at(k: int, exc: BaseException):
    raised: list[BaseException] = []

    def fn(frame):
        if fn.calls == k:  # type: ignore[attr-defined]
            raised.append(exc)
            raise exc
        fn.calls += 1  # type: ignore[attr-defined]

    fn.calls = 0  # type: ignore[attr-defined]
    return fn, raised


@pytest.mark.parametrize("via", ["record", "recorder"])
def test_the_functions_own_exception_is_caught_by_its_own_except_and_the_file_keeps_every_frame_before(
    gl, tmp_path, via
):
    from process_helpers import LOSSLESS, decoded_444

    import glrec

    options = {"size": (64, 48), "fps": 30, **LOSSLESS}
    fn, raised = _raising_at(5, ZeroDivisionError("division by zero"))
    path = tmp_path / "cut.mkv"
    with pytest.raises(ZeroDivisionError) as info:
        if via == "record":
            glrec.record("bars", path, frames=12, process=fn, **options)
        else:
            with glrec.Recorder(path, process=fn, **options) as rec:
                for _ in range(12):
                    rec.render("bars")
    err = info.value
    assert err is raised[0] and type(err) is ZeroDivisionError and not isinstance(err, glrec.GlrecError)
    notes = getattr(err, "__notes__", [])
    assert any("raised ZeroDivisionError at frame 5" in n for n in notes), notes
    # nothing written is lost: the file holds frames 0..4, the same pictures a clean 5-frame recording makes
    glrec.record("bars", tmp_path / "clean.mkv", frames=5, **options)
    got, clean = decoded_444(path), decoded_444(tmp_path / "clean.mkv")
    assert len(got) == len(clean) == 5
    for a, b in zip(got, clean, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_cli_prints_the_functions_own_exception_as_one_line(gl, tmp_path, capsys):
    code, err = _run(tmp_path, capsys, "1 / 0")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, err
    said = "glrec: error: process function fn (fn.py) raised ZeroDivisionError at frame 0: division by zero"
    assert lines[0] == said, lines
    assert not (tmp_path / "o.mkv").exists()  # it failed at frame 0: no frame was made, so no file
