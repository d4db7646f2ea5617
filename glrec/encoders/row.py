"""What an encoder's row declares, and what it is asked with: the data the plan reads instead of encoder names.

Each encoder's room holds its row (``cpu/row.py``, ...): the codecs and pixel
formats it encodes, the memory it reads and so the context its encode runs in,
its own option table, the largest batch it takes in one call, and what the
pipeline builds for it -- the convert stage's output (packed RGB or YUV
planes), the pixel format it takes from host memory, or, for an encoder that
works in the GL context, its own convert and readback slots. Three checks
return a reason or None: :attr:`~EncoderRow.refuse` (what it cannot take,
known without touching the machine), :attr:`~EncoderRow.problem` (why it
cannot run here) and :attr:`~EncoderRow.limits` (this device's limits); a
fourth, :attr:`~EncoderRow.auto_problem`, says why ``auto`` passes it over
where it runs but another encoder is measured faster.
:mod:`glrec.encoders.registry` lists the rows.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from ..video_facts import VideoFacts
from .options import EncoderOptions

if TYPE_CHECKING:
    import moderngl

    from ..convert import ConvertStage
    from ..cuda.driver import CudaDevice
    from ..frame import Frame
    from .encoder import Encoder

#: Where an encoder's encode runs: in the GL context (no handoff), in a CUDA context, or on the host CPU.
EncodeContext = Literal["gl", "cuda", "host"]

OptionsT = TypeVar("OptionsT", bound=EncoderOptions)


@dataclass(frozen=True)
class EncodeRequest(Generic[OptionsT]):
    """What an encoder is opened with: the stream's facts, its own options, the CUDA device, the output's kind.

    ``raw_output``: an elementary stream (.h264, .hevc, .ivf), where no container reorders packets.
    """

    facts: VideoFacts
    options: OptionsT
    device: CudaDevice | None = None
    raw_output: bool = False


class Readback(Protocol):
    """A GL-context encoder's readback slot, in the handoff's place: the finished frames of each index."""

    kind: str

    @property
    def device_bytes(self) -> int: ...

    def before_frame(self) -> None: ...

    def submit(self, index: int) -> Sequence[Frame]: ...

    def drain(self) -> Sequence[Frame]: ...

    def release(self) -> None: ...


#: A GL-context encoder's slots: (its convert stage, its readback) for ``(ctx, request, ring depth)``.
GlSlots = Callable[["moderngl.Context", EncodeRequest[Any], int], "tuple[ConvertStage, Readback]"]
Check = Callable[[EncodeRequest[Any]], "str | None"]


def _none(request: EncodeRequest[Any]) -> str | None:
    return None


def _yuv(facts: VideoFacts) -> str:
    return "yuv"


@dataclass(frozen=True)
class EncoderRow:
    """One encoder (see the module docstring)."""

    name: str
    label: str  # how messages name it: NVENC, nvJPEG, the CPU encoder
    codecs: tuple[str, ...]
    pix_fmts: tuple[str, ...]
    #: The memory it reads, in the order it prefers: ``host`` (PBO readback), ``cuda`` (a CUDA handoff),
    #: ``gl`` (the GL texture, in the GL context: no handoff at all).
    reads: tuple[str, ...]
    encoder: str  # "module:Class", imported when opened: Class(facts, options, device, raw_output)
    options: type[EncoderOptions] = EncoderOptions  # its own table; options of other tables are refused
    #: The most frames it takes in one ``encode_batch`` call (1: it encodes frame by frame).
    batch: int = 1
    #: Frames per call where a recording's GL thread encodes in turns (glrec.pipeline.turns); None: ``batch``.
    turn_batch: int | None = None
    #: What the GL convert stage makes for it (host and CUDA readers): ``yuv`` planes, ``rgb24`` or ``rgba``.
    convert: Callable[[VideoFacts], str] = _yuv
    #: It keeps the render target's alpha in ``rgba`` (PNG); otherwise the pack stage writes alpha opaque.
    keeps_alpha: bool = False
    #: The pixel format it takes from host memory, for frames that skip GL (host readers).
    input_format: Callable[[VideoFacts], str] | None = None
    #: Its own convert and readback slots (GL readers: it encodes in the GL context and reads back bytes).
    gl_slots: GlSlots | None = None
    refuse: Check = _none
    problem: Check = _none
    limits: Check = _none
    #: Why ``auto`` passes it over on this machine although it runs here (a faster row follows), or None.
    #: An explicit choice of it is never refused for this reason.
    auto_problem: Check = _none
    #: ``glrec info``'s lines for it, given the CUDA devices (None: CUDA unusable, with the reason).
    status: Callable[[Sequence[int], str | None], list[str]] | None = None
    doctor: str = ""  # the name of its check in ``glrec doctor``
    absent: str = "no {label}: {why}"  # the reason auto gives when ``problem`` answers ``why``
    chosen: str = ""  # why auto takes it when it is the first that fits (e.g. "an NVENC session opens")
    note: str = ""

    @property
    def reads_host(self) -> bool:
        return "host" in self.reads

    @property
    def reads_gl(self) -> bool:
        """It encodes the GL texture in the GL context itself (its own readback of finished bytes)."""
        return "gl" in self.reads

    @property
    def needs_cuda(self) -> bool:
        return self.reads == ("cuda",)

    @property
    def context(self) -> EncodeContext:
        """Where its encode runs: the GL context, a CUDA context, or the host CPU (a host reader fed
        from CUDA frames copies each to the host first)."""
        return "gl" if self.reads_gl else "cuda" if self.needs_cuda else "host"

    def own_options(self, given: dict[str, Any]) -> EncoderOptions:
        """Its table with the values of ``given`` that are its own (the rest are another table's)."""
        names = {f.name for f in fields(self.options)}
        return self.options(**{k: v for k, v in given.items() if k in names})

    def open(self, request: EncodeRequest[Any]) -> Encoder:
        module, _, cls = self.encoder.partition(":")
        enc_cls = getattr(importlib.import_module(module), cls)
        encoder: Encoder = enc_cls(request.facts, request.options, request.device, request.raw_output)
        return encoder
