"""Animated GIF on the CPU: each frame reduced to a palette of its own, then FFmpeg's ``gif`` encoder.

A GIF frame holds at most 256 colours. A fixed palette (FFmpeg's ``rgb8``, 3-3-2 bits)
bands every gradient, so each frame gets the 256 colours that fit it best: the YUV
planes glrec converted (or swscale made from an array) go back to RGB with the
stream's own matrix and range, FFmpeg's ``palettegen`` (``stats_mode=single``) picks
the frame's colours, and ``paletteuse`` (``new=1``) maps the pixels to them with
Sierra-2-4A error diffusion, as ``ffmpeg -vf "split[a][b];[a]palettegen=stats_mode=
single[p];[b][p]paletteuse=new=1"`` does. FFmpeg's encoder then stores only what
changed since the last frame (its ``offsetting`` and ``transdiff`` defaults), so a
still background costs nothing after the first frame; frames therefore depend on the
ones before, and only the first is a keyframe. The gif muxer writes the Netscape loop
block (loop forever) and each frame's delay in hundredths of a second, as FFmpeg's
CLI does for ``out.gif``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import cast

import av

from ...colour import ColourSpec
from ...errors import EncoderError

__all__ = ["GifPalette"]

# swscale's names for the range of the planes glrec made (the RGB side is always full range); its names for the
# matrices are glrec's own.
_RANGE = {"limited": "tv", "full": "pc"}


class GifPalette:
    """Turns each YUV ``av.VideoFrame`` of ``size`` into a ``pal8`` frame with a palette of its own."""

    def __init__(self, size: tuple[int, int], pix_fmt: str, colour: ColourSpec, time_base: Fraction) -> None:
        w, h = size
        graph = av.filter.Graph()
        source = graph.add_buffer(width=w, height=h, format=av.VideoFormat(pix_fmt), time_base=time_base)
        to_rgb = graph.add(
            "scale",
            f"in_color_matrix={colour.matrix}:in_range={_RANGE[colour.range]}:flags=accurate_rnd+full_chroma_int",
        )
        rgb = graph.add("format", "rgb24")
        split = graph.add("split")
        palette = graph.add("palettegen", "stats_mode=single")
        use = graph.add("paletteuse", "new=1:dither=sierra2_4a")
        sink = graph.add("buffersink")
        source.link_to(to_rgb)
        to_rgb.link_to(rgb)
        rgb.link_to(split)
        split.link_to(use, 0, 0)
        split.link_to(palette, 1, 0)
        palette.link_to(use, 0, 1)
        use.link_to(sink)
        graph.configure()
        self._graph, self._source, self._sink = graph, source, sink

    def __call__(self, frame: av.VideoFrame) -> av.VideoFrame:
        """The ``pal8`` frame of ``frame`` (its pts and time base kept)."""
        pts, time_base = frame.pts, frame.time_base
        self._source.push(frame)
        try:
            out = cast(av.VideoFrame, self._sink.pull())
        except (av.error.BlockingIOError, av.error.EOFError) as exc:  # one frame in gives one out: never expected
            raise EncoderError(f"The GIF palette filter gave no frame for frame {pts}: {exc}") from exc
        out.pts, out.time_base = pts, time_base
        return out
