"""NVENC encoder through PyNvVideoCodec, fed from CUDA device frames.

Written to PyNvVideoCodec's documented API (programming guide, "Encode API"):
``CreateEncoder(width, height, fmt, usecpuinputbuffer, **kwargs)`` with the
documented optional parameters (``codec``, ``preset`` P1-P7, ``tuning_info``,
``rc`` cbr/vbr/constqp, ``bitrate``, ``constqp``, ``fps``, ``gop``,
``idrperiod``, ``bf``, ``repeatspspps``, ``colorspace``, ``gpuid``,
``cudacontext``, ``cudastream``); ``Encode(frame)`` where ``frame.cuda()``
returns one CUDA-array-interface object per plane; ``EndEncode()`` to flush.
``Encode`` returns either a bytes-like bitstream (PyNvVideoCodec 1.x/2.0) or a
list of ``{'data', 'timestamp', 'picture_type'}`` dicts (2.1+); both are handled.

NOT RUN on the hardware glrec was developed with: the H200 has no NVENC
(opening a session returns status 2, NV_ENC_ERR_UNSUPPORTED_DEVICE). The tests
run the full round trip where a session opens and skip with "no NVENC on this
GPU" where it does not; ``glrec doctor`` does the same on a user's machine.

Inputs (``options.pix_fmt``): ``yuv420p`` -> "YUV420" (IYUV), ``nv12`` ->
"NV12", ``yuv444p`` -> "YUV444", all converted by glrec's GL convert stage, so
the container's colour tags are glrec's; ``rgba`` -> "ABGR" (R in the lowest
byte, which is the RGBA8 texture's byte order), converted by NVENC itself
with the ``colorspace`` matrix in limited range.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..errors import ConfigError, EncoderError, EncoderUnavailableError
from ..frame import Packet
from ..interop import Frame
from ..interop.pool import DeviceFrame
from ..options import VideoOptions
from . import device_frame

log = logging.getLogger("glrec")

INSTALL_HINT = "pip install glrec[nvenc] (PyNvVideoCodec) on a GPU with NVENC"

#: glrec pixel format -> PyNvVideoCodec surface format.
NVENC_FORMATS: dict[str, str] = {"yuv420p": "YUV420", "nv12": "NV12", "yuv444p": "YUV444", "rgba": "ABGR"}
#: Largest frame per codec, as PyNvVideoCodec documents for ``max_res``.
MAX_SIZE: dict[str, int] = {"h264": 4096, "hevc": 8192, "av1": 8192}
TUNINGS: dict[str, str] = {"hq": "high_quality", "ll": "low_latency", "ull": "ultra_low_latency",
                           "lossless": "lossless"}  # fmt: skip
RATE_CONTROLS: tuple[str, ...] = ("cbr", "constqp", "vbr")

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
    10: (
        "NV_ENC_ERR_OUT_OF_MEMORY",
        "too many concurrent NVENC sessions (GeForce cards allow a few) or no GPU "
        "memory; close other encoders or use a professional GPU",
    ),
    12: (
        "NV_ENC_ERR_UNSUPPORTED_PARAM",
        "this GPU's NVENC lacks a requested feature (codec, 4:4:4, B-frames, "
        "lossless); pick another codec or pixel format",
    ),
    15: ("NV_ENC_ERR_INVALID_VERSION", "the NVIDIA driver is too old for this PyNvVideoCodec; update the driver"),
}


def explain_nvenc_error(exc: BaseException) -> tuple[int | None, str]:
    """(NVENCSTATUS or None, a sentence saying what it means and what to do) for a PyNvVideoCodec error."""
    text = str(exc)
    for code, (name, advice) in _STATUS.items():
        if name in text:
            return code, f"{name} ({code}): {advice}"
    if "does not support this NvEncodeAPI version" in text:
        return 15, f"{_STATUS[15][0]} (15): {_STATUS[15][1]}"
    if "NVENC library file is not found" in text or "libnvidia-encode" in text:
        return None, ("the driver's NVENC library (libnvidia-encode.so) is missing; in a container start it "
                      "with NVIDIA_DRIVER_CAPABILITIES=compute,utility,video")  # fmt: skip
    match = re.search(r"(?:returned error|[Ee]rror code\s*:?)\s*\"?\s*(\d+)", text)
    if match and int(match.group(1)) in _STATUS:
        code = int(match.group(1))
        name, advice = _STATUS[code]
        return code, f"{name} ({code}): {advice}"
    return None, text.strip() or type(exc).__name__


def load_pynvvideocodec() -> Any:
    try:
        import PyNvVideoCodec as nvc
    except ImportError as exc:
        raise EncoderUnavailableError(f"PyNvVideoCodec is not installed ({exc}); {INSTALL_HINT}.") from None
    return nvc


def nvenc_config(options: VideoOptions, *, gpu: int, context: int = 0, stream: int = 0) -> dict[str, Any]:
    """The documented ``CreateEncoder`` keyword arguments for ``options``."""
    config: dict[str, Any] = {"codec": options.codec, "gpuid": gpu, "fps": max(1, round(options.fps))}
    preset = (options.preset or "p4").lower()
    if preset not in {f"p{i}" for i in range(1, 8)}:
        raise ConfigError(f"Unknown NVENC preset {options.preset!r}. Valid: p1 .. p7 (p1 fastest, p7 best).")
    config["preset"] = preset.upper()
    tuning = getattr(options, "tuning", None) or "hq"
    if tuning not in TUNINGS:
        raise ConfigError(f"Unknown NVENC tuning {tuning!r}. Valid: {', '.join(sorted(TUNINGS))}.")
    config["tuning_info"] = TUNINGS[tuning]
    rc = getattr(options, "rc", None) or ("constqp" if options.qp is not None else "vbr")
    if rc not in RATE_CONTROLS:
        raise ConfigError(f"Unknown NVENC rate control {rc!r}. Valid: {', '.join(RATE_CONTROLS)}.")
    config["rc"] = rc
    if rc == "constqp":
        config["constqp"] = int(options.qp if options.qp is not None else 23)
    elif options.bitrate is not None:
        config["bitrate"] = int(options.bitrate)
        if rc == "vbr":
            config["maxbitrate"] = int(options.bitrate * 2)
    if options.crf is not None:
        raise ConfigError("NVENC has no crf; use qp (constant QP, rc constqp) or bitrate (rc vbr/cbr).")
    if options.gop is not None:
        config["gop"] = options.gop
        config["idrperiod"] = options.gop
    # No B-frames unless asked: packets then come out in display order, one per frame,
    # so their timestamps are the frame indices.
    config["bf"] = int(options.bframes or 0)
    config["repeatspspps"] = 1  # parameter sets before every IDR: raw files play from any keyframe
    if options.pix_fmt == "rgba":
        config["colorspace"] = options.colour.matrix  # NVENC converts ABGR itself with this matrix
    if context:
        config["cudacontext"] = context
    if stream:
        config["cudastream"] = stream
    return config


def check_nvenc_options(options: VideoOptions, *, raw_output: bool) -> None:
    """Refuse options NVENC cannot honour, before any GPU work."""
    if options.codec not in MAX_SIZE:
        raise ConfigError(f"NVENC encodes h264, hevc and av1, not {options.codec}; use --encoder nvjpeg for mjpeg.")
    if options.pix_fmt not in NVENC_FORMATS:
        raise ConfigError(f"NVENC takes {', '.join(NVENC_FORMATS)}, not {options.pix_fmt}.")
    w, h = options.encoded_size
    limit = MAX_SIZE[options.codec]
    if w > limit or h > limit:
        raise ConfigError(f"Size {w}x{h} exceeds NVENC's {options.codec} maximum of {limit}x{limit}.")
    if options.pix_fmt == "rgba" and options.colour.range != "limited":
        raise ConfigError("NVENC converts ABGR input to limited range only; use range 'limited' or pix_fmt yuv420p.")
    if (options.bframes or 0) > 0 and not raw_output:
        raise ConfigError(
            "NVENC B-frames are supported for raw .h264/.hevc outputs only: glrec does not yet recover their "
            "presentation order for containers. Use bframes 0 or a raw bitstream output."
        )


class _NvencInput:
    """What ``Encode`` takes: an object whose ``cuda()`` returns one CUDA array per plane."""

    def __init__(self, frame: DeviceFrame) -> None:
        self._planes = frame.plane_views()

    def cuda(self) -> list[Any]:
        return self._planes


class NvencEncoder:
    """Encode device frames with NVENC; packets carry in-band parameter sets (Annex-B / AV1 OBUs).

    >>> enc = NvencEncoder(options, device)  # doctest: +SKIP
    """

    name = "nvenc"

    def __init__(self, options: VideoOptions, device: Any, *, raw_output: bool = False) -> None:
        check_nvenc_options(options, raw_output=raw_output)
        nvc = load_pynvvideocodec()
        self.options = options
        self.codec = options.codec
        self.input_format = options.pix_fmt
        self._device = device
        w, h = options.encoded_size
        config = nvenc_config(options, gpu=device.ordinal, context=device.context_handle, stream=device.stream_handle)
        device.bind()
        try:
            self._enc = nvc.CreateEncoder(w, h, NVENC_FORMATS[options.pix_fmt], False, **config)
        except Exception as exc:
            code, why = explain_nvenc_error(exc)
            cls = EncoderUnavailableError if code in (1, 2, 10, 15) or code is None else EncoderError
            raise cls(f"NVENC could not open a session ({why}). PyNvVideoCodec said: {exc}") from exc
        self._parser: Any = None
        self._keyframe_requested = False
        flags = getattr(nvc, "NV_ENC_PIC_FLAGS", None)
        self._force_idr = int(getattr(flags, "FORCEIDR", 0) if flags is not None else getattr(nvc, "FORCEIDR", 0))
        self._out = 0  # packets emitted so far = pts of the next one (no B-frames reach containers)
        log.info("encoder: NVENC %s %dx%d %s %s", options.codec, w, h, NVENC_FORMATS[options.pix_fmt], config)

    def encode(self, frame: Frame) -> list[Packet]:
        frame = device_frame(frame, "NVENC")
        try:
            frame.synchronize()
            self._device.bind()
            if self._keyframe_requested:
                # Encode(frame, pic_flags): PyNvVideoCodec's documented overload with NV_ENC_PIC_FLAGS.
                self._keyframe_requested = False
                result = self._enc.Encode(_NvencInput(frame), self._force_idr)
            else:
                result = self._enc.Encode(_NvencInput(frame))
        except Exception as exc:
            raise EncoderError(f"NVENC failed on frame {frame.index}: {explain_nvenc_error(exc)[1]}") from exc
        finally:
            frame.release()  # Encode has copied the input into NVENC's own surface
        return self._packets(result)

    def request_keyframe(self) -> None:
        """Make the next frame an IDR (with parameter sets, as ``repeatspspps`` is on); any thread."""
        self._keyframe_requested = True

    def flush(self) -> list[Packet]:
        try:
            self._device.bind()
            return self._packets(self._enc.EndEncode())
        except Exception as exc:
            raise EncoderError(f"NVENC failed while flushing: {explain_nvenc_error(exc)[1]}") from exc

    def _packets(self, result: Any) -> list[Packet]:
        if not result:
            return []
        if isinstance(result, list) and result and isinstance(result[0], dict):
            chunks = [(bytes(p["data"]), int(p.get("picture_type", -1)) in (2, 3)) for p in result if p.get("data")]
        else:  # one bytes-like bitstream, possibly several access units: split with FFmpeg's parser
            chunks = self._split(bytes(bytearray(result)))
        out = []
        for data, key in chunks:
            out.append(Packet(data, self._out, self._out, key))
            self._out += 1
        return out

    def _split(self, data: bytes) -> list[tuple[bytes, bool]]:
        import av

        if self._parser is None:
            self._parser = av.CodecContext.create({"av1": "av1"}.get(self.codec, self.codec), "r")
        packets = self._parser.parse(data) + self._parser.parse(b"")
        return [(bytes(p), bool(p.is_keyframe)) for p in packets]

    def close(self) -> None:
        self._enc = None
