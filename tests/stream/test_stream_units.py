"""Live streaming, pure-Python parts: the frame clock, input validation, viewer queues, wire format, options."""

from __future__ import annotations

import json

import pytest
from helpers import encoder_parts

from glrec.encoders.latency import cpu_live_options, live_gop, nvenc_live_options, one_frame_vbv
from glrec.errors import ConfigError, SceneError
from glrec.events import InputEvent, InputQueue, InputRejected, KeyframeRequest, Ping, parse_message
from glrec.options import VideoOptions
from glrec.sinks.frame_times import FrameTimes, LatencyStats
from glrec.sinks.network import check_url
from glrec.sinks.viewer.protocol import FRAME_HEADER, pack_frame, unpack_frame
from glrec.sinks.viewer.server import StreamServer, is_loopback
from glrec.sinks.viewer.viewers import ViewerQueue
from glrec.stream.clock import FrameClock


class FakeTime:
    """A clock that only moves when slept on or told to."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_clock_paces_at_fps_when_rendering_is_fast():
    t = FakeTime()
    clock = FrameClock(25, clock=t.clock, sleep=t.sleep)
    slots = []
    for _ in range(5):
        slots.append(clock.next_slot())
        t.now += 0.010  # each frame takes 10 ms, well inside 40 ms
    assert slots == [0, 1, 2, 3, 4]
    assert clock.skipped == 0
    # it waited for each slot: 30 ms after each 10 ms frame, never rendering early
    assert t.slept == pytest.approx([0.030] * 4)


def test_clock_skips_to_the_newest_due_slot_and_counts(caplog):
    t = FakeTime()
    clock = FrameClock(10, clock=t.clock, sleep=t.sleep)
    assert clock.next_slot() == 0
    t.now += 0.35  # frame 0 took 350 ms: slots 1, 2 and 3 are due
    with caplog.at_level("WARNING", logger="glrec"):
        assert clock.next_slot() == 3
    assert clock.skipped == 2
    assert "skipped 2 frame slot(s)" in caplog.text and "latest" in caplog.text
    # back on time: the next slot is 4, due at 0.4 s, so it waits the remaining 50 ms
    assert clock.next_slot() == 4
    assert t.slept[-1] == pytest.approx(0.05)


def test_clock_renders_a_slightly_late_frame_without_skipping():
    t = FakeTime()
    clock = FrameClock(10, clock=t.clock, sleep=t.sleep)
    clock.next_slot()
    t.now += 0.15  # slot 1 (due 0.1) is late by 50 ms, slot 2 not yet due
    assert clock.next_slot() == 1
    assert clock.skipped == 0 and t.slept == []


def test_clock_logs_skips_at_most_every_few_seconds(caplog):
    t = FakeTime()
    clock = FrameClock(100, clock=t.clock, sleep=t.sleep)
    clock.next_slot()
    with caplog.at_level("WARNING", logger="glrec"):
        for _ in range(20):
            t.now += 0.05  # always 5 slots behind
            clock.next_slot()
    assert clock.skipped == 20 * 4
    assert len([r for r in caplog.records if "skipped" in r.message]) == 1  # 1 s of skipping, one line


def test_clock_rejects_bad_fps():
    with pytest.raises(ConfigError, match="fps 0"):
        FrameClock(0)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"type":"pointer","action":"down","x":0.25,"y":1,"buttons":1}', InputEvent("pointer", "down", 0.25, 1.0, 1)),
        ('{"type":"pointer","action":"move","x":0,"y":0,"buttons":0,"mods":3}', InputEvent("pointer", "move", mods=3)),
        ('{"type":"wheel","x":0.5,"y":0.5,"dx":0,"dy":-120}', InputEvent("wheel", x=0.5, y=0.5, dy=-120.0)),
        ('{"type":"key","action":"up","key":"a","code":"KeyA"}', InputEvent("key", "up", key="a", code="KeyA")),
        ('{"type":"ping","t":1700000000000.5}', Ping(1700000000000.5)),
        ('{"type":"keyframe"}', KeyframeRequest()),
    ],
)  # fmt: skip
def test_valid_messages_parse(text, expected):
    assert parse_message(text) == expected


@pytest.mark.parametrize(
    "text, reason",
    [
        (b"\x00\x01", "binary message"),
        ("not json", "not json"),
        ("[1, 2]", "not an object"),
        ('{"type": "exec", "code": "import os"}', "unknown type"),
        ('{"type": "__class__"}', "unknown type"),
        ('{"action": "down"}', "unknown type"),
        ('{"type": "pointer", "action": "down", "x": 0.5, "y": 0.5}', "wrong fields for pointer"),
        ('{"type": "pointer", "action": "up", "x": 0, "y": 0, "buttons": 1, "extra": 1}', "wrong fields for pointer"),
        ('{"type": "pointer", "action": "click", "x": 0.5, "y": 0.5, "buttons": 1}', "bad action for pointer"),
        ('{"type": "pointer", "action": "down", "x": 1.5, "y": 0.5, "buttons": 1}', "x out of range"),
        ('{"type": "pointer", "action": "down", "x": "0.5", "y": 0.5, "buttons": 1}', "bad x"),
        ('{"type": "pointer", "action": "down", "x": true, "y": 0.5, "buttons": 1}', "bad x"),
        ('{"type": "pointer", "action": "down", "x": NaN, "y": 0.5, "buttons": 1}', "bad x"),
        ('{"type": "pointer", "action": "down", "x": 0.5, "y": 0.5, "buttons": 99}', "bad buttons"),
        ('{"type": "wheel", "x": 0.5, "y": 0.5, "dx": 0, "dy": 1e9}', "dy out of range"),
        ('{"type": "key", "action": "down", "key": ""}', "bad key"),
        ('{"type": "key", "action": "down", "key": "' + "a" * 33 + '"}', "bad key"),
        ('{"type": "key", "action": "down", "key": "\\u0000"}', "bad key"),
        ('{"type": "ping", "t": -1}', "t out of range"),
        ("[" * 100_000, "too large"),
        ('{"type": "ping", "t": 1, "pad": "' + "x" * 2000 + '"}', "too large"),
    ],
)  # fmt: skip
def test_malformed_messages_are_rejected_with_a_reason(text, reason):
    with pytest.raises(InputRejected) as info:
        parse_message(text)
    assert info.value.reason == reason


def test_deeply_nested_json_under_the_size_limit_is_rejected():
    with pytest.raises(InputRejected, match="not an object"):
        parse_message("[" * 500 + "]" * 500)


class Collector:
    def __init__(self) -> None:
        self.events: list[InputEvent] = []

    def on_input(self, event: InputEvent) -> None:
        self.events.append(event)


def test_input_queue_delivers_in_order_tags_viewer_and_bounds():
    q = InputQueue(maxsize=3)
    events = [InputEvent("key", "down", key=k) for k in "abcd"]
    assert [q.put(e, viewer=7) for e in events] == [True, True, True, False]
    scene = Collector()
    assert q.dispatch(scene) == 3
    assert [e.key for e in scene.events] == ["a", "b", "c"]
    assert {e.viewer for e in scene.events} == {7}
    assert q.dropped == 1 and q.delivered == 3
    # a scene without on_input consumes the events without error
    q.put(events[0])
    assert q.dispatch(object()) == 1


def test_input_queue_wraps_scene_errors():
    class Broken:
        def on_input(self, event):
            raise KeyError("boom")

    q = InputQueue()
    q.put(InputEvent("key", "down", key="x"))
    with pytest.raises(SceneError, match="Broken.on_input"):
        q.dispatch(Broken())


def test_viewer_queue_starts_at_a_keyframe_and_drops_to_the_next_one_when_full():
    q = ViewerQueue(max_frames=3, max_bytes=1000)
    assert not q.offer(b"p", key=False, index=0)  # new viewer: waits for a keyframe
    assert q.offer(b"K1", key=True, index=1)
    for i in range(2, 4):
        assert q.offer(b"p", key=False, index=i)
    assert len(q) == 3
    # full: the backlog is useless without its missing successor, so all of it goes
    assert not q.offer(b"p", key=False, index=4)
    assert len(q) == 0 and q.waiting_for_key and q.overflows == 1
    assert not q.offer(b"p", key=False, index=5)
    assert q.offer(b"K2", key=True, index=6)
    assert q.pop() == (b"K2", 6) and q.pop() is None
    assert q.dropped == 1 + 3 + 1 + 1  # first delta, backlog of 3, the overflowing delta, the next delta


def test_viewer_queue_byte_limit_and_key_restart():
    q = ViewerQueue(max_frames=100, max_bytes=10)
    assert q.offer(b"K" * 6, key=True, index=0)
    # a keyframe that does not fit replaces the backlog directly: the viewer need not wait
    assert q.offer(b"K" * 6, key=True, index=1)
    assert q.queued_bytes == 6 and q.overflows == 1 and not q.waiting_for_key
    assert not q.offer(b"K" * 11, key=True, index=2)  # larger than the whole budget
    assert q.queued_bytes == 0 and q.peak_bytes <= 10


def test_frame_wire_format_round_trips():
    msg = pack_frame(b"\x00\x00\x00\x01\x65", 123456, True, 1700000000.25)
    assert len(msg) == FRAME_HEADER.size + 5 == 21
    index, key, ms, au = unpack_frame(msg)
    assert (index, key, ms, au) == (123456, True, 1700000000250.0, b"\x00\x00\x00\x01\x65")


def test_latency_stats_and_frame_times():
    times = FrameTimes(keep=2)
    for i in range(3):
        times.mark(i, 10.0 + i)
    assert times.get(0) is None and times.get(2) == 12.0
    stats = LatencyStats()
    for ms in range(1, 101):
        stats.add(ms / 1000)
    s = stats.summary()
    assert s["count"] == 100 and s["median_ms"] == pytest.approx(50.5) and s["p99_ms"] == pytest.approx(99.01)
    assert "median 50.5 ms" in stats.describe("x")
    assert LatencyStats().summary()["count"] == 0


def test_live_encoder_settings():
    opts = VideoOptions.create((1280, 720), 30, live=True, bitrate=6_000_000)
    facts, rate = encoder_parts(opts, "nvenc")
    assert cpu_live_options("libx264") == {"tune": "zerolatency", "forced-idr": "1"}
    assert live_gop(facts, rate) == 30 and live_gop(*encoder_parts(opts.with_(gop=10), "nvenc")) == 10
    assert one_frame_vbv(facts, rate) == 200_000
    nv = nvenc_live_options(facts, rate)
    assert nv["preset"] == "P2" and nv["tuning_info"] == "ultra_low_latency" and nv["rc"] == "cbr"
    assert nv["bf"] == "0" and nv["vbvbufsize"] == "200000" and nv["repeatspspps"] == "1"
    with pytest.raises(ConfigError, match="P1, P2 or P3"):
        nvenc_live_options(facts, rate, preset="P7")
    with pytest.raises(ConfigError, match="bframes 2 would delay"):
        VideoOptions.create((64, 64), 30, live=True, bframes=2)


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://127.0.0.1:5000", "Unknown stream URL"),
        ("udp://127.0.0.1", "needs a host and port"),
        ("udp://127.0.0.1:99999", "bad port"),
        ("rtmp://", "needs a host"),
    ],
)
def test_bad_stream_urls(url, words):
    with pytest.raises(ConfigError, match=words):
        check_url(url)


def test_rtmp_refuses_hevc():
    assert check_url("udp://127.0.0.1:5000", "hevc") == "mpegts"
    with pytest.raises(ConfigError, match="carry h264"):
        check_url("rtmp://127.0.0.1/app/x", "hevc")


def test_server_is_safe_by_default():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("evil.example")
    local = StreamServer(size=(64, 64), fps=30)
    assert local.host == "127.0.0.1" and local.token is None
    public = StreamServer(size=(64, 64), fps=30, host="0.0.0.0")
    assert public.token is not None and len(public.token) >= 16  # binding beyond loopback needs a token
    assert f"?token={public.token}" in public.url
    with pytest.raises(ConfigError, match="at least 16"):
        StreamServer(size=(64, 64), fps=30, token="short")
    with pytest.raises(ConfigError, match="h264"):
        StreamServer(size=(64, 64), fps=30, codec="hevc")
    assert json.dumps(local.stats())  # the stats are plain JSON


def test_serve_without_the_stream_extra_says_how_to_install_it(monkeypatch):
    import importlib.util

    from glrec.sinks.viewer.server import StreamExtraMissingError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "websockets" else real(name, *a))
    with pytest.raises(StreamExtraMissingError, match=r"pip install 'glrec\[stream\]'"):
        StreamServer(size=(64, 64), fps=30)


def test_stats_before_any_frame_are_json_that_a_browser_parses():
    """/stats with no latency sample yet held NaN, which JSON.parse rejects; strict JSON has null there."""
    from types import SimpleNamespace

    from websockets.datastructures import Headers

    from glrec.sinks.viewer.gate import RequestGate

    gate = RequestGate("127.0.0.1", None)
    request = SimpleNamespace(path="/stats", headers=Headers([("Host", "127.0.0.1:8000")]))
    stats = {"render_to_socket": LatencyStats().summary(), "viewers": 0}
    response = gate.answer(None, request, url="http://127.0.0.1:8000/", full=None, stats=lambda: stats)
    assert response.status_code == 200

    def strict(name):
        raise ValueError(f"{name} is not JSON")

    got = json.loads(response.body, parse_constant=strict)
    assert got["render_to_socket"] == {"count": 0, "median_ms": None, "p99_ms": None, "max_ms": None}
