"""Can NVENC encode here, and within which limits: loading PyNvVideoCodec, one probe session, status codes.

``import PyNvVideoCodec`` raises ``RuntimeError`` (not ``ImportError``) when the
driver's ``libnvidia-encode.so.1`` is missing (a container started without the
``video`` driver capability) or the driver is too old; :func:`load_pynvvideocodec`
turns every such failure into :class:`~glrec.errors.EncoderUnavailableError`, so
``--encoder auto``, ``glrec info`` and ``glrec doctor`` fall back and say why.

The probe, :func:`nvenc_caps`, asks NVENC itself (:mod:`~glrec.encoders.nvenc.api`)
on the chosen GPU's primary context: one session per device, which reads every
codec's limits (minimum and maximum size, B-frames, lossless, 4:4:4) and closes.
PyNvVideoCodec's ``GetEncoderCaps`` cannot do that: it ignores its ``gpuid`` and
asks CUDA device 0. The answers are cached per device, and so is a failure that
cannot change while the process runs (no NVENC device, a GPU without NVENC, a
driver too old: :data:`PERMANENT_CODES`), for every codec at once: ``glrec info``
on such a GPU opens one session, not one per codec. Transient failures (the
session limit of a consumer GPU, say) are probed again next time.

PyNvVideoCodec 2.2.4 itself still checks NVENC on CUDA device 0 inside every
``CreateEncoder``, whichever ``gpu_id`` it is given, and fails when device 0 has
none. The probe does not ask device 0 for a recording on another device (it
would make a context and open a session there, on a GPU the user did not pick):
when ``CreateEncoder`` then fails that way, :func:`device_zero_hint` says how to
make the chosen GPU device 0 for the process, and :func:`remember_open_failure`
keeps the answer, so ``auto`` does not try again in this process.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import EncoderUnavailableError

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
    """What one GPU's NVENC can do for one codec (``nvEncGetEncodeCaps``, named as ``GetEncoderCaps`` names them)."""

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


_cache: dict[int, dict[str, NvencCaps | str]] = {}  # per CUDA ordinal: each codec's caps, or why not
_failed: dict[int, str] = {}  # per CUDA ordinal: a permanent "no NVENC on this device" (or no session opens there)
_lock = threading.Lock()  # held across a query, so two threads asking about one device open one session


@contextlib.contextmanager
def _primary_context(ordinal: int) -> Iterator[int]:
    """Device ``ordinal``'s primary context, retained and current on this thread for the block."""
    from ...cuda.driver import call

    dev = call("cuDeviceGet", ordinal)
    context = call("cuDevicePrimaryCtxRetain", dev)
    try:
        call("cuCtxPushCurrent", context)
        try:
            yield int(context)
        finally:
            call("cuCtxPopCurrent")
    finally:
        call("cuDevicePrimaryCtxRelease", dev)


def _device_caps(ordinal: int) -> dict[str, NvencCaps | str]:
    """Every codec's caps on CUDA device ``ordinal``, or why it has none (one NVENC session, cached)."""
    from .api import query_encoder

    with _lock:
        if ordinal in _cache:
            return _cache[ordinal]
        if ordinal in _failed:
            raise EncoderUnavailableError(_failed[ordinal])
        load_pynvvideocodec()  # PyNvVideoCodec encodes: without it, the caps are moot
        try:
            with _primary_context(ordinal) as context:
                found = query_encoder(context)
        except Exception as exc:  # NVENC's status, a missing library, a CUDA error
            code, message = explain_nvenc_error(exc)
            if code in PERMANENT_CODES:
                _failed[ordinal] = message
            raise EncoderUnavailableError(message) from exc
        out: dict[str, NvencCaps | str] = {}
        for codec, raw in found.items():
            caps = NvencCaps.from_dict(codec, raw) if raw is not None else None
            if caps is None or caps.max_size[0] <= 0 or caps.max_size[1] <= 0:
                out[codec] = f"this GPU's NVENC does not encode {codec}"
            else:
                out[codec] = caps
        _cache[ordinal] = out
        log.debug("NVENC on CUDA device %d: %s", ordinal, out)
        return out


def nvenc_caps(codec: str, ordinal: int) -> NvencCaps:
    """NVENC's limits for ``codec`` on CUDA device ``ordinal`` (one session per device, cached).

    Raises EncoderUnavailableError (with the driver's reason) when no session opens or the GPU lacks the codec.
    """
    caps = _device_caps(ordinal).get(codec, f"glrec knows no NVENC codec {codec}")
    if isinstance(caps, str):
        raise EncoderUnavailableError(caps)
    return caps


def _visible_as(ordinal: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` value that makes device ``ordinal`` the process's device 0: its UUID."""
    from ...cuda.driver import device_info

    u = device_info(ordinal).uuid
    return f"GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"


def nvenc_problem(codec: str, device: Any) -> str | None:
    """Why NVENC cannot encode ``codec`` on ``device`` (None when it can); a clause, no full stop.

    Asks ``device`` only (its caps, one session, cached), never device 0 (see the module docstring).
    """
    device.bind()
    try:
        nvenc_caps(codec, device.ordinal)
    except EncoderUnavailableError as exc:
        return str(exc).rstrip(".")
    return None


def device_zero_hint(ordinal: int, code: int | None, why: str) -> str:
    """``why`` a session on CUDA device ``ordinal`` did not open, with what PyNvVideoCodec's device-0 check means.

    For device 0, or a status that is not "no NVENC", ``why`` as it is.
    """
    if ordinal == 0 or code not in PERMANENT_CODES:
        return why
    status = why.split(":", 1)[0]
    cached = _cache.get(ordinal)
    has = cached is not None and any(not isinstance(c, str) for c in cached.values())
    lead = (f"CUDA device {ordinal} has NVENC, but PyNvVideoCodec checks NVENC on CUDA device 0 inside every "
            f"CreateEncoder, whatever gpu_id, and device 0 fails ({status})" if has else
            f"{why}; PyNvVideoCodec checks NVENC on CUDA device 0 inside every CreateEncoder, whatever gpu_id, "
            "so this may be device 0's answer")  # fmt: skip
    return f"{lead}; start the process with CUDA_VISIBLE_DEVICES={_visible_as(ordinal)} and use cuda_device 0"


def remember_open_failure(ordinal: int, code: int | None, message: str) -> None:
    """A session on device ``ordinal`` failed for good (``code`` permanent): later probes there say ``message``.

    Each failed PyNvVideoCodec session leaks its CUDA context, so a recording loop under ``auto`` must not try again.
    """
    if code in PERMANENT_CODES:
        with _lock:
            _cache.pop(ordinal, None)
            _failed[ordinal] = message


def nvenc_status(codecs: tuple[str, ...] = ("h264",), ordinal: int = 0) -> dict[str, str | None]:
    """:func:`nvenc_problem` per codec on CUDA device ``ordinal``, opening and releasing the device."""
    from ...cuda.driver import CudaDevice

    device = CudaDevice.open(ordinal)
    try:
        return {codec: nvenc_problem(codec, device) for codec in codecs}
    finally:
        device.release()


def nvenc_library_problem() -> str | None:
    """Why PyNvVideoCodec cannot load (None when it loads), a clause: what doctor and info say without CUDA too."""
    try:
        load_pynvvideocodec()
    except EncoderUnavailableError as exc:
        return str(exc).rstrip(".")
    return None
