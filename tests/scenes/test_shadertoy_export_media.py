"""A downloaded Shadertoy export reads its own media only (issue 30, items 2 and 12).

A playlist or file list inside the export's folder may name ``../``, absolute or ``file://`` paths; the
recording must not show them. Each form is also recorded with ``trusted=True``, where the outside file
shows (red), so that each refusal is shown to matter. Recordings are decoded with PyAV.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest
from media import ffmpeg
from PIL import Image

import glrec
from glrec.errors import ConfigError, UnsupportedInputError
from glrec.scenes.shadertoy import ShadertoyScene

pytestmark = pytest.mark.gl
CODE = "void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / iResolution.xy); }"
HLS = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\n{}\n#EXT-X-ENDLIST\n"


def export(folder: Path, inputs: list[dict[str, object]], code: str = CODE) -> Path:
    data = {"Shader": {"renderpass": [{"type": "image", "name": "Image", "code": code, "inputs": inputs}]}}
    path = folder / "toy.json"
    path.write_text(json.dumps(data))
    return path


def outside(tmp_path: Path) -> Path:
    """The user's private video (red), outside the export's folder, as MPEG-TS and MP4."""
    folder = tmp_path / "outside"
    folder.mkdir()
    for name in ("secret.ts", "secret.mp4"):
        ffmpeg("-f", "lavfi", "-i", "color=red:size=64x48:rate=10", "-frames:v", "10", "-c:v", "libx264",
               "-pix_fmt", "yuv420p", str(folder / name))  # fmt: skip
    return folder


def playlist(tmp_path: Path, form: str) -> Path:
    """The export's folder with a playlist of ``form`` that reaches the outside file; returns the export."""
    secret = outside(tmp_path)
    toy = tmp_path / "toy"
    toy.mkdir()
    name = "video.m3u8"
    if form == "hls ../":
        (toy / name).write_text(HLS.format("../outside/secret.ts"))
    elif form == "hls absolute":
        (toy / name).write_text(HLS.format(secret / "secret.ts"))
    elif form == "hls file://":
        (toy / name).write_text(HLS.format((secret / "secret.ts").as_uri()))
    elif form == "hls master":
        (toy / "media.m3u8").write_text(HLS.format("../outside/secret.ts"))
        (toy / name).write_text("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000\nmedia.m3u8\n")
    elif form.startswith("ffconcat"):
        name = "video.ffconcat"
        target = "../outside/secret.mp4" if form == "ffconcat ../" else str(secret / "secret.mp4")
        (toy / name).write_text(f"ffconcat version 1.0\nfile {target}\n")
    return export(toy, [{"channel": 0, "ctype": "video", "src": name}])


def first_frame(path: Path) -> np.ndarray:
    with av.open(str(path)) as c:
        return next(c.decode(video=0)).to_ndarray(format="rgb24").astype(np.float64)


FORMS = ["hls ../", "hls absolute", "hls file://", "hls master", "ffconcat ../", "ffconcat absolute"]


@pytest.mark.parametrize("form", FORMS)
def test_a_playlist_in_an_export_cannot_show_an_outside_file(tmp_path: Path, form: str) -> None:
    path = playlist(tmp_path, form)
    out = tmp_path / "out.mp4"
    with pytest.raises(UnsupportedInputError, match="read as single files only") as info:
        glrec.record(ShadertoyScene(path), out, size=(32, 24), frames=2)
    assert "\n" not in str(info.value) and "--trust-export" in str(info.value)
    assert not out.exists()  # nothing recorded, so nothing of the outside file either
    if form.startswith("ffconcat"):
        return  # FFmpeg's concat demuxer refuses such paths itself even when trusted (its 'safe' mode)
    # Trusted, the same export does reach the outside file: the refusal above is what kept it out.
    glrec.record(ShadertoyScene(path, trusted=True), out, size=(32, 24), frames=2)
    frame = first_frame(out)
    assert frame[..., 0].mean() > 200 and frame[..., 1].mean() < 60, "the trusted playlist shows the red file"


