"""The viewer server with real WebSocket clients on loopback, fed synthetic access units (no GL).

Covers what viewers may do to the server: send malformed or oversized
messages, stop reading, vanish mid-stream, come from the wrong origin or host,
come without the token, or come one too many. The server keeps serving the
others and its memory stays bounded.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Callable

import pytest

# The stream extra; without it these tests skip with the install hint.
pytest.importorskip("websockets", reason="needs the stream extra: pip install 'glrec[stream]'")
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from glrec.frame import Packet
from glrec.sinks.viewer.protocol import unpack_frame
from glrec.sinks.viewer.server import StreamServer


class Feeder:
    """Publishes synthetic frames at ``fps`` on a thread, like the encode thread does.

    Every ``gop``-th frame is a keyframe, and so is the next one after a keyframe request.
    """

    def __init__(
        self,
        server: StreamServer,
        fps: float = 200.0,
        size: int = 2000,
        gop: int = 50,
        pace: Callable[[], bool] | None = None,
    ) -> None:
        self.server, self.fps, self.size, self.gop = server, fps, size, gop
        self.pace = (
            pace  # publishing waits while this says no (a reader the test needs to keep up, on a loaded machine)
        )
        self.index = 0
        self.key_requests = 0
        self._want_key = False
        self._stop = threading.Event()
        server.on_keyframe_request = self._request
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _request(self) -> None:
        self.key_requests += 1
        self._want_key = True

    def _run(self) -> None:
        while not self._stop.is_set():
            while self.pace is not None and not self.pace() and not self._stop.is_set():
                time.sleep(0.001)
            i = self.index
            key = i % self.gop == 0 or self._want_key
            self._want_key = False
            self.server.times.mark(i)
            body = bytes([i % 251]) * self.size
            self.server.publish(Packet(b"\x00\x00\x00\x01" + body, i, i, key))
            self.index += 1
            time.sleep(1 / self.fps)

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def server():
    srv = StreamServer(size=(64, 48), fps=30, port=0, max_viewers=4, max_queue_frames=8, max_queue_bytes=256 * 1024)
    srv.start()
    yield srv
    srv.close()


def ws_url(server: StreamServer, query: str = "") -> str:
    return f"ws://127.0.0.1:{server.port}/ws{query}"


def frames(ws, n: int, timeout: float = 10.0, keep_data: bool = True) -> list[tuple[int, bool, float, bytes]]:
    """The next ``n`` frames as (index, keyframe, render_ms, access unit); ``keep_data=False`` keeps b"" only."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        msg = ws.recv(timeout=max(0.01, deadline - time.monotonic()))
        if isinstance(msg, bytes):
            index, key, ms, au = unpack_frame(msg)
            out.append((index, key, ms, au if keep_data else b""))
    return out


