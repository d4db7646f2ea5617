"""Test inputs made by the ffmpeg command line (an independent encoder), and readback helpers."""

from __future__ import annotations

import shutil
import socket
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

FFMPEG = shutil.which("ffmpeg")


def ffmpeg(*args: str, timeout: float = 60) -> None:
    """Run the ffmpeg CLI quietly; skip the test when it is not installed."""
    if FFMPEG is None:
        pytest.skip("needs the ffmpeg command line (apt-get install ffmpeg)")
    subprocess.run([FFMPEG, "-hide_banner", "-loglevel", "error", "-y", *args], check=True, timeout=timeout)


def make_clip(path: Path, *codec: str, size: str = "64x48", rate: int = 10, frames: int = 5, audio: bool = False,
            source: str = "testsrc2") -> Path:  # fmt: skip
    """``frames`` of lavfi ``source`` (optionally with a sine tone) encoded with ``codec`` arguments."""
    inputs = ["-f", "lavfi", "-i", f"{source}=size={size}:rate={rate}"]
    if audio:
        inputs += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=48000:duration={frames / rate}"]
    # With audio, -frames:v would end the file before the audio encoder's packets are muxed (ffmpeg 5.1).
    length = ["-t", f"{frames / rate}"] if audio else ["-frames:v", str(frames)]
    ffmpeg(*inputs, *length, *codec, str(path))
    return path


def vfr(path: Path, times_ms: list[int], size: tuple[int, int] = (32, 24)) -> list[tuple[int, int, int]]:
    """A variable-frame-rate file: one flat colour per frame at ``times_ms``; returns the colours."""
    colours = [((40 * i) % 256, (255 - 60 * i) % 256, (90 + 30 * i) % 256) for i in range(len(times_ms))]
    with av.open(str(path), "w") as out:
        s = out.add_stream("ffv1", rate=1000)
        s.width, s.height, s.pix_fmt = size[0], size[1], "bgr0"
        s.time_base = Fraction(1, 1000)
        for t, c in zip(times_ms, colours, strict=True):
            img = np.empty((size[1], size[0], 3), np.uint8)
            img[...] = c
            frame = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format="bgr0")
            frame.pts, frame.time_base = t, Fraction(1, 1000)
            for p in s.encode(frame):
                out.mux(p)
        for p in s.encode(None):
            out.mux(p)
    return colours


def texture_rgb(src) -> np.ndarray:
    """A VideoSource's texture as RGB uint8, rows top-down (as pictures are stored)."""
    w, h = src.texture.size
    return np.frombuffer(src.texture.read(), np.uint8).reshape(h, w, 4)[::-1, :, :3]


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pyav_clip(path: Path, codec: str, *, size: tuple[int, int] = (256, 144), rate: int = 30, frames: int = 12,
              pix_fmt: str = "yuv420p", options: dict[str, str] | None = None,
              audio: bool = False) -> Path:  # fmt: skip
    """A clip encoded with PyAV's own encoders (for machines without the ffmpeg command line).

    The picture is a colour gradient with a bright square moving across it, so every frame differs
    and both edges and smooth areas are present; ``audio`` adds a 440 Hz AAC tone.
    """
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    with av.open(str(path), "w") as out:
        v = out.add_stream(codec, rate=rate, options=options or {})
        v.width, v.height, v.pix_fmt = w, h, pix_fmt
        a = out.add_stream("aac", rate=48000) if audio else None
        for i in range(frames):
            img = np.stack([(xx * 255 // max(1, w - 1)), (yy * 255 // max(1, h - 1)),
                            np.full_like(xx, (i * 20) % 256)], axis=-1).astype(np.uint8)  # fmt: skip
            x0 = (i * 7) % max(1, w - 16)
            img[h // 3 : h // 3 + 16, x0 : x0 + 16] = 255
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            for p in v.encode(frame):
                out.mux(p)
        for p in v.encode(None):
            out.mux(p)
        if a is not None:
            samples = int(48000 * frames / rate)
            tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(samples) / 48000)).astype(np.float32)[None, :]
            af = av.AudioFrame.from_ndarray(tone, format="fltp", layout="mono")
            af.sample_rate, af.pts = 48000, 0
            for p in a.encode(af):
                out.mux(p)
            for p in a.encode(None):
                out.mux(p)
    return path


#: Indexed pictures: the index's 8 bits as white/black blocks across the top, the rest noise (so that a
#: clip has enough bytes for a stalled download to cut it mid-way). Robust to lossy coding.
INDEX_SIZE = (160, 96)


def indexed_picture(i: int, rng: np.random.Generator, size: tuple[int, int] = INDEX_SIZE) -> np.ndarray:
    """RGB picture ``i``: its index burnt in (read it back with :func:`read_index`)."""
    w, h = size
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    img[:32] = 0
    for bit in range(8):
        if (i >> bit) & 1:
            img[:32, bit * w // 8 : (bit + 1) * w // 8] = 255
    return img


def read_index(rgb: np.ndarray) -> int:
    """The index :func:`indexed_picture` burnt into an RGB picture (any size: read in eighths)."""
    h, w = rgb.shape[:2]
    top = rgb[: h // 3].astype(np.float64)
    value = 0
    for bit in range(8):
        x0, x1 = bit * w // 8, (bit + 1) * w // 8
        if top[h // 24 : h // 3 - h // 24, x0 + w // 40 : x1 - w // 40].mean() > 128:
            value |= 1 << bit
    return value


def indexed_clip(path: Path, frames: int, *, rate: int = 30, bframes: int = 3, gop: int = 30) -> Path:
    """An H.264 clip (with B-frames, so pictures decode out of order) of :func:`indexed_picture` 0..frames-1."""
    rng = np.random.default_rng(1)
    with av.open(str(path), "w", options={"movflags": "+faststart"}) as out:
        s = out.add_stream("libx264", rate=rate, options={"bf": str(bframes), "g": str(gop), "crf": "18",
                                                          "preset": "veryfast"})  # fmt: skip
        s.width, s.height, s.pix_fmt = INDEX_SIZE[0], INDEX_SIZE[1], "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(indexed_picture(i, rng), format="rgb24")
            frame.pts = i
            for p in s.encode(frame):
                out.mux(p)
        for p in s.encode(None):
            out.mux(p)
    return path


def indices_of(path: Path | str) -> list[int]:
    """The index burnt into each picture of ``path``, as PyAV decodes it, in order."""
    with av.open(str(path)) as c:
        return [read_index(f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]


def ffprobe_count(path: Path | str) -> int:
    """Pictures in ``path``'s first video stream as ffprobe decodes them (an independent count)."""
    exe = shutil.which("ffprobe")
    if exe is None:
        pytest.skip("needs ffprobe (apt-get install ffmpeg)")
    out = subprocess.run([exe, "-v", "quiet", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    return int(out.strip().splitlines()[0])
