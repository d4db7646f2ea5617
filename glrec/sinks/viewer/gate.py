"""The viewer server's HTTP side: which requests may reach it, and what a plain request gets.

Every request on the server's port passes :meth:`RequestGate.answer` before any
WebSocket handshake: on loopback it must name a loopback host (a DNS-rebinding
page cannot reach the server); with an access token, ``/ws`` and ``/stats``
must carry it as ``?token=``; a browser's WebSocket must come from the server's
own page (``Origin``); and there is room for one more viewer. Plain requests
get the page, its scripts or ``/stats``; nothing else is served.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import math
from collections import Counter
from collections.abc import Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("glrec")

_PAGES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/viewer.js": ("viewer.js", "text/javascript; charset=utf-8"),
    "/mse.js": ("mse.js", "text/javascript; charset=utf-8"),
}
# The page loads only its own scripts and talks only to its own server.
_CSP = (
    "default-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "media-src 'self' blob:"
)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _hostname(value: str) -> str:
    """The host part of a Host header value ("127.0.0.1:8080", "[::1]:8080")."""
    return urlsplit(f"//{value}").hostname or ""


class RequestGate:
    """The access rules of a server bound to ``host`` (with ``token``, if any) and the pages it serves.

    :attr:`refused` counts the requests turned away, by reason.
    """

    def __init__(self, host: str, token: str | None) -> None:
        self.host, self.token = host, token
        self.refused: Counter[str] = Counter()
        self._pages = {
            path: (resources.files(__package__).joinpath("web").joinpath(name).read_bytes(), ctype)
            for path, (name, ctype) in _PAGES.items()
        }

    def refuse(self, connection: Any, status: int, reason: str, text: str) -> Any:
        self.refused[reason] += 1
        log.info("refused %s: %s", reason, text)
        return connection.respond(status, text + "\n")

    def answer(
        self, connection: Any, request: Any, *, url: str, full: str | None, stats: Callable[[], dict[str, Any]]
    ) -> Any:
        """The response to ``request``, or None to go on with the WebSocket handshake (``/ws`` let through).

        ``url`` is the page's address (named in a refusal), ``full`` the refusal text when there is no
        room for another viewer, ``stats`` what ``/stats`` serves.
        """
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        parts = urlsplit(request.path)
        for name in ("Host", "Origin"):
            # Two of either leave no single answer to check (websockets raises on .get): refused.
            if len(request.headers.get_all(name)) > 1:
                return self.refuse(connection, 400, "duplicate header", f"More than one {name} header.")
        host = _hostname(request.headers.get("Host", ""))
        if is_loopback(self.host) and not is_loopback(host):
            return self.refuse(connection, 403, "host", f"Host {host!r} is not a loopback name; open {url}")
        # The page and its scripts are static and public; the stream, the input channel and
        # the numbers are what the token guards.
        if self.token is not None and parts.path in ("/ws", "/stats"):
            given = parse_qs(parts.query).get("token", [""])[0]
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return self.refuse(connection, 403, "token", "A valid ?token= is required.")
        if parts.path == "/ws":
            origin = request.headers.get("Origin")
            if origin is not None and urlsplit(origin).netloc != request.headers.get("Host", ""):
                return self.refuse(connection, 403, "origin", f"Origin {origin!r} is not this server's page.")
            if full is not None:
                return self.refuse(connection, 503, "full", full)
            return None  # go on with the WebSocket handshake
        if parts.path == "/favicon.ico":  # browsers ask for it; there is none
            return Response(204, "No Content", Headers([("Content-Length", "0")]), b"")
        if parts.path == "/stats":
            body, ctype = stats_json(stats()), "application/json"
        elif parts.path in self._pages:
            body, ctype = self._pages[parts.path]
        else:
            return self.refuse(connection, 404, "not found", f"No page {parts.path!r}; the viewer is at /")
        headers = Headers(
            [("Content-Type", ctype), ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
             ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", _CSP), ("Connection", "close")]
        )  # fmt: skip
        return Response(200, "OK", headers, body)


def stats_json(stats: Any) -> bytes:
    """``stats`` as strict JSON: a NaN or infinity (no samples yet) becomes null, which ``JSON.parse`` takes."""

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(stats), allow_nan=False).encode()
