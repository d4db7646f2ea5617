"""glrec doctor's NVDEC frame count: every frame counted, no batch asked for past the declared end.

PyNvVideoCodec's SimpleDecoder prints ``[WARN] INVALID INDEX n`` for each frame asked for beyond
the end (nine such lines in ``glrec doctor`` on the H200 before this). The real decoder runs in
the GPU tier (``tests/gpu/test_gpu.py::test_nvdec_decodes_expected_frame_count``); here a stand-in
with the same two calls records what was asked of it.
"""

from __future__ import annotations

import pytest

from glrec.diagnostics import count_nvdec_frames


class _Decoder:
    def __init__(self, frames: int, declared: int) -> None:
        self.frames, self.declared, self.next, self.asked_past_end = frames, declared, 0, 0

    def __len__(self) -> int:
        return self.declared

    def get_batch_frames(self, size: int) -> list[int]:
        self.asked_past_end += max(0, self.next + size - self.frames)
        batch = list(range(self.next, min(self.next + size, self.frames)))
        self.next += len(batch)
        return batch


class _Module:
    def __init__(self, frames: int, declared: int) -> None:
        self.decoder = _Decoder(frames, declared)

    def SimpleDecoder(self, path: str, gpu_id: int, use_device_memory: bool) -> _Decoder:
        return self.decoder


@pytest.mark.parametrize("frames", [1, 8, 10, 37])
def test_every_frame_is_counted_and_nothing_past_the_end_is_asked(tmp_path, frames):
    nvc = _Module(frames, declared=frames)
    assert count_nvdec_frames(nvc, tmp_path / "x.mp4") == frames
    assert nvc.decoder.asked_past_end == 0


def test_a_container_without_a_frame_count_is_read_to_its_end(tmp_path):
    nvc = _Module(10, declared=0)
    assert count_nvdec_frames(nvc, tmp_path / "x.mp4") == 10


def test_a_decoder_that_stops_early_is_counted_as_it_is(tmp_path):
    nvc = _Module(6, declared=10)  # the container claims 10, 6 decode: doctor must see 6, not 10
    assert count_nvdec_frames(nvc, tmp_path / "x.mp4") == 6
