"""The plan: which encoder, fed by which handoff, on which device, and why.

The encoders are rows of :mod:`glrec.encoders.registry`; the plan knows them
only through what the rows declare. It is asked with the stream's facts, the
encoder named and the encoder options given (:class:`StreamRequest`: the
front door's options are one). ``encoder="auto"`` walks
:data:`~glrec.encoders.registry.AUTO_ORDER` and takes the first row whose
options fit (:func:`~glrec.encoders.registry.unfit`), whose memory
the handoff can deliver, that runs on this machine (``problem``) and whose
device limits the options meet (``limits``); a row reading both host and CUDA
memory is fed from CUDA device frames where a CUDA device is open (GPU convert,
one device-to-host copy per frame), else by the PBO host readback. Each row's
checks run once per plan.

One log line states the choice and the reason, with the reasons auto passed
over the rows before it (the summary says them in a few words: ``no NVIDIA
GPU``). An explicit encoder, handoff or CUDA device that cannot work raises an
error naming the reason instead of falling back; when no row fits, the error is
the refusal of the row auto would have taken here (it names the fix), the other
rows' reasons going to the log, or, where no row could run, every row's reason. A plan is
frozen: building may only *refine* it (``auto`` handoff resolved), or, under
``auto``, move on to the next row (:func:`next_plan`) when the GL cannot share
memory with the CUDA device or the chosen encoder fails to open (the latter also
where only the handoff or CUDA device was chosen: the next row keeps them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..encoders.registry import AUTO_ORDER, EncodeRequest, EncoderRow, encoder_row, request, unfit
from ..errors import ConfigError, EncoderUnavailableError
from ..sinks.registry import OutputKind
from ..video_facts import VideoFacts
from .options import PipelineOptions

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice

log = logging.getLogger("glrec")

_CUDA_HANDOFFS = ("register", "shared")


class StreamRequest(Protocol):
    """What the plan is asked for: the stream, the encoder named (or ``auto``), the encoder options given."""

    @property
    def encoder(self) -> str: ...

    @property
    def facts(self) -> VideoFacts: ...

    def given(self) -> dict[str, object]:
        """The encoder options set to other than their defaults, by name."""

    def with_size(self, size: tuple[int, int]) -> StreamRequest:
        """The same request for pictures of ``size`` (a processing stage's output), checked again."""


@dataclass(frozen=True)
class Plan:
    """The chosen chain. ``handoff`` is ``host``, or a CUDA handoff (``auto`` until built, ``register``, ``shared``)."""

    encoder: str  # a row of glrec.encoders.registry
    handoff: str
    reason: str
    device: CudaDevice | None = None  # the opened CUDA device for CUDA plans (released with the pipeline)
    #: What the convert stage makes: ``yuv`` planes, or packed ``rgb24`` (nvJPEG) / ``rgba`` (NVENC's
    #: ABGR) for encoders that convert RGB themselves (the row's ``convert``); None where the encoder's
    #: own GL slots convert (it encodes in the GL context).
    convert: str | None = "yuv"
    #: The user chose the encoder, handoff or CUDA device: never dropped for a fallback.
    explicit: bool = False
    #: The encoder was left to auto, whatever else was chosen: where only the handoff or CUDA device made the
    #: plan explicit, an encoder that fails to open gives way to the next one, on that same handoff and device.
    auto_encoder: bool = False
    #: Why auto passed over the rows before this one (also at build time), in full: the log, ``glrec info`` and
    #: ``RecordResult.fallback_reasons``.
    fallbacks: tuple[str, ...] = ()
    #: The same in a few words each (``no NVIDIA GPU``, ``no NVENC``), for the summary line.
    briefly: tuple[str, ...] = ()

    @property
    def uses_cuda(self) -> bool:
        return self.handoff != "host"

    @property
    def row(self) -> EncoderRow:
        return encoder_row(self.encoder)

    def describe(self) -> str:
        via = "PBO host readback" if self.handoff == "host" else f"CUDA {self.handoff} handoff"
        if self.convert is None:
            via = "its own readback in the GL context"
        return f"encoder {self.encoder} via {via} ({self.reason})"

    def with_(self, **changes: object) -> Plan:
        return replace(self, **changes)  # type: ignore[arg-type]


def _open_cuda(cuda_device: int) -> tuple[CudaDevice | None, str | None]:
    from ..cuda.driver import CudaDevice, cuda_problem

    problem = cuda_problem()
    if problem is not None:
        return None, problem
    return CudaDevice.open(cuda_device), None


class _Cuda:
    """The CUDA device, opened once, when the first row that could use it is tried."""

    def __init__(self, ordinal: int, device: CudaDevice | None = None) -> None:
        self.ordinal, self.device, self._tried = ordinal, device, device is not None
        self.problem: str | None = None
        self.owned = False  # opened here (released here on failure), not handed in

    def release(self) -> None:
        if self.owned and self.device is not None:
            self.device.release()

    def get(self) -> CudaDevice | None:
        if not self._tried:
            self._tried = True
            self.device, self.problem = _open_cuda(self.ordinal)
            self.owned = True
        return self.device


def _clause(text: str | None) -> str:
    """``text`` to go inside a sentence (no full stop of its own)."""
    return (text or "").rstrip(".")


@dataclass(frozen=True)
class _Reason:
    """Why auto passed a row over: in full, in a few words, and which row (None: CUDA itself)."""

    full: str
    brief: str
    row: str | None = None


def make_plan(
    video: StreamRequest,
    pipeline: PipelineOptions,
    output: OutputKind,
    *,
    skip: tuple[str, ...] = (),
    device: CudaDevice | None = None,
    fallbacks: tuple[str, ...] = (),
    briefly: tuple[str, ...] = (),
) -> Plan:
    """Pick encoder and handoff for ``video`` into ``output`` on this machine (see the module docstring).

    ``skip`` leaves rows out (those already tried), ``device`` is a CUDA device already open and
    ``fallbacks`` (``briefly``: the same in a few words) the reasons so far: :func:`next_plan` passes them.
    """
    chosen = video.encoder != "auto"
    handoff = pipeline.handoff
    explicit = chosen or handoff != "auto" or pipeline.cuda_device != 0
    names = (video.encoder,) if chosen else tuple(n for n in AUTO_ORDER if n not in skip)
    facts, given = video.facts, video.given()
    cuda = _Cuda(pipeline.cuda_device, device)
    earlier = [_Reason(full, brief) for full, brief in zip(fallbacks, briefly or fallbacks, strict=False)]
    reasons: list[_Reason] = []
    misfits: list[tuple[EncoderRow, str]] = []  # rows the options do not fit, whatever the machine
    try:
        for name in names:
            row = encoder_row(name)
            why = unfit(row, facts, given, raw_output=output.raw)
            if why is not None:
                if chosen:
                    raise ConfigError(why)
                misfits.append((row, why))
                if facts.codec in row.codecs:
                    cannot = f"{row.label} cannot take these options"
                    reasons.append(_Reason(f"{cannot} ({why.rstrip('.')})", cannot, row.name))
                continue
            if row.reads_gl and handoff in _CUDA_HANDOFFS:
                raise ConfigError(f"encoder {name} encodes in the GL context and reads its bytes back through its "
                                  f"own buffer ring; use handoff auto or host, not {handoff}.")  # fmt: skip
            if handoff == "host" and not (row.reads_host or row.reads_gl):
                if chosen:
                    raise ConfigError(f"encoder {name} reads CUDA memory; use handoff auto, register or shared, "
                                      "not host.")  # fmt: skip
                continue  # not a fallback: the host handoff asked for leaves the host-reading rows
            # CUDA when the row reads nothing else, when a CUDA handoff was asked for, or under auto
            # (fed from CUDA device frames, the GPU converting) where a CUDA device opens.
            wants_cuda = "cuda" in row.reads and (
                row.needs_cuda or handoff in _CUDA_HANDOFFS or (handoff == "auto" and not chosen)
            )
            dev = cuda.get() if wants_cuda else None
            if wants_cuda and dev is None:
                if handoff in _CUDA_HANDOFFS:  # an explicit handoff is honoured or refused, never dropped
                    raise EncoderUnavailableError(
                        f"handoff {handoff!r} needs CUDA: {_clause(cuda.problem)}. Use handoff 'host' (or 'auto')."
                    )
                if row.needs_cuda:
                    if chosen:
                        raise EncoderUnavailableError(
                            f"encoder {name} needs CUDA, which is unusable here: {_clause(cuda.problem)}. "
                            "Use --encoder cpu."
                        )
                    continue  # "no CUDA: ..." is the reason, given once
            if dev is None and pipeline.cuda_device != 0 and cuda.problem is not None:
                raise EncoderUnavailableError(
                    f"cuda_device {pipeline.cuda_device} was asked for, and CUDA is unusable here: "
                    f"{_clause(cuda.problem)}. "
                    "Leave cuda_device unset for the host path."
                )
            asked = request(row, facts, given, raw_output=output.raw, device=dev)
            plan = _fit(row, asked, chosen, handoff, earlier, reasons, cuda.problem)
            if plan is not None:
                return plan.with_(explicit=explicit, auto_encoder=not chosen)
        raise _nothing_fits(names, facts, output, earlier + reasons, misfits, cuda)
    except BaseException:
        cuda.release()
        raise


def _no_cuda(problem: str) -> _Reason:
    from ..cuda.driver import cuda_brief

    return _Reason(f"no CUDA: {problem.rstrip('.')}", cuda_brief(problem))


def _relevant(reasons: list[_Reason], no_cuda: str | None) -> list[_Reason]:
    """``reasons`` without those of rows that need CUDA where there is none (their options do not matter here),
    led by the lack of CUDA."""
    if no_cuda is None:
        return reasons
    kept = [r for r in reasons if r.row is None or not encoder_row(r.row).needs_cuda]
    return [_no_cuda(no_cuda), *kept]


def _fit(
    row: EncoderRow,
    asked: EncodeRequest[Any],
    chosen: bool,
    handoff: str,
    earlier: list[_Reason],
    reasons: list[_Reason],
    no_cuda: str | None,
) -> Plan | None:
    """The plan with ``row`` if it runs here and meets this device's limits; else None (auto) or raise (chosen)."""
    why = row.problem(asked)
    if why is not None:
        if chosen:
            other = " (or nvjpeg with codec mjpeg)" if "mjpeg" not in row.codecs else ""
            raise EncoderUnavailableError(f"{row.label} is unavailable: {why}. Use --encoder cpu{other}.")
        reasons.append(_Reason(row.absent.format(label=row.label, why=why), f"no {row.label}", row.name))
        return None
    why = row.limits(asked)
    if why is not None:
        if chosen:
            raise ConfigError(why)
        cannot = f"{row.label} cannot take these options"
        reasons.append(_Reason(f"{cannot} ({why.rstrip('.')})", cannot, row.name))
        return None
    why = None if chosen else row.auto_problem(asked)
    if why is not None:  # an order of preference, not a failure: the log says it, the summary need not
        log.info("auto passes over %s: %s", row.label, why.rstrip("."))
        return None
    device = asked.device
    via = "cuda" if device is not None else "host"
    plan_handoff = handoff if via == "cuda" else "host"
    fed = via == "cuda" and row.reads_host  # a host-reading encoder fed from CUDA device frames
    passed = earlier + _relevant(reasons, no_cuda)
    if chosen:
        reason = f"{row.label} fed from CUDA device frames, as asked" if fed else "asked for"
    elif handoff == "host" and not passed:
        reason = "host handoff asked for"
    else:
        said = "; ".join(r.full for r in passed) if passed else row.chosen
        reason = (said or "the first encoder that fits") + (f"; {row.label} fed from CUDA device frames" if fed else "")
    convert = None if row.gl_slots is not None else row.convert(asked.facts)
    return Plan(row.name, plan_handoff, reason, device, convert=convert,
                fallbacks=tuple(r.full for r in passed), briefly=tuple(r.brief for r in passed))  # fmt: skip


def _runs_here(row: EncoderRow, facts: VideoFacts, output: OutputKind, cuda: _Cuda) -> bool:
    """Whether auto would take ``row`` here, its options aside: CUDA where it needs it, no problem, and not
    passed over by preference (the GL JPEG encoder on software GL)."""
    if row.needs_cuda and cuda.get() is None:
        return False
    try:
        asked = request(row, facts, {}, raw_output=output.raw, device=cuda.device if row.needs_cuda else None)
        return row.problem(asked) is None and row.auto_problem(asked) is None
    except Exception:  # a probe that fails says the same as a problem: not here
        return False


def _nothing_fits(
    names: tuple[str, ...],
    facts: VideoFacts,
    output: OutputKind,
    reasons: list[_Reason],
    misfits: list[tuple[EncoderRow, str]],
    cuda: _Cuda,
) -> ConfigError:
    """The error when no row fits under auto.

    Where one row takes this codec and pixel format and runs here, auto would have chosen it: its own refusal
    is the message (it names the fix), and the other rows' reasons go to the log (``-v``). Otherwise every row's
    reason, led by the one that decided it.
    """
    takers = [encoder_row(n) for n in names]
    takers = [r for r in takers if facts.pix_fmt in r.pix_fmts and facts.codec in r.codecs]
    would = next((row for row in takers if _runs_here(row, facts, output, cuda)), None)  # asks CUDA if need be
    no_cuda = cuda.problem
    listed = [r.full for r in _relevant(reasons, no_cuda)]
    listed += [f"{row.label}: {why}" for row, why in misfits
               if facts.codec not in row.codecs and not (no_cuda and row.needs_cuda)]  # fmt: skip
    listed = [r.rstrip(".") for r in listed]  # clauses of one sentence
    if would is not None:
        why = {row.name: why for row, why in misfits}.get(would.name)
        why = why or next((r.full for r in reasons if r.row == would.name), None)
        if why is not None:
            log.info("plan: auto would take %s here, which refuses these options; every encoder's reason: %s",
                     would.label, "; ".join(listed))  # fmt: skip
            return ConfigError(why if why.endswith(".") else f"{why}.")
    lead = "No encoder can record these options here"
    if len(takers) == 1:
        lead = f"{facts.codec} in pix_fmt {facts.pix_fmt} needs {takers[0].label}, which cannot record it here"
    return ConfigError(f"{lead}: {'; '.join(listed)}.")


def next_plan(
    plan: Plan, video: StreamRequest, pipeline: PipelineOptions, output: OutputKind, reason: str, *, keep_cuda: bool
) -> Plan:
    """Under auto, the plan with the next row that fits, after ``plan`` failed for ``reason``.

    ``keep_cuda`` False: the CUDA device cannot be used (a GL without it), so the host path only; the
    device stays open either way (the pipeline's stack owns it). A chosen encoder raises instead, and so
    does a chosen handoff or device that the host path would drop (callers re-raise their own error
    before asking); with ``keep_cuda`` the next encoder runs on the chosen handoff and device.
    """
    if plan.explicit and not (keep_cuda and plan.auto_encoder):
        raise ConfigError(f"{reason}, and encoder {plan.encoder} was asked for")
    log.warning("glrec: %s; auto tries the next encoder", reason)
    fallbacks = (*plan.fallbacks, reason)
    briefly = (*plan.briefly, reason)  # whole: a session limit is news worth its words in the summary
    device = plan.device if keep_cuda else None
    skip = tuple(AUTO_ORDER[: AUTO_ORDER.index(plan.encoder) + 1]) if plan.encoder in AUTO_ORDER else ()
    if not keep_cuda:
        pipeline = pipeline.with_(handoff="host")
    new = make_plan(video, pipeline, output, skip=skip, device=device, fallbacks=fallbacks, briefly=briefly)
    # The choices that made the plan explicit (handoff, device) hold for the new one only where CUDA is kept.
    return new.with_(explicit=plan.explicit and keep_cuda)
