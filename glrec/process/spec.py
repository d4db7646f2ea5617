"""What ``process=`` accepts: a function, a :class:`Process`, an :class:`OpenCLKernel`, or ``file.py:fn``.

This module only describes and loads; nothing here touches GL, CUDA, torch or
OpenCL, so options can be checked before anything is built.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from .._userfile import import_user_file
from .._values import parse_size
from ..errors import ConfigError, ProcessError

if TYPE_CHECKING:
    from .draw import OverlayScene

ArrayKind = Literal["auto", "numpy", "torch", "cupy"]
MemoryKind = Literal["auto", "host", "cuda"]
KERNEL_SUFFIXES = (".cl",)
_MODULE_PREFIX = "glrec_user_process_"


@dataclass(frozen=True)
class OpenCLKernel:
    """An OpenCL C kernel run once per output pixel, reading the frame and writing a new one.

    The kernel's first four arguments are fixed:
    ``(__global const uchar4 *src, __global uchar4 *dst, int width, int height)``
    (the input frame, rows top-down, ``src[y * width + x]``; the output frame;
    the input's size). The global size is the output's (``get_global_size(0)``
    columns by ``get_global_size(1)`` rows). ``args`` follow those four, as
    numpy scalars or pyopencl objects. ``name`` is the kernel function (default:
    the only one in ``source``).

    >>> OpenCLKernel.from_file("sobel.cl", "sobel")  # doctest: +SKIP
    """

    source: str
    name: str | None = None
    args: tuple[Any, ...] = ()
    options: tuple[str, ...] = ()  # OpenCL build options, e.g. ("-cl-fast-relaxed-math",)
    origin: str = "<source>"  # where the source came from, for messages

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None, **kwargs: Any) -> OpenCLKernel:
        """The kernel ``name`` (default: the file's only one) from an OpenCL C file.

        A missing file raises ConfigError.
        """
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"OpenCL kernel file {str(p)!r} does not exist; check the path.")
        return cls(p.read_text(), name, origin=str(p), **kwargs)

    @property
    def label(self) -> str:
        """How logs and errors name the kernel: its name and where its source came from."""
        return f"OpenCL kernel {self.name or '(the only one)'} from {self.origin}"


@dataclass(frozen=True)
class Process:
    """A processing stage: ``fn`` runs on every frame between render and convert.

    ``fn(frame)`` gets the frame as an H x W x 4 uint8 RGBA array, rows top-down,
    valid for the call only. It may change it in place and return None, return a
    new frame, or return an :class:`~glrec.process.Overlay` (shapes for glrec
    to draw with GL, optionally a new frame). ``fn`` may also be an
    :class:`OpenCLKernel`.

    ``size`` declares the output size when ``fn`` returns frames of another size
    (the video is encoded at that size; the scene still renders at the
    recorder's ``size``). ``array`` picks what ``fn`` gets: ``numpy`` (host),
    ``torch`` (a CUDA tensor on the CUDA path, a CPU tensor otherwise),
    ``cupy``; ``auto`` is torch (else CuPy, else a raw CUDA array view) on the
    CUDA path and numpy on the host path. ``memory`` forces ``host`` (the frame
    is copied to host memory and back on the CUDA path) or ``cuda``. ``overlay``
    is your own GL drawing: its ``draw(data)`` runs with the frame bound, for
    each ``Overlay(data=...)`` that ``fn`` returns.

    >>> Recorder("out.mp4", process=Process(model, size=(1920, 1080)))  # doctest: +SKIP
    """

    fn: Callable[[Any], Any] | OpenCLKernel
    size: tuple[int, int] | None = None
    array: ArrayKind = "auto"
    memory: MemoryKind = "auto"
    overlay: OverlayScene | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.fn) and not isinstance(self.fn, OpenCLKernel):
            raise ConfigError(
                f"process {self.fn!r} is neither callable nor an OpenCLKernel; pass a function taking the frame "
                "(an H x W x 4 uint8 array) or OpenCLKernel(source)."
            )
        if self.size is not None:
            object.__setattr__(self, "size", parse_size(self.size))
        for name, kinds in (("array", ArrayKind), ("memory", MemoryKind)):
            value = getattr(self, name)
            if value not in get_args(kinds):
                raise ConfigError(f"Unknown process {name} {value!r}. Valid: {', '.join(get_args(kinds))}.")
        if isinstance(self.fn, OpenCLKernel) and self.array not in ("auto", "numpy"):
            raise ConfigError(f"An OpenCL kernel reads OpenCL buffers; array {self.array!r} does not apply to it.")

    @property
    def label(self) -> str:
        """What the messages call the function."""
        if isinstance(self.fn, OpenCLKernel):
            return self.fn.label
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        module = getattr(self.fn, "__module__", None)
        if module and module.startswith(_MODULE_PREFIX):  # loaded from FILE.py: name the file
            module = Path(getattr(sys.modules.get(module), "__file__", None) or module).name
        return f"process function {name}" + (f" ({module})" if module and module != "__main__" else "")


def parse_process(value: object) -> Process:
    """The ``process`` option's parser: a Process, an OpenCLKernel, a callable, or ``file.py:fn`` / ``file.cl:name``."""
    if isinstance(value, Process):
        return value
    if isinstance(value, str):
        return load_process(value)
    return Process(value)  # type: ignore[arg-type]  # Process checks it is callable or a kernel


def output_size(process: object) -> tuple[int, int] | None:
    """The size of the frames ``process`` makes, where it declares one (None: the size it is given)."""
    if process is None:
        return None
    return parse_process(process).size


def load_process(spec: str) -> Process:
    """``my.py:fn`` (a function, a callable class, a Process or an OpenCLKernel there; default name ``process``)
    or ``my.cl[:kernel]``."""
    path_text, _, name = spec.partition(":")
    path = Path(path_text)
    if path.suffix.lower() in KERNEL_SUFFIXES:
        return Process(OpenCLKernel.from_file(path, name or None))
    if path.suffix.lower() != ".py":
        raise ConfigError(
            f"process {spec!r} is not FILE.py:FUNCTION or FILE.cl[:KERNEL]; e.g. --process my_filters.py:invert."
        )
    if not path.is_file():
        raise ConfigError(f"Process file {str(path)!r} does not exist; check the path.")
    module = _import(path)
    name = name or "process"
    if not hasattr(module, name):
        found = [n for n, v in vars(module).items() if not n.startswith("_") and _usable(v)]
        raise ConfigError(f"{path} defines no {name!r}. Candidates it defines: {', '.join(found) or 'none'}.")
    obj = getattr(module, name)
    if inspect.isclass(obj) and not isinstance(obj, (Process, OpenCLKernel)):
        obj = obj()  # a callable class, e.g. a torch.nn.Module subclass made with no arguments
    return parse_process(obj)


def _usable(value: object) -> bool:
    return isinstance(value, (Process, OpenCLKernel)) or (callable(value) and not inspect.ismodule(value))


def _import(path: Path) -> Any:
    """Import ``path`` once per process, as Python imports modules (naming it twice runs it once)."""
    return import_user_file(path, _MODULE_PREFIX, ProcessError, "process file", once=True)
