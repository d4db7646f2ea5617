"""NVENC encoder through PyNvVideoCodec (>= 2.1), fed from CUDA device frames.

The calls follow PyNvVideoCodec 2.2.4 as it behaves (checked against the real
module by ``tests/encoders/test_nvenc_contract.py``, with stand-in driver libraries):
``CreateEncoder(width, height, fmt, usecpuinputbuffer, **kwargs)`` with the
GPU in ``gpu_id`` (``gpuid`` is ``GetEncoderCaps``'s keyword and is ignored
here), glrec's primary context in ``cudacontext``, glrec's stream in
``cudastream`` and the exact rate as ``fps="num/den"`` (NVENC's frameRateNum/Den);
``Encode(frame[, pic_flags])`` copies the frame into one of its own surfaces
with an asynchronous copy on that stream and returns a list of
``{'data', 'timestamp', 'picture_type'}`` dicts; ``EndEncode()`` flushes.

What that means here:

- ``frame.cuda()`` returns one CUDA-array object for ABGR and a list (one per
  plane) for NV12 / IYUV / YUV444: PyNvVideoCodec checks
  ``__cuda_array_interface__`` on the returned object for packed formats.
- Each packet comes out about three ``Encode`` calls after its frame (a fixed
  output delay inside PyNvVideoCodec that no ``CreateEncoder`` keyword
  changes), and its ``timestamp`` is PyNvVideoCodec's own input counter, not
  the caller's. The pts is therefore taken from a FIFO of the frame indices
  given to ``Encode`` (packets leave in input order without B-frames).
- The frame's buffer may be reused only after that copy has run: an event is
  recorded on the stream after ``Encode`` and the slot is handed out again
  only once it completed.
- Colour tags are written by :class:`~glrec.encoders.nvenc.vui.VuiWriter`, not by
  NVENC (see there). NVENC has no setting for its own RGB->YUV matrix; ABGR
  input is tagged BT.601 limited, what FFmpeg's NVENC wrapper assumes, until
  ``glrec doctor`` on an NVENC GPU measures otherwise.

NOT RUN on NVENC hardware: glrec's GPU (an H200) has no NVENC unit.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Sequence
from typing import Any

from ...colour import ColourSpec
from ...errors import ConfigError, EncoderError, EncoderUnavailableError
from ...frame import DeviceFrame, Frame, Packet
from ...video_facts import VideoFacts
from ..encoder import device_frame, encode_each
from ..latency import nvenc_fps, nvenc_live_options
from .options import NvencOptions, nvenc_keywords
from .probe import (
    INSTALL_HINT,
    UNAVAILABLE_CODES,
    NvencCaps,
    device_zero_hint,
    explain_nvenc_error,
    load_pynvvideocodec,
    remember_open_failure,
)
from .vui import VuiWriter

log = logging.getLogger("glrec")

__all__ = ["INSTALL_HINT", "NVENC_FORMATS", "NvencEncoder", "check_nvenc_options", "explain_nvenc_error",
           "load_pynvvideocodec", "nvenc_caps_problem", "nvenc_config", "nvenc_options_problem"]  # fmt: skip

#: glrec pixel format -> PyNvVideoCodec surface format.
NVENC_FORMATS: dict[str, str] = {"yuv420p": "YUV420", "nv12": "NV12", "yuv444p": "YUV444", "rgba": "ABGR"}
#: Largest frame per codec when the encoder's caps are not known yet.
MAX_SIZE: dict[str, int] = {"h264": 4096, "hevc": 8192, "av1": 8192}
TUNINGS: dict[str, str] = {"hq": "high_quality", "ll": "low_latency", "ull": "ultra_low_latency",
                           "lossless": "lossless"}  # fmt: skip
RATE_CONTROLS: tuple[str, ...] = ("cbr", "constqp", "vbr")
#: Constant-quality targets (NVENC ``cq``, VBR without a bitrate) when neither qp, bitrate nor crf is
#: given: the CPU path's crf defaults. Not compared on NVENC hardware; ``glrec doctor`` reports both PSNRs.
DEFAULT_CQ: dict[str, int] = {"h264": 20, "hevc": 24, "av1": 35}
#: Lossless H.264 needs qpPrimeYZeroTransformBypassFlag and the High 4:4:4 Predictive profile (NVENC's header);
#: PyNvVideoCodec 2.2.4 has no CreateEncoder keyword for either (it picks the profile from the input format),
#: and constant QP 0 without the flag is not lossless. HEVC's lossless is the tuning itself.
H264_LOSSLESS_REFUSED = (
    "NVENC tuning lossless is refused for h264: lossless H.264 needs NVENC's qpPrimeYZeroTransformBypassFlag, "
    "which PyNvVideoCodec cannot set (qp 0 alone is not lossless); use codec hevc with tuning lossless, or "
    "--encoder cpu with qp 0."
)
#: The colour NVENC gives ABGR input (see the module docstring).
RGB_INPUT_COLOUR = ColourSpec("bt601", "limited")
_IDR = 3  # NV_ENC_PIC_TYPE_IDR


def _rate_control(facts: VideoFacts, options: NvencOptions, tuning: str) -> dict[str, Any]:
    rc = options.rc
    if rc is not None and rc not in RATE_CONTROLS:
        raise ConfigError(f"Unknown NVENC rate control {rc!r}. Valid: {', '.join(RATE_CONTROLS)}.")
    if tuning == "lossless":
        others = options.bitrate is not None or options.crf is not None or rc not in (None, "constqp")
        if (options.qp or 0) != 0 or others:
            raise ConfigError("NVENC tuning lossless is constant QP 0; leave qp, crf, bitrate and rc unset.")
        return {"rc": "constqp", "constqp": 0}
    if options.qp is not None:
        if rc not in (None, "constqp"):
            raise ConfigError(f"qp is constant QP; use rc constqp (or leave rc unset), not {rc}.")
        return {"rc": "constqp", "constqp": int(options.qp)}
    if options.bitrate is not None:
        rc = rc or "vbr"
        if rc == "constqp":
            raise ConfigError("rc constqp takes qp, not bitrate; give qp, or rc vbr/cbr with the bitrate.")
        out: dict[str, Any] = {"rc": rc, "bitrate": int(options.bitrate)}
        if rc == "vbr":
            out["maxbitrate"] = int(options.bitrate * 2)
        return out
    if rc == "cbr":
        raise ConfigError("rc cbr needs a bitrate, e.g. bitrate=8000000.")
    if rc == "constqp":
        raise ConfigError("rc constqp needs qp, e.g. qp=23.")
    # Constant quality: VBR with a quality target and no bitrate, so the quality does not depend on
    # the driver preset's bitrate and the picture size.
    cq = options.crf if options.crf is not None else DEFAULT_CQ[facts.codec]
    return {"rc": "vbr", "cq": round(cq)}


def nvenc_config(
    facts: VideoFacts, options: NvencOptions, *, gpu: int, context: int = 0, stream: int = 0
) -> dict[str, Any]:
    """The ``CreateEncoder`` keyword arguments for the stream and NVENC's ``options`` (see the module docstring)."""
    preset = (options.preset or "p4").lower()
    if preset not in {f"p{i}" for i in range(1, 8)}:
        raise ConfigError(f"Unknown NVENC preset {options.preset!r}. Valid: p1 .. p7 (p1 fastest, p7 best).")
    tuning = options.tuning or "hq"
    if tuning not in TUNINGS:
        raise ConfigError(f"Unknown NVENC tuning {tuning!r}. Valid: {', '.join(sorted(TUNINGS))}.")
    config: dict[str, Any] = {"codec": facts.codec, "gpu_id": gpu, "fps": nvenc_fps(facts.fps),
                              "preset": preset.upper(), "tuning_info": TUNINGS[tuning]}  # fmt: skip
    if facts.live:
        if options.tuning not in (None, "ull", "ll"):
            raise ConfigError(f"Live mode uses NVENC's low-latency tunings (ull, ll), not {options.tuning}.")
        if options.qp is not None or options.crf is not None or options.rc not in (None, "cbr"):
            raise ConfigError("Live NVENC is CBR with a one-frame buffer; give bitrate (or nothing), not qp/crf/rc.")
        live = nvenc_live_options(facts, options, options.preset or "P2")
        if options.tuning == "ll":
            live["tuning_info"] = TUNINGS["ll"]
        config.update(live)
    else:
        config.update(_rate_control(facts, options, tuning))
        if options.gop is not None:
            config["gop"] = options.gop
            config["idrperiod"] = options.gop
        # No B-frames unless asked: packets then leave in display order, one per frame.
        config["bf"] = int(options.bframes or 0)
        config["repeatspspps"] = 1  # parameter sets before every IDR: raw files play from any keyframe
    if facts.codec == "av1":
        config["use_ivf_container"] = 0  # raw OBUs: the .ivf sink writes the IVF framing itself
    # The escape hatch (-x KEY=VALUE): PyNvVideoCodec keywords, after (and over) glrec's own settings.
    try:
        config.update(nvenc_keywords(options.encoder_options))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if context:
        config["cudacontext"] = context
    if stream:
        config["cudastream"] = stream
    return config


