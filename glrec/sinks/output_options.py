"""The Recorder's own output options: replace an existing file or not, or write to a sink the caller made.

Declared beside the sinks and composed into the front door by :mod:`glrec.options`
(``Recorder(path, overwrite=..., sink=..., sink_options=...)``). They are Python
only: the command line's ``-y``/``--overwrite`` is a flag of its own, since the
CLI refuses to replace a file unless asked (as ffmpeg does) where the Python API
replaces it (as imageio and PyAV do).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._declare import OptionTable, option
from .._values import _boolean
from ..errors import ConfigError
from .sink import Sink

if TYPE_CHECKING:
    from .registry import OutputKind

_SINK_NEEDS = "write(packets), close(), path, packets and bytes_written (the protocol glrec.sinks.Sink)"


def check_sink(value: object) -> Sink:
    """``value`` if it is a sink (has what :class:`~glrec.sinks.Sink` declares), else ConfigError naming the option."""
    if not isinstance(value, Sink):
        raise ConfigError(
            f"sink {value!r} is not a sink: it needs {_SINK_NEEDS}. To write a file, leave sink out and pass "
            "the file's name as path."
        )
    return value


def check_sink_options(value: object) -> dict[str, Any]:
    """``value`` as the keywords of the sink glrec opens for the path (a mapping with names as keys)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(
            f"sink_options {value!r} must be a dict of keyword names to values, e.g. {{'audio': source.audio}}."
        )
    return dict(value)


@dataclass(frozen=True)
class OutputOptions(OptionTable):
    """Where a recording goes: ``Recorder``'s own keywords (Python only; the CLI replaces a file with ``-y``)."""

    overwrite: bool = option(
        True, "replace an existing output, once the new recording is complete (False: refuse, as the CLI does "
        "without -y)", _boolean("overwrite"),
    )  # fmt: skip
    sink: Sink | None = option(None, f"write to this sink instead of opening path; it needs {_SINK_NEEDS}", check_sink)
    sink_options: dict[str, Any] | None = option(
        None, "keywords for the sink glrec opens for path (audio= copies a video input's audio)", check_sink_options
    )

    def check_for(self, kind: OutputKind | None) -> None:
        """Refuse sink options the sink opened for ``kind`` does not take (None: the caller gave the sink)."""
        given = sorted(self.sink_options or {})
        if not given:
            return
        if kind is None:
            raise ConfigError(
                f"sink_options ({', '.join(given)}) go to the sink glrec opens for path; with sink= given, pass "
                "them to that sink yourself."
            )
        valid = kind.keywords()
        unknown = [k for k in given if k not in valid]
        if unknown:
            raise ConfigError(
                f"sink_options {', '.join(map(repr, unknown))} are not keywords of the {kind.name} output. "
                f"Valid: {', '.join(valid) or 'none'}."
            )
