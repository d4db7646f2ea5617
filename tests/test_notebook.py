"""RecordResult shows its video inline in Jupyter, through IPython's own display formatter."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

import glrec
from glrec import _notebook as notebook

pytestmark = pytest.mark.gl


def frames(n: int = 3) -> list[np.ndarray]:
    return [np.full((32, 48, 3), 40 * i, np.uint8) for i in range(n)]


def html_of(result: glrec.RecordResult) -> str:
    formatters = pytest.importorskip("IPython.core.formatters")
    shown = formatters.DisplayFormatter().format(result)[0]  # what a notebook cell output holds
    assert "text/plain" in shown
    return shown["text/html"]


def test_small_video_is_embedded_byte_for_byte(tmp_path):
    result = glrec.write_video(tmp_path / "small.mp4", frames(), fps=10)
    page = html_of(result)
    src = re.search(r'<video [^>]*src="data:video/mp4;base64,([^"]+)"', page)
    assert src is not None, page[:300]
    assert base64.b64decode(src.group(1)) == result.path.read_bytes()
    assert "3 frames" in page


def test_large_video_is_linked_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    result = glrec.write_video("runs/big.mp4", frames(), fps=10)
    monkeypatch.setattr(notebook, "EMBED_LIMIT", 100)  # smaller than the file
    page = html_of(result)
    assert 'src="runs/big.mp4"' in page and "base64" not in page
    assert "Linked, not embedded" in page


def test_outputs_browsers_cannot_play_get_a_note(tmp_path):
    result = glrec.write_video(tmp_path / "m.mkv", frames(), fps=10, codec="mjpeg")
    page = html_of(result)
    assert "<video" not in page and "cannot play mjpeg" in page
    empty = glrec.write_video(tmp_path / "none.mp4", [], fps=10)
    assert "<video" not in html_of(empty) and "no frames" in html_of(empty)


def test_an_animated_gif_is_shown_as_an_image(tmp_path):
    result = glrec.write_video(tmp_path / "run.gif", frames(), fps=10)
    page = html_of(result)
    src = re.search(r'<img [^>]*src="data:image/gif;base64,([^"]+)"', page)
    assert src is not None and "<video" not in page, page[:300]
    assert base64.b64decode(src.group(1)) == result.path.read_bytes()


def test_webm_is_embedded_as_webm(tmp_path):
    result = glrec.write_video(tmp_path / "run.webm", frames(), fps=10)
    src = re.search(r'<video [^>]*src="data:video/webm;base64,([^"]+)"', html_of(result))
    assert src is not None and base64.b64decode(src.group(1)) == result.path.read_bytes()


@pytest.mark.parametrize("name, mime", [("f_%04d.png", "image/png"), ("f_%04d.jpg", "image/jpeg")])
def test_an_image_sequence_is_shown_by_its_first_frame(tmp_path, name, mime):
    result = glrec.write_video(tmp_path / name, frames(), fps=10)
    page = html_of(result)
    src = re.search(rf'<img [^>]*src="data:{mime};base64,([^"]+)"', page)
    assert src is not None and "no frames" not in page, page[:300]
    assert base64.b64decode(src.group(1)) == (tmp_path / (name % 0)).read_bytes()
    assert "The first of 3 frames" in page
