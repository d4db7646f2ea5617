"""Shadertoy exports come from the web: their media stay inside their folder, and a malformed one is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from crash_helpers import child_env
from PIL import Image

from glrec.errors import GlrecError, SceneError
from glrec.scenes.shadertoy_load import load_program

CODE = "void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / iResolution.xy); }"


def export(folder: Path, src: object, name: str = "toy.json", **inp: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "Shader": {
            "renderpass": [
                {
                    "type": "image",
                    "name": "Image",
                    "code": CODE,
                    "inputs": [{"channel": 0, "ctype": "texture", "src": src, **inp}],
                }
            ]
        }
    }
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def png(path: Path, colour: tuple[int, int, int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((4, 4, 3), colour, np.uint8)).save(path)
    return path


@pytest.mark.parametrize("src", ["../outside/secret.png", "/../outside/secret.png", "media/../../outside/secret.png"])
def test_media_outside_the_export_folder_is_refused(tmp_path: Path, src: str) -> None:
    png(tmp_path / "outside" / "secret.png", (255, 0, 0))
    (tmp_path / "toy" / "media").mkdir(parents=True)  # so that media/.. resolves
    path = export(tmp_path / "toy", src)
    with pytest.raises(SceneError, match="outside the export's folder"):
        load_program(path)
    # The user can say they trust it.
    program = load_program(path, trusted=True)
    assert Path(program.image.channels[0].source).resolve() == (tmp_path / "outside" / "secret.png").resolve()


def test_system_files_are_not_opened(tmp_path: Path) -> None:
    path = export(tmp_path / "toy", "../../../../../../../../etc/hostname")
    with pytest.raises(GlrecError):
        load_program(path)


def test_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    secret = png(tmp_path / "outside" / "secret.png", (255, 0, 0))
    (tmp_path / "toy").mkdir()
    os.symlink(secret, tmp_path / "toy" / "blue.png")
    with pytest.raises(SceneError, match="outside"):
        load_program(export(tmp_path / "toy", "blue.png"))


def test_media_beside_the_export_is_found_from_any_folder(tmp_path: Path) -> None:
    png(tmp_path / "toy" / "blue.png", (0, 0, 255))
    export(tmp_path / "toy", "/media/a/blue.png", name="good.json")
    # Named by a relative path from the folder above (glrec record toy/good.json).
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from glrec.scenes.shadertoy_load import load_program; "
            "print(load_program('toy/good.json').image.channels[0].source)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve() == (tmp_path / "toy" / "blue.png").resolve()


@pytest.mark.parametrize(
    ("renderpass", "says"),
    [
        ([5], "renderpass\\[0\\] is a number"),
        ([{"type": "image", "name": "Image", "code": CODE, "inputs": [{"channel": "abc", "src": "a.png"}]}], "channel"),
        ([{"type": "image", "name": "Image", "code": CODE, "inputs": [{"channel": None, "src": "a.png"}]}], "channel"),
        ([{"type": "image", "name": "Image", "code": CODE, "inputs": [{"channel": 7, "src": "a.png"}]}], "channel"),
        ([{"type": "image", "name": "Image", "code": CODE, "inputs": 5}], "'inputs' must be a list"),
        ([{"type": "image", "name": "Image", "code": CODE, "inputs": ["abc"]}], "must be an object"),
        ([{"type": "image", "name": "Image", "code": CODE, "outputs": [1, 2]}], "'outputs'"),
        ([{"type": "image", "name": "Image", "code": 5}], "'code' must be a string"),
        (
            [
                {
                    "type": "image",
                    "name": "Image",
                    "code": CODE,
                    "inputs": [{"channel": 0, "ctype": "texture", "src": "x" * 100_000}],
                }
            ],
            "not a usable file name",
        ),
    ],
)
def test_a_malformed_export_is_one_line(tmp_path: Path, renderpass: list[object], says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"Shader": {"renderpass": renderpass}}))
    with pytest.raises(SceneError, match=says) as info:
        load_program(path)
    assert "\n" not in str(info.value)


def test_deeply_nested_json_and_toml_are_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SceneError, match="nested too deeply"):
        load_program(deep)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "image.glsl").write_text(CODE)
    (folder / "shadertoy.toml").write_text("[image]\niChannel0 = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SceneError, match="nested too deeply|not valid TOML"):
        load_program(folder)


@pytest.mark.gl
def test_the_command_line_refuses_then_trusts_an_export(tmp_path: Path) -> None:
    png(tmp_path / "outside" / "secret.png", (255, 0, 0))
    path = export(tmp_path / "toy", "../outside/secret.png")
    base = [sys.executable, "-m", "glrec", "record", str(path), "--size", "32x24", "--frames", "2"]
    refused = subprocess.run([*base, "-o", str(tmp_path / "no.mp4")], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "outside the export's folder" in refused.stderr, refused.stderr
    assert not (tmp_path / "no.mp4").exists()
    out = tmp_path / "yes.mp4"
    trusted = subprocess.run([*base, "-o", str(out), "--trust-export"], capture_output=True, text=True, timeout=120)
    assert trusted.returncode == 0, trusted.stderr
    import av

    with av.open(str(out)) as c:
        frame = next(c.decode(video=0)).to_ndarray(format="rgb24")
    assert frame[..., 0].mean() > 200 and frame[..., 2].mean() < 60  # the red secret, as the user allowed
    # A scene that is no export: the flag is refused, not ignored.
    cube = [sys.executable, "-m", "glrec", "record", "cube", "-o", str(tmp_path / "c.mp4"), "--frames", "1"]
    other = subprocess.run([*cube, "--trust-export"], capture_output=True, text=True, timeout=120)
    assert other.returncode != 0 and "--trust-export is for Shadertoy exports" in other.stderr, other.stderr
