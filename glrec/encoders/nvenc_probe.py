"""Can NVENC encode here, and within which limits: loading PyNvVideoCodec, one probe session, status codes.

``import PyNvVideoCodec`` raises ``RuntimeError`` (not ``ImportError``) when the
driver's ``libnvidia-encode.so.1`` is missing (a container started without the
``video`` driver capability) or the driver is too old; :func:`load_pynvvideocodec`
turns every such failure into :class:`~glrec.errors.EncoderUnavailableError`, so
``--encoder auto``, ``glrec info`` and ``glrec doctor`` fall back and say why.

The probe, :func:`nvenc_caps`, is one ``GetEncoderCaps`` call: it opens one NVENC
session, reads the encoder's limits (minimum and maximum size, B-frames,
lossless, 4:4:4) and closes it. Successes are cached per codec and device, and
so are the failures that cannot change while the process runs (no NVENC device,
a GPU without NVENC, a driver too old: :data:`PERMANENT_CODES`): every failed
session leaks the CUDA context PyNvVideoCodec made for it (16 descriptors of
``/dev/nvidia0`` and 2 eventfds per probe, measured on an H200 with driver 580),
so a process recording again and again with ``--encoder auto`` on such a GPU
must probe once. Transient failures (the session limit of a consumer GPU, say)
are probed again next time.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import EncoderUnavailableError

log = logging.getLogger("glrec")

INSTALL_HINT = "pip install glrec[nvenc] (PyNvVideoCodec >= 2.1) on a GPU with NVENC"
#: 2.1 is the first PyNvVideoCodec whose ``Encode`` returns one dict per packet with its picture type.
MIN_VERSION = (2, 1)

_SESSION_LIMIT = (
    "NVENC refused another session: consumer GPUs (GeForce) allow a limited number of concurrent NVENC "
    "sessions across all processes (8 on current drivers), and this one is reached, or GPU memory ran out; "
    "close other encoders (other recorders, OBS, ffmpeg) or use a professional GPU"
)

# NVENCSTATUS codes that users meet, with what to do about them.
_STATUS: dict[int, tuple[str, str]] = {
    1: ("NV_ENC_ERR_NO_ENCODE_DEVICE", "no NVENC-capable device was found; check the driver (nvidia-smi)"),
    2: (
        "NV_ENC_ERR_UNSUPPORTED_DEVICE",
        "no NVENC on this GPU (A100, H100 and H200 have no video encoder); "
        "use --encoder nvjpeg for MJPEG or --encoder cpu",
    ),
    3: ("NV_ENC_ERR_INVALID_ENCODERDEVICE", "the CUDA context given to NVENC is invalid"),
    8: (
        "NV_ENC_ERR_INVALID_PARAM",
        "NVENC rejected a parameter: check size (NVENC has a minimum and a maximum "
        "per codec), preset, rate control and pixel format",
    ),
    10: ("NV_ENC_ERR_OUT_OF_MEMORY", _SESSION_LIMIT),
    12: (
        "NV_ENC_ERR_UNSUPPORTED_PARAM",
        "this GPU's NVENC lacks a requested feature (codec, 4:4:4, B-frames, "
        "lossless); pick another codec or pixel format",
    ),
    15: ("NV_ENC_ERR_INVALID_VERSION", "the NVIDIA driver is too old for this PyNvVideoCodec; update the driver"),
}
#: Codes that mean "no NVENC here" (fall back) rather than "a setting is wrong" (fix it).
UNAVAILABLE_CODES = (1, 2, 10, 15)
#: Of those, the ones that stay true for the life of the process (cached by :func:`nvenc_caps`).
PERMANENT_CODES = (1, 2, 15)


def explain_nvenc_error(exc: BaseException) -> tuple[int | None, str]:
    """(NVENCSTATUS or None, a sentence saying what it means and what to do) for a PyNvVideoCodec error."""
    text = str(exc)
    for code, (name, advice) in _STATUS.items():
        if name in text:
            return code, f"{name} ({code}): {advice}"
    if "does not support this NvEncodeAPI version" in text or "Driver version is too old" in text:
        return 15, f"{_STATUS[15][0]} (15): {_STATUS[15][1]}"
    if "NVENC library file is not found" in text or "libnvidia-encode" in text:
        return None, ("the driver's NVENC library (libnvidia-encode.so.1) is missing; in a container start it "
                      "with NVIDIA_DRIVER_CAPABILITIES=compute,utility,video")  # fmt: skip
    # PyNvVideoCodec: "... returned error 2" (NVENC calls) or "Error code : 2"; 801 is its own code, not NVENC's.
    match = re.search(r"returned error\s*(\d+)", text) or re.search(r"[Ee]rror code\s*:?\s*\"?\s*(\d+)", text)
    if match and int(match.group(1)) in _STATUS:
        code = int(match.group(1))
        name, advice = _STATUS[code]
        return code, f"{name} ({code}): {advice}"
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("Error Type")]
    return None, (lines[0].split(":", 1)[1].strip() if lines else text.strip().splitlines()[0] if text.strip()
                  else type(exc).__name__)  # fmt: skip


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def load_pynvvideocodec() -> Any:
    """The PyNvVideoCodec module, or EncoderUnavailableError saying why it cannot be used here."""
    try:
        import PyNvVideoCodec as nvc
    except ImportError as exc:
        raise EncoderUnavailableError(f"PyNvVideoCodec is not installed ({exc}); {INSTALL_HINT}.") from None
    except Exception as exc:  # RuntimeError without libnvidia-encode.so.1 or with a too old driver
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        why = explain_nvenc_error(exc)[1]
        detail = why if why != first else "see PyNvVideoCodec's message"
        raise EncoderUnavailableError(f"PyNvVideoCodec cannot load: {first} ({detail}).") from None
    version = getattr(nvc, "__version__", "0")
    if _version(version) < MIN_VERSION:
        raise EncoderUnavailableError(
            f"PyNvVideoCodec {version} is older than {'.'.join(map(str, MIN_VERSION))}, whose Encode returns "
            "packets with their picture types; pip install -U PyNvVideoCodec."
        )
    return nvc


@dataclass(frozen=True)
class NvencCaps:
    """What one GPU's NVENC can do for one codec, as ``GetEncoderCaps`` reports it."""

    codec: str
    min_size: tuple[int, int]
    max_size: tuple[int, int]
    max_bframes: int
    lossless: bool
    yuv444: bool

    @classmethod
    def from_dict(cls, codec: str, caps: dict[str, int]) -> NvencCaps:
        return cls(
            codec,
            (int(caps.get("width_min", 0)), int(caps.get("height_min", 0))),
            (int(caps.get("width_max", 0)), int(caps.get("height_max", 0))),
            int(caps.get("num_max_bframes", 0)),
            bool(caps.get("support_lossless_encode", 0)),
            bool(caps.get("support_yuv444_encode", 0)),
        )


