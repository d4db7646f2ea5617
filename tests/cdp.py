"""A small Chrome DevTools Protocol client for driving headless Chromium in tests.

Launches Debian's ``chromium`` with a fresh profile, attaches to one page over
the browser's DevTools WebSocket (``websockets``' sync client) and offers the
few commands the streaming tests need: open a URL, evaluate JavaScript, send
mouse events. Events are ignored; commands wait for their matching reply.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any

from websockets.sync.client import connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    # Keep a page without focus running at full speed (headless has no window to focus).
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, exe: str, timeout: float = 20.0) -> None:
        self._profile = tempfile.mkdtemp(prefix="glrec-chromium-")
        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._ids = itertools.count(1)
        self._ws = None
        self._stack = contextlib.ExitStack()
        try:
            url = self._devtools_url(timeout)
            self._ws = self._stack.enter_context(connect(url, max_size=64 * 2**20, open_timeout=timeout))
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Page.enable", session=True)
            self.call("Runtime.enable", session=True)
        except BaseException:
            self.close()
            raise

    def _devtools_url(self, timeout: float) -> str:
        assert self._proc.stderr is not None
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = self._proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                return m.group(1)
        raise CdpError(f"chromium did not start its DevTools endpoint: {''.join(seen)[-2000:]}")

    def call(self, method: str, session: bool = False, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (raises CdpError on a protocol error)."""
        assert self._ws is not None
        msg_id = next(self._ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        self._ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"{method}: no reply within {timeout} s")
            reply = json.loads(self._ws.recv(timeout=left))
            if reply.get("id") != msg_id:
                continue  # an event, or a reply to someone else
            if "error" in reply:
                raise CdpError(f"{method}: {reply['error']}")
            return reply.get("result", {})

    def goto(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """Evaluate JavaScript in the page (promises awaited) and return its JSON value."""
        result = self.call(
            "Runtime.evaluate", session=True, timeout=timeout, expression=expression,
            awaitPromise=True, returnByValue=True,
        )  # fmt: skip
        if "exceptionDetails" in result:
            raise CdpError(f"page raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0, interval: float = 0.1) -> Any:
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except CdpError:
                value = None  # the page may be navigating
            if value:
                return value
            time.sleep(interval)
        raise CdpError(f"timed out after {timeout} s waiting for {expression!r} (last value {value!r})")

    def mouse(self, kind: str, x: float, y: float, buttons: int = 0) -> None:
        """Dispatch a real input event (mousePressed/mouseMoved/mouseReleased) at page pixels x, y."""
        button = "left" if kind != "mouseMoved" or buttons else "none"
        self.call(
            "Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button=button,
            buttons=buttons, clickCount=1 if kind != "mouseMoved" else 0,
        )  # fmt: skip

    def close(self) -> None:
        self._ws = None
        with contextlib.suppress(Exception):  # the browser may be gone already
            self._stack.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stderr is not None:
            self._proc.stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def environment_note() -> str:
    """Why a browser test cannot run here, or '' when it can."""
    if chromium_path() is None:
        return "needs Chromium (apt-get install chromium)"
    if os.environ.get("GLREC_NO_BROWSER") == "1":
        return "GLREC_NO_BROWSER=1 is set"
    return ""
