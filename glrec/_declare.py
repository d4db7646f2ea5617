"""How an option is declared, and what is derived from the declarations.

An option is one dataclass field made by :func:`option`: its type and default
are the field's, and its metadata holds the help text, the CLI flag and the
parser that validates it. A table of options (:mod:`glrec.options` composes
them) subclasses :class:`OptionTable`, which builds it from keywords. From the
same declarations come every subcommand's flags and the values a command line
gave (:mod:`glrec.cli.flags`: argparse lives in the CLI) and the Markdown
reference (:func:`reference`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from .errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class OptionSpec:
    """What :func:`option` records beside a field's type and default."""

    help: str
    parse: Callable[[Any], Any]
    flags: tuple[str, ...]  # CLI spellings; empty: Python only
    metavar: str | None
    boolean: bool
    repeat: bool  # the flag may be given several times (a list)
    accepts: str | None = None  # what a caller may pass, as a type (for the typed front door); None: the field's type


def option(
    default: Any,
    help: str,
    parse: Callable[[Any], Any],
    *,
    flags: tuple[str, ...] | None = None,
    metavar: str | None = None,
    boolean: bool = False,
    repeat: bool = False,
    default_factory: Callable[[], Any] | None = None,
    accepts: str | None = None,
) -> Any:
    """Declare one option: a dataclass field with its help text, CLI flag(s) and parser.

    ``accepts`` is the type a caller may pass where the parser takes more than the field's type
    (``size``: a ``"640x360"`` string too); the typed front door (:mod:`glrec._options_typed`) uses it.
    """
    spec = OptionSpec(help, parse, flags if flags is not None else (), metavar, boolean, repeat, accepts)
    if default_factory is not None:
        return field(default_factory=default_factory, metadata={"glrec": spec})
    return field(default=default, metadata={"glrec": spec})


def flag(name: str) -> tuple[str, ...]:
    """The CLI spelling of option ``name``: ``--name`` with dashes for underscores."""
    return ("--" + name.replace("_", "-"),)


def declared(cls: type) -> list[tuple[Field[Any], OptionSpec]]:
    """The options a table declares, in declaration order."""
    return [(f, f.metadata["glrec"]) for f in fields(cls) if "glrec" in f.metadata]


class OptionTable:
    """What every table of options does: build from keywords, list its names, replace values.

    ``OWNER`` says whose options these are, in words a refusal can quote ("tuning and rc are
    NVENC settings"); :meth:`check` holds the rules across the table's own options.
    """

    OWNER: ClassVar[str] = ""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f, _ in declared(cls))

    @classmethod
    def parse(cls: type[T], values: Mapping[str, object]) -> T:
        """Check each given value with its option's parser; the rest keep their defaults."""
        known = {f.name: (f, spec) for f, spec in declared(cls)}
        checked: dict[str, Any] = {}
        for name, value in values.items():
            if name not in known:
                raise unknown_option(name, known)
            checked[name] = None if value is None else _checked(name, *known[name], value)
        return cls(**{k: v for k, v in checked.items() if v is not None})

    def with_(self: T, **changes: object) -> T:
        return replace(self, **changes)  # type: ignore[type-var]

    def check(self) -> None:
        """Raise ConfigError where this table's own options contradict each other (none by default)."""


def _checked(name: str, f: Field[Any], spec: OptionSpec, value: object) -> Any:
    """``value`` through the option's parser, with the checks every option shares, whatever its parser does.

    A boolean option takes True or False only: ``overwrite="False"`` (a string from a config file) is truthy
    and would do the opposite of what it says. A number an option ends up holding is finite: inf or NaN
    passes most range checks (``x < lo`` is False for NaN) and then misbehaves far from where it was given.
    """
    if (spec.boolean or isinstance(f.default, bool)) and not isinstance(value, bool):
        raise ConfigError(f"{name} {value!r} must be True or False.")
    parsed = spec.parse(value)
    numbers = parsed if isinstance(parsed, tuple) else (parsed,)
    if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
        raise ConfigError(f"{name} {value!r} must be a finite number.")
    return parsed


# -- how a message names an option: a keyword from Python, a flag on the command line -------------------

#: Who reads glrec's messages now: ``python`` (keywords) or ``cli`` (flags), set by :func:`cli_spelling`. One
#: value for the process, not per thread: the command line owns its process, and messages made on its worker
#: threads must read as its own.
_SPELLING = ["python"]
_UNSET: Any = object()
#: Flags that are not ``--`` and the keyword with dashes (tests/test_options_declared.py checks them all).
_FLAGS = {"colour_range": "--range", "drop_audio": "--no-audio", "encoder_options": "-x",
          "input_options": "--input-option", "overwrite": "--overwrite (-y)"}  # fmt: skip


@contextmanager
def cli_spelling() -> Iterator[None]:
    """While the command line runs, messages name options by their flags (``--crf``, not ``crf``)."""
    previous = _SPELLING[0]
    _SPELLING[0] = "cli"
    try:
        yield
    finally:
        _SPELLING[0] = previous


def named(name: str, value: Any = _UNSET) -> str:
    """Option ``name`` (set to ``value``) as the reader spells it: a keyword in Python, a flag on the command line.

    >>> named("overwrite", True), named("encoder", "cpu"), named("crf")
    ('overwrite=True', "encoder='cpu'", 'crf')

    On the command line the same are ``--overwrite (-y)``, ``--encoder cpu`` and ``--crf``.
    """
    if _SPELLING[0] == "cli":
        flag = _FLAGS.get(name, "--" + name.replace("_", "-"))
        return flag if value is _UNSET or value is True else f"{flag} {value}"
    return name if value is _UNSET else f"{name}={value!r}"


def spelled(python: str, cli: str) -> str:
    """``python`` for a reader of the Python API, ``cli`` on the command line (where :func:`named` is not enough)."""
    return cli if _SPELLING[0] == "cli" else python


def unknown_option(name: str, valid: Iterable[str]) -> ConfigError:
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"Unknown option {name!r}.{hint} Valid: {', '.join(valid)}.")


# -- derived: the reference (the command line's flags are glrec.cli.flags') ----------------------------


def shown(value: object) -> str:
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    return str(value)


def reference(tables: Iterable[type], intro: str) -> str:
    """The reference of ``tables`` in Markdown: a heading, ``intro``, then one table of options each."""
    tables = tuple(tables)
    lines = ["# glrec options", "", intro, ""]
    for table in tables:
        # a table composed of others listed here (VideoOptions of the encoders' tables) shows its own options only
        inherited = {n for t in tables if t is not table and issubclass(table, t) for n in t.names()}  # type: ignore[attr-defined]
        lines += [f"## {table.__name__}", "", (table.__doc__ or "").strip(), ""]
        lines += ["| keyword | CLI | default | meaning |", "|---|---|---|---|"]
        for f, spec in ((f, s) for f, s in declared(table) if f.name not in inherited):
            flags = ", ".join(f"`{s}`" for s in spec.flags) or "(Python only)"
            default = "—" if f.default in (None, MISSING) else f"`{shown(f.default)}`"
            lines.append(f"| `{f.name}` | {flags} | {default} | {spec.help.replace('%%', '%')} |")
        lines.append("")
    return "\n".join(lines)
