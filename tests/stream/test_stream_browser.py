"""The browser viewer end to end: ``glrec serve`` in a subprocess, headless Chromium as the viewer.

Chromium (Debian's package) opens the printed URL, decodes the stream with
WebCodecs (and, in a second visit, through the Media Source Extensions
fallback), gets a real mouse press and key press through the DevTools
protocol, and the scene's response shows up in later decoded frames. The page's
render→display latency figures are read back, and the server's own summary
(stdout, after Ctrl-C) is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

# The stream extra; without it these tests skip with the install hint.
pytest.importorskip("websockets", reason="needs the stream extra: pip install 'glrec[stream]'")
from cdp import Browser, chromium_path, environment_note
from where import DATA

SCENE = f"{DATA / 'input_scene.py'}:InputProbe"

# In CI (.ci/run installs chromium) a missing browser is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    bool(environment_note()) and os.environ.get("CI") != "true", reason=environment_note() or "browser available"
)


def start_server(*extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "glrec", "serve", SCENE, "--port", "0", "--size", "320x240", "--fps", "60",
         "--seconds", "60", "--measure", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "glrec: open http://127.0.0.1:PORT/ in a browser ..."
    if "open http" not in line:
        proc.kill()
        raise AssertionError(f"no URL from glrec serve: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split("open ", 1)[1].split()[0]


def stop_server(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)  # Ctrl-C: stop cleanly and print the summary
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 0, err
    return out, err


def rgb_is(pixel: list[int], want: tuple[int, int, int]) -> bool:
    return all(abs(a - b) < 40 for a, b in zip(pixel, want, strict=True))


STATS = "window.glrecViewer && window.glrecViewer.stats()"
RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)


def test_browser_watches_and_drives_the_scene(gl):
    proc, url = start_server()
    try:
        with Browser(chromium_path()) as browser:
            browser.goto(url)
            browser.wait_for(f"{STATS} && {STATS}.frames >= 60", timeout=30)
            stats = browser.evaluate(STATS)
            assert stats["decoder"] == "webcodecs" and stats["codec"].startswith("avc1.")
            assert stats["decodeErrors"] == 0, stats["errors"]
            assert rgb_is(browser.evaluate("glrecViewer.pixel(0.5, 0.5)"), RED)
            before = browser.evaluate("glrecViewer.state.lastIndex")

            # a real mouse press and release on the canvas, as a person's click would make
            box = browser.evaluate("(r => [r.x, r.y, r.width, r.height])(view.getBoundingClientRect())")
            x, y = box[0] + box[2] / 2, box[1] + box[3] / 2
            browser.mouse("mousePressed", x, y, buttons=1)
            browser.mouse("mouseReleased", x, y, buttons=0)
            browser.wait_for("(() => { const p = glrecViewer.pixel(0.5, 0.5); return p[1] > 200 && p[0] < 60; })()")
            after = browser.evaluate("glrecViewer.state.lastIndex")
            assert after > before  # the response came in a later frame

            # a key press goes the same way
            browser.call("Input.dispatchKeyEvent", session=True, type="keyDown", key="b", code="KeyB", text="b")
            browser.call("Input.dispatchKeyEvent", session=True, type="keyUp", key="b", code="KeyB")
            browser.wait_for("(() => { const p = glrecViewer.pixel(0.5, 0.5); return p[2] > 200 && p[1] < 60; })()")

            stats = browser.evaluate(STATS)
            lat = stats["latency"]
            assert lat["count"] >= 60 and 0 < lat["median_ms"] <= lat["p99_ms"]
            assert stats["rttMs"] < 1000  # the clock-offset estimate came from a real round trip

            # the Media Source Extensions fallback decodes the same stream
            browser.goto(url + ("&" if "?" in url else "?") + "decoder=mse")
            browser.wait_for(f"{STATS} && {STATS}.decoder === 'mse' && {STATS}.frames >= 30", timeout=30)
            mse = browser.evaluate(STATS)
            assert mse["latency"]["count"] > 0 and mse["decodeErrors"] == 0, mse["errors"]
            assert rgb_is(browser.evaluate("glrecViewer.pixel(0.5, 0.5)"), BLUE)
    finally:
        out, _ = stop_server(proc)
    summary = json.loads(out.strip().splitlines()[-2])  # the --measure line, before the viewers line
    server = summary["server"]
    assert server["viewers_total"] == 2
    assert server["inputs_delivered"] >= 4  # pointer down, up, key down, up (plus any moves)
    assert server["inputs_rejected"] == {}
    assert summary["render_to_packet"]["count"] > 60
    print(f"\nbrowser render->display: {lat}; server render->socket: {summary['render_to_packet']}")


def test_token_guards_the_stream(gl):
    # Binding beyond loopback generates a token (tests/stream/test_stream_units.py checks that without
    # binding one); here a token given on loopback is enforced the same way, through the browser.
    token = "s3cret-token-for-the-test"
    proc, url = start_server("--token", token)
    try:
        assert url.endswith(f"?token={token}")
        with Browser(chromium_path()) as browser:
            browser.goto(url)
            browser.wait_for(f"{STATS} && {STATS}.frames >= 10", timeout=30)
            browser.goto(url.split("?")[0])  # the same page without the token: the stream is refused
            browser.wait_for(f"{STATS} && {STATS}.closed", timeout=10)
            assert browser.evaluate(f"{STATS}.frames") == 0
    finally:
        out, _ = stop_server(proc)
    assert json.loads(out.strip().splitlines()[-2])["server"]["refused"] == {"token": 1}
