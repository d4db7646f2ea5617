"""The baselines: the loop people write today, measured in the same run as glrec.

(a) ``naive-imageio``: ``glReadPixels`` (``fbo.read``) -> numpy -> imageio-ffmpeg,
    which pipes raw RGB to an ffmpeg process running libx264.
(b) ``naive-pyav``: the same loop, but RGB frames go to PyAV in process and
    PyAV's swscale converts them to yuv420p. Set beside (a), it separates what
    glrec gains by its pipeline from what it gains by not using a pipe.

Both encode with libx264 at the preset and crf the spec gives (glrec's own
defaults: veryfast, crf 20), at the same size, from the same scene. The
``glFinish`` after rendering costs nothing here (``glReadPixels`` waits for the
frame anyway) and lets rendering and reading be timed apart.
"""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np

from ..errors import EncoderUnavailableError
from .common import SceneRig, describe_output, figures, scene_rig
from .ffmpeg import find_ffmpeg, use_ffmpeg
from .meter import LoopMeter, StageClock
from .spec import RowResult, RowSpec, row


def read_rgb(rig: SceneRig) -> np.ndarray:
    """The rendered frame as a top-down RGB array, the way users read it: glReadPixels, then flip."""
    w, h = rig.target.size
    data = rig.target.fbo.read(components=3, alignment=1)
    # GL stores rows bottom-up; video wants them top-down.
    return np.ascontiguousarray(np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1])


def render_and_read(rig: SceneRig, index: int, fps: float, clock: StageClock) -> np.ndarray:
    """Render frame ``index`` and read it back as users do, timing the two apart."""
    with clock.wall("render"):
        rig.render(index, fps)
        rig.ctx.finish()
    with clock.wall("readback"):
        return read_rgb(rig)


@row("naive-imageio")
def naive_imageio(spec: RowSpec) -> RowResult:
    found = use_ffmpeg()  # skipped with the reason where there is no ffmpeg with libx264
    import imageio_ffmpeg

    clock, meter = StageClock(), LoopMeter()
    path = spec.output
    with scene_rig(spec) as rig:
        writer = imageio_ffmpeg.write_frames(
            str(path), spec.size, fps=spec.fps, codec="libx264", pix_fmt_out="yuv420p",
            quality=None,  # no imageio quality mapping: the crf below is the rate control
            macro_block_size=1,  # encode the exact size, as glrec does (no rescale to a multiple of 16)
            output_params=["-preset", spec.preset, "-crf", f"{spec.crf:g}"],
        )  # fmt: skip
        writer.send(None)  # starts ffmpeg; not part of the timed loop, like opening glrec's encoder
        meter.start()
        try:
            for i in range(spec.frames):
                rgb = render_and_read(rig, i, spec.fps, clock)
                with clock.wall("encode"):  # the pipe write; blocks while ffmpeg is behind
                    writer.send(rgb)
        finally:
            with clock.wall("encode"):
                writer.close()  # ffmpeg flushes x264, writes the file and exits
        meter.stop()
    out = figures(spec, meter, clock)
    out["ffmpeg"] = found.describe()
    out.update(describe_output(path))
    return out


@row("naive-pyav")
def naive_pyav(spec: RowSpec) -> RowResult:
    clock, meter = StageClock(), LoopMeter()
    path = spec.output
    w, h = spec.size
    with scene_rig(spec) as rig:
        container = av.open(str(path), "w")
        try:
            stream = container.add_stream("libx264", rate=Fraction(spec.fps).limit_denominator(1001))
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.options = {"preset": spec.preset, "crf": f"{spec.crf:g}"}
            meter.start()
            for i in range(spec.frames):
                rgb = render_and_read(rig, i, spec.fps, clock)
                with clock.wall("convert"):
                    # stream.encode() would run this same swscale pass itself; calling it
                    # here only makes its time visible.
                    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
                    frame.pts = i
                with clock.wall("encode"):
                    packets = stream.encode(frame)
                with clock.wall("mux"):
                    container.mux(packets)
            with clock.wall("encode"):
                packets = stream.encode(None)
            with clock.wall("mux"):
                container.mux(packets)
        finally:
            with clock.wall("mux"):
                container.close()
        meter.stop()
    out = figures(spec, meter, clock)
    out.update(describe_output(path))
    return out


def imageio_ffmpeg_version() -> str | None:
    """The ffmpeg the naive-imageio baseline runs (version line, path, how found), or None where there is none."""
    try:
        found = find_ffmpeg()
    except EncoderUnavailableError:
        return None
    return f"{found.version} ({found.path}, {found.found_by})"