def nvenc_options_problem(facts: VideoFacts, options: NvencOptions, *, raw_output: bool) -> str | None:
    """What NVENC cannot honour in the stream or its ``options``, known before any GPU work (None if nothing)."""
    if facts.codec not in MAX_SIZE:
        other = "nvjpeg (or auto)" if facts.codec == "mjpeg" else "auto, which picks the encoder that takes it"
        return f"NVENC encodes h264, hevc and av1, not {facts.codec}; use --encoder {other}."
    if facts.pix_fmt not in NVENC_FORMATS:
        return f"NVENC takes {', '.join(NVENC_FORMATS)}, not {facts.pix_fmt}."
    if facts.codec == "av1" and facts.pix_fmt == "yuv444p":
        return "NVENC's AV1 encoder takes 4:2:0 input: use pix_fmt nv12, yuv420p or rgba."
    try:
        nvenc_keywords(options.encoder_options)
    except ValueError as exc:
        return str(exc)
    w, h = facts.encoded_size
    hi = MAX_SIZE[facts.codec]
    if w > hi or h > hi:
        return f"Size {w}x{h} exceeds NVENC's {facts.codec} maximum of {hi}x{hi}."
    if options.tuning == "lossless" and facts.codec == "h264":
        return H264_LOSSLESS_REFUSED
    if facts.pix_fmt == "rgba" and facts.colour != RGB_INPUT_COLOUR:
        return (
            f"NVENC converts rgba input to YUV itself, which glrec tags as {RGB_INPUT_COLOUR.matrix} "
            f"{RGB_INPUT_COLOUR.range} (NVENC has no setting for it), not {facts.colour.matrix} "
            f"{facts.colour.range}; for that colour use pix_fmt yuv420p or nv12 (glrec converts)."
        )
    if (options.bframes or 0) > 0 and not raw_output:
        return (
            "NVENC B-frames are supported for raw .h264/.hevc outputs only: glrec does not yet recover their "
            "presentation order for containers. Use bframes 0 or a raw bitstream output."
        )
    return None


