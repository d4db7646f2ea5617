"""Encoder settings for live mode: every frame leaves the encoder as soon as it is encoded.

A recording can let the encoder hold frames back (B-frames, lookahead, frame
threads) for quality; a live stream cannot, because every held frame is a frame
of delay. These tables say what "configured for latency" means for each
encoder, in one place, so the CPU encoder and the NVENC encoder agree.

>>> from glrec.options import VideoOptions
>>> request = VideoOptions.create((1280, 720), 30, live=True).request("nvenc")
>>> cpu_live_options("libx264")["tune"]
'zerolatency'
>>> nvenc_live_options(request.facts, request.options)["tuning_info"]
'ultra_low_latency'
"""

from __future__ import annotations

from ..errors import ConfigError
from ..timebase import frame_rate
from ..video_facts import VideoFacts
from .options import RateOptions

#: x264/x265 preset for live mode when none is given: fast enough that 720p30 on two
#: shared cores (llvmpipe renders on the same cores) encodes well inside one frame time.
LIVE_PRESET = "superfast"

#: Seconds between periodic keyframes in live mode when ``gop`` is not given, so a
#: receiver that joins (or loses packets) recovers within this time. The browser viewer
#: does not wait for it: the server asks for a keyframe on demand when a viewer joins.
LIVE_KEYFRAME_SECONDS = 1.0

#: NVENC live bitrate when none is given (CBR needs one).
NVENC_DEFAULT_BITRATE = 8_000_000


def live_gop(facts: VideoFacts, options: RateOptions) -> int:
    """Frames between keyframes in live mode: ``options.gop`` or one second's worth."""
    return options.gop if options.gop is not None else max(1, round(facts.fps * LIVE_KEYFRAME_SECONDS))


def one_frame_vbv(facts: VideoFacts, options: RateOptions) -> int | None:
    """A rate-control buffer of one frame's bits at ``options.bitrate`` (None without a bitrate).

    One frame of VBV means no frame may exceed its share of the channel, so no
    frame waits in the network behind a large predecessor.
    """
    if options.bitrate is None:
        return None
    return max(1, round(options.bitrate / facts.fps))


def cpu_live_options(encoder: str) -> dict[str, str]:
    """libavcodec private options that make ``encoder`` (libx264, libx265) emit each frame at once.

    ``tune=zerolatency`` turns off B-frames, lookahead (rc-lookahead, sync-lookahead,
    mb-tree) and frame threading, using sliced threads instead, so the packet for
    frame ``i`` comes out of the ``encode`` call for frame ``i``. ``forced-idr``
    makes a keyframe asked for with ``pict_type I`` an IDR (with SPS/PPS repeated),
    from which a late joiner can start decoding.
    """
    if encoder == "libx264":
        return {"tune": "zerolatency", "forced-idr": "1"}
    if encoder == "libx265":
        return {"tune": "zerolatency"}
    return {}


def nvenc_fps(fps: float) -> str:
    """PyNvVideoCodec's ``fps`` keyword: the exact rate, ``"num/den"``, which it gives NVENC as frameRateNum/Den.

    >>> nvenc_fps(29.97), nvenc_fps(60)
    ('30000/1001', '60/1')
    """
    rate = frame_rate(fps)
    return f"{rate.numerator}/{rate.denominator}"


def nvenc_live_options(facts: VideoFacts, options: RateOptions, preset: str = "P2") -> dict[str, str]:
    """PyNvVideoCodec ``CreateEncoder`` keywords for live mode (NVENC).

    P1-P3 are NVENC's fast presets (``preset`` picks one); ultra-low-latency tuning,
    no B-frames and no lookahead keep NVENC from holding frames; CBR with a one-frame
    VBV buffer keeps every frame inside its share of the channel; SPS/PPS are repeated
    on every IDR so a late joiner can start. PyNvVideoCodec itself still returns each
    packet three ``Encode`` calls after its frame, whatever these settings (see
    :mod:`glrec.encoders.nvenc.encoder`): three frame times of delay that no keyword removes.
    """
    if preset.upper() not in ("P1", "P2", "P3"):
        raise ConfigError(f"live NVENC preset {preset!r} should be P1, P2 or P3 (the low-latency presets).")
    gop = live_gop(facts, options)
    out = {
        "preset": preset.upper(),
        "tuning_info": "ultra_low_latency",
        "bf": "0",
        "lookahead": "0",
        "gop": str(gop),
        "idrperiod": str(gop),
        "repeatspspps": "1",
        "fps": nvenc_fps(facts.fps),
    }
    # CBR needs a channel rate; without one, 8 Mbit/s suits 1080p game-style content.
    rate = options.bitrate if options.bitrate is not None else NVENC_DEFAULT_BITRATE
    vbv = str(max(1, round(rate / facts.fps)))  # one frame of bits, see one_frame_vbv()
    out.update(rc="cbr", bitrate=str(rate), maxbitrate=str(rate), vbvbufsize=vbv, vbvinit=vbv)
    return out
