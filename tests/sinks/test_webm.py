"""VP9 in WebM and Matroska (codec vp9, libvpx-vp9 through the CPU encoder): decoded by PyAV, read by ffprobe."""

from __future__ import annotations

import av
import numpy as np
import pytest

import glrec
from tests.conftest import glrec_record, psnr


def _frames(n: int, h: int = 96, w: int = 128) -> list[np.ndarray]:
    """A horizontal ramp that scrolls, over flat blocks: motion and smooth colour for the encoder."""
    x = np.arange(w)
    out = []
    for i in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        f[..., 0] = ((x + 4 * i) % w * 255 // (w - 1)).astype(np.uint8)[None]
        f[: h // 2, :, 1] = 160
        f[h // 2 :, :, 2] = 200
        out.append(f)
    return out


def _decode(path) -> tuple[str, list[av.VideoFrame]]:
    with av.open(str(path)) as c:
        frames = list(c.decode(video=0))
        return c.format.name, frames


def test_numpy_frames_become_vp9_in_webm_with_their_times_and_colour_tags(tmp_path, ffprobe):
    frames = _frames(30)
    out = tmp_path / "ramp.webm"
    result = glrec.write_video(out, frames, fps=30)
    assert result.frames == 30 and "libvpx-vp9" in result.summary()
    container, decoded = _decode(out)
    assert "webm" in container and len(decoded) == 30
    assert decoded[0].format.name == "yuv420p"
    assert [float(f.time) for f in decoded] == pytest.approx([i / 30 for i in range(30)], abs=6e-4)  # whole ms
    assert min(psnr(f.to_ndarray(format="rgb24"), s) for f, s in zip(decoded, frames, strict=True)) > 35
    probed = ffprobe(out, "codec_name", "profile", "color_space", "color_range", "nb_read_frames")
    assert probed == {"codec_name": "vp9", "profile": "Profile 0", "color_space": "bt709", "color_range": "tv",
                      "nb_read_frames": "30"}  # fmt: skip


def test_crf_sets_the_quality_and_yuv444p_is_profile_1(tmp_path, ffprobe):
    frames = _frames(10)
    fine = glrec.write_video(tmp_path / "fine.webm", frames, fps=30, crf=4)
    coarse = glrec.write_video(tmp_path / "coarse.webm", frames, fps=30, crf=60)
    fine_psnr, coarse_psnr = (
        min(psnr(f.to_ndarray(format="rgb24"), s) for f, s in zip(_decode(p)[1], frames, strict=True))
        for p in (fine.path, coarse.path)
    )
    assert fine.path.stat().st_size > 2 * coarse.path.stat().st_size and fine_psnr > coarse_psnr + 3
    glrec.write_video(tmp_path / "444.webm", frames, fps=30, pix_fmt="yuv444p")
    assert ffprobe(tmp_path / "444.webm", "profile", "pix_fmt") == {"profile": "Profile 1", "pix_fmt": "yuv444p"}


def test_vp9_goes_in_matroska_too(tmp_path):
    glrec.write_video(tmp_path / "v.mkv", _frames(5), fps=25, codec="vp9")
    container, decoded = _decode(tmp_path / "v.mkv")
    assert container.startswith("matroska") and len(decoded) == 5
    with av.open(str(tmp_path / "v.mkv")) as c:
        assert c.streams.video[0].codec_context.name == "vp9"


def test_the_cli_records_a_scene_to_webm(tmp_path, ffprobe):
    out = tmp_path / "cube.webm"
    glrec_record("cube", "-o", str(out), "--size", "160x120", "--frames", "15", "--preset", "8")
    assert ffprobe(out, "codec_name", "width", "height", "nb_read_frames") == {
        "codec_name": "vp9", "width": "160", "height": "120", "nb_read_frames": "15"
    }  # fmt: skip
    cube = _decode(out)[1][7].to_ndarray(format="rgb24")
    assert cube.reshape(-1, 3).std(axis=0).max() > 10  # the lit cube, not an empty frame


def test_a_batch_recorder_writes_webm_per_env(tmp_path):
    steps = [np.stack([f, f[::-1]]) for f in _frames(8)]
    with glrec.BatchRecorder(str(tmp_path / "env{env}.webm"), fps=30) as rec:
        for batch in steps:
            rec.write(batch)
    for env in range(2):
        decoded = _decode(tmp_path / f"env{env}.webm")[1]
        assert len(decoded) == 8
        assert min(psnr(d.to_ndarray(format="rgb24"), s[env]) for d, s in zip(decoded, steps, strict=True)) > 35


@pytest.mark.parametrize(("audio", "kept"), [("libopus", True), ("aac", False)])
def test_a_transcode_to_webm_copies_the_audio_webm_holds(gl, tmp_path, audio, kept, caplog):
    from media import make_clip

    src = make_clip(tmp_path / f"in-{audio}.mkv", "-c:v", "libx264", "-c:a", audio, size="64x48", frames=10,
                    audio=True)  # fmt: skip
    out = tmp_path / f"out-{audio}.webm"
    glrec.transcode(src, out)
    with av.open(str(out)) as c:
        kinds = [(s.type, s.codec_context.name) for s in c.streams]
        assert sum(1 for _ in c.decode(video=0)) == 10
    assert kinds == ([("video", "vp9"), ("audio", "opus")] if kept else [("video", "vp9")]), kinds
    assert kept or "audio stream #1 (aac) is not copied: webm files cannot hold it" in caplog.text
