"""Shadertoy compatibility: the uniforms, channels, multi-pass feedback, exports and iMouse, checked by
reading back what the shaders wrote (the shaders encode the values they saw into colours)."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from media import make_clip

import glrec
from glrec.events import InputEvent
from glrec.gl.target import RenderTarget
from glrec.scenes import load_scene
from glrec.scenes.shadertoy import ShadertoyScene

SIZE = (32, 24)


def _frames(gl, scene, times, size=SIZE) -> list[np.ndarray]:
    """Render ``scene`` at ``times``; RGBA uint8, rows bottom-up (GL's order, as fragCoord counts)."""
    target = RenderTarget(gl.mgl, size)
    scene = load_scene(scene) if isinstance(scene, (str, Path)) else scene
    scene.setup(gl.mgl, size)
    out = []
    try:
        for t in times:
            target.use()
            scene.render(t)
            out.append(np.frombuffer(target.fbo.read(components=4), np.uint8).reshape(size[1], size[0], 4).copy())
    finally:
        scene.close()
        target.release()
    return out


def _write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(textwrap.dedent(text))
    return folder


COUNTER = """
    // Feedback: each frame adds 1/255 to the red this buffer held the frame before.
    void mainImage(out vec4 fragColor, in vec2 fragCoord) {
        vec4 last = texelFetch(iChannel0, ivec2(fragCoord), 0);
        fragColor = vec4(last.r + 1.0 / 255.0, half_(), 0.0, 1.0);
    }
"""


def test_multipass_folder_with_feedback_and_common(gl, tmp_path):
    folder = _write(
        tmp_path / "counter",
        buffer_a__glsl=COUNTER,
        # Buffer B reads A, which rendered earlier this frame: it sees this frame's count.
        buffer_b__glsl="""
            void mainImage(out vec4 c, in vec2 p) { c = vec4(0.0, texelFetch(iChannel0, ivec2(p), 0).r, 0.0, 1.0); }
        """,
        common__glsl="float half_() { return 0.5; }\n",
        image__glsl="""
            void mainImage(out vec4 c, in vec2 p) {
                c = vec4(texelFetch(iChannel0, ivec2(p), 0).rg, texelFetch(iChannel1, ivec2(p), 0).g, 1.0);
            }
        """,
        shadertoy__toml="""
            [image]
            iChannel0 = "buffer_a"
            iChannel1 = "Buffer B"
            [buffer_a]
            iChannel0 = "buffer_a"
            [buffer_b]
            iChannel0 = { src = "buffer_a", filter = "nearest" }
        """,
    )
    frames = _frames(gl, folder, [i / 30 for i in range(4)])
    for i, f in enumerate(frames):
        assert tuple(f[5, 7, :3]) == (i + 1, 128, i + 1)


def _export(path: Path, passes: list[dict], *, site: bool = False) -> Path:
    """A Shadertoy export: the API's {"Shader": ...} with ctype/src, or the site's list with type/filepath."""
    key_type, key_src = ("type", "filepath") if site else ("ctype", "src")
    for p in passes:
        for inp in p.get("inputs", []):
            inp[key_type] = inp.pop("kind")
            if "path" in inp:
                inp[key_src] = inp.pop("path")
    shader = {"ver": "0.1", "info": {"id": "test", "name": "test"}, "renderpass": passes}
    path.write_text(json.dumps([shader] if site else {"Shader": shader}))
    return path


@pytest.mark.parametrize("site", [False, True])
def test_json_export_links_buffers_by_id_and_finds_media(gl, tmp_path, site):
    image = make_clip(tmp_path / "a1b2c3.png", "-pix_fmt", "rgb24", size="16x16", frames=1)
    sampler = {"filter": "nearest", "wrap": "clamp", "vflip": "true", "srgb": "false", "internal": "byte"}
    passes = [
        {"name": "Image", "type": "image", "outputs": [{"id": "4dfGRr", "channel": 0}],
         "inputs": [{"id": "4dXGR8", "kind": "buffer", "channel": 0, "sampler": sampler}],
         "code": "void mainImage(out vec4 c, in vec2 p) { c = texelFetch(iChannel0, ivec2(p), 0); }"},
        {"name": "Buffer A", "type": "buffer", "outputs": [{"id": "4dXGR8", "channel": 0}],
         "inputs": [{"id": "XsXGRn", "kind": "texture", "channel": 1, "path": "/media/a/a1b2c3.png",
                     "sampler": sampler}],
         "code": "void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel1, p / iResolution.xy) + common_(); }"},
        {"name": "Common", "type": "common", "inputs": [], "outputs": [], "code": "vec4 common_() { return vec4(0); }"},
    ]  # fmt: skip
    path = _export(tmp_path / "export.json", passes, site=site)
    frame = _frames(gl, path, [0.0], size=(16, 16))[0]
    from av import open as av_open

    with av_open(str(image)) as c:
        rgb = next(c.decode(video=0)).to_ndarray(format="rgb24")
    assert np.array_equal(frame[::-1, :, :3], rgb)  # vflip: the image's top row at the top of the frame


def test_image_and_video_channels_with_shadertoy_samplers(gl, tmp_path):
    image = make_clip(tmp_path / "tex.png", "-pix_fmt", "rgb24", size="8x8", frames=1)
    video = make_clip(tmp_path / "clip.mkv", "-c:v", "ffv1", "-pix_fmt", "yuv444p", size="32x24", rate=10, frames=3)
    shader = tmp_path / "channels.glsl"
    shader.write_text(textwrap.dedent("""
        void mainImage(out vec4 c, in vec2 p) {
            vec2 uv = p / iResolution.xy;
            if (p.y < 12.0) {
                c = texture(iChannel1, uv);   // the video (nearest here, as the channel asks)
            } else {
                // the mipmap chain's last level is the mean colour
                vec3 lod = textureLod(iChannel0, vec2(0.5), 10.0).rgb;
                vec3 times = vec3(iChannelTime[1] * 10.0 / 255.0);
                // repeat: uv + 1 samples what uv samples (clamped, it would sample the last column)
                vec3 wrapped = abs(texture(iChannel0, uv + 1.0).rgb - texture(iChannel0, uv).rgb);
                c = vec4(p.x < 16.0 ? wrapped : p.x < 24.0 ? lod : times, 1.0);
            }
            vec4 res = vec4(iChannelResolution[0].x, iChannelResolution[1].xy, 255.0) / 255.0;
            if (p.x < 1.0 && p.y < 1.0) c = res;
        }
    """))  # fmt: skip
    scene = ShadertoyScene(shader, channels={0: str(image), 1: {"src": str(video), "filter": "nearest"}})
    frames = _frames(gl, scene, [0.0, 0.1, 0.25, 0.35])
    from av import open as av_open

    with av_open(str(image)) as c:
        tex = next(c.decode(video=0)).to_ndarray(format="rgb24").astype(float)
    with av_open(str(video)) as c:
        clip = [f.to_ndarray(format="rgb24").astype(int) for f in c.decode(video=0)]
    for f, shown, position in zip(frames, [0, 1, 2, 0], [0, 1, 2, 0], strict=True):
        assert tuple(f[0, 0, :3]) == (8, 32, 24)  # iChannelResolution of the image and the video
        bottom = f[1:12, 1:, :3][::-1].astype(int)  # rows bottom-up -> top-down
        expected = clip[shown][::-1][1:12][::-1, 1:]
        assert np.abs(bottom - expected).max() <= 3  # the video's picture for t (looping, as on Shadertoy)
        assert f[20, 28, 0] == position  # iChannelTime: the video's own time, restarting with each loop
        assert np.abs(f[20, 20, :3] - tex.reshape(-1, 3).mean(0)).max() <= 3  # textureLod on the mipmap chain
        assert f[12:24, 1:16, :3].max() <= 2  # the repeat wrap


def test_idate_iframerate_isamplerate_and_legacy_spellings(gl, tmp_path):
    date = dt.datetime(2024, 3, 9, 13, 14, 15)
    shader = tmp_path / "date.glsl"
    shader.write_text(textwrap.dedent("""
        void mainImage(out vec4 c, in vec2 p) {
            if (p.x < 8.0) c = vec4(iDate.x - 2000.0, iDate.y, iDate.z, 0.0) / 255.0;
            else if (p.x < 16.0) c = vec4(floor(iDate.w / 3600.0), mod(floor(iDate.w / 60.0), 60.0),
                                          mod(floor(iDate.w), 60.0), 0.0) / 255.0;
            else c = vec4(iFrameRate, iSampleRate / 1000.0, float(iFrame), 0.0) / 255.0;
        }
    """))  # fmt: skip
    frames = _frames(gl, ShadertoyScene(shader, date=date), [0.0, 1 / 25, 2 / 25])
    assert tuple(frames[0][2, 2, :3]) == (24, 2, 9)  # 2024, March (0-based as in JavaScript), day 9
    assert tuple(frames[0][2, 10, :3]) == (13, 14, 15)
    assert tuple(frames[2][2, 10, :3]) == (13, 14, 15)  # t = 0.08 s later: same second
    assert tuple(frames[2][2, 20, :3]) == (25, 44, 2)  # 25 fps, 44.1 kHz, frame 2
    legacy = tmp_path / "legacy.glsl"
    legacy.write_text("void main(void) { gl_FragColor = vec4(iGlobalTime / 10.0, texture2D(iChannel0, vec2(0.5)).g, "
                      "0.0, 1.0); }\n")  # fmt: skip
    image = make_clip(tmp_path / "grey.png", "-pix_fmt", "gray", "-vf", "geq=lum=200", size="4x4", frames=1)
    f = _frames(gl, ShadertoyScene(legacy, channels={0: str(image)}), [5.0])[0]
    from av import open as av_open

    with av_open(str(image)) as c:
        grey = int(next(c.decode(video=0)).to_ndarray()[0, 0])
    assert tuple(f[3, 3, :2]) == (128, grey)


def test_imouse_follows_shadertoys_click_rules(gl, tmp_path):
    shader = tmp_path / "mouse.glsl"
    # Pixel (0, 0) shows iMouse.xy, pixel (1, 0) iMouse.zw (the Image pass's alpha is always 1, as on Shadertoy).
    shader.write_text("void mainImage(out vec4 c, in vec2 p) { "
                      "c = vec4(((p.x < 1.0 ? iMouse.xy : iMouse.zw) + 64.0) / 255.0, 0.0, 1.0); }\n")  # fmt: skip
    scene = ShadertoyScene(shader)
    target = RenderTarget(gl.mgl, SIZE)
    scene.setup(gl.mgl, SIZE)

    def frame(*events: InputEvent) -> tuple[int, ...]:
        for e in events:
            scene.on_input(e)
        target.use()
        scene.render(0.0)
        px = np.frombuffer(target.fbo.read(components=4), np.uint8).reshape(SIZE[1], SIZE[0], 4)[0]
        return tuple(int(v) - 64 for v in (*px[0, :2], *px[1, :2]))

    try:
        assert frame() == (0, 0, 0, 0)
        # Down at (8, 6) from the top-left, in a 32x24 frame: Shadertoy's y counts from the bottom (18).
        down = InputEvent("pointer", "down", x=0.25, y=0.25, buttons=1)
        assert frame(down) == (8, 18, 8, 18)  # zw positive: pressed, and this is the click's frame
        assert frame() == (8, 18, 8, -18)  # still held: z positive, w negative after the click's frame
        assert frame(InputEvent("pointer", "move", x=0.5, y=0.5, buttons=1)) == (16, 12, 8, -18)
        assert frame(InputEvent("pointer", "up", x=0.5, y=0.5, buttons=0)) == (16, 12, -8, -18)
        assert frame(InputEvent("pointer", "move", x=0.9, y=0.9, buttons=0)) == (16, 12, -8, -18)  # hover: nothing
    finally:
        scene.close()
        target.release()


def test_unsupported_inputs_and_unbound_channels_name_what(gl, tmp_path):
    sampler = {"filter": "linear", "wrap": "clamp", "vflip": "true"}
    code = "void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel1, p); }"
    for kind, words in (("keyboard", "the keyboard texture"), ("music", "a sound input"), ("cubemap", "a cubemap"),
                        ("webcam", "the webcam; bind a camera")):  # fmt: skip
        path = _export(tmp_path / f"{kind}.json", [
            {"name": "Image", "type": "image", "outputs": [{"id": "4dfGRr", "channel": 0}], "code": code,
             "inputs": [{"id": "x", "kind": kind, "channel": 1, "sampler": dict(sampler)}]}])  # fmt: skip
        with pytest.raises(glrec.UnsupportedInputError, match=f"Image.*iChannel1 is {words}"):
            ShadertoyScene(path)
    cube = _export(tmp_path / "cube.json", [
        {"name": "Image", "type": "image", "outputs": [], "inputs": [], "code": code},
        {"name": "Cube A", "type": "cubemap", "inputs": [], "code": "void mainCubemap(){}"}])  # fmt: skip
    with pytest.raises(glrec.UnsupportedInputError, match="cubemap pass 'Cube A' is not supported"):
        ShadertoyScene(cube)
    sound = tmp_path / "sound.glsl"
    sound.write_text("vec2 mainSound(int s, float t) { return vec2(sin(t)); }\n")
    with pytest.raises(glrec.UnsupportedInputError, match="sound shader"):
        ShadertoyScene(sound)
    unbound = tmp_path / "unbound.glsl"
    unbound.write_text(code + "\n")
    missing = _export(tmp_path / "missing.json", [
        {"name": "Image", "type": "image", "outputs": [], "code": code,
         "inputs": [{"id": "y", "kind": "texture", "channel": 1, "path": "/media/a/nothere.jpg"}]}])  # fmt: skip
    with pytest.raises(glrec.UnsupportedInputError, match="nothere.jpg.*not next to the JSON file"):
        ShadertoyScene(missing)
    with pytest.raises(glrec.SceneError, match="reads Buffer C, but .* has no Buffer C pass"):
        ShadertoyScene(unbound, channels={1: "buffer_c"})


def test_recording_a_pasted_shader_with_a_channel(gl, tmp_path):
    image = make_clip(tmp_path / "photo.png", "-pix_fmt", "rgb24", size="64x48", frames=1)
    shader = tmp_path / "toy.glsl"
    shader.write_text("void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / iResolution.xy); }\n")
    out = tmp_path / "toy.mkv"
    result = glrec.record(ShadertoyScene(shader, channels={0: {"src": str(image), "filter": "nearest"}}), out,
                          size=(64, 48), fps=10, frames=3, qp=0, pix_fmt="yuv444p")  # fmt: skip
    assert result.frames == 3
    from av import open as av_open

    with av_open(str(out)) as c:
        got = [f.to_ndarray(format="rgb24").astype(int) for f in c.decode(video=0)]
    with av_open(str(image)) as c:
        want = next(c.decode(video=0)).to_ndarray(format="rgb24").astype(int)
    assert all(np.abs(g - want).max() <= 3 for g in got)


def test_viewer_pointer_reaches_a_shadertoy_overlay_through_the_input_queue(gl, tmp_path):
    """glrec serve's path: validated viewer messages -> InputQueue -> VideoScene -> the overlay's iMouse."""
    from glrec._transcode import VideoScene, make_overlay
    from glrec.events import InputQueue, parse_message
    from glrec.sources import VideoSource

    clip = make_clip(tmp_path / "v.mkv", "-c:v", "ffv1", size="32x24", frames=2)
    shader = tmp_path / "m.glsl"
    shader.write_text("void mainImage(out vec4 c, in vec2 p) { c = vec4(iMouse.zw / 255.0, 0.0, 1.0); }\n")
    source = VideoSource(clip)
    scene = VideoScene(source, make_overlay(str(shader), source))
    queue = InputQueue()
    queue.put(parse_message('{"type": "pointer", "action": "down", "x": 0.5, "y": 0.25, "buttons": 1}'))
    target = RenderTarget(gl.mgl, SIZE)
    scene.setup(gl.mgl, SIZE)
    try:
        assert queue.dispatch(scene) == 1
        target.use()
        scene.render(0.0)
        px = np.frombuffer(target.fbo.read(components=4), np.uint8).reshape(SIZE[1], SIZE[0], 4)[0, 0]
        assert tuple(px[:2]) == (16, 18)  # the click, in Shadertoy's pixels from the bottom-left
    finally:
        scene.close()
        target.release()


def test_an_empty_channel_reads_black_and_the_log_names_the_flag(gl, tmp_path, caplog):
    """As on shadertoy.com; the shader is pasted as is (4 of 13 public ones tried sample iChannel0)."""
    shader = tmp_path / "pasted.glsl"
    shader.write_text(
        "void mainImage(out vec4 c, in vec2 p) { c = vec4(0.5) + texture(iChannel0, p / iResolution.xy); }\n"
    )
    with caplog.at_level("WARNING", logger="glrec"):
        [frame] = _frames(gl, ShadertoyScene(shader), [0.0])
    assert (frame[..., :3] == 128).all()  # 0.5 + black
    [warning] = [r for r in caplog.records if "iChannel0" in r.getMessage()]
    assert warning.levelname == "WARNING" and "\n" not in warning.getMessage()
    assert "reads black" in warning.getMessage() and "--channel0" in warning.getMessage()


@pytest.mark.parametrize("name", ["noise", "noise_small", "grey_noise", "black"])
def test_built_in_textures_by_name_are_their_generated_texels(gl, tmp_path, name):
    from glrec.scenes.shadertoy_channels import GENERATED, generated_pixels

    shader = tmp_path / "fetch.glsl"
    shader.write_text(
        "void mainImage(out vec4 c, in vec2 p) { ivec2 s = textureSize(iChannel0, 0);"
        " c = texelFetch(iChannel0, ivec2(p) % s, 0); }\n"
    )
    size = (80, 70)  # larger than noise_small: the texels repeat
    scene = ShadertoyScene(shader, channels={0: name})
    [frame] = _frames(gl, scene, [0.0], size=size)
    texels = generated_pixels(name)
    w, h, _ = GENERATED[name]
    assert texels.shape == (h, w, 4)
    want = np.tile(texels, (size[1] // h + 1, size[0] // w + 1, 1))[: size[1], : size[0]]
    assert np.array_equal(frame[..., :3], want[..., :3])  # the Image pass is shown opaque
    assert np.array_equal(generated_pixels(name), texels)  # the same bytes every time
    if name != "black":
        assert 120 < texels.mean() < 135 and len(np.unique(texels)) == 256


def test_noise_records_from_the_command_line_without_a_file(gl, tmp_path):
    from glrec.cli import main

    shader = tmp_path / "n.glsl"
    shader.write_text("void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / 256.0); }\n")
    out = tmp_path / "n.mp4"
    assert main(["record", str(shader), "--channel0", "noise", "-o", str(out), "--frames", "2", "--size", "64x48",
                 "-q"]) == 0  # fmt: skip
    import av

    with av.open(str(out)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 2 and frames[0].std() > 20  # noise, not black
