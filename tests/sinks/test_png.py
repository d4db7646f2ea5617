"""PNG sequences (``frames_%06d.png``, codec png, the PNG encoder): lossless, decoded by PyAV and counted by ffprobe.

Every check compares pixels exactly: written arrays against themselves, rendered scenes against the same scene
drawn with plain moderngl calls (:func:`glrec.diagnostics.common.reference_rgb`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

import glrec
from glrec.diagnostics.common import reference_rgb
from tests.conftest import glrec_record, psnr


def _files(pattern: Path) -> list[Path]:
    head = pattern.name.split("%")[0]
    return sorted(p for p in pattern.parent.iterdir() if p.name.startswith(head) and p.suffix == ".png")


def _decoded(pattern: Path, fmt: str = "rgb24") -> np.ndarray:
    """Each file of the sequence decoded by PyAV (FFmpeg's PNG decoder), in order."""
    out = []
    for f in _files(pattern):
        with av.open(str(f)) as c:
            assert c.streams.video[0].codec_context.name == "png"
            out.extend(fr.to_ndarray(format=fmt) for fr in c.decode(video=0))
    return np.stack(out)


def _noise(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("array_convert", ["gl", "cpu"])
def test_numpy_frames_come_back_exactly_at_an_odd_size(tmp_path, ffprobe, array_convert):
    """Noise at 47x33, through the GL upload and pack stage or straight to the encoder: every value the same."""
    frames = _noise((7, 33, 47, 3))
    out = tmp_path / "noise_%04d.png"
    result = glrec.write_video(out, frames, fps=12, array_convert=array_convert)
    assert (result.frames, result.codec, result.encoder) == (7, "png", "png")
    assert [p.name for p in _files(out)] == [f"noise_{i:04d}.png" for i in range(7)]
    assert np.array_equal(_decoded(out), frames)
    probed = ffprobe(out, "codec_name", "width", "height", "pix_fmt", "nb_read_frames")  # FFmpeg's image2 pattern
    assert probed == {"codec_name": "png", "width": "47", "height": "33", "pix_fmt": "rgb24", "nb_read_frames": "7"}
    assert result.bytes == sum(p.stat().st_size for p in _files(out))
    if array_convert == "gl":  # glrec bench's reading of an output: the sequence's files, through FFmpeg's image2
        from glrec.bench.common import describe_output

        info = describe_output(out)
        assert (info["output_codec"], info["frames_written"], info["output_bytes"]) == ("png", 7, result.bytes)


@pytest.mark.parametrize("array_convert", ["gl", "cpu"])
def test_rgba_keeps_alpha_and_rgb_frames_become_opaque(tmp_path, array_convert):
    rgba = _noise((4, 20, 30, 4), seed=1)
    glrec.write_video(tmp_path / "a_%03d.png", rgba, fps=10, pix_fmt="rgba", array_convert=array_convert)
    assert np.array_equal(_decoded(tmp_path / "a_%03d.png", "rgba"), rgba)
    rgb = _noise((3, 20, 30, 3), seed=2)
    glrec.write_video(tmp_path / "b_%03d.png", rgb, fps=10, pix_fmt="rgba", array_convert=array_convert)
    back = _decoded(tmp_path / "b_%03d.png", "rgba")
    assert np.array_equal(back[..., :3], rgb) and (back[..., 3] == 255).all()
    # rgb24 (the default) leaves an RGBA frame's alpha out, the colour as it was
    glrec.write_video(tmp_path / "c_%03d.png", rgba, fps=10, array_convert=array_convert)
    assert np.array_equal(_decoded(tmp_path / "c_%03d.png"), rgba[..., :3])


def test_grey_float_and_16_bit_frames_are_written_as_glrec_makes_them_8_bit(tmp_path):
    grey = _noise((3, 16, 24), seed=3)
    glrec.write_video(tmp_path / "g_%02d.png", grey, fps=5)
    assert np.array_equal(_decoded(tmp_path / "g_%02d.png"), np.repeat(grey[..., None], 3, axis=3))
    ones = _noise((2, 16, 24, 3), seed=4)
    glrec.write_video(tmp_path / "f_%02d.png", ones.astype(np.float32) / 255, fps=5)  # floats in [0, 1]
    assert np.array_equal(_decoded(tmp_path / "f_%02d.png"), ones)
    glrec.write_video(tmp_path / "w_%02d.png", ones.astype(np.uint16) * 257, fps=5)  # 16-bit: the high byte
    assert np.array_equal(_decoded(tmp_path / "w_%02d.png"), ones)


def test_a_rendered_scene_is_the_scene_drawn_with_plain_moderngl(tmp_path, ffprobe):
    """The CLI as users run it: each PNG is the cube as moderngl draws it itself, pixel for pixel; level 9 makes
    smaller files of the same pixels."""
    fast, small = tmp_path / "cube_%06d.png", tmp_path / "small_%06d.png"
    glrec_record("cube", "-o", str(fast), "--frames", "6", "--size", "96x64", "--fps", "30")
    glrec_record("cube", "-o", str(small), "--frames", "6", "--size", "96x64", "--fps", "30", "--png-compression", "9")
    reference = np.stack(reference_rgb("cube", (96, 64), 6, 30))
    assert np.array_equal(_decoded(fast), reference)
    assert np.array_equal(_decoded(small), reference)
    assert sum(p.stat().st_size for p in _files(small)) < sum(p.stat().st_size for p in _files(fast))
    assert ffprobe(fast, "nb_read_frames") == {"nb_read_frames": "6"}


def test_rendered_alpha_is_the_render_targets(tmp_path):
    """pix_fmt rgba keeps what the scene wrote: the cube's clear leaves the background transparent."""
    glrec.record("cube", tmp_path / "c_%03d.png", size=(64, 48), frames=2, pix_fmt="rgba")
    back = _decoded(tmp_path / "c_%03d.png", "rgba")
    reference = np.stack(reference_rgb("cube", (64, 48), 2, 30))
    assert np.array_equal(back[..., :3], reference)
    alpha = back[..., 3]
    assert set(np.unique(alpha)) == {0, 255}  # background and cube
    assert (alpha[:, 0, 0] == 0).all() and (alpha[:, 24, 32] == 255).all()


def test_a_video_input_becomes_frames(tmp_path, ffprobe):
    """``glrec transcode in.mp4 -o f_%05d.png``, as ``ffmpeg -i in.mp4 f_%05d.png``: every frame, its audio left
    out with a warning; the pictures as FFmpeg converts them to RGB, within the matrices' rounding."""
    src = tmp_path / "in.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-f", "lavfi",
                    "-i", "sine", "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv444p", "-c:a", "aac", "-shortest",
                    str(src)], check=True)  # fmt: skip
    out = tmp_path / "f_%05d.png"
    run = subprocess.run([sys.executable, "-m", "glrec", "transcode", str(src), "-o", str(out)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "audio is not copied: a png output holds video only" in run.stderr
    with av.open(str(src)) as c:
        expected = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    got = _decoded(out)
    assert len(got) == len(expected) == 10 == int(ffprobe(out, "nb_read_frames")["nb_read_frames"])
    assert min(psnr(a, b) for a, b in zip(got, expected, strict=True)) > 40


def test_per_env_sequences_and_a_grid_from_a_batch(tmp_path):
    steps = _noise((5, 3, 24, 32, 3), seed=5)
    with glrec.BatchRecorder(str(tmp_path / "env{env}_%03d.png"), fps=10) as rec:
        for batch in steps:
            rec.write(batch)
    for env in range(3):
        assert np.array_equal(_decoded(tmp_path / f"env{env}_%03d.png"), steps[:, env])
    with glrec.BatchRecorder(str(tmp_path / "grid_%03d.png"), fps=10, layout="grid") as rec:
        for batch in steps:
            rec.write(batch)
    grid = _decoded(tmp_path / "grid_%03d.png")
    assert grid.shape[0] == 5 and np.array_equal(grid[:, :24, :32], steps[:, 0])  # the first env, top left


@pytest.mark.parametrize(
    "options, words",
    [
        ({"crf": 20}, "settings of the video encoders (crf 20.0 given), which the PNG encoder does not take"),
        ({"quality": 50}, "quality is JPEG quality (codec mjpeg) (quality 50 given)"),
        ({"threads": 3}, "threads is a setting of the CPU encoders"),
        ({"encoder_options": {"pred": "mixed"}}, "takes no codec options (pred given)"),
        ({"matrix": "bt601"}, "no YUV matrix or range applies; drop matrix='bt601'"),
        ({"colour_range": "full"}, "no YUV matrix or range applies; drop colour_range='full'"),
        ({"pix_fmt": "yuv420p"}, "PNG holds RGB, not yuv420p: use pix_fmt rgb24"),
        ({"encoder": "cpu"}, "The CPU encoder encodes h264, hevc, av1, vp9, mjpeg, gif, not png; for png use encoder"),
        ({"png_compression": 10}, "png_compression 10 is outside"),
        ({"live": True}, "A PNG sequence is files, not a stream: live mode takes codec h264"),
    ],
)
def test_refused_with_the_reason_and_nothing_written(tmp_path, options, words):
    out = tmp_path / "r_%04d.png"
    with pytest.raises(glrec.ConfigError) as info:
        glrec.write_video(out, _noise((2, 16, 16, 3)), fps=10, **options)
    assert words in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "target, options, words",
    [
        ("x.png", {}, "An image sequence needs a frame-number pattern in its name, e.g. "),
        ("x.mp4", {"pix_fmt": "rgb24"}, "pix_fmt rgb24 is PNG's (codec png); h264 takes"),
        ("x.mp4", {"png_compression": 3}, "png_compression is the PNG encoder's level (codec png)"),
        ("x.mkv", {"codec": "png"}, "A .mkv file cannot carry png"),
    ],
)
def test_png_options_elsewhere_are_refused(tmp_path, target, options, words):
    with pytest.raises(glrec.ConfigError) as info:
        glrec.write_video(tmp_path / target, _noise((2, 16, 16, 3)), fps=10, **options)
    assert words in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_sequence_is_kept_or_replaced_whole(tmp_path):
    out = tmp_path / "s_%02d.png"
    first = _noise((4, 8, 8, 3), seed=6)
    glrec.write_video(out, first, fps=5)
    with pytest.raises(glrec.OutputExistsError):
        glrec.write_video(out, _noise((2, 8, 8, 3), seed=7), fps=5, overwrite=False)
    assert np.array_equal(_decoded(out), first)
    second = _noise((2, 8, 8, 3), seed=8)
    glrec.write_video(out, second, fps=5)  # the Python API replaces, as imageio does; the CLI asks for -y
    assert [p.name for p in _files(out)] == ["s_00.png", "s_01.png"]  # the old sequence's frames 2, 3 went
    assert np.array_equal(_decoded(out), second)


def test_a_processing_stage_and_its_new_size_reach_the_pngs_exactly(tmp_path):
    """``process=`` runs before the pack stage; a stage that changes the size checks the options again (PNG's
    unset matrix and range must pass that second check)."""
    from glrec.process import Process

    reference = np.stack(reference_rgb("cube", (64, 48), 3, 30))
    glrec.record("cube", tmp_path / "i_%02d.png", size=(64, 48), frames=3, process=lambda f: 255 - f)
    assert np.array_equal(_decoded(tmp_path / "i_%02d.png"), 255 - reference)
    half = Process(lambda f: f[::2, ::2], size=(32, 24))
    glrec.record("cube", tmp_path / "h_%02d.png", size=(64, 48), frames=3, process=half)
    assert np.array_equal(_decoded(tmp_path / "h_%02d.png"), reference[:, ::2, ::2])


def test_episodes_kept_by_outcome_as_sequences(tmp_path):
    """``keep=`` cuts clips at keyframes, and every PNG is one: the kept episode's frames, the other's none."""
    steps = _noise((6, 2, 16, 16, 3), seed=10)
    with glrec.BatchRecorder(str(tmp_path / "k{env}-{episode}_%02d.png"), fps=10, keep=lambda info: info) as rec:
        for s, batch in enumerate(steps):
            rec.write(batch)
            if s == 2:
                rec.end_episode(0, True)
                rec.end_episode(1, False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k0-0_00.png", "k0-0_01.png", "k0-0_02.png"]
    assert np.array_equal(_decoded(tmp_path / "k0-0_%02d.png"), steps[:3, 0])