def nvenc_caps_problem(facts: VideoFacts, options: NvencOptions, caps: NvencCaps | None) -> str | None:
    """What this GPU's NVENC (its probed ``caps``) cannot take: sizes, 4:4:4, lossless, B-frames."""
    if caps is None:
        return None
    w, h = facts.encoded_size
    lo, hi = caps.min_size, caps.max_size
    if w > hi[0] or h > hi[1]:
        return f"Size {w}x{h} exceeds NVENC's {facts.codec} maximum of {hi[0]}x{hi[1]}."
    if w < lo[0] or h < lo[1]:
        return (f"Size {w}x{h} is below this GPU's NVENC {facts.codec} minimum of {lo[0]}x{lo[1]}; "
                "use a larger size or --encoder cpu.")  # fmt: skip
    if facts.pix_fmt == "yuv444p" and not caps.yuv444:
        return f"This GPU's NVENC has no 4:4:4 {facts.codec} encoding; use pix_fmt yuv420p or nv12."
    if options.tuning == "lossless" and not caps.lossless:
        return f"This GPU's NVENC has no lossless {facts.codec} encoding; use qp or crf instead."
    bframes = options.bframes or 0
    if bframes > caps.max_bframes:
        return f"bframes {bframes} exceeds this GPU's NVENC {facts.codec} maximum of {caps.max_bframes}."
    return None


def check_nvenc_options(
    facts: VideoFacts, options: NvencOptions, *, raw_output: bool, caps: NvencCaps | None = None
) -> None:
    """Refuse what NVENC cannot honour, before any GPU work; ``caps`` adds the GPU's own limits."""
    problem = nvenc_options_problem(facts, options, raw_output=raw_output) or nvenc_caps_problem(facts, options, caps)
    if problem is not None:
        raise ConfigError(problem)


class _NvencInput:
    """What ``Encode`` takes: ``cuda()`` gives one CUDA array for packed ABGR, one per plane otherwise."""

    def __init__(self, frame: DeviceFrame) -> None:
        planes = frame.plane_views()
        self._cuda: Any = planes[0] if frame.pix_fmt == "rgba" else planes

    def cuda(self) -> Any:
        return self._cuda


