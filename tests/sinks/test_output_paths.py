"""Output paths (glrec.sinks.paths): nothing the user did not name is written, nothing already there is lost.

One rule for every output kind: links are refused; an existing file (or any
frame of an existing image sequence) is replaced only with overwrite (the
Python API's default; the CLI's --overwrite/-y), and only once the new
recording is complete; a file appears with its first packet.
"""

from __future__ import annotations

import json
import logging
import signal

import av
import numpy as np
import pytest
from crash_helpers import decode_indices, start_child

import glrec
from glrec.sinks import paths

FPS = 30.0
KINDS = [("out.mp4", "h264"), ("out.mkv", "h264"), ("out.h264", "h264"), ("out.ivf", "av1"), ("out.avi", "mjpeg")]
BROKEN_SHADER = "void mainImage(out vec4 c, in vec2 p) { c = not_a_function(p); }\n"


def _record(path, frames=3, **kw):
    kw.setdefault("codec", "h264")
    return glrec.record("bars", path, size=(64, 48), fps=FPS, frames=frames, encoder="cpu", **kw)


def _frames_in(path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


# -- image sequences ------------------------------------------------------------------------


def test_an_existing_sequence_is_refused_even_without_its_frame_zero(gl, tmp_path):
    for i in (1, 2, 3):
        (tmp_path / f"f_{i:06d}.jpg").write_bytes(b"old")
    with pytest.raises(glrec.OutputExistsError, match="3 existing frame"):
        _record(tmp_path / "f_%06d.jpg", codec="mjpeg", overwrite=False)
    assert all((tmp_path / f"f_{i:06d}.jpg").read_bytes() == b"old" for i in (1, 2, 3))
    assert not (tmp_path / "f_000000.jpg").exists()


def test_overwriting_a_longer_sequence_removes_its_later_frames_and_nothing_else(gl, tmp_path):
    pattern = tmp_path / "f_%06d.jpg"
    _record(pattern, frames=6, codec="mjpeg")
    others = ["f_1.jpg", "f_000001 (copy).jpg", "notes.txt", "g_000004.jpg"]  # not names the pattern makes
    for name in others:
        (tmp_path / name).write_bytes(b"mine")
    _record(pattern, frames=3, codec="mjpeg", overwrite=True)
    assert sorted(i for i, _ in paths.sequence_frames(pattern)) == [0, 1, 2]
    assert all((tmp_path / name).read_bytes() == b"mine" for name in others)
    assert not list(tmp_path.glob(".*glrec*"))
    for i in range(3):
        with av.open(str(tmp_path / f"f_{i:06d}.jpg")) as c:
            assert len(list(c.decode(video=0))) == 1


def test_a_failed_replacement_leaves_the_old_sequence_as_it_was(gl, tmp_path):
    pattern = tmp_path / "f_%06d.jpg"
    _record(pattern, frames=4, codec="mjpeg")
    before = {p.name: p.read_bytes() for _, p in paths.sequence_frames(pattern)}
    shader = tmp_path / "broken.glsl"
    shader.write_text(BROKEN_SHADER)
    with pytest.raises(glrec.ShaderError):
        glrec.record(str(shader), pattern, size=(64, 48), frames=3, codec="mjpeg", overwrite=True)
    assert {p.name: p.read_bytes() for _, p in paths.sequence_frames(pattern)} == before
    assert not list(tmp_path.glob(".*glrec*"))


def test_a_link_among_the_frames_is_refused(gl, tmp_path):
    target = tmp_path / "elsewhere.jpg"
    target.write_bytes(b"precious")
    (tmp_path / "f_000002.jpg").symlink_to(target)
    with pytest.raises(glrec.OutputError, match="symbolic link"):
        _record(tmp_path / "f_%06d.jpg", codec="mjpeg", overwrite=True)
    assert target.read_bytes() == b"precious"


# -- links ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name, codec", KINDS)
def test_overwrite_through_a_link_is_refused_and_touches_neither_link_nor_target(gl, tmp_path, name, codec):
    target = tmp_path / f"target{name[3:]}"
    target.write_bytes(b"precious")
    link = tmp_path / name
    link.symlink_to(target)
    with pytest.raises(glrec.OutputError, match="symbolic link") as info:
        _record(link, codec=codec, overwrite=True)
    assert str(target) in str(info.value)  # says where the link points
    assert link.is_symlink() and target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, target.name])


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_dangling_link_is_refused(gl, tmp_path, overwrite):
    link = tmp_path / "out.mkv"
    link.symlink_to(tmp_path / "nowhere" / "x.mkv")
    with pytest.raises(glrec.OutputError, match="symbolic link"):
        _record(link, overwrite=overwrite)
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