def wait_until(cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def test_viewer_gets_hello_then_frames_from_a_keyframe_in_order(server):
    with Feeder(server) as feed, connect(ws_url(server)) as ws:
        hello = json.loads(ws.recv(timeout=5))
        assert hello == {"type": "hello", "viewer": 1, "width": 64, "height": 48, "fps": 30, "codec": "h264"}
        got = frames(ws, 40)
    assert got[0][1] is True  # a joining viewer starts on a keyframe...
    assert feed.key_requests >= 1  # ...asked for on its behalf, not waited for
    indices = [g[0] for g in got]
    assert indices == list(range(indices[0], indices[0] + 40))  # nothing lost or reordered
    for index, _, render_ms, au in got:
        assert au == b"\x00\x00\x00\x01" + bytes([index % 251]) * 2000
        assert abs(render_ms / 1000 - server.times.get(index)) < 1e-3  # render time travels with the frame
    assert server.stats()["render_to_socket"]["count"] >= 40


def test_ping_is_answered_with_the_server_clock(server):
    with connect(ws_url(server)) as ws:
        ws.recv(timeout=5)
        ws.send(json.dumps({"type": "ping", "t": 1234.5}))
        pong = json.loads(ws.recv(timeout=5))
    assert pong["type"] == "pong" and pong["t"] == 1234.5 and abs(pong["server"] / 1000 - time.time()) < 5


def http_get(server: StreamServer, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    headers = {"Host": host} if host else {}
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def test_serves_the_page_scripts_and_stats(server):
    status, headers, body = http_get(server, "/")
    assert status == 200 and headers["content-type"].startswith("text/html") and b"viewer.js" in body
    assert "default-src 'self'" in headers["content-security-policy"]
    status, headers, body = http_get(server, "/viewer.js")
    assert status == 200 and "javascript" in headers["content-type"] and b"VideoDecoder" in body
    status, _, body = http_get(server, "/mse.js")
    assert status == 200 and b"MediaSource" in body and b"moof" in body
    status, headers, body = http_get(server, "/stats")
    assert status == 200 and json.loads(body)["viewers"] == 0
    assert http_get(server, "/../etc/passwd")[0] == 404


def test_refuses_foreign_hosts_and_origins(server):
    # DNS rebinding: a page from evil.example that resolves to 127.0.0.1 names its own host
    assert http_get(server, "/", host="evil.example:8080")[0] == 403
    # another site's page in the same browser may not open the stream
    with pytest.raises(InvalidStatus) as info:
        connect(ws_url(server), origin="http://evil.example")
    assert info.value.response.status_code == 403
    # the server's own page may
    with connect(ws_url(server), origin=f"http://127.0.0.1:{server.port}") as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "hello"
    assert server.stats()["refused"] == {"host": 1, "origin": 1}


def test_token_is_required_when_set():
    token = "t" * 24
    with StreamServer(size=(64, 48), fps=30, port=0, token=token) as srv:
        with pytest.raises(InvalidStatus):
            connect(ws_url(srv))
        with pytest.raises(InvalidStatus):
            connect(ws_url(srv, "?token=" + "x" * 24))
        assert http_get(srv, "/stats")[0] == 403
        with connect(ws_url(srv, f"?token={token}")) as ws:
            assert json.loads(ws.recv(timeout=5))["type"] == "hello"
        assert http_get(srv, f"/stats?token={token}")[0] == 200


def test_viewer_limit(server):
    with contextlib.ExitStack() as stack:
        for _ in range(4):
            stack.enter_context(connect(ws_url(server))).recv(timeout=5)
        with pytest.raises(InvalidStatus) as info:
            connect(ws_url(server))
        assert info.value.response.status_code == 503
    wait_until(lambda: server.stats()["viewers"] == 0)
    with connect(ws_url(server)) as ws:  # a place is free again
        assert json.loads(ws.recv(timeout=5))["type"] == "hello"


def test_malformed_and_oversized_messages_are_dropped_and_counted(server):
    bad = [
        "not json", "[]", '{"type": "eval", "code": "1"}', '{"type": "pointer"}',
        '{"type": "pointer", "action": "down", "x": 2, "y": 0, "buttons": 1}', b"\x00binary",
    ]  # fmt: skip
    with Feeder(server) as feed, connect(ws_url(server)) as good, connect(ws_url(server)) as rude:
        good.recv(timeout=5), rude.recv(timeout=5)
        for m in bad:
            rude.send(m)
        rude.send(json.dumps({"type": "key", "action": "down", "key": "a"}))  # one valid event among them
        frames(good, 10)
        rude.send("x" * 5000)  # over the 1 KiB message limit: the server closes this connection (1009)
        with pytest.raises(ConnectionClosed) as info:
            while True:
                rude.recv(timeout=5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009
        # the well-behaved viewer is still served, without a gap
        got = frames(good, 30)
        assert [g[0] for g in got] == list(range(got[0][0], got[0][0] + 30))
        assert feed.index > 0
    stats = server.stats()
    assert stats["inputs_rejected"] == {
        "not json": 1, "not an object": 1, "unknown type": 1, "wrong fields for pointer": 1, "x out of range": 1,
        "binary message": 1, "too large": 1,
    }  # fmt: skip
    events = []
    server.inputs.dispatch(type("S", (), {"on_input": lambda self, e: events.append(e)})())
    assert [(e.kind, e.key, e.viewer) for e in events] == [("key", "a", 2)]


def raw_ws_client(port: int, rcvbuf: int = 4096) -> socket.socket:
    """A WebSocket client that completes the handshake and then never reads (tiny receive buffer)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    assert s.recv(12) == b"HTTP/1.1 101"
    return s


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_viewer_that_stops_reading_is_bounded_and_does_not_slow_the_others(server):
    stalled = raw_ws_client(server.port)
    before = rss_bytes()
    try:
        # 64 KiB frames at up to 400 fps: ~26 MB in all, far more than the stalled socket can absorb. The
        # feeder waits while the good reader (viewer 2) is behind by two frames, so that reader keeps up however
        # loaded the machine is; the stalled one is never waited for.
        def good_is_keeping_up() -> bool:
            good_viewer = server.stats()["per_viewer"].get("2")
            return good_viewer is None or good_viewer["queued_bytes"] <= 2 * (64 * 1024 + 64)

        with (
            Feeder(server, fps=400, size=64 * 1024, gop=1000, pace=good_is_keeping_up) as feed,
            connect(ws_url(server)) as good,
        ):
            good.recv(timeout=5)
            got = frames(good, 400, timeout=30, keep_data=False)
            stats = server.stats()
        growth = rss_bytes() - before
    finally:
        stalled.close()
    assert [g[0] for g in got] == list(range(got[0][0], got[0][0] + 400))  # the reader lost nothing
    slow = stats["per_viewer"]["1"]
    limit = server.max_queue_bytes
    assert slow["overflows"] >= 1 and slow["dropped"] > 200  # the stalled viewer's backlog was thrown away
    assert slow["peak_bytes"] <= limit
    assert slow["queued_bytes"] + slow["socket_buffer"] <= limit + 2 * (64 * 1024 + 64) + 2**15
    # it asked for keyframes to restart from (passed on at most every 2 s for one viewer)
    assert feed.key_requests + stats["keyframe_requests_dropped"] >= 2
    # ~26 MB went through; memory grew by a small fraction of it
    assert growth < 16 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB"


def test_a_viewer_that_vanishes_mid_stream(server):
    with Feeder(server) as feed, connect(ws_url(server)) as good:
        good.recv(timeout=5)
        with connect(ws_url(server)) as gone:
            gone.recv(timeout=5)
            frames(gone, 5)
            gone.socket.close()  # no close handshake: the process died, say
            wait_until(lambda: server.stats()["viewers"] == 1)
        before = feed.index
        got = frames(good, 60)
        assert feed.index > before
    assert [g[0] for g in got] == list(range(got[0][0], got[0][0] + 60))
    assert server.stats()["viewers_total"] == 2


def test_a_taken_port_is_a_clear_error():
    from glrec.errors import OutputError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        srv = StreamServer(size=(64, 48), fps=30, port=port)
        with pytest.raises(OutputError, match=f"Cannot listen on 127.0.0.1:{port}.*another --port"):
            srv.start()
        srv.close()


def _raw_request(server: StreamServer, lines: list[str]) -> tuple[int, bytes]:
    """Send a hand-written HTTP request (http.client cannot repeat a header); return the status and the reply."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return int(reply.split(b" ", 2)[1]), reply


@pytest.mark.parametrize(
    "path, headers",
    [
        ("/", ["Host: 127.0.0.1", "Host: 127.0.0.1"]),
        ("/", ["Host: 127.0.0.1", "Host: evil.example"]),
        ("/ws", ["Host: 127.0.0.1", "Origin: http://127.0.0.1", "Origin: http://evil.example",
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]),
    ],
)  # fmt: skip
def test_a_repeated_host_or_origin_header_is_a_400_not_a_500(server, caplog, path, headers):
    status, reply = _raw_request(server, [f"GET {path} HTTP/1.1", *headers])
    assert status == 400 and b"More than one" in reply, reply[:200]
    assert "Traceback" not in caplog.text
    assert http_get(server, "/")[0] == 200  # and it goes on serving
    assert server.stats()["refused"].get("duplicate header") == 1


def test_one_viewer_cannot_force_keyframes_on_everyone(server):
    """A viewer asking for a keyframe 50 times a second gets its request passed on at most every 2 s."""
    with Feeder(server, fps=100) as feed, connect(ws_url(server)) as ws:
        ws.recv(timeout=5)
        frames(ws, 5, keep_data=False)
        before = feed.key_requests  # the request made when it joined
        started = time.monotonic()
        for _ in range(100):
            ws.send(json.dumps({"type": "keyframe"}))
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        wait_until(lambda: server.stats()["keyframe_requests_dropped"] >= 90)
    passed_on = feed.key_requests - before
    assert passed_on <= elapsed / 2.0 + 1, (passed_on, elapsed)  # not one every 0.2 s (10 per 2 s)
    assert passed_on >= 1  # but a viewer that lost its place is still helped
