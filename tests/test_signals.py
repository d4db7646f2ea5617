"""Ctrl-C, SIGTERM, SIGHUP and SIGQUIT finish the file: the CLI for real in a subprocess, the library in process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import av
import pytest
from crash_helpers import child_env, decode_indices

import glrec
from glrec.pipeline.worker import EncodeWorker

FPS = 30.0


def _assert_normal_mp4(path) -> None:
    data = path.read_bytes()
    assert b"moof" not in data, "a finished recording is a plain MP4, not the fragmented one"
    assert data.find(b"moov") < data.find(b"mdat"), "index first (faststart)"
    assert not list(path.parent.glob(".*glrec-tmp*"))


def _start_cli_recording(out):
    """``glrec record`` in a child, returned once its first fragment (one second of video) is on disk."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "glrec", "record", "bars", "-o", str(out), "--size", "192x128", "--fps", "30",
         "--frames", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (out.exists() and out.stat().st_size > 0):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the recording never wrote a fragment"
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize(
    "sig, word",
    [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated"), (signal.SIGHUP, "hung up"),
     (signal.SIGQUIT, "quit")],
)  # fmt: skip
def test_cli_finishes_the_file_on_signal_and_exits_130_with_one_line(gl, tmp_path, sig, word):
    """SIGHUP is a closed terminal or a dropped ssh session; SIGQUIT is Ctrl-\\. Both used to lose the last fragment."""
    out = tmp_path / "cut.mp4"
    proc = _start_cli_recording(out)
    proc.send_signal(sig)
    _stdout, stderr = proc.communicate(timeout=120)

    assert proc.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    m = re.fullmatch(rf"glrec: {word}; (.+) was finished with all (\d+) frames recorded so far\.", lines[0])
    assert m, lines[0]
    assert m.group(1) == str(out)
    frames = int(m.group(2))
    assert frames >= FPS  # at least the fragment we waited for
    assert decode_indices(out, FPS) == list(range(frames))  # every frame it made, each once, in order
    _assert_normal_mp4(out)
    with av.open(str(out)) as c:  # seekable: an index, and a seek lands on a keyframe
        s = c.streams.video[0]
        assert s.frames == frames
        c.seek(int((frames / FPS / 2) / s.time_base), stream=s)
        assert next(c.decode(s)).key_frame


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1])
def test_a_second_signal_while_finishing_or_exiting_keeps_exit_status_130(gl, tmp_path, delay):
    """Ctrl-C, then SIGTERM a moment later: the file is finished and the status is 130, never death by SIGTERM.

    The SIGTERM lands while the file is finished (it waits), or while the
    interpreter exits (which had put the default, deadly, action back: -15).
    """
    out = tmp_path / "twice.mp4"
    proc = _start_cli_recording(out)
    proc.send_signal(signal.SIGINT)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    finished = r"glrec: (?:interrupted|terminated); .+ was finished with all (\d+) frames recorded so far\.$"
    m = re.search(finished, stderr.strip())
    assert m, stderr
    assert decode_indices(out, FPS) == list(range(int(m.group(1))))
    _assert_normal_mp4(out)


def test_a_signal_as_close_begins_is_held_until_the_result_exists(gl, tmp_path, monkeypatch):
    """The CI race behind the test above (delay 0): a SIGTERM as close() began was raised before close had a
    result, and the CLI's second close() failed with AttributeError. It is now held until the file is finished."""
    import numpy as np

    import glrec._recording as recording

    class Stop(Exception):
        pass

    def program(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGTERM, program)
    try:
        rec = glrec.Recorder(tmp_path / "held.mp4", size=(64, 48), fps=10)
        for i in range(3):
            rec.write(np.full((48, 64, 3), 40 * i, np.uint8))
        real = recording.untrack

        def untrack_then_sigterm(r):
            real(r)
            signal.raise_signal(signal.SIGTERM)  # the moment the race hit: the recorder already marked closed

        monkeypatch.setattr(recording, "untrack", untrack_then_sigterm)
        with pytest.raises(Stop):
            rec.close()
        result = rec.close()  # the second close (the CLI's, after the signal): the same finished result
        assert result.frames == 3 and result.path.stat().st_size > 0
        with av.open(str(result.path)) as c:
            assert sum(1 for _ in c.decode(video=0)) == 3
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_during_the_start_up_imports_exits_130_with_one_line(tmp_path):
    """The heavy imports (numpy, PyAV, moderngl) run inside main(), where a Ctrl-C is handled.

    Once in about 40 runs on a loaded 2-core machine the child used to print the right line but exit -2
    (first seen 2026-12-01): the interrupt had landed in a dataclass's methods, which ``exec()`` builds, and
    CPython then ended the process by SIGINT (see the test below). The retry this test had is gone.
    """
    _ctrl_c_during_imports(tmp_path / "first")


_INTERRUPTED_IN_EXEC = """
import sys
from glrec._lifecycle import forget_unhandled_interrupt
try:
    exec("raise KeyboardInterrupt")  # as a Ctrl-C landing in a dataclass's methods being built
except KeyboardInterrupt:
    if sys.argv[1] == "forget":
        forget_unhandled_interrupt()
sys.exit(130)
"""


