"""A stage failing mid-recording: the pipeline stops, the file keeps what was made, nothing is left running.

For each failure (scene, encoder, sink, the GL convert stage) the test checks
that the caller gets the original exception (its type and cause, raised once,
not wrapped in a chain of follow-up errors), that the file decodes with the
frames made before the failure, and that no glrec thread and no GL object of
the recorder's context is left.
"""

from __future__ import annotations

import inspect
import traceback

import av
import pytest
from crash_helpers import decode_indices

import glrec
from glrec.convert import Converter
from glrec.encoders.cpu import CpuEncoder
from glrec.gl.leaks import glrec_threads, live_gl_objects
from glrec.sinks.container import ContainerSink

FPS = 30.0
SIZE = (192, 128)


def _record_until_failure(path, **options):
    """Record up to 300 bars frames; return (recorder, its moderngl context, the exception raised)."""
    rec = glrec.Recorder(path, size=SIZE, fps=FPS, encoder="cpu", **options)
    mgl = rec.ctx
    with pytest.raises(BaseException) as info:  # each test checks the type itself
        for _ in range(300):
            rec.render("bars")
    return rec, mgl, info.value


def _fail_on_call(monkeypatch, owner, name: str, n: int, error: BaseException) -> None:
    """Make ``owner.name`` raise ``error`` on its ``n``-th call and behave as before otherwise."""
    original = getattr(owner, name)
    calls = [0]

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n:
            raise error
        return original(*args, **kwargs)

    static = isinstance(inspect.getattr_static(owner, name), staticmethod)
    monkeypatch.setattr(owner, name, staticmethod(failing) if static else failing)


def _assert_stopped_and_released(rec, mgl) -> None:
    assert glrec_threads() == [], "the encode worker is still running"
    assert live_gl_objects(mgl) == [], "GL objects outlived the recorder"
    assert mgl.mglo.__class__.__name__ == "InvalidObject", "the GL context was not released"
    with pytest.raises(glrec.GlrecError, match="closed"):
        rec.render("bars")


def _raised_once(exc: BaseException, frame_name: str) -> None:
    """The traceback runs from where it happened (``frame_name``) to the caller, once.

    Raising the same exception object again (when finishing) would prepend the
    finishing code's frames to its traceback, which is what confuses readers.
    """
    names = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    assert names.count(frame_name) == 1, names
    assert "finish" not in names and "close" not in names, names


def test_scene_error(gl, tmp_path):
    class Boom:
        def setup(self, ctx, size):
            self.ctx, self.n = ctx, 0

        def render(self, t):
            self.n += 1
            if self.n > 40:
                raise ZeroDivisionError("scene bug")
            self.ctx.clear(0.2, 0.4, 0.6)

        def close(self):
            pass

    path = tmp_path / "scene.mp4"
    rec, scene = glrec.Recorder(path, size=SIZE, fps=FPS, encoder="cpu"), Boom()
    mgl = rec.ctx
    with pytest.raises(glrec.SceneError, match="raised at frame 40: ZeroDivisionError: scene bug") as info:
        for _ in range(300):
            rec.render(scene)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    _assert_stopped_and_released(rec, mgl)
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 40  # every frame before the failing one, finished file


def test_encoder_ffmpeg_error_is_an_encoder_error_caused_by_it(gl, tmp_path, monkeypatch):
    ffmpeg_error = av.error.InvalidDataError(1094995529, "Invalid data found when processing input")
    _fail_on_call(monkeypatch, CpuEncoder, "_convert", 60, ffmpeg_error)
    path = tmp_path / "encoder.mkv"
    rec, mgl, err = _record_until_failure(path)
    assert type(err) is glrec.EncoderError
    assert "failed to encode frame 59" in str(err)
    assert isinstance(err.__cause__, av.error.InvalidDataError)
    _raised_once(err, "_run")
    _assert_stopped_and_released(rec, mgl)
    # The encoder cannot be flushed after failing: the file holds what had come out of it.
    indices = decode_indices(path, FPS)
    assert len(indices) == rec.close().frames > 30
    assert indices == sorted(set(indices)) and indices[-1] < 59


def test_encoder_bug_reaches_the_caller_as_itself(gl, tmp_path, monkeypatch):
    """Not a glrec error: the caller sees that very exception object, not a wrapper or a chain."""
    bug = KeyError("lost plane")
    encode = CpuEncoder.encode

    def buggy_encode(self, frame):
        if frame.index == 25:
            raise bug
        return encode(self, frame)

    monkeypatch.setattr(CpuEncoder, "encode", buggy_encode)
    rec, mgl, err = _record_until_failure(tmp_path / "bug.mp4")
    assert err is bug
    assert err.__context__ is None and err.__cause__ is None
    _raised_once(err, "_run")
    _assert_stopped_and_released(rec, mgl)
    indices = decode_indices(tmp_path / "bug.mp4", FPS)
    assert indices and indices == sorted(set(indices)) and indices[-1] < 25


def test_sink_error_finishes_the_file_with_what_was_written(gl, tmp_path, monkeypatch):
    _fail_on_call(monkeypatch, ContainerSink, "write", 50, ValueError("sink bug"))
    path = tmp_path / "sink.mkv"
    rec, mgl, err = _record_until_failure(path)
    assert type(err) is ValueError and str(err) == "sink bug"
    assert err.__context__ is None
    _assert_stopped_and_released(rec, mgl)
    indices = decode_indices(path, FPS)  # the trailer was still written: a finished, seekable file
    assert len(indices) == rec.close().frames > 0
    assert indices == sorted(set(indices))


def test_gl_stage_error_on_the_render_thread(gl, tmp_path, monkeypatch):
    _fail_on_call(monkeypatch, Converter, "run", 45, glrec.ContextError("GL context lost (injected)"))
    path = tmp_path / "gl.mp4"
    rec, mgl, err = _record_until_failure(path)
    assert type(err) is glrec.ContextError and err.__context__ is None
    _assert_stopped_and_released(rec, mgl)
    assert rec.frames_submitted == 44
    assert decode_indices(path, FPS) == list(range(44))  # frames before it were read back and finished


def test_failure_while_building_releases_what_was_built(gl, tmp_path, monkeypatch):
    """A recorder that fails half-built (here: opening the sink) leaves no thread, GL object or file."""
    before = len(live_gl_objects())

    def no_sink(*args, **kwargs):
        raise glrec.OutputError("cannot open (injected)")

    monkeypatch.setattr("glrec._recording.open_sink", no_sink)
    with pytest.raises(glrec.OutputError, match="injected"):
        glrec.Recorder(tmp_path / "x.mp4", size=SIZE, fps=FPS, encoder="cpu")
    assert glrec_threads() == []
    assert len(live_gl_objects()) == before
    assert not (tmp_path / "x.mp4").exists()


def test_scene_setup_error_releases_what_the_scene_made(gl, tmp_path):
    class HalfBuilt:
        def setup(self, ctx, size):
            self.texture = ctx.texture(size, 4)
            raise OSError("asset missing")

        def render(self, t):
            pass

        def close(self):
            self.texture.release()

    path = tmp_path / "setup.mp4"
    rec = glrec.Recorder(path, size=SIZE, fps=FPS, encoder="cpu")
    mgl = rec.ctx
    with pytest.raises(glrec.SceneError, match="Setting up scene HalfBuilt failed: OSError: asset missing") as info:
        rec.render(HalfBuilt())
    assert isinstance(info.value.__cause__, OSError)
    _assert_stopped_and_released(rec, mgl)
    assert not path.exists()  # no frame was made: no file
