"""The ``glrec`` command (also ``python -m glrec``); every subcommand in a module of its own here."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
