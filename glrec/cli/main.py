"""The ``glrec`` command (also ``python -m glrec``): the parser of every subcommand, logging, and the exit codes.

Each subcommand lives in a module of its own here (:data:`SUBCOMMAND_MODULES`),
with ``register(subparsers, common)`` adding its parser; :func:`main` runs one
and turns Ctrl-C, SIGTERM, a closed stdout and glrec's errors into one line and
an exit status. While it runs, glrec's messages name options by their flags
(:func:`glrec._declare.cli_spelling`), and a flag the command does not have gets
the closest one it has (:func:`parse`).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from .._declare import cli_spelling
from .._lifecycle import Terminated, catch_termination, forget_unhandled_interrupt, restore_handlers
from ..errors import GlrecError, user_error_line
from .stdout import StdoutError, abandon_stdout, checked_stdout, say

log = logging.getLogger("glrec")

#: Modules that add subcommands, in the order ``--help`` lists them: each has register(subparsers, common).
SUBCOMMAND_MODULES: list[str] = [
    "glrec.cli.record",  # record, scenes
    "glrec.cli.transcode",  # transcode
    "glrec.cli.stream",  # stream, serve
    "glrec.cli.info",  # info
    "glrec.cli.doctor",  # doctor
    "glrec.cli.dataset",  # dataset, dataset-preview
    "glrec.cli.bench",  # bench
]

DESCRIPTION = """\
Render OpenGL scenes headless and record them to video.

  glrec record SCENE -o OUT       record a scene: built-in (glrec scenes), file.py[:Class], Shadertoy shader
  glrec transcode INPUT -o OUT    re-encode a video (file, URL, camera), --overlay SCENE drawn over it
                                  (glrec record INPUT -o OUT does the same)
"""

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glrec", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"glrec {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # The commands live in their own modules, each with register(subparsers, common)
    # that adds a parser and sets func; imported here so `glrec --help` lists them all.
    import importlib

    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).register(sub, common)
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, and for an option the command does not have, the ones it has that are close."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        commands = _commands(parser)
        command = commands.get(getattr(args, "command", None) or "", parser)
        _unrecognized(command, extras, [c for c in commands.values() if c is not command])
    return args


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string the parser takes (argparse's own list)."""
    return [s for action in parser._actions for s in action.option_strings]


def _unrecognized(
    parser: argparse.ArgumentParser, extras: list[str], others: list[argparse.ArgumentParser]
) -> NoReturn:
    """argparse's refusal with "did you mean" from the command's own options (difflib), and its exit status 2.

    An option another command has (``glrec serve --quality``) is named as theirs, not matched to a lookalike.
    """
    options, hints = _options(parser), []
    for word in extras:
        if not word.startswith("-"):
            continue
        flag = word.split("=", 1)[0]
        owners = [o.prog for o in others if flag in _options(o)]
        if owners:
            hints.append(f"{flag} is an option of {owners[0]}, not of {parser.prog}")
        else:
            hints += [f"did you mean {m}?" for m in difflib.get_close_matches(flag, options, n=1, cutoff=0.6)]
    hint = "".join(f"; {h}" for h in hints)
    parser.exit(EXIT_USAGE, f"{parser.prog}: error: unrecognized arguments: {' '.join(extras)}{hint}\n"
                            f"{parser.prog}: '{parser.prog} --help' lists its options\n")  # fmt: skip


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (main() may run again with stderr replaced)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    # main() may run many times in one process (tests, embedding): add the handler once.
    if not any(getattr(h, "_glrec_cli", False) for h in log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("glrec: %(message)s"))
        # The commands print the summary line themselves (also without -v): the log's copy would repeat it.
        handler.addFilter(lambda record: not getattr(record, "glrec_summary", False))
        handler._glrec_cli = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(level)


def _interrupted_output(args: argparse.Namespace | None) -> str:
    """What became of the output when a recording was cut short (the recorder has finished it)."""
    note = getattr(args, "interrupted_note", None)  # a command that knows what it left (glrec dataset)
    if note:
        return str(note)
    rec = getattr(args, "recorder", None)
    out = getattr(args, "output", None)
    if rec is None:
        return f"nothing was recorded{f' to {out}' if out else ''}."
    try:
        frames = rec.close().frames  # already closed by its with block: returns the result
    except Exception as exc:
        return f"finishing {rec.path} failed: {exc}"
    if frames == 0:
        return f"no frame was complete, so {rec.path} was not written."
    if frames != rec.frames_submitted:
        return f"{rec.path} was finished with {frames} of the {rec.frames_submitted} frames recorded so far."
    return f"{rec.path} was finished with all {frames} frames recorded so far."


def main(argv: Sequence[str] | None = None) -> int:
    # Signals are caught before the heavy imports (build_parser imports every subcommand),
    # so a Ctrl-C or SIGTERM at any moment ends with one line and a known exit status.
    previous = catch_termination()
    stdout = checked_stdout()
    args: argparse.Namespace | None = None
    status: int | None = None
    try:
        with cli_spelling():  # messages name options as flags here (--overwrite, not overwrite=True)
            args = parse(build_parser(), argv)
            _setup_logging(args.verbose)
            status = int(args.func(args))
            sys.stdout.flush()  # a closed pipe or a full device shows here, not at interpreter exit
        return status
    except KeyboardInterrupt as exc:
        status = EXIT_INTERRUPTED
        forget_unhandled_interrupt()  # handled here: exit 130, not by SIGINT (see _lifecycle)
        restore_handlers(previous, leaving=argv is None)  # from here on, a second signal cannot change that
        what = exc.word if isinstance(exc, Terminated) else "interrupted"
        say(f"glrec: {what}; {_interrupted_output(args)}")
        return status
    except StdoutError as exc:
        if abandon_stdout(exc, redirect=argv is None):
            return status if status is not None else 0  # the reader stopped reading (| head): not a failure
        say(f"glrec: error: could not write to standard output ({exc.strerror}); the work itself was done.")
        return EXIT_ERROR
    except GlrecError as exc:
        say(f"glrec: error: {exc}")
        return EXIT_USAGE if isinstance(exc, ValueError) else EXIT_ERROR
    except Exception as exc:  # the user's own code (a --process function) raised: glrec's line about it
        line = user_error_line(exc)
        if line is None:
            raise
        say(f"glrec: error: {line}")
        return EXIT_ERROR
    finally:
        sys.stdout = stdout
        if not (status == EXIT_INTERRUPTED and argv is None):  # else done above, for the program's last moments
            restore_handlers(previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
