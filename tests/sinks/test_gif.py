"""Animated GIF output (``.gif``, codec gif, the CPU encoder): decoded by PyAV and counted by ffprobe."""

from __future__ import annotations

import av
import numpy as np
import pytest

import glrec
from tests.conftest import glrec_record, psnr


def _frames(n: int, h: int = 72, w: int = 96) -> list[np.ndarray]:
    """Flat blocks that move: red left, blue right, a green band that grows, a white square that walks."""
    out = []
    for i in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        f[:, : w // 2] = (200, 30, 30)
        f[:, w // 2 :] = (20, 40, 220)
        f[: 6 + 4 * i, :, 1] = 180
        f[40:56, 4 * i : 4 * i + 16] = 255
        out.append(f)
    return out


def _decoded(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        assert c.streams.video[0].codec_context.name == "gif"
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_numpy_frames_become_a_gif_with_their_colours_and_times(tmp_path, ffprobe):
    frames = _frames(12)
    out = tmp_path / "blocks.gif"
    with glrec.Recorder(out, fps=10) as rec:
        for f in frames:
            rec.write(f)
    result = rec.close()
    assert result.frames == 12
    decoded = _decoded(out)
    assert len(decoded) == 12
    # yuv444p (gif's default) and a palette of each frame's own colours: the blocks come back nearly exact
    assert min(psnr(a, b) for a, b in zip(decoded, frames, strict=True)) > 45
    with av.open(str(out)) as c:
        times = [float(f.time) for f in c.decode(video=0)]
    assert times == pytest.approx([i / 10 for i in range(12)], abs=1e-6)  # delays of 10/100 s
    probed = ffprobe(out, "codec_name", "width", "height", "nb_read_frames")
    assert probed == {"codec_name": "gif", "width": "96", "height": "72", "nb_read_frames": "12"}
    assert b"NETSCAPE2.0" in out.read_bytes()  # the loop block: browsers play it again and again


def test_a_gradient_keeps_its_shape_through_the_palette(tmp_path):
    """A smooth ramp has more colours than a palette holds: error diffusion keeps it close on average."""
    h, w = 64, 256
    ramp = np.zeros((h, w, 3), np.uint8)
    ramp[..., 0] = np.arange(w, dtype=np.uint8)[None]
    ramp[..., 1] = np.linspace(0, 255, h).astype(np.uint8)[:, None]
    ramp[..., 2] = 96
    glrec.write_video(tmp_path / "ramp.gif", [ramp, ramp[:, ::-1]], fps=5)
    decoded = _decoded(tmp_path / "ramp.gif")
    assert len(decoded) == 2
    assert psnr(decoded[0], ramp) > 30 and psnr(decoded[1], ramp[:, ::-1]) > 30
    # the ramp still rises left to right in red: the means of 16-column blocks follow the source's. (FFmpeg 7's
    # palettegen picks colours in OkLab, so a block can be off by 16 levels in red; FFmpeg 5's was within 2.)
    blocks = decoded[0][..., 0].reshape(h, 16, 16).mean(axis=(0, 2))
    assert np.corrcoef(blocks, ramp[..., 0].reshape(h, 16, 16).mean(axis=(0, 2)))[0, 1] > 0.99
    assert np.all(np.diff(blocks) > 0)


def test_yuv420p_asked_for_is_honoured_and_smears_the_edge_colours(tmp_path):
    frames = _frames(3)
    glrec.write_video(tmp_path / "444.gif", frames, fps=10)
    glrec.write_video(tmp_path / "420.gif", frames, fps=10, pix_fmt="yuv420p")
    p444 = min(psnr(a, b) for a, b in zip(_decoded(tmp_path / "444.gif"), frames, strict=True))
    p420 = min(psnr(a, b) for a, b in zip(_decoded(tmp_path / "420.gif"), frames, strict=True))
    assert p444 > p420 + 5, (p444, p420)


def test_a_gif_holds_odd_sizes_as_they_are(tmp_path):
    frames = [f[:71, :95] for f in _frames(3)]
    glrec.write_video(tmp_path / "odd.gif", frames, fps=10)
    decoded = _decoded(tmp_path / "odd.gif")
    assert [d.shape for d in decoded] == [(71, 95, 3)] * 3
    assert min(psnr(a, b) for a, b in zip(decoded, frames, strict=True)) > 45


def test_the_cli_records_a_scene_to_a_gif(tmp_path, ffprobe):
    out = tmp_path / "bars.gif"
    run = glrec_record("bars", "-o", str(out), "--size", "96x64", "--fps", "25", "--frames", "6")
    assert "encoder gif" in run.stdout + run.stderr
    assert ffprobe(out, "codec_name", "nb_read_frames") == {"codec_name": "gif", "nb_read_frames": "6"}
    with av.open(str(out)) as c:
        times = [float(f.time) for f in c.decode(video=0)]
    assert times == pytest.approx([i * 0.04 for i in range(6)], abs=1e-6)
    bars = _decoded(out)[0]
    assert bars.reshape(-1, 3).std(axis=0).min() > 20  # colour bars, not one flat colour


def test_gif_goes_only_into_a_gif(tmp_path):
    with pytest.raises(glrec.ConfigError, match=r"A \.mp4 file cannot carry gif.*\.gif"):
        glrec.write_video(tmp_path / "x.mp4", _frames(2), fps=10, codec="gif")
    assert not (tmp_path / "x.mp4").exists()


def test_a_batch_recorder_writes_a_gif_per_env(tmp_path):
    """Vectorised envs to one GIF each (as W&B and TensorBoard show rollouts); each env's frames come back."""
    steps = [np.stack([f, f[:, ::-1], 255 - f]) for f in _frames(5)]  # (3, H, W, 3) a step
    with glrec.BatchRecorder(str(tmp_path / "env{env}.gif"), fps=20) as rec:
        for batch in steps:
            rec.write(batch)
    for env in range(3):
        decoded = _decoded(tmp_path / f"env{env}.gif")
        assert len(decoded) == 5
        assert min(psnr(d, s[env]) for d, s in zip(decoded, steps, strict=True)) > 45


def test_batch_clips_and_segments_are_not_cut_from_a_gif(tmp_path):
    rec = glrec.BatchRecorder(str(tmp_path / "s{env}-{episode}-{part}.gif"), segment_seconds=1, fps=10)
    with pytest.raises(glrec.ConfigError, match="a GIF has one, its first frame"):
        rec.write(np.stack(_frames(1) * 2))
    rec.close()
    assert list(tmp_path.iterdir()) == []


def test_a_transcode_to_gif_leaves_the_audio_out_and_says_so(gl, tmp_path, caplog):
    from media import make_clip

    src = make_clip(tmp_path / "in.mkv", "-c:v", "libx264", "-c:a", "aac", size="64x48", frames=10, audio=True)
    out = tmp_path / "out.gif"
    glrec.transcode(src, out)  # the clip is 10 fps: a GIF plays it
    with av.open(str(out)) as c:
        assert [s.type for s in c.streams] == ["video"]
        assert sum(1 for _ in c.decode(video=0)) == 10
    assert "audio is not copied: a gif output holds video only" in caplog.text
