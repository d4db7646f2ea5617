"""One resolver for what a command's source argument names; the scene loader and the input check both use it."""

from __future__ import annotations

from pathlib import Path

import pytest

from glrec._transcode import is_input
from glrec.scenes import BUILTINS
from glrec.scenes.resolve import resolve_source


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("cube", "builtin"),
        ("plasma", "builtin"),
        ("my_scene.py", "python"),
        ("my_scene.py:Spiral", "python"),
        ("toy.glsl", "shader"),
        ("toy.FRAG", "shader"),
        ("export.json", "shader"),
        ("clip.mp4", "input"),
        ("still.png", "input"),
        ("frames/%05d.png", "input"),
        ("rtsp://127.0.0.1:8554/cam", "input"),
        ("https://127.0.0.1/video.m3u8", "input"),
        ("/dev/video0", "input"),
        ("nonsense", "unknown"),
    ],
)
def test_each_kind_of_name(text: str, kind: str) -> None:
    got = resolve_source(text, tuple(BUILTINS))
    assert got.kind == kind
    assert is_input(text) == (kind == "input")


def test_python_scene_names_its_class() -> None:
    got = resolve_source("scenes/my_scene.py:Spiral")
    assert (got.path, got.attr) == (Path("scenes/my_scene.py"), "Spiral")


def test_a_folder_with_an_image_pass_is_a_shader(tmp_path: Path) -> None:
    (tmp_path / "image.glsl").write_text("void mainImage(out vec4 c, in vec2 p) { c = vec4(1.0); }\n")
    assert resolve_source(tmp_path).kind == "shader"
    assert resolve_source(tmp_path / "missing").kind == "unknown"
