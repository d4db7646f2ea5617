"""Pieces every row shares: a GL scene to render, and the figures a row reports."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import av
import moderngl

from ..gl.context import GLContext, create_context
from ..gl.target import RenderTarget
from ..scenes import Scene, load_scene
from ..sinks.paths import has_frame_pattern, sequence_frames
from .meter import LoopMeter, StageClock, gpu_memory_mb, peak_rss_mb
from .spec import RowResult, RowSpec


class SceneRig:
    """A GL context, one render target and a set-up scene: what a hand-written loop starts from."""

    def __init__(self, gl: GLContext, target: RenderTarget, scene: Scene) -> None:
        self.gl = gl
        self.ctx: moderngl.Context = gl.mgl
        self.target = target
        self.scene = scene

    def render(self, index: int, fps: float) -> None:
        self.target.use()
        self.scene.render(index / fps)


@contextmanager
def scene_rig(spec: RowSpec) -> Iterator[SceneRig]:
    """Create the context, target and scene for ``spec``; release them in reverse order."""
    with ExitStack() as stack:
        gl = stack.enter_context(create_context())
        target = RenderTarget(gl.mgl, spec.size)
        stack.callback(target.release)
        scene = setup_scene(gl.mgl, spec)
        stack.callback(scene.close)
        yield SceneRig(gl, target, scene)


def setup_scene(ctx: moderngl.Context, spec: RowSpec) -> Scene:
    scene = load_scene(spec.scene)
    scene.setup(ctx, spec.size)
    return scene


def encode_all(encoder: Any, sink: Any, frames: Iterable[Any], clock: StageClock) -> None:
    """Encode ``frames`` into ``sink`` as the recorder's worker does, timing encode and mux apart.

    The encoder is flushed and closed and the sink closed (its trailer and, for
    MP4, the rewrite count as mux) also when a frame fails.
    """
    try:
        for frame in frames:
            with clock.wall("encode"):
                packets = encoder.encode(frame)
            with clock.wall("mux"):
                sink.write(packets)
        with clock.wall("encode"):
            packets = encoder.flush()
        with clock.wall("mux"):
            sink.write(packets)
    finally:
        with clock.wall("mux"):
            sink.close()
        encoder.close()


def figures(spec: RowSpec, meter: LoopMeter, clock: StageClock | None, *, clock_kind: str = "wall") -> RowResult:
    """The figures every row reports: frames/s, CPU use, peak memory, time per stage."""
    own, child = peak_rss_mb()
    out: dict[str, Any] = {
        **spec.describe(),
        "frames_timed": spec.frames,
        **meter.figures(spec.frames),
        "peak_rss_mb": own,
        "child_peak_rss_mb": child,
        "gpu_memory_mb": gpu_memory_mb(os.getpid()),
        "stages_ms": clock.per_frame_ms(spec.frames) if clock is not None else {},
        "stage_clock": clock_kind,
    }
    return out


def describe_output(path: Path, expected_codec: str | None = None) -> RowResult:
    """Count the video packets of a finished file with PyAV's demuxer and read its encoder settings.

    An image sequence (``frames_%06d.png``) counts every file its pattern makes; FFmpeg's image2 demuxer reads it.
    """
    sequence = has_frame_pattern(path)
    files = [f for _, f in sequence_frames(path)] if sequence else [path]
    info: dict[str, Any] = {"output_bytes": sum(f.stat().st_size for f in files)}
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        info["output_codec"] = stream.codec_context.name
        info["output_size"] = f"{stream.codec_context.width}x{stream.codec_context.height}"
        info["frames_written"] = sum(1 for p in c.demux(stream) if p.size)
    info["x264"] = None if sequence else x264_settings(path)
    return info


_X264_SEI = re.compile(rb"x264 - core (\d+)[^\x00]*? - options: ([^\x00\x80]*)")


def x264_settings(path: Path) -> dict[str, Any] | None:
    """The settings libx264 wrote into the stream's SEI (core version and option string), if any."""
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    m = _X264_SEI.search(head)
    if m is None:
        return None
    options = dict(kv.split("=", 1) for kv in m.group(2).decode("ascii", "replace").split() if "=" in kv)
    return {"core": int(m.group(1)), "options": options}
