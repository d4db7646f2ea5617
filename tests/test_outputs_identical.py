"""The same scene recorded on the CPU path gives the same bytes as before the house was rearranged (issue 31).

A fixed recording (colour bars rendered on GL, and frames written from numpy) goes
to an MP4 (H.264), a raw ``.h264``, a Matroska Motion-JPEG and a ``.jpg`` sequence;
each output's SHA-256 is compared with the value the code had at main 2568e0f,
before issue 31 moved the encoders, options and sources into their rooms.

The MP4, the raw stream and the
JPEGs are compared byte for byte; Matroska files differ on every run (FFmpeg's muxer
writes random segment and track UIDs), so for the ``.mkv`` the stream's parameters and
every packet (timestamps, key flag, bytes) are compared instead.

The recordings run in a child process of their own: libx264's output for the same frames and
settings changed, in one process, after an unrelated recording had run there first (seen at main
2568e0f as well), so a test process that has recorded other things cannot be compared.

Every setting that could differ between machines is fixed: one encoder thread
(x264 and mjpeg slice/frame decisions follow the thread count, which defaults to
the core count), the host handoff, the CPU encoder, and swscale for written
frames (``array_convert="cpu"``). What is left is the build of FFmpeg and the GL
that renders the bars: the values hold for PyAV's wheel of the version they were
recorded with and Mesa's llvmpipe (CI), and the test says so and skips elsewhere.

Regenerate (only when a change of output is intended, and say why in the commit):
``PYTHONPATH=$PWD python tests/test_outputs_identical.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import av
import numpy as np
import pytest

#: Where the values below were recorded: PyAV's version, its libavcodec, and the GL renderer's family.
RECORDED_WITH = {"av": "18.1.0", "libavcodec": [62, 28, 102], "gl": "llvmpipe"}
#: SHA-256 of each output, from main 2568e0f (before issue 31). The two JPEG outputs changed on purpose in
#: issue 35: the CPU's mjpeg reads quality on libjpeg's scale (at the default 90 FFmpeg's q-scale 2, not 5);
#: with the old quantiser every output still gives the values of 2568e0f (checked when they were replaced).
EXPECTED = {
    "bars.mp4": "4525c907520c9d7ed2830331eaa565f0cace393e5532a81b56c70e196a891a3a",
    "bars.h264": "69ddb1a105ca7a9720719145641a8fbbdb3997a28953e812f9c41e2b7acd3b49",
    "bars.mkv": "c000651fb9093906c115b75acccfc81e8254d278edb0788c859c07bbc8d57536",
    "bars_jpg": "ae9392d07d8073680d061049083da21b480ccc3b5bce8d45a6cf548f3a4f8b37",
    "written.mp4": "dae9c00b07735cb81db4d410794e476e5cbdc7ed7bc46443c6deea09aef16047",
}
#: The same code and PyAV wheel on another 2-core AMD EPYC machine (2026-12-02, checked at a144a00 and on today's
#: main): libx264's bytes differ there, every run the same (the MJPEG and JPEG outputs do not). Not glibc's libm
#: dispatch (GLIBC_TUNABLES without FMA/AVX2 gave the same bytes); the cause was not found, so both observed sets
#: are accepted: a change of glrec's output changes both.
EXPECTED_X264_ELSEWHERE = {
    **EXPECTED,
    "bars.mp4": "e6a7a29a1431c1e39d3b33ef33a6745ac69650c17bf0c0bd368d2f5a28e022ba",
    "bars.h264": "8438e5b183299f63d9ebb55c41dd38416b13ac2b8e4f15021366637c09e977a4",
    "written.mp4": "79abdc15039367fe35928170ac08a7e18b6d275299e20b46e96b38d9a2eea5bb",
}

SIZE = (160, 96)
FPS = 30
FRAMES = 12
#: Runs of the recording child, at most: libx264 itself does not always give the same bytes for the same
#: frames here (PyAV alone, one thread, the same YUV frames 20 times: 3 to 6 different bitstreams, 2026-12-02,
#: with glrec's code before and after that session alike), so each output must match a recorded value in one
#: of the runs. A change of glrec's output matches in none.
RUNS = 6
#: The settings that make the bytes the same on every machine with the same FFmpeg (see the module docstring).
FIXED = {"encoder": "cpu", "handoff": "host", "threads": 1}


def _written_frames() -> list[np.ndarray]:
    """Frames that depend on nothing but their index: a gradient with a moving block."""
    h, w = SIZE[1], SIZE[0]
    y, x = np.mgrid[0:h, 0:w]
    frames = []
    for i in range(FRAMES):
        rgb = np.stack([(x * 255 // (w - 1)), (y * 255 // (h - 1)), np.full_like(x, (i * 20) % 256)], axis=-1)
        rgb[10:30, 8 * i : 8 * i + 20] = (255, 255, 255)
        frames.append(rgb.astype(np.uint8))
    return frames


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _stream_digest(path: Path) -> str:
    """What a Matroska file holds, without the random UIDs FFmpeg's muxer writes into every file.

    The stream's parameters as a decoder reads them, and every packet: its timestamps, key flag and bytes.
    """
    h = hashlib.sha256()
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        cc = s.codec_context
        params = (c.format.name, cc.name, cc.width, cc.height, cc.pix_fmt, cc.color_range, cc.color_primaries,
                  cc.color_trc, cc.colorspace, str(s.time_base), str(s.average_rate), s.frames)  # fmt: skip
        h.update(repr(params).encode())
        for packet in c.demux(s):
            if packet.size:
                h.update(repr((packet.pts, packet.dts, packet.is_keyframe, packet.size)).encode() + bytes(packet))
    return h.hexdigest()


def record_all(folder: Path) -> dict[str, str]:
    """Record every output into ``folder``; their SHA-256 by name."""
    import glrec

    out = {}
    for name, codec in (("bars.mp4", "h264"), ("bars.h264", "h264"), ("bars.mkv", "mjpeg")):
        glrec.record("bars", folder / name, size=SIZE, fps=FPS, frames=FRAMES, codec=codec, **FIXED)
        out[name] = _stream_digest(folder / name) if name.endswith(".mkv") else _digest([folder / name])
    images = folder / "jpg"
    images.mkdir()
    glrec.record("bars", images / "bars_%03d.jpg", size=SIZE, fps=FPS, frames=FRAMES, codec="mjpeg", **FIXED)
    out["bars_jpg"] = _digest(list(images.iterdir()))
    glrec.write_video(folder / "written.mp4", _written_frames(), fps=FPS, array_convert="cpu", **FIXED)
    out["written.mp4"] = _digest([folder / "written.mp4"])
    return out


def _gl_family() -> str:
    from glrec.gl.context import create_context

    with create_context() as gl:
        return "llvmpipe" if "llvmpipe" in gl.info.renderer.lower() else gl.info.renderer


def _environment() -> dict[str, object]:
    return {"av": av.__version__, "libavcodec": list(av.library_versions["libavcodec"]), "gl": _gl_family()}


@pytest.mark.gl
def test_cpu_path_outputs_are_byte_identical_to_before(tmp_path):
    root = Path(__file__).resolve().parents[1]
    while not (root / "glrec").is_dir():  # the checkout whose glrec this test imports
        root = root.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    accepted = {name: {EXPECTED[name], EXPECTED_X264_ELSEWHERE[name]} for name in EXPECTED}
    seen: dict[str, set[str]] = {name: set() for name in EXPECTED}
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, cwd=tmp_path, env=env,
                              timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)
        if got["environment"] != RECORDED_WITH:
            pytest.skip(f"the expected bytes were recorded with {RECORDED_WITH}; this machine has "
                        f"{got['environment']}")  # fmt: skip
        for name, digest in got["sha256"].items():
            seen[name].add(digest)
        if all(seen[name] & accepted[name] for name in EXPECTED):
            return
    missed = {name: sorted(seen[name]) for name in EXPECTED if not seen[name] & accepted[name]}
    raise AssertionError(f"outputs whose bytes matched no recorded value in {RUNS} runs: {missed}")


if __name__ == "__main__":  # pragma: no cover
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps({"environment": _environment(), "sha256": record_all(Path(tmp))}, indent=2))
    sys.exit(0)
