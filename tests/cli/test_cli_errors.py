"""What the command line says when something outside the options goes wrong: one line, no traceback.

Each case runs ``glrec record`` as a user would, in a child process (issue 13,
item 9): a shader file that is not UTF-8, a scene whose ``close()`` raises,
and standard output that is a closed pipe or a full device.
"""

from __future__ import annotations

import os
import subprocess
import sys

import av
import pytest
from crash_helpers import child_env

FRAMES = 12


def _glrec(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "glrec", "record", *args], text=True, env=child_env(), timeout=180, **kwargs
    )


def _frames_in(path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def test_a_shader_that_is_not_utf8_is_one_line(tmp_path):
    shader = tmp_path / "latin1.glsl"
    shader.write_bytes("// caf\xe9\nvoid mainImage(out vec4 c, in vec2 p) { c = vec4(1.0); }\n".encode("latin-1"))
    out = tmp_path / "x.mp4"
    proc = _glrec(str(shader), "-o", str(out), "--frames", "2", capture_output=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not UTF-8" in lines[0] and str(shader) in lines[0], lines
    assert not out.exists()


def test_a_scene_whose_close_raises_is_one_line_and_the_file_is_finished(gl, tmp_path):
    scene = tmp_path / "leaky.py"
    scene.write_text(
        "class Leaky:\n"
        "    def setup(self, ctx, size):\n        self.ctx = ctx\n"
        "    def render(self, t):\n        self.ctx.clear(t % 1.0, 0.2, 0.4)\n"
        "    def close(self):\n        raise RuntimeError('buffer already released')\n"
    )
    out = tmp_path / "leaky.mp4"
    proc = _glrec(f"{scene}:Leaky", "-o", str(out), "--size", "64x48", "--frames", str(FRAMES), capture_output=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Closing scene Leaky failed" in lines[0] and "buffer already released" in lines[0]
    assert _frames_in(out) == FRAMES


def test_stdout_closed_by_its_reader_is_not_an_error(gl, tmp_path):
    """``glrec record ... | true``: the reader leaves before the summary; the recording is complete, status 0."""
    out = tmp_path / "piped.mp4"
    read, write = os.pipe()
    os.close(read)  # the reader is gone before glrec writes a byte
    try:
        proc = _glrec("bars", "-o", str(out), "--size", "64x48", "--frames", str(FRAMES), stdout=write,
                      stderr=subprocess.PIPE)  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _frames_in(out) == FRAMES


def test_stdout_on_a_full_device_is_one_line(gl, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    out = tmp_path / "full.mp4"
    with open("/dev/full", "w") as full:
        proc = _glrec("bars", "-o", str(out), "--size", "64x48", "--frames", str(FRAMES), stdout=full,
                      stderr=subprocess.PIPE)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "standard output" in lines[0], lines
    assert _frames_in(out) == FRAMES  # the recording itself is complete