@pytest.mark.parametrize("forget", ["forget", "control"])
def test_an_interrupt_handled_after_exec_ends_with_the_chosen_status(tmp_path, forget):
    """CPython 3.10/3.11 marks a KeyboardInterrupt that left ``exec()``'d code as unhandled, even once handled, and
    under ``python -m`` ends the process by SIGINT. The CLI clears the mark when it handles a Ctrl-C; the control
    shows the mark is there to clear."""
    import ctypes

    try:
        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt")
    except ValueError:
        pytest.skip("this interpreter keeps no such mark where ctypes can reach it")
    (tmp_path / "interrupted_in_exec.py").write_text(_INTERRUPTED_IN_EXEC)
    env = {**child_env(), "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    run = subprocess.run([sys.executable, "-m", "interrupted_in_exec", forget], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == (130 if forget == "forget" else -signal.SIGINT), run.stderr


def _ctrl_c_during_imports(where):
    where.mkdir()
    out = where / "never.mp4"
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "glrec", "record", "bars", "-o", str(out), "--frames", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )  # fmt: skip
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # -X importtime reports each import as it completes
        lines.append(line)
        if re.search(r"\|\s+numpy$", line.rstrip()):
            proc.send_signal(signal.SIGINT)  # numpy is done; PyAV, moderngl and the rest are still to come
            break
    else:
        pytest.fail("numpy was never imported: " + "".join(lines[-5:]))
    lines += proc.stderr.readlines()
    proc.wait(timeout=60)
    said = [line for line in lines if not line.startswith("import time:")]
    assert proc.returncode == 130, "".join(said)
    assert len(said) == 1 and said[0].startswith("glrec: interrupted; nothing was recorded"), said
    assert not out.exists()


class _SigintAt:
    """A scene that sends this process SIGINT (a real Ctrl-C) while rendering frame ``at``."""

    def __init__(self, at: int) -> None:
        self.at, self.frame = at, 0

    def setup(self, ctx, size):
        self.ctx = ctx

    def render(self, t):
        self.ctx.clear(0.5, 0.5, 0.5)
        if self.frame == self.at:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the handler raises KeyboardInterrupt here, mid-frame
        self.frame += 1

    def close(self):
        pass


def test_keyboard_interrupt_in_a_with_block_finishes_the_file(gl, tmp_path):
    path = tmp_path / "ctrl-c.mp4"
    with pytest.raises(KeyboardInterrupt), glrec.Recorder(path, size=(64, 48), fps=FPS) as rec:
        scene = _SigintAt(40)
        for _ in range(1000):
            rec.render(scene)
    assert rec.frames_submitted == 40  # the interrupted frame was never recorded
    assert rec.close().frames == 40
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 40
    _assert_normal_mp4(path)


class _Terminated(BaseException):
    pass


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signal_while_finishing_waits_until_the_file_is_complete(gl, tmp_path, monkeypatch, sig):
    """A second Ctrl-C (or a SIGTERM) during close() is held until the trailer is written, then delivered."""
    original = EncodeWorker.finish

    def finish_interrupted(self):
        os.kill(os.getpid(), sig)  # arrives while the encoder is flushing and the MP4 is being rewritten
        time.sleep(0.2)
        original(self)

    def on_term(signum, frame):
        raise _Terminated()

    monkeypatch.setattr(EncodeWorker, "finish", finish_interrupted)
    previous = signal.signal(sig, on_term) if sig != signal.SIGINT else None  # stands in for the CLI's handler
    try:
        path = tmp_path / "late.mp4"
        rec = glrec.Recorder(path, size=(64, 48), fps=FPS)
        for _ in range(50):
            rec.render("bars")
        with pytest.raises(KeyboardInterrupt if sig == signal.SIGINT else _Terminated):
            rec.close()
    finally:
        if previous is not None:
            signal.signal(sig, previous)
    assert rec.close().frames == 50
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 50
    _assert_normal_mp4(path)


def test_ctrl_c_while_a_frame_is_handed_on_loses_no_earlier_frame(gl, tmp_path, monkeypatch):
    """SIGINT lands just after a read-back frame left the GPU ring and before it reached the queue."""
    from glrec.interop.host import HostReadback

    original = HostReadback._collect
    collected = []

    def collect_then_interrupt(self):
        frame = original(self)
        collected.append(frame.index)
        if len(collected) == 20:
            os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler at the next bytecode: right here
        return frame

    monkeypatch.setattr(HostReadback, "_collect", collect_then_interrupt)
    path = tmp_path / "handoff.mkv"
    with pytest.raises(KeyboardInterrupt), glrec.Recorder(path, size=(64, 48), fps=FPS, encoder="cpu") as rec:
        for _ in range(1000):
            rec.render("bars")
    assert 20 < rec.frames_submitted < 1000
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == rec.frames_submitted


def test_the_programs_own_handlers_are_kept_and_put_back(gl, tmp_path):
    """While a recorder is open a signal outside a frame hand-off reaches the program's handler at once."""
    seen = []

    def mine(signum, frame):
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, mine)
    try:
        rec = glrec.Recorder(tmp_path / "h.mkv", size=(32, 32), fps=FPS, encoder="cpu")
        rec.render("bars")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)
        assert seen == [signal.SIGINT]  # forwarded, not swallowed or delayed to the next frame
        rec.render("bars")
        assert rec.close().frames == 2
        assert signal.getsignal(signal.SIGINT) is mine  # the recorder's gate is gone again
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.getsignal(signal.SIGINT) is previous


def test_a_gate_put_back_by_a_block_that_saved_it_still_hands_signals_on():
    """deferred_signals around a batch recorder saved the frame gate's handler while its grid recorder was open,
    and put it back after that recorder closed: SIGINT then raised KeyError in the gate instead of
    KeyboardInterrupt (seen as three failures of this file after the batch tests ran)."""
    from glrec._lifecycle import deferred_signals, frame_gate

    own = signal.getsignal(signal.SIGINT)
    frame_gate.acquire()
    try:
        with deferred_signals("finishing"):  # saves the gate's handler as the one to put back
            frame_gate.release()  # the last recorder closes inside the block: the program's handler is back
    finally:
        frame_gate.release()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, own)