class NvencEncoder:
    """Encode device frames with NVENC; packets carry in-band parameter sets (Annex-B / AV1 OBUs).

    >>> enc = NvencEncoder(facts, options, device)  # doctest: +SKIP
    """

    name = "nvenc"
    _open = 0  # sessions this process holds, for the session-limit message
    _open_lock = threading.Lock()

    def __init__(
        self, facts: VideoFacts, options: NvencOptions, device: Any, raw_output: bool = False, *, checked: bool = False
    ) -> None:
        if not checked:  # cheap (no GPU work); the plan also checked them against the GPU's caps
            check_nvenc_options(facts, options, raw_output=raw_output)
        if device is None:
            raise EncoderUnavailableError("NVENC reads CUDA device frames; it needs a CUDA device.")
        nvc = load_pynvvideocodec()
        self.facts, self.options = facts, options
        self.codec = facts.codec
        self.input_format = facts.pix_fmt
        self._device = device
        w, h = facts.encoded_size
        config = nvenc_config(facts, options, gpu=device.ordinal, context=device.context_handle,
                              stream=device.stream_handle)  # fmt: skip
        device.bind()
        try:
            self._enc: Any = nvc.CreateEncoder(w, h, NVENC_FORMATS[facts.pix_fmt], False, **config)
        except Exception as exc:
            code, why = explain_nvenc_error(exc)
            if code == 10 and NvencEncoder._open:
                why += f" ({NvencEncoder._open} of them held by this process)"
            why = device_zero_hint(device.ordinal, code, why)
            remember_open_failure(device.ordinal, code, why)
            cls = EncoderUnavailableError if code in UNAVAILABLE_CODES or code is None else EncoderError
            raise cls(f"NVENC could not open a session ({why}).") from exc
        with NvencEncoder._open_lock:
            NvencEncoder._open += 1
        self._force_idr = int(nvc.NV_ENC_PIC_FLAGS.FORCEIDR)
        self._keyframe = threading.Event()
        # Frame indices given to Encode, in order: the pts of the packets as they leave (with B-frames, which
        # only raw outputs take, packets leave in decode order and these are decode-order numbers).
        self._pending: collections.deque[int] = collections.deque()
        self._vui = VuiWriter(facts.codec, facts.colour)
        log.info("encoder: NVENC %s %dx%d %s %s", facts.codec, w, h, NVENC_FORMATS[facts.pix_fmt], config)

    def encode(self, frame: Frame) -> list[Packet]:
        frame = device_frame(frame, "NVENC")
        stream = None
        try:
            frame.synchronize()
            self._device.bind()
            stream = self._device.stream
            idr = self._keyframe.is_set()
            self._keyframe.clear()  # a request arriving during this Encode lands on the next frame
            args = (_NvencInput(frame), self._force_idr) if idr else (_NvencInput(frame),)
            result = self._enc.Encode(*args)
            self._pending.append(frame.index)
        except Exception as exc:
            raise EncoderError(f"NVENC failed on frame {frame.index}: {explain_nvenc_error(exc)[1]}") from exc
        finally:
            # PyNvVideoCodec copied the frame with an asynchronous copy on glrec's stream: the slot is
            # handed out again only after an event recorded behind that copy completed.
            frame.release(after=stream)
        return self._packets(result)

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """Each frame in turn (PyNvVideoCodec's ``Encode`` takes one frame a call)."""
        return encode_each(self, frames)

    def request_keyframe(self) -> None:
        """Make the next frame given to :meth:`encode` an IDR (with parameter sets); any thread."""
        self._keyframe.set()

    def flush(self) -> list[Packet]:
        try:
            self._device.bind()
            packets = self._packets(self._enc.EndEncode())
        except Exception as exc:
            raise EncoderError(f"NVENC failed while flushing: {explain_nvenc_error(exc)[1]}") from exc
        if self._pending:
            raise EncoderError(f"NVENC returned no packet for frames {list(self._pending)} after flushing.")
        return packets

    def _packets(self, result: Any) -> list[Packet]:
        out = []
        for p in result or []:
            data = bytes(p["data"])
            if not data:
                continue
            if not self._pending:
                raise EncoderError("NVENC returned more packets than frames it was given.")
            pts = self._pending.popleft()
            out.append(Packet(data, pts, pts, int(p.get("picture_type", -1)) == _IDR))
        return self._vui.write(out)

    def close(self) -> None:
        enc, self._enc = self._enc, None
        if enc is not None:
            with NvencEncoder._open_lock:
                NvencEncoder._open -= 1