def test_the_one_file_rule_holds_without_the_format_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The io_open net alone: a format the refused list might miss still opens nothing but the file named."""
    from glrec.sources.video import confine

    monkeypatch.setattr(confine.Confined, "options", lambda self: {"protocol_whitelist": "file"})
    path = playlist(tmp_path, "hls master")
    with pytest.raises(UnsupportedInputError, match=r"names another file \('.*media\.m3u8'\)"):
        glrec.record(ShadertoyScene(path), tmp_path / "out.mp4", size=(32, 24), frames=2)
    assert not (tmp_path / "out.mp4").exists()


def test_an_export_s_own_image_and_looping_video_still_play(tmp_path: Path) -> None:
    toy = tmp_path / "toy"
    toy.mkdir()
    Image.fromarray(np.full((8, 8, 3), (0, 0, 255), np.uint8)).save(toy / "blue.png")
    ffmpeg("-f", "lavfi", "-i", "color=lime:size=64x48:rate=10", "-frames:v", "3", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", str(toy / "green.mp4"))  # fmt: skip
    code = ("void mainImage(out vec4 c, in vec2 p) { vec2 uv = p / iResolution.xy;"
            " c = uv.x < 0.5 ? texture(iChannel0, uv) : texture(iChannel1, uv); }")  # fmt: skip
    path = export(toy, [{"channel": 0, "ctype": "texture", "src": "blue.png"},
                        {"channel": 1, "ctype": "video", "src": "/media/a/green.mp4"}], code)  # fmt: skip
    out = tmp_path / "out.mkv"
    glrec.record(ShadertoyScene(path), out, size=(32, 24), fps=10, frames=8)  # the 3-frame video loops twice
    with av.open(str(out)) as c:
        frames = [f.to_ndarray(format="rgb24").astype(np.float64) for f in c.decode(video=0)]
    assert len(frames) == 8
    for f in frames:
        assert f[:, :12, 2].mean() > 200 and f[:, :12, 0].mean() < 60  # blue image
        assert f[:, 20:, 1].mean() > 200 and f[:, 20:, 2].mean() < 60  # green video, also after each loop


def test_the_command_line_refuses_an_export_playlist_in_one_line(tmp_path: Path) -> None:
    path = playlist(tmp_path, "hls ../")
    out = tmp_path / "out.mp4"
    run = subprocess.run([sys.executable, "-m", "glrec", "record", str(path), "--size", "32x24", "--frames", "2",
                          "-o", str(out)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode != 0 and not out.exists()
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is an HLS playlist" in lines[0] and "--trust-export" in lines[0], run.stderr


@pytest.mark.parametrize("kind", ["file", "folder", "overlay"])
def test_trust_export_is_refused_for_a_shader_that_is_no_export(tmp_path: Path, kind: str) -> None:
    shader = tmp_path / "toy.glsl"
    shader.write_text(CODE)
    if kind == "folder":
        shader = tmp_path / "pass"
        shader.mkdir()
        (shader / "image.glsl").write_text(CODE)
    out = tmp_path / "out.mp4"
    if kind == "overlay":
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-frames:v", "3", str(tmp_path / "in.mp4"))
        args = [str(tmp_path / "in.mp4"), "--overlay", str(shader)]
    else:
        args = [str(shader), "--frames", "2", "--size", "32x24"]
    run = subprocess.run([sys.executable, "-m", "glrec", "record", *args, "--trust-export", "-o", str(out)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    # Before: accepted silently and recorded (it is refused for built-in scenes and plain inputs already).
    assert "--trust-export (trusted=True) is for Shadertoy exports (.json)" in run.stderr, run.stderr
    assert run.returncode != 0 and not out.exists()
    with pytest.raises(ConfigError, match="is for Shadertoy exports"):
        ShadertoyScene(shader, trusted=True)
