"""glrec sharing a thread with other GL users: contexts put back exactly, state restored, recorders apart.

The other GL user here is a moderngl standalone EGL context, as a user of
moderngl makes one (glcontext's own display and context, current on this
thread). MuJoCo, pyrender and raw PyOpenGL have their own files, in child
processes, because they read environment variables at import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import av
import moderngl
import numpy as np
import pytest
from gl_child import psnr, run_child

import glrec
from glrec.gl import egl
from glrec.gl.state import StateGuard
from glrec.interop.handoff import REGISTER_BATCH

pytestmark = pytest.mark.gl

LOSSLESS = {"codec": "h264", "crf": 0, "pix_fmt": "yuv444p", "preset": "ultrafast"}
W, H = 64, 48
FRAMES_PAST_THE_RING = 2 * REGISTER_BATCH + 8


def decode_rgb(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


@pytest.fixture
def user():
    """A user's own moderngl context, current on this thread, with a framebuffer and a picture in it."""
    assert egl.current_context() == 0, "a test before this one left a context current"
    # 4.3: glrec needs compute shaders; NVIDIA gives a context exactly the version asked for (moderngl asks 3.3)
    ctx = moderngl.create_standalone_context(backend="egl", require=430)
    tex = ctx.texture((W, H), 4)
    fbo = ctx.framebuffer(color_attachments=[tex])
    yield ctx, fbo, tex
    egl.Binding.current().make_current()  # whatever the test did, this context is current to release it
    fbo.release()
    tex.release()
    ctx.release()
    egl.Binding(0, 0, 0, 0).make_current(release_on=egl.lib().eglGetCurrentDisplay() or 0)


