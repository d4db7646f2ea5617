"""One error hierarchy for glrec.

Every error derives from :class:`GlrecError` and also from the built-in that a
plain ``except`` clause would expect (``ValueError`` for bad options,
``FileExistsError`` for an output that exists, ...), so callers can catch
either. Messages say what happened, the offending value, and what to do.
"""

from __future__ import annotations

__all__ = [
    "BuffersHeldError",
    "ConfigError",
    "ContextError",
    "ContextThreadError",
    "CudaError",
    "DatasetError",
    "DeviceError",
    "DiskFullError",
    "EncoderError",
    "EncoderUnavailableError",
    "GlrecError",
    "InputError",
    "InputNotFoundError",
    "InputTimeoutError",
    "KernelBuildError",
    "OutputError",
    "OutputExistsError",
    "ProcessError",
    "ProcessOutputError",
    "ProcessUnavailableError",
    "RecorderClosedError",
    "SceneError",
    "ShaderError",
    "UnsupportedInputError",
]


class GlrecError(Exception):
    """Base class of every error glrec raises on purpose."""


class ConfigError(GlrecError, ValueError):
    """An option has a value glrec cannot use (size, fps, codec, ...)."""


class ContextError(GlrecError, RuntimeError):
    """The headless EGL/OpenGL context could not be created or lacks a feature."""


class ContextThreadError(ContextError):
    """A GL-owning object was used from a thread other than the one that made it."""


class DeviceError(GlrecError, RuntimeError):
    """The requested GPU is missing, or EGL and CUDA disagree about which one it is."""


class ShaderError(GlrecError, RuntimeError):
    """A GLSL shader failed to compile or link; the message holds the driver's log."""


class SceneError(GlrecError, RuntimeError):
    """A scene could not be found, loaded, set up, or raised while rendering."""


class RecorderClosedError(GlrecError, ValueError):
    """A frame was given to a recorder after ``close()`` (a ``ValueError``, as writing to a closed file is)."""


class EncoderError(GlrecError, RuntimeError):
    """The video or image encoder failed."""


class EncoderUnavailableError(EncoderError):
    """The requested encoder does not exist on this machine (no NVENC, no codec)."""


class OutputError(GlrecError, OSError):
    """The output could not be opened or written.

    After a failed write, ``frames_written`` says how many frames had reached the
    output and ``frames_kept`` how many the file still holds (it is cut back to
    its last complete fragment); both are None for errors before recording.
    """

    frames_written: int | None = None
    frames_kept: int | None = None

    def __str__(self) -> str:
        # Made as OutputError(errno, message): the message alone. OSError's "[Errno 28] ..." form would lead
        # the line with a number; the number stays in ``errno``.
        if len(self.args) == 2 and isinstance(self.args[0], int) and isinstance(self.strerror, str):
            return self.strerror
        return super().__str__()


class OutputExistsError(OutputError, FileExistsError):
    """The output path exists and overwriting was not asked for."""


class DiskFullError(OutputError):
    """A write failed for lack of space or a file-size limit."""


class CudaError(GlrecError, RuntimeError):
    """A CUDA driver or runtime call failed; the message names the call."""


class BuffersHeldError(GlrecError, RuntimeError):
    """Every buffer of a fixed pool is still held by the caller, so nothing more can be made until one is let go."""


class DatasetError(GlrecError, RuntimeError):
    """A dataset shard failed (after its retries); finished shards are kept for ``--resume``."""


class ProcessError(GlrecError, RuntimeError):
    """A processing stage (``Recorder(process=...)``) could not be set up or run.

    An exception the function itself raises is not wrapped in this: it reaches the caller as itself,
    with glrec's note naming the function and the frame (:func:`note_user_error`).
    """


class ProcessOutputError(ProcessError, ValueError):
    """A process function returned something glrec cannot encode (wrong type, shape, dtype or device)."""


class ProcessUnavailableError(ProcessError, ImportError):
    """A processing stage needs a library that is not installed (the message names the extra)."""


class KernelBuildError(ProcessError):
    """An OpenCL kernel failed to build; the message holds the compiler's log."""


class InputError(GlrecError, OSError):
    """A video input (file, image, stream, camera) could not be opened or read."""


class InputNotFoundError(InputError, FileNotFoundError):
    """The input file or camera does not exist."""


class InputTimeoutError(InputError, TimeoutError):
    """A network input or camera sent nothing within the time allowed."""


class UnsupportedInputError(GlrecError, ValueError):
    """The input holds nothing glrec can use: no video stream, a codec without a decoder, an unsupported
    Shadertoy input (sound, keyboard, cubemap), or a channel a shader samples that nothing is bound to."""


# -- a user's own exception, let through as itself ---------------------------------------------------

_CONTEXT = "__glrec_context__"  # the attribute that marks an exception note_user_error saw


def note_user_error(exc: BaseException, line: str) -> None:
    """Attach glrec's account (``line``: what raised, where) to an exception of the user's own code.

    glrec lets such an exception through as itself, so the caller's ``except ZeroDivisionError``
    catches it, rather than wrapping it in one of glrec's. ``line`` becomes a note of the
    exception (``add_note``, printed under its traceback; on Python 3.10, which has no
    ``add_note``, the same ``__notes__`` list that the ``exceptiongroup`` backport prints), and
    :func:`user_error_line` gives it back: the one line the command line prints.
    """
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(f"glrec: {line}")
    else:  # Python 3.10
        exc.__notes__ = [*getattr(exc, "__notes__", ()), f"glrec: {line}"]  # type: ignore[attr-defined]
    setattr(exc, _CONTEXT, line)


def user_error_line(exc: BaseException) -> str | None:
    """The line :func:`note_user_error` attached to ``exc`` (None for any other exception)."""
    line = getattr(exc, _CONTEXT, None)
    return line if isinstance(line, str) else None
