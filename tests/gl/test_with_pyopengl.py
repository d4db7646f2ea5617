"""Recording a raw PyOpenGL EGL context: its default framebuffer (a pbuffer surface) and, through
``moderngl.create_context()`` attached to it, a framebuffer and a texture of the user's own.
"""

from __future__ import annotations

import pytest
from gl_child import need, run_child

pytestmark = pytest.mark.gl


def test_raw_pyopengl_context_and_an_attached_moderngl_context(tmp_path) -> None:
    need("OpenGL")
    out = run_child(
        f"""
import ctypes
from OpenGL import EGL, GL
import moderngl
import glrec
from glrec.gl.state import StateGuard

W, H = 80, 48
from OpenGL.EGL.EXT.device_base import eglQueryDevicesEXT
from OpenGL.EGL.EXT.platform_base import eglGetPlatformDisplayEXT
from OpenGL.EGL.EXT.platform_device import EGL_PLATFORM_DEVICE_EXT

devices = (EGL.EGLDeviceEXT * 4)()
n = EGL.EGLint()
assert eglQueryDevicesEXT(4, devices, ctypes.byref(n)) and n.value
display = eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devices[0], None)  # headless: no X display
assert EGL.eglInitialize(display, None, None)
config, count = EGL.EGLConfig(), EGL.EGLint()
attribs = (EGL.EGLint * 11)(EGL.EGL_SURFACE_TYPE, EGL.EGL_PBUFFER_BIT, EGL.EGL_RED_SIZE, 8, EGL.EGL_GREEN_SIZE, 8,
                            EGL.EGL_BLUE_SIZE, 8, EGL.EGL_RENDERABLE_TYPE, EGL.EGL_OPENGL_BIT, EGL.EGL_NONE)
assert EGL.eglChooseConfig(display, attribs, ctypes.byref(config), 1, ctypes.byref(count)) and count.value
size = (EGL.EGLint * 5)(EGL.EGL_WIDTH, W, EGL.EGL_HEIGHT, H, EGL.EGL_NONE)
surface = EGL.eglCreatePbufferSurface(display, config, size)
EGL.eglBindAPI(EGL.EGL_OPENGL_API)
context = EGL.eglCreateContext(display, config, EGL.EGL_NO_CONTEXT, (EGL.EGLint * 5)(
    EGL.EGL_CONTEXT_MAJOR_VERSION, 4, EGL.EGL_CONTEXT_MINOR_VERSION, 5, EGL.EGL_NONE))
assert EGL.eglMakeCurrent(display, surface, surface, context)
from glrec.gl import egl
mine = egl.Binding.current()  # display, pbuffer surface (draw and read), context

def paint(k):
    # Raw GL into the default framebuffer: four quadrants, the fourth changing with k.
    GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
    GL.glEnable(GL.GL_SCISSOR_TEST)
    for i, c in enumerate([(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, k / 8)]):
        GL.glScissor((i % 2) * W // 2, (i // 2) * H // 2, W // 2, H // 2)
        GL.glClearColor(*c, 1)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)
    GL.glDisable(GL.GL_SCISSOR_TEST)
    raw = GL.glReadPixels(0, 0, W, H, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
    return np.frombuffer(raw, np.uint8).reshape(H, W, 3)[::-1].copy()

full = StateGuard(full=True)
changed = set()
rec = glrec.Recorder(r"{tmp_path}/raw.mkv", size=(W, H), context="current", **LOSSLESS)
pictures = []
for k in range(4):
    pictures.append(paint(k))
    before = full.capture()
    rec.capture(0 if k % 2 else None)  # the default framebuffer, by name and as the read binding
    changed |= set(StateGuard.diff(before, full.capture()))
surface_ok = egl.Binding.current() == mine and mine.draw != 0

# A user's moderngl context attached to the current (PyOpenGL) one, with objects of its own.
user = moderngl.create_context()
tex = user.texture((W, H), 4)
fbo = user.framebuffer(color_attachments=[tex])
prog = user.program(
    vertex_shader="#version 330\\nin vec2 p; out vec2 uv;\\n"
    "void main() {{ uv = p * .5 + .5; gl_Position = vec4(p, 0, 1); }}",
    fragment_shader="#version 330\\nin vec2 uv; out vec4 c; void main() {{ c = vec4(uv.x, uv.y * uv.y, .3, 1); }}",
)
vao = user.vertex_array(prog, [(user.buffer(np.array([-1, -1, 3, -1, -1, 3], "f4").tobytes()), "2f", "p")])
fbo.use()
vao.render()
drawn = np.frombuffer(fbo.read(components=3), np.uint8).reshape(H, W, 3)[::-1].copy()
for call in (lambda: rec.capture(fbo), lambda: rec.capture(texture=tex)):
    before = full.capture()
    call()
    changed |= set(StateGuard.diff(before, full.capture()))
before = full.capture()
result = rec.close()
changed |= set(StateGuard.diff(before, full.capture()))
video = decode(result.path)
done(
    frames=result.frames, decoded=len(video), changed=sorted(changed), surface_ok=bool(surface_ok),
    psnr_raw=[psnr(a, b) for a, b in zip(pictures, video)],
    psnr_user=[psnr(drawn, v) for v in video[4:]],
    psnr_flipped=psnr(pictures[0], video[0][::-1]),
)
""",
        {"PYOPENGL_PLATFORM": "egl"},
    )
    assert out["frames"] == out["decoded"] == 6
    assert out["changed"] == [], out["changed"]
    assert out["surface_ok"], "the caller's surface/context was not current after glrec's calls"
    assert min(out["psnr_raw"]) >= 40 and min(out["psnr_user"]) >= 40, out
    assert out["psnr_flipped"] < 25