# -- replacing a file -----------------------------------------------------------------------


@pytest.mark.parametrize("name, codec", KINDS)
def test_overwrite_replaces_the_file_once_the_new_one_is_complete(gl, tmp_path, name, codec):
    path = tmp_path / name
    _record(path, frames=5, codec=codec)
    inode = path.stat().st_ino
    _record(path, frames=9, codec=codec, overwrite=True)
    assert _frames_in(path) == 9
    assert path.stat().st_ino != inode  # a new file renamed into place, not the old one rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_python_api_replaces_an_existing_output_by_default_and_refuses_with_overwrite_false(gl, tmp_path):
    """As imageio, mediapy, PyAV and OpenCV do, so that a notebook cell can run again."""
    path = tmp_path / "cell.mp4"
    _record(path, frames=5)
    _record(path, frames=9)
    assert _frames_in(path) == 9
    glrec.write_video(path, [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(4)], fps=FPS)
    assert _frames_in(path) == 4
    with glrec.Recorder(path, fps=FPS, codec="h264") as rec:
        for _ in range(2):
            rec.write(np.zeros((48, 64, 3), np.uint8))
    assert _frames_in(path) == 2
    with pytest.raises(glrec.OutputExistsError, match="overwrite=True"):
        _record(path, frames=3, overwrite=False)
    assert _frames_in(path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cell.mp4"]


@pytest.mark.parametrize("name, codec", KINDS)
def test_a_failed_overwrite_keeps_the_old_file_and_says_what_happened(gl, tmp_path, caplog, name, codec):
    path = tmp_path / name
    _record(path, frames=5, codec=codec)
    old = path.read_bytes()
    shader = tmp_path / "broken.glsl"
    shader.write_text(BROKEN_SHADER)
    with caplog.at_level(logging.WARNING, logger="glrec"), pytest.raises(glrec.ShaderError):
        glrec.record(str(shader), path, size=(64, 48), frames=3, codec=codec, encoder="cpu", overwrite=True)
    assert path.read_bytes() == old
    assert "rewrite" not in caplog.text  # no file was made, so nothing was rewritten or "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "broken.glsl"])


@pytest.mark.parametrize("name", ["new.mp4", "new.mov"])
def test_a_recording_that_fails_before_its_first_frame_says_nothing_about_a_rewrite(gl, tmp_path, caplog, name):
    """It used to warn "Could not rewrite X.mp4 ... kept the fragmented MP4" when no file existed at all."""
    shader = tmp_path / "broken.glsl"
    shader.write_text(BROKEN_SHADER)
    with caplog.at_level(logging.WARNING, logger="glrec"), pytest.raises(glrec.ShaderError):
        glrec.record(str(shader), tmp_path / name, size=(64, 48), frames=3, encoder="cpu")
    assert caplog.text == "" and not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["full.mp4", "full.h264"])
def test_disk_full_during_an_overwrite_keeps_the_old_file(gl, tmp_path, name):
    path = tmp_path / name
    _record(path, frames=5)
    old = path.read_bytes()
    child = start_child(str(path), "--fsize", "12000", "--frames", "3000", "--overwrite")
    out, err = child.communicate(timeout=300)
    result = next(json.loads(line[7:]) for line in out.splitlines() if line.startswith("result "))
    assert result["type"] == "DiskFullError", err
    assert path.read_bytes() == old
    staged = paths.staging_name(path)
    assert str(staged) in result["message"] and "was left as it was" in result["message"]
    indices = decode_indices(staged, FPS)  # the new recording's frames, kept beside the old file
    assert len(indices) == result["frames_kept"] > 0 and indices == sorted(set(indices))


# -- a file appears with its first packet ---------------------------------------------------


@pytest.mark.parametrize("name, codec", KINDS)
def test_no_file_before_the_first_packet(gl, tmp_path, name, codec):
    path = tmp_path / name
    with glrec.Recorder(path, size=(64, 48), fps=FPS, codec=codec, encoder="cpu") as rec:
        assert not path.exists()
        rec.render("bars")
    assert _frames_in(path) == 1


def test_a_raw_stream_killed_before_its_first_packet_leaves_nothing_to_block_a_rerun(gl, tmp_path):
    path = tmp_path / "early.h264"
    # The child stops after one frame (still in the readback ring) until killed: however late this reads its
    # lines on a loaded machine, the kill finds it there.
    child = start_child(str(path), "--frames", "100000", "--pause-after", "1")
    for line in child.stdout:
        if line.startswith("paused"):
            child.send_signal(signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert not path.exists()
    _record(path, overwrite=False)  # no overwrite needed
    assert _frames_in(path) == 3
