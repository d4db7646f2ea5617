"""Checking one value: the parsers the option declarations use (Python values and CLI text alike)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, get_args

from ._declare import named
from .errors import ConfigError


def check_number(
    what: str,
    value: object,
    lo: float,
    hi: float | None,
    *,
    integer: bool = False,
    example: str = "",
    cap: float | None = None,
) -> float:
    """Return ``value`` as a finite float in ``lo..hi`` (whole if ``integer``), else raise ConfigError.

    ``cap`` is a ceiling the machinery sets where the meaning sets none (``hi`` None; a C int, say): a value
    below ``lo`` is told "at least", one above ``cap`` the range.
    """
    hint = f" (e.g. {example})" if example else ""
    try:
        if isinstance(value, bool):  # True is an int to Python, never a count to a user
            raise TypeError
        number = float(value)  # type: ignore[arg-type]
        if number != number or (integer and math.isfinite(number) and number != int(number)):  # NaN, a fraction
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{what} {value!r} is not {'a whole number' if integer else 'a number'}{hint}.") from None
    if not math.isfinite(number):
        raise ConfigError(f"{what} {value!r} must be finite{hint}.")
    if hi is None and number < lo:
        raise ConfigError(f"{what} {value!r} must be at least {_bound(lo)}{hint}.")
    if hi is not None and not lo <= number <= hi:
        raise ConfigError(f"{what} {value!r} is outside {_bound(lo)}..{_bound(hi)}{hint}.")
    if cap is not None and number > cap:
        raise ConfigError(f"{what} {value!r} is outside {_bound(lo)}..{_bound(cap)}{hint}.")
    return number


def _bound(x: float) -> str:
    """A range's end as a user would type it: whole numbers in full (2147483647, not 2.14748e+09)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_choice(what: str, value: object, valid: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``valid``, else raise a ConfigError listing them."""
    valid = tuple(valid)
    if value not in valid:
        raise ConfigError(f"Unknown {what} {value!r}. Valid: {', '.join(sorted(valid))}.")
    return str(value)


def parse_size(text: object) -> tuple[int, int]:
    """Parse ``"1920x1080"`` or ``(1920, 1080)`` into ``(width, height)``, both positive."""
    if isinstance(text, str):
        parts = text.lower().replace("×", "x").split("x")
        try:
            w, h = (int(p) for p in parts)
        except ValueError:
            raise ConfigError(f"Size {text!r} is not WIDTHxHEIGHT, e.g. 1920x1080.") from None
    else:
        try:
            w, h = text  # type: ignore[misc]
            if isinstance(w, bool) or isinstance(h, bool) or int(w) != w or int(h) != h:
                raise ValueError
            w, h = int(w), int(h)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(
                f"Size {text!r} is not a (width, height) pair of whole numbers, e.g. (1920, 1080)."
            ) from None
    if w <= 0 or h <= 0:
        raise ConfigError(f"Size {w}x{h} must be positive in both dimensions, e.g. 1280x720.")
    return w, h


MIN_FPS, MAX_FPS = 0.01, 1000.0


def parse_fps(value: object) -> float:
    """Frames per second from ``30``, ``59.94`` or ``"25"``, in ``MIN_FPS..MAX_FPS``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        fps = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"fps {value!r} is not a number; use e.g. 30 or 59.94.") from None
    if not MIN_FPS <= fps <= MAX_FPS:  # also NaN and inf
        raise ConfigError(f"fps {fps} must be above 0 ({MIN_FPS:g} at least) and at most {MAX_FPS:g}; use e.g. 30.")
    return fps


#: The least bitrate any encoder here opens with (libx264 counts in kbit/s and refuses 0); a smaller number is
#: a unit left out (``--bitrate 8`` for 8 Mbit/s), refused with what it likely meant.
MIN_BITRATE = 1000


def parse_bitrate(value: object) -> int:
    """Bits per second from ``8000000``, ``"8M"`` or ``"2500k"``; under 1k (``8``: a unit left out) is refused."""
    number: object = value
    if isinstance(value, str):
        text = value.strip().lower()
        scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(text[-1:], 1.0)
        body = text[:-1] if scale != 1.0 else text
        try:
            number = float(body) * scale
        except ValueError:
            raise ConfigError(f"bitrate {value!r} is not a number such as 8M, 2500k or 8000000.") from None
    bits = check_number("bitrate", number, 1, 1e12, example="8M or 8000000 bits per second")
    if bits < MIN_BITRATE:
        shown = f"{bits:g}"
        meant = f"{shown}M" if bits <= 100 else f"{shown}k"  # 8 is 8 Mbit/s more likely than 8 kbit/s; 500, 500k
        least = f"{MIN_BITRATE // 1000}k"
        raise ConfigError(f"{named('bitrate', value)} is {shown} bit/s, less than any encoder takes ({least}); "
                          f"did you mean {meant}? Give the unit: e.g. 2500k or 8M.")  # fmt: skip
    return round(bits)


def _boolean(what: str) -> Callable[[object], bool]:
    def parse(value: object) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{what} {value!r} must be True or False.")
        return value

    return parse


def parse_encoder_options(value: object) -> tuple[tuple[str, str], ...]:
    """``{"tune": "film"}`` or ``["tune=film", ...]`` (the CLI's repeated ``-x``) as sorted pairs."""
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        pairs = []
        for item in value:
            if isinstance(item, tuple) and len(item) == 2:
                pairs.append((str(item[0]), str(item[1])))
                continue
            key, sep, val = str(item).partition("=")
            if not sep or not key:
                raise ConfigError(f"encoder option {item!r} is not KEY=VALUE, e.g. -x tune=film.")
            pairs.append((key, val))
    else:
        raise ConfigError(f"encoder_options {value!r} must be a dict of strings, e.g. {{'tune': 'film'}}.")
    return tuple(pairs)


def _number(
    what: str, lo: float, hi: float | None, *, integer: bool = False, example: str = "", cap: float | None = None
) -> Callable[..., Any]:
    def parse(value: object) -> float | int:
        number = check_number(what, value, lo, hi, integer=integer, example=example, cap=cap)
        return int(number) if integer else number

    return parse


def _choice(what: str, valid: Any) -> Callable[[object], str]:
    return lambda value: check_choice(what, value, get_args(valid))
