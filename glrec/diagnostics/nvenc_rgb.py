"""``glrec doctor``'s NVENC colour check: which RGB -> YUV conversion NVENC applies to rgba input, measured.

Colour bars rendered with plain moderngl go into device memory as glrec's rgba
frames and through :class:`~glrec.encoders.nvenc.encoder.NvencEncoder` as a recording's
frames do (the GL -> CUDA handoffs that bring rendered frames there are checked
byte for byte by the contract test's GPU tier), so the measurement sees exactly
the RGB it compares against. The raw H.264 is decoded by PyAV and
:func:`~glrec.encoders.nvenc.colour.rank_conversions` names the conversion that
predicts the decoded planes best. Whatever comes back, the check ends in a
verdict that says what it could tell: a stream that decodes to no picture (what
the contract test's stand-in NVENC returns), a frame count that differs, or no
candidate close enough to be the one NVENC used.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from .common import FAIL, PASS, decoded_planes, reference_rgb

log = logging.getLogger("glrec")

SIZE, FRAMES, FPS = (320, 240), 5, 30
#: Below this YUV PSNR (dB) the best candidate does not describe what NVENC did (colour bars at qp 4 give ~45).
MIN_MATCH_DB = 30.0


def encode_rgba(frames: list[np.ndarray], path: Path, device: Any, *, qp: int = 4) -> int:
    """Encode top-down RGB frames ``(h, w, 3)`` as glrec's rgba input with NVENC into raw H.264; packets written."""
    from ..convert import PlaneLayout
    from ..cuda.driver import call
    from ..cuda.pool import DeviceFrame, DevicePool
    from ..encoders.nvenc.encoder import NvencEncoder
    from ..options import VideoOptions

    h, w = frames[0].shape[:2]
    options = VideoOptions.create((w, h), FPS, encoder="nvenc", codec="h264", pix_fmt="rgba", qp=qp)
    layout = PlaneLayout.for_format("rgba", w, h)
    pool = DevicePool(device, layout.nbytes, 3)
    packets = 0
    try:
        asked = options.request(raw_output=True, device=device)
        enc = NvencEncoder(asked.facts, asked.options, device, raw_output=True)
        try:
            with path.open("wb") as out:
                for index, rgb in enumerate(frames):
                    rgba = np.ascontiguousarray(np.dstack([rgb, np.full((h, w), 255, np.uint8)]))
                    slot = pool.acquire(timeout=10)
                    device.bind()
                    call("cuMemcpyHtoD", pool.address(slot), rgba.ctypes.data, layout.nbytes)
                    call("cuEventRecord", pool.events[slot], device.stream)
                    got = enc.encode(DeviceFrame(index, layout, pool, slot, pending=True))
                    for packet in got + (enc.flush() if index == len(frames) - 1 else []):
                        out.write(packet.data)
                        packets += 1
        finally:
            enc.close()
    finally:
        pool.release()
    return packets


def verdict(path: Path, reference: list[np.ndarray], packets: int) -> tuple[str, str]:
    """(status, detail) for the clip at ``path`` made from ``reference``: the measured conversion, or why none."""
    from ..encoders.nvenc.colour import describe, rank_conversions
    from ..encoders.nvenc.encoder import RGB_INPUT_COLOUR

    try:
        decoded = decoded_planes(path)
    except Exception as exc:  # PyAV's errors: the stream is damaged
        return FAIL, (f"NVENC returned {packets} packets for {len(reference)} frames, which FFmpeg cannot decode "
                      f"({exc}): nothing to measure (a stand-in NVENC library, or a broken driver)")  # fmt: skip
    if not decoded:
        return FAIL, (f"NVENC returned {packets} packets for {len(reference)} frames, which decode to no picture: "
                      "nothing to measure (a stand-in NVENC library, or a broken driver)")  # fmt: skip
    if len(decoded) != len(reference):
        return FAIL, f"NVENC's stream decodes to {len(decoded)} pictures for {len(reference)} frames: not measured"
    ranking = rank_conversions(decoded, reference)
    tagged = f"glrec tags it {RGB_INPUT_COLOUR.matrix} {RGB_INPUT_COLOUR.range}"
    if ranking[0][1] < MIN_MATCH_DB:
        return FAIL, f"{describe(ranking)}: none of the candidates is what NVENC did ({tagged})"
    return (PASS if ranking[0][0] == RGB_INPUT_COLOUR else FAIL), f"{describe(ranking)}; {tagged}"


def check(workdir: Path, ordinal: int = 0) -> tuple[str, str]:
    """Doctor's "NVENC rgba colour" check on CUDA device ``ordinal``: encode colour bars, decode, measure."""
    from ..cuda.driver import CudaDevice

    reference = reference_rgb("bars", SIZE, FRAMES, FPS)
    path = workdir / "nvenc-rgba.h264"
    device = CudaDevice.open(ordinal)
    try:
        packets = encode_rgba(reference, path, device)
    finally:
        device.release()
    status, detail = verdict(path, reference, packets)
    log.info("doctor: NVENC rgba colour: %s: %s", status, detail)
    return status, detail
