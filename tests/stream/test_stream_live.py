"""Live sessions on Mesa: wall-clock slots become timestamps, skips leave gaps, input reaches the scene."""

from __future__ import annotations

import io
import time

import av
import numpy as np

from glrec.cli import main
from glrec.events import InputEvent, InputQueue
from glrec.frame import Packet
from glrec.scenes import Cube
from glrec.sinks.frame_times import FrameTimes
from glrec.stream.live import LiveSession

SIZE = (96, 64)


class ListSink:
    """Keeps packets in memory, noting when each arrived."""

    path = "memory"

    def __init__(self) -> None:
        self.packets: list[Packet] = []
        self.arrived: list[float] = []
        self.bytes_written = 0
        self.closed = 0

    def write(self, packets: list[Packet]) -> None:
        for p in packets:
            self.packets.append(p)
            self.arrived.append(time.time())
            self.bytes_written += len(p.data)

    def close(self) -> None:
        self.closed += 1


class Stutter:
    """Clears to a colour that encodes the time; frame slot 5 takes 120 ms to render."""

    def setup(self, ctx, size):
        self.ctx = ctx
        self.calls: list[float] = []

    def render(self, t):
        self.calls.append(t)
        if len(self.calls) == 6:
            time.sleep(0.12)
        self.ctx.clear((t * 4) % 1.0, 0.5, 0.2)

    def close(self):
        pass


def decode(packets: list[Packet]) -> list[av.VideoFrame]:
    with av.open(io.BytesIO(b"".join(p.data for p in packets)), format="h264") as c:
        return list(c.decode(video=0))


class FakeTime:
    """The live clock's time, moved only by its own sleeps and the scene's stall: slots independent of the load."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_slots_are_timestamps_and_skips_leave_counted_gaps(gl, monkeypatch):
    from glrec.stream import live

    fake = FakeTime()
    # The real clock's slots depend on how busy the machine is (a loaded one skips more, by design); on this
    # clock only the scene's stall takes time, so which slots render is exact. The clock against real time is
    # tests/stream/test_stream_units.py's.
    real = live.FrameClock
    monkeypatch.setattr(live, "FrameClock", lambda fps: real(fps, clock=lambda: fake.now, sleep=fake.sleep))

    class Stall(Stutter):
        def render(self, t):
            self.calls.append(t)
            if len(self.calls) == 6:
                fake.sleep(0.12)  # slot 5 takes 120 ms
            self.ctx.clear((t * 4) % 1.0, 0.5, 0.2)

    sink, times, scene = ListSink(), FrameTimes(), Stall()
    fps = 50.0  # 20 ms slots: the 120 ms stall at slot 5 passes over slots 6..10
    result = LiveSession(scene, sink, size=SIZE, fps=fps, times=times).run(frames=20)
    pts = [p.pts for p in sink.packets]
    # the stall was handled by skipping to the newest due slot (11 at 0.22 s), not by drifting
    assert pts == [0, 1, 2, 3, 4, 5, *range(11, 20)]
    assert result.frames == len(pts) == 15 and result.skipped == 5
    # the scene saw t = slot / fps for every slot it rendered
    assert scene.calls == [i / fps for i in pts]
    # every frame left the encoder as one packet of its own, in order, decodable
    assert all(p.pts == p.dts for p in sink.packets)
    assert all(times.get(i) is not None for i in pts)  # each render was timed, for the latency figures
    assert len(decode(sink.packets)) == result.frames
    assert sink.closed == 1


def test_input_reaches_the_scene_before_the_next_frame(gl):
    class Probe(Stutter):
        def setup(self, ctx, size):
            super().setup(ctx, size)
            self.seen: list[tuple[int, str]] = []

        def on_input(self, event):
            self.seen.append((len(self.calls), event.key))

    inputs = InputQueue()
    for key in "ab":
        inputs.put(InputEvent("key", "down", key=key), viewer=3)
    scene = Probe()
    LiveSession(scene, ListSink(), size=SIZE, fps=100, inputs=inputs).run(frames=3)
    assert scene.seen == [(0, "a"), (0, "b")]  # delivered before frame 0 rendered, in order
    assert inputs.delivered == 2


def test_keyframe_request_during_a_session(gl):
    sink = ListSink()
    session = LiveSession("plasma", sink, size=SIZE, fps=60)

    class Trigger(InputQueue):
        def dispatch(self, scene):
            if session.clock is not None and session.clock.rendered == 8:
                session.request_keyframe()  # as the server does when a viewer joins
            return super().dispatch(scene)

    session.inputs = Trigger()
    session.run(frames=15)
    keys = [p.pts for p in sink.packets if p.keyframe]
    assert keys[:2] == [0, sink.packets[7].pts]


def test_cube_turns_when_dragged(gl):
    from glrec.gl.target import RenderTarget

    # one target for all three renders: creating a target after releasing the bound one leaves
    # a GL_INVALID_OPERATION behind (moderngl rebinds the deleted framebuffer)
    target = RenderTarget(gl.mgl, SIZE)

    def render(cube: Cube) -> np.ndarray:
        cube.setup(gl.mgl, SIZE)
        target.use()
        cube.render(1.0)
        out = np.frombuffer(target.fbo.read(components=3), np.uint8).copy()
        cube.close()
        return out

    still, dragged = Cube(), Cube()
    dragged.on_input(InputEvent("pointer", "down", x=0.2, y=0.5, buttons=1))
    dragged.on_input(InputEvent("pointer", "move", x=0.45, y=0.6, buttons=1))
    dragged.on_input(InputEvent("pointer", "up", x=0.45, y=0.6, buttons=0))
    dragged.on_input(InputEvent("pointer", "move", x=0.9, y=0.9, buttons=0))  # not dragging any more
    assert abs(dragged.yaw - 0.25 * 2 * np.pi) < 1e-9  # a quarter of the width is a quarter turn
    assert abs(dragged.pitch - 0.1 * np.pi) < 1e-9
    a, b = render(still), render(dragged)
    assert np.mean(a != b) > 0.05  # the picture turned
    assert np.array_equal(render(Cube()), a)  # without input the cube still depends only on t
    target.release()


def test_stream_cli_rejects_bad_targets(capsys):
    assert main(["stream", "cube", "--to", "http://127.0.0.1:1/x", "--frames", "1"]) == 2
    assert "Unknown stream URL" in capsys.readouterr().err
    assert main(["serve", "cube", "--codec", "hevc", "--frames", "1"]) == 2
    assert "plays h264" in capsys.readouterr().err
    assert main(["serve", "cube", "--port", "70000", "--frames", "1"]) == 2
    assert "outside 0..65535" in capsys.readouterr().err