_cache: dict[tuple[str, int], NvencCaps] = {}
_failed: dict[tuple[str, int], str] = {}  # permanent failures: the message
_lock = threading.Lock()


def nvenc_caps(codec: str, ordinal: int) -> NvencCaps:
    """NVENC's limits for ``codec`` on CUDA device ``ordinal`` (one probe session; successes cached).

    Raises EncoderUnavailableError (with the driver's reason) when no session opens.
    """
    with _lock:
        if (codec, ordinal) in _cache:
            return _cache[codec, ordinal]
        if (codec, ordinal) in _failed:
            raise EncoderUnavailableError(_failed[codec, ordinal])
    nvc = load_pynvvideocodec()
    try:
        caps = NvencCaps.from_dict(codec, dict(nvc.GetEncoderCaps(gpuid=ordinal, codec=codec)))
    except Exception as exc:
        code, message = explain_nvenc_error(exc)
        if code in PERMANENT_CODES:
            with _lock:
                _failed[codec, ordinal] = message
        raise EncoderUnavailableError(message) from exc
    if caps.max_size[0] <= 0 or caps.max_size[1] <= 0:
        raise EncoderUnavailableError(f"this GPU's NVENC does not encode {codec} (its caps report no picture size)")
    with _lock:
        _cache[codec, ordinal] = caps
    return caps


def nvenc_problem(codec: str, device: Any) -> str | None:
    """Why NVENC cannot encode ``codec`` on ``device`` (None when a session opens)."""
    device.bind()
    try:
        nvenc_caps(codec, device.ordinal)
    except EncoderUnavailableError as exc:
        return str(exc)
    return None


def nvenc_status(codecs: tuple[str, ...] = ("h264",), ordinal: int = 0) -> dict[str, str | None]:
    """:func:`nvenc_problem` per codec on CUDA device ``ordinal``, opening and releasing the device."""
    from ..cuda.driver import CudaDevice

    device = CudaDevice.open(ordinal)
    try:
        return {codec: nvenc_problem(codec, device) for codec in codecs}
    finally:
        device.release()


def nvenc_library_problem() -> str | None:
    """Why PyNvVideoCodec cannot load (None when it loads): what doctor and info say without CUDA too."""
    try:
        load_pynvvideocodec()
    except EncoderUnavailableError as exc:
        return str(exc)
    return None
