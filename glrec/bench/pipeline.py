"""glrec itself, end to end: ``glrec:<backend>`` (clean) and ``glrec-profiled:<backend>``.

The clean row is what a user gets: a :class:`glrec.Recorder`, the scene drawn
with ``rec.frame()``, ``rec.close()``. Nothing else runs in its loop. The
profiled row is the same recorder with its stages wrapped in timers
(:func:`instrument`); on software GL that serialises the GL stages, so its
frames/s is reported but the ratios use the clean row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, EncoderUnavailableError
from ..options import split_options
from ..recorder import Recorder
from .common import describe_output, figures, setup_scene
from .meter import GLStageTimer, LoopMeter, StageClock
from .spec import RowResult, RowSpec, row

log = logging.getLogger("glrec")


def instrument(rec: Recorder, clock: StageClock, gl: GLStageTimer) -> None:
    """Time the recorder's stages through its public seam (:meth:`Recorder.time_stages`) before its first frame.

    convert runs on the GL thread (GL timer, or glFinish + wall clock); the
    handoff (PBO readback or a CUDA handoff) on the GL thread by the wall clock;
    encode and mux on the worker thread by the wall clock.
    """
    rec.time_stages(
        {
            "convert": lambda: gl.stage("convert"),
            "handoff": lambda: gl.host_stage("readback"),
            "encode": lambda: clock.wall("encode"),
            "mux": lambda: clock.wall("mux"),
        }
    )


def run_recorder(spec: RowSpec, profiled: bool, ready: Callable[[], object] | None = None) -> RowResult:
    """One recording as the row measures it; ``ready()`` is called once all is set up, before the clock starts."""
    path = spec.output
    try:
        split_options(spec.options)
    except ConfigError as exc:
        raise EncoderUnavailableError(f"backend {spec.backend!r} needs options this glrec lacks: {exc}") from None
    rec = Recorder(
        path, size=spec.size, fps=spec.fps, overwrite=True, **_encoder_options(spec), **spec.options
    )  # fmt: skip
    clock = StageClock()
    with rec:
        with rec.ctx:  # glrec's context current for the bench's own GL objects (a block ends before close)
            scene = setup_scene(rec.ctx, spec)
            gl = GLStageTimer(rec.ctx, clock, spec.gl_clock)  # type: ignore[arg-type]
            if profiled:
                instrument(rec, clock, gl)
            meter = LoopMeter()
            if ready is not None:
                ready()
            meter.start()
            try:
                for _ in range(spec.frames):
                    with rec.frame():
                        if profiled:
                            with gl.stage("render"):
                                scene.render(rec.time)
                        else:
                            scene.render(rec.time)
            finally:
                # GL objects go before the recorder releases the context.
                gl.close()
                scene.close()
        result = rec.close()
        meter.stop()
    out = figures(spec, meter, clock if profiled else None, clock_kind=gl.mode if profiled else "none")
    out["encoder"] = result.encoder
    out["recorder_frames"] = result.frames
    out.update(describe_output(path))
    return out


def _encoder_options(spec: RowSpec) -> dict[str, Any]:
    # preset and crf are libx264's; other encoders get only what the backend asks for.
    if spec.options.get("codec", "h264") == "h264" and spec.options.get("encoder") in (None, "cpu", "auto"):
        return {"preset": spec.preset, "crf": spec.crf}
    return {}


@row("glrec")
def glrec_clean(spec: RowSpec) -> RowResult:
    return run_recorder(spec, profiled=False)


@row("glrec-profiled")
def glrec_profiled(spec: RowSpec) -> RowResult:
    return run_recorder(spec, profiled=True)
