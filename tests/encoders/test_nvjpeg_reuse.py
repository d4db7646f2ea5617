"""nvJPEG encoders are warmed when a recording opens and reused by the next one (glrec.encoders.nvjpeg._Codecs).

A new nvImageCodec encoder's first encode costs ~290 ms at 1080p on an H200; without reuse every recording paid
it inside its first frame. The pure-Python tier checks the bookkeeping with a stand-in module (nvImageCodec is not
installed on CPU machines); the GPU tier checks reuse across two real recordings and decodes both.
"""

from __future__ import annotations

import av
import pytest

from glrec.encoders.nvjpeg import encoder as nvjpeg


class _StandInCodec:
    """Stands in for the nvidia.nvimgcodec module: counts the encoders made."""

    made = 0

    class Encoder:
        def __init__(self, device_id: int) -> None:
            _StandInCodec.made += 1
            self.device_id = device_id


def test_an_encoder_given_back_is_taken_again_with_its_warm_sizes():
    codecs = nvjpeg._Codecs()
    first, warm = codecs.take(_StandInCodec, 0)
    warm.add(((64, 48), 90, "yuv420p"))
    codecs.give_back(0, first, warm)
    again, warm_again = codecs.take(_StandInCodec, 0)
    assert again is first and ((64, 48), 90, "yuv420p") in warm_again
    other, _ = codecs.take(_StandInCodec, 1)  # another device never gets device 0's encoder
    assert other is not first and other.device_id == 1


def test_at_most_keep_idle_encoders_are_kept_per_device():
    codecs = nvjpeg._Codecs()
    taken = [codecs.take(_StandInCodec, 0) for _ in range(codecs.KEEP + 2)]
    for encoder, warm in taken:
        codecs.give_back(0, encoder, warm)
    made = _StandInCodec.made
    kept = [codecs.take(_StandInCodec, 0)[0] for _ in range(codecs.KEEP)]
    assert len({id(e) for e in kept}) == codecs.KEEP and _StandInCodec.made == made
    codecs.take(_StandInCodec, 0)  # the extra ones were dropped: a new one is made
    assert _StandInCodec.made == made + 1


@pytest.mark.gpu
def test_two_recordings_share_one_warm_encoder(tmp_path):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs an NVIDIA GPU with pip install glrec[nvjpeg]")
    import glrec

    seen = []
    original = nvjpeg.NvJpegEncoder.close

    def spy(self):
        if self._encoder is not None:  # close is safe twice; the second call gives nothing back
            seen.append(self._encoder)
        original(self)

    nvjpeg.NvJpegEncoder.close = spy
    try:
        for name in ("a", "b"):
            glrec.record("plasma", tmp_path / f"{name}.mkv", size=(320, 240), fps=30, frames=10, encoder="nvjpeg",
                         codec="mjpeg")  # fmt: skip
    finally:
        nvjpeg.NvJpegEncoder.close = original
    assert len(seen) == 2 and seen[0] is seen[1]
    for name in ("a", "b"):
        with av.open(str(tmp_path / f"{name}.mkv")) as c:
            assert sum(1 for _ in c.decode(video=0)) == 10


@pytest.mark.gpu
def test_a_slots_image_is_reused_and_every_frame_still_encodes_its_own_pixels(tmp_path):
    """The images of a pool's slots are made once (``NvJpegEncoder._image``); 300 frames through a pool of
    fewer slots (two turns of 64 frames and the encoder's) each decode to their own grey level, in order."""
    pytest.importorskip("nvidia.nvimgcodec", reason="needs an NVIDIA GPU with pip install glrec[nvjpeg]")
    import numpy as np

    import glrec

    made = []
    original = nvjpeg.NvJpegEncoder._image

    def spy(self, frame):
        image = original(self, frame)
        made.append(id(image))
        return image

    nvjpeg.NvJpegEncoder._image = spy
    try:
        with glrec.Recorder(tmp_path / "g.mkv", size=(320, 240), fps=30, encoder="nvjpeg", codec="mjpeg") as rec:
            for i in range(300):
                with rec.frame():
                    level = (20 + 2 * (i % 100)) / 255
                    rec.ctx.clear(level, level, level, 1.0)
    finally:
        nvjpeg.NvJpegEncoder._image = original
    assert len(made) == 300 and len(set(made)) < 200  # slots' images were reused
    with av.open(str(tmp_path / "g.mkv")) as c:
        levels = [float(np.mean(f.to_ndarray(format="gray"))) for f in c.decode(video=0)]
    assert len(levels) == 300
    assert np.allclose(levels, [20 + 2 * (i % 100) for i in range(300)], atol=3.0), levels
