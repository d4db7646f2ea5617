"""glrec itself, end to end: ``glrec:<backend>`` (clean) and ``glrec-profiled:<backend>``.

The clean row is what a user gets: a :class:`glrec.Recorder`, the scene drawn
with ``rec.frame()``, ``rec.close()``. Nothing else runs in its loop. The
profiled row is the same recorder with its stages wrapped in timers
(:func:`instrument`); on software GL that serialises the GL stages, so its
frames/s is reported but the ratios use the clean row.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..errors import EncoderUnavailableError
from ..recorder import Recorder
from .common import describe_output, figures, setup_scene
from .meter import GLStageTimer, LoopMeter, StageClock
from .spec import RowResult, RowSpec, row

log = logging.getLogger("glrec")

Timer = Callable[[], AbstractContextManager[Any]]


class _Timed:
    """Forwards everything to ``inner`` and times the methods named in ``timers``."""

    def __init__(self, inner: object, timers: dict[str, Timer]) -> None:
        self._inner = inner
        self._timers = timers

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        timer = self._timers.get(name)
        if timer is None:
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            with timer():
                return attr(*args, **kwargs)

        return timed


def instrument(rec: Recorder, clock: StageClock, gl: GLStageTimer) -> list[str]:
    """Wrap the recorder's stages in timers before its first frame; return the stages it lacks.

    render and convert run on the GL thread (GL timer, or glFinish + wall
    clock); readback (or a CUDA handoff) on the GL thread by the wall clock;
    encode and mux on the worker thread by the wall clock. A recorder
    built another way (a CUDA handoff instead of the host readback) simply
    reports the parts it does not have as missing.
    """
    worker = getattr(rec, "_worker", None)
    parts: list[tuple[object, str, dict[str, Timer]]] = [
        (rec, "_convert", {"run": lambda: gl.stage("convert")}),
        (rec, "_readback", {"submit": lambda: gl.host_stage("readback"), "drain": lambda: gl.host_stage("readback")}),
        (worker, "encoder", {"encode": lambda: clock.wall("encode"), "flush": lambda: clock.wall("encode")}),
        (worker, "sink", {"write": lambda: clock.wall("mux"), "close": lambda: clock.wall("mux")}),
    ]
    missing = []
    for owner, attr, timers in parts:
        if owner is None or getattr(owner, attr, None) is None:
            missing.append(attr.lstrip("_"))
            continue
        setattr(owner, attr, _Timed(getattr(owner, attr), timers))
    if missing:
        log.info("bench: this recorder has no %s stage to time", ", ".join(missing))
    return missing


def _run(spec: RowSpec, profiled: bool) -> RowResult:
    path = spec.output
    accepted = inspect.signature(Recorder).parameters
    unknown = sorted(k for k in spec.options if k not in accepted)
    if unknown:
        raise EncoderUnavailableError(
            f"backend {spec.backend!r} needs Recorder option(s) {', '.join(unknown)}, which this glrec's "
            "Recorder does not take."
        )
    rec = Recorder(
        path, size=spec.size, fps=spec.fps, overwrite=True, **_encoder_options(spec), **spec.options
    )  # fmt: skip
    clock = StageClock()
    with rec:
        scene = setup_scene(rec.ctx, spec)
        gl = GLStageTimer(rec.ctx, clock, spec.gl_clock)  # type: ignore[arg-type]
        missing = instrument(rec, clock, gl) if profiled else []
        meter = LoopMeter()
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
    if profiled:
        out["stages_missing"] = missing
    out.update(describe_output(path))
    return out


def _encoder_options(spec: RowSpec) -> dict[str, Any]:
    # preset and crf are libx264's; other encoders get only what the backend asks for.
    if spec.options.get("codec", "h264") == "h264" and spec.options.get("encoder") in (None, "cpu", "auto"):
        return {"preset": spec.preset, "crf": spec.crf}
    return {}


@row("glrec")
def glrec_clean(spec: RowSpec) -> RowResult:
    return _run(spec, profiled=False)


@row("glrec-profiled")
def glrec_profiled(spec: RowSpec) -> RowResult:
    return _run(spec, profiled=True)