def quadrants(ctx: moderngl.Context, fbo: moderngl.Framebuffer, k: int = 0) -> np.ndarray:
    """Paint four differently coloured quadrants (GL's origin is bottom-left); return the top-down RGB picture."""
    fbo.use()
    colours = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, k / 8)]
    for i, c in enumerate(colours):
        fbo.scissor = ((i % 2) * W // 2, (i // 2) * H // 2, W // 2, H // 2)
        ctx.clear(*c)
    fbo.scissor = None
    raw = np.frombuffer(fbo.read(components=3), np.uint8).reshape(H, W, 3)
    return raw[::-1].copy()


def test_a_recorder_leaves_nothing_current(tmp_path) -> None:
    assert egl.current_context() == 0
    rec = glrec.Recorder(tmp_path / "a.mp4", size=(W, H))
    assert egl.current_context() == 0
    rec.render("plasma")
    with rec.frame():
        assert egl.current_context() != 0  # glrec's, for the block
        rec.ctx.clear(0.5, 0.5, 0.5)
    assert egl.current_context() == 0
    with rec.ctx:  # moderngl's own spelling of "current for this block"
        tex = rec.ctx.texture((4, 4), 4)
        tex.release()
    assert egl.current_context() == 0
    assert rec.close().frames == 2
    assert egl.current_context() == 0


def test_the_callers_context_is_put_back_exactly_and_keeps_its_pictures(user, tmp_path) -> None:
    ctx, fbo, _ = user
    mine = egl.Binding.current()
    assert mine.context
    picture = quadrants(ctx, fbo)
    rec = glrec.Recorder(tmp_path / "a.mp4", size=(W, H))
    assert egl.Binding.current() == mine
    assert moderngl.get_context() is ctx, "glrec's context became moderngl's default context"
    for _ in range(3):
        rec.render("cube")
        assert egl.Binding.current() == mine
        assert (quadrants(ctx, fbo) == picture).all()
        with rec.frame():
            rec.ctx.clear(0.2, 0.4, 0.6)
        assert egl.Binding.current() == mine
    rec.close()
    assert egl.Binding.current() == mine
    assert (quadrants(ctx, fbo) == picture).all()


def test_two_recorders_used_in_turns_write_their_own_files(tmp_path) -> None:
    a = glrec.Recorder(tmp_path / "a.mkv", size=(W, H), **LOSSLESS)
    b = glrec.Recorder(tmp_path / "b.mkv", size=(W, H), **LOSSLESS)
    for i in range(10):
        with a.frame():
            a.ctx.clear(1.0, 0.0, 0.0)
        if i < 7:
            with b.frame():
                b.ctx.clear(0.0, 0.0, 1.0)
    assert (a.close().frames, b.close().frames) == (10, 7)
    c = glrec.Recorder(tmp_path / "c.mkv", size=(W, H), **LOSSLESS)  # one after the other
    for _ in range(4):
        with c.frame():
            c.ctx.clear(0.0, 1.0, 0.0)
    assert c.close().frames == 4
    for name, n, colour in (("a", 10, (255, 0, 0)), ("b", 7, (0, 0, 255)), ("c", 4, (0, 255, 0))):
        frames = decode_rgb(tmp_path / f"{name}.mkv")
        assert len(frames) == n, name
        for f in frames:
            assert np.abs(f.reshape(-1, 3).mean(axis=0) - colour).max() < 2, (name, f.reshape(-1, 3).mean(axis=0))


def test_two_recorders_in_the_callers_context_in_turns(user, tmp_path) -> None:
    ctx, fbo, tex = user
    a = glrec.Recorder(tmp_path / "a.mkv", size=(W, H), context="current", **LOSSLESS)
    b = glrec.Recorder(tmp_path / "b.mkv", size=(W, H), context="current", **LOSSLESS)
    pictures = []
    for i in range(6):
        pictures.append(quadrants(ctx, fbo, i))
        a.capture(fbo)
        b.capture(texture=tex)
        with b.frame():  # b also gets a frame of its own between the captures
            b.ctx.clear(0.0, 0.0, 1.0)
    assert (a.close().frames, b.close().frames) == (6, 12)
    va, vb = decode_rgb(tmp_path / "a.mkv"), decode_rgb(tmp_path / "b.mkv")
    assert len(va) == 6 and len(vb) == 12
    for i, p in enumerate(pictures):
        assert psnr(va[i], p) >= 40 and psnr(vb[2 * i], p) >= 40, i
        assert np.abs(vb[2 * i + 1].reshape(-1, 3).mean(axis=0) - (0, 0, 255)).max() < 2


def _set_unusual_state(ctx: moderngl.Context, fbo: moderngl.Framebuffer, tex: moderngl.Texture) -> list:
    """State a library might leave behind, none of it glrec's defaults; returns objects to keep alive."""
    from glrec.gl.state import functions

    gl = functions()
    prog = ctx.program(
        vertex_shader="#version 330\nin vec2 p; void main() { gl_Position = vec4(p, 0, 1); }",
        fragment_shader="#version 330\nout vec4 c; void main() { c = vec4(1); }",
    )
    buf = ctx.buffer(reserve=256)
    vao = ctx.vertex_array(prog, [(buf, "2f", "p")])
    other = ctx.texture((8, 8), 4)
    fbo.use()
    gl.UseProgram(prog.glo)
    gl.BindVertexArray(vao.glo)
    gl.BindBuffer(0x8892, buf.glo)  # ARRAY_BUFFER
    gl.BindBuffer(0x88EC, buf.glo)  # PIXEL_UNPACK_BUFFER: a texture upload would read from it
    gl.BindBuffer(0x88EB, buf.glo)  # PIXEL_PACK_BUFFER
    gl.BindBufferRange(0x90D2, 0, buf.glo, 0, 64)  # SSBO 0
    gl.BindImageTexture(1, other.glo, 0, 0, 0, 0x88B9, 0x8058)  # image unit 1, write-only RGBA8
    for unit, t in ((0, other), (2, tex), (31, other)):
        gl.ActiveTexture(0x84C0 + unit)
        gl.BindTexture(0x0DE1, t.glo)
    gl.ActiveTexture(0x84C0 + 5)
    for pname, value in ((0x0D05, 1), (0x0D02, 3), (0x0CF5, 2), (0x0CF2, 5), (0x0D04, 1)):  # pack/unpack
        gl.PixelStorei(pname, value)
    gl.Enable(0x0C11)  # scissor
    gl.Scissor(3, 4, 5, 6)
    gl.Viewport(1, 2, 30, 20)
    gl.Enable(0x0BE2)  # blend
    gl.BlendFuncSeparate(0x0302, 0x0303, 1, 0)
    gl.Enable(0x0B44)  # cull face
    gl.CullFace(0x0404)
    gl.DepthMask(0)
    gl.ColorMaski(0, 1, 0, 1, 0)
    gl.ClearColor(0.25, 0.5, 0.75, 1.0)
    gl.Disable(0x884F)  # seamless cube maps, which moderngl switches on
    return [prog, buf, vao, other]


def _state_watch() -> tuple[Callable[[Callable[[], object]], None], set[str]]:
    """``around(call)`` runs ``call`` and adds to ``changed`` the caller's GL state it changed (all of it)."""
    full = StateGuard(full=True)
    changed: set[str] = set()

    def around(call: Callable[[], object]) -> None:
        before = full.capture()
        call()
        changed.update(StateGuard.diff(before, full.capture()))

    return around, changed


@pytest.mark.parametrize("restore", [True, False], ids=["restored", "control-without-restore"])
def test_glrec_leaves_the_callers_full_gl_state_as_it_was(user, tmp_path, monkeypatch, restore) -> None:
    ctx, fbo, tex = user
    picture = quadrants(ctx, fbo)
    keep = _set_unusual_state(ctx, fbo, tex)
    if not restore:  # the control: without restoring, the same check must see changes
        monkeypatch.setattr(StateGuard, "restore", lambda self, saved: None)
    around, changed = _state_watch()
    recs: list[glrec.Recorder] = []
    around(lambda: recs.append(glrec.Recorder(tmp_path / "s.mkv", size=(W, H), context="current", **LOSSLESS)))
    rec = recs[0]
    around(lambda: rec.capture(fbo))
    around(lambda: rec.capture(texture=tex))
    around(lambda: rec.render("cube"))
    around(lambda: rec.render("particles"))

    def own_drawing() -> None:
        with rec.frame():
            rec.ctx.clear(0.0, 1.0, 0.0)

    around(own_drawing)
    around(rec.close)
    del keep
    if not restore:
        assert changed, "the check saw no change even without restoring: it cannot fail"
        return
    assert changed == set(), f"glrec changed the caller's GL state: {sorted(changed)}"
    video = decode_rgb(tmp_path / "s.mkv")
    assert len(video) == 5
    # The caller's odd pixel-store state did not reach glrec's readback: the captures are exact.
    assert psnr(video[0], picture) >= 40 and psnr(video[1], picture) >= 40
    assert np.abs(video[4].reshape(-1, 3).mean(axis=0) - (0, 255, 0)).max() < 2


def test_png_with_alpha_leaves_the_callers_full_gl_state_and_captures_exactly(user, tmp_path) -> None:
    """The PNG path (the pack stage keeping alpha, then a host encoder) in the caller's own context: no GL state
    changed, and the captures are the caller's pixels exactly, alpha included."""
    ctx, fbo, tex = user
    picture = quadrants(ctx, fbo)
    rgba = np.frombuffer(fbo.read(components=4), np.uint8).reshape(H, W, 4)[::-1]
    keep = _set_unusual_state(ctx, fbo, tex)
    around, changed = _state_watch()
    recs: list[glrec.Recorder] = []
    around(lambda: recs.append(glrec.Recorder(tmp_path / "s_%02d.png", size=(W, H), context="current",
                                              pix_fmt="rgba")))  # fmt: skip
    around(lambda: recs[0].capture(fbo))
    around(lambda: recs[0].capture(texture=tex))
    around(recs[0].close)
    del keep
    assert changed == set(), f"glrec changed the caller's GL state: {sorted(changed)}"
    for i in range(2):
        with av.open(str(tmp_path / f"s_{i:02d}.png")) as c:
            (got,) = [f.to_ndarray(format="rgba") for f in c.decode(video=0)]
        assert np.array_equal(got, rgba) and np.array_equal(got[..., :3], picture), i


def test_user_moderngl_objects_drawn_inside_a_frame_are_recorded(user, tmp_path) -> None:
    ctx, fbo, _ = user
    prog = ctx.program(
        vertex_shader="#version 330\nin vec2 p; out vec2 uv;\n"
        "void main() { uv = p * .5 + .5; gl_Position = vec4(p, 0, 1); }",
        fragment_shader="#version 330\nin vec2 uv; out vec4 c; void main() { c = vec4(uv, 1. - uv.x, 1); }",
    )
    vbo = ctx.buffer(np.array([-1, -1, 3, -1, -1, 3], "f4").tobytes())
    vao = ctx.vertex_array(prog, [(vbo, "2f", "p")])
    fbo.use()
    vao.render()
    expected = np.frombuffer(fbo.read(components=3), np.uint8).reshape(H, W, 3)[::-1]
    with glrec.Recorder(tmp_path / "u.mkv", size=(W, H), context="current", **LOSSLESS) as rec:
        for _ in range(3):
            with rec.frame():  # the recorder's target is bound in the user's own context
                vao.render()
    video = decode_rgb(tmp_path / "u.mkv")
    assert len(video) == 3
    assert all(psnr(v, expected) >= 40 for v in video)
    assert psnr(video[0], expected[::-1]) < 25  # upright
    for obj in (vao, vbo, prog):
        obj.release()


# -- clear errors -----------------------------------------------------------------------------


def test_current_context_without_one_is_a_clear_error(tmp_path) -> None:
    assert egl.current_context() == 0
    with pytest.raises(glrec.ContextError, match="needs a GL context current on this thread"):
        glrec.Recorder(tmp_path / "x.mp4", size=(W, H), context="current")
    assert not (tmp_path / "x.mp4").exists()
    with pytest.raises(glrec.ConfigError, match="context 'mine'"):
        glrec.Recorder(tmp_path / "x.mp4", context="mine")
    with pytest.raises(glrec.ConfigError, match="drop it with context='current'"):
        glrec.Recorder(tmp_path / "x.mp4", context="current", egl_device=0)


def test_bad_capture_sources_are_refused_and_recording_goes_on(user, tmp_path) -> None:
    ctx, fbo, tex = user
    small = ctx.framebuffer(color_attachments=[ctx.texture((W // 2, H), 4)])
    rec = glrec.Recorder(tmp_path / "b.mkv", size=(W, H), context="current", **LOSSLESS)
    with pytest.raises(glrec.ConfigError, match="texture 99999 is not a texture"):
        rec.capture(texture=99999)
    with pytest.raises(glrec.ConfigError, match=f"is {W // 2}x{H}, smaller than the {W}x{H}"):
        rec.capture(small)
    with pytest.raises(glrec.ConfigError, match="no default framebuffer"):
        rec.capture(0)  # a surfaceless context has none
    with pytest.raises(glrec.ConfigError, match="not both"):
        rec.capture(fbo, texture=tex)
    with pytest.raises(glrec.ConfigError, match="not a GL framebuffer name"):
        rec.capture("fbo")
    picture = quadrants(ctx, fbo)
    assert rec.capture(fbo) == 0
    assert rec.close().frames == 1
    assert psnr(decode_rgb(tmp_path / "b.mkv")[0], picture) >= 40


def test_capture_from_another_thread_raises(tmp_path) -> None:
    rec = glrec.Recorder(tmp_path / "t.mp4", size=(W, H))
    out: list[BaseException | None] = [None]

    def run() -> None:
        try:
            rec.capture()
        except BaseException as exc:
            out[0] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert isinstance(out[0], glrec.ContextThreadError)
    rec.render("bars")
    assert rec.close().frames == 1


def test_a_borrowed_context_destroyed_first_is_a_clear_error_and_the_file_is_kept(tmp_path) -> None:
    owner = egl.create_headless(None)  # stands in for a library's context
    binding = egl.Binding(owner.display, 0, 0, owner.context)
    assert binding.make_current() == 0
    user_ctx = moderngl.create_context(require=430, context=_EGLLoader())
    tex = user_ctx.texture((W, H), 4)
    fbo = user_ctx.framebuffer(color_attachments=[tex])
    rec = glrec.Recorder(tmp_path / "d.mkv", size=(W, H), context="current", **LOSSLESS)
    # More frames than any handoff holds on the GPU (a CUDA register handoff maps REGISTER_BATCH at a time; the
    # H200 picks it for the CPU encoder): those still there when the context goes are lost, the ones before are kept.
    for _ in range(FRAMES_PAST_THE_RING):
        fbo.use()
        user_ctx.clear(1.0, 0.5, 0.0)
        rec.capture(fbo)
    egl.Binding(0, 0, 0, 0).make_current(release_on=owner.display)
    owner.destroy()  # the library closes before the recorder
    with pytest.raises(glrec.ContextError, match="Close the recorder before the renderer"):
        rec.capture()
    with pytest.raises(glrec.ContextError, match="cannot be made current"):
        rec.close()
    result = rec.close()  # the second close returns what the first finished
    video = decode_rgb(tmp_path / "d.mkv")
    assert 1 <= result.frames == len(video) <= FRAMES_PAST_THE_RING
    assert egl.current_context() == 0


class _EGLLoader:
    """moderngl's loader protocol for a context the test made itself."""

    def load_opengl_function(self, name: str) -> int:
        fn = egl.lib().eglGetProcAddress
        return int(fn(name.encode()) or 0)

    def __enter__(self) -> None: ...

    def __exit__(self, *args: object) -> None: ...

    def release(self) -> None: ...


def test_a_gl_older_than_4_3_is_a_clear_error(tmp_path) -> None:
    out = run_child(
        f"""
import glrec
from glrec.gl import egl
owner = egl.create_headless(None, 3, 3)
egl.Binding(owner.display, 0, 0, owner.context).make_current()
try:
    glrec.Recorder(r"{tmp_path}/old.mp4", size=(64, 48), context="current")
except glrec.ContextError as exc:
    done(error=str(exc))
else:
    done(error=None)
""",
        {"MESA_GL_VERSION_OVERRIDE": "3.3"},
    )
    assert out["error"] and "is OpenGL 3.3; glrec needs 4.3" in out["error"], out


def test_recorders_in_callers_contexts_on_two_threads_record_their_own_pictures(tmp_path) -> None:
    """Each thread has its own context and recorder; the state guards work side by side."""
    errors: list[BaseException] = []
    pictures: dict[int, list[np.ndarray]] = {}
    barrier = threading.Barrier(2, timeout=30)

    def work(k: int) -> None:
        try:
            ctx = moderngl.create_standalone_context(backend="egl", require=430)  # 4.3 as NVIDIA must be asked
            fbo = ctx.framebuffer(color_attachments=[ctx.texture((W, H), 4)])
            barrier.wait()
            with glrec.Recorder(tmp_path / f"{k}.mkv", size=(W, H), context="current", **LOSSLESS) as rec:
                pictures[k] = []
                for i in range(8):
                    pictures[k].append(quadrants(ctx, fbo, (i + 4 * k) % 9))
                    rec.capture(fbo)
            ctx.release()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for k in (0, 1):
        video = decode_rgb(tmp_path / f"{k}.mkv")
        assert len(video) == 8
        assert all(psnr(v, p) >= 40 for v, p in zip(video, pictures[k], strict=True)), k
