"""GPU tier (``-m gpu``): glrec next to MuJoCo on the NVIDIA EGL driver, with the CUDA handoffs.

- glrec's own context gets a display of its own (EGL_EXT_display_alloc, a
  reference-counted one through EGL_KHR_display_reference, or the surfaceless
  platform's on the device through EGL_EXT_explicit_device), so a library's
  ``eglTerminate`` on the shared device display cannot end it: checked by doing
  what pyrender's ``delete()`` does between two recordings' frames;
- ``context="current"`` inside MuJoCo's context, with the register and the
  shared CUDA handoffs, records MuJoCo's frames (PSNR >= 40 dB, lossless x264
  from CUDA device frames).
"""

from __future__ import annotations

import pytest
from gl_child import need, run_child

pytestmark = pytest.mark.gpu

#: Child code: EGL's devices (``devices``), ``get`` for a platform display and ``lib``, as other libraries do it.
DEVICES = """
import ctypes
from glrec.gl import egl

lib = egl.lib()
query = egl._ext("eglQueryDevicesEXT", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                 ctypes.POINTER(ctypes.c_int))
get = egl._ext("eglGetPlatformDisplayEXT", ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
               ctypes.POINTER(ctypes.c_int))
devices, count = (ctypes.c_void_p * 8)(), ctypes.c_int(0)
query(8, devices, ctypes.byref(count))
"""


def test_own_context_has_a_display_of_its_own_on_nvidia() -> None:
    out = run_child(
        """
from glrec.gl import egl
h = egl.create_headless(None)
done(how=h.how, private=h.private)
h.destroy()
"""
    )
    if not out["private"] and "shared" in out["how"]:
        # Measured on the H200 (driver 580, 2026-12-01): no EGL_EXT_display_alloc and no Mesa surfaceless
        # platform, so glrec shares the device's display; README "Other GL libraries" states the consequence.
        pytest.skip(
            f"this driver offers glrec no display of its own ({out['how']}): another library's "
            "eglTerminate (pyrender's delete()) ends glrec's context here"
        )
    assert out["private"] or "surfaceless" in out["how"], f"glrec's EGL display is shared ({out['how']})"


def test_own_context_leaves_the_shared_device_display_uninitialised() -> None:
    """A driver that gives glrec a display of its own (NVIDIA 580: surfaceless on the device) never has glrec
    initialise the device display other libraries open: before 2026-12-05 glrec initialised it on every context
    to ask its vendor (needed on Mesa only), an EGL display each dataset worker set up and never used."""
    out = run_child(
        DEVICES
        + """
from glrec.gl.context import create_context

lib.eglQueryString.restype, lib.eglQueryString.argtypes = ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]
shared = get(egl.EGL_PLATFORM_DEVICE_EXT, devices[0], egl._attribs(()))
gl = create_context()
with gl.active():
    renderer = gl.info.renderer
how = gl._headless.how
vendor = lib.eglQueryString(shared, 0x3053)  # EGL_VENDOR: NULL with EGL_NOT_INITIALIZED on a display not set up
error = int(lib.eglGetError())
gl.release()
done(how=how, renderer=renderer, initialised=vendor is not None, error=error)
"""
    )
    if "shared" in out["how"] or "Mesa" in out["how"]:
        pytest.skip(f"glrec's display here is {out['how']}: it initialises the device display by design")
    assert not out["initialised"], out
    assert out["error"] == 0x3001, out  # EGL_NOT_INITIALIZED


def test_another_librarys_egl_terminate_leaves_glrecs_recording_intact(tmp_path) -> None:
    out = run_child(
        DEVICES
        + f"""
import glrec

lib.eglInitialize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
lib.eglTerminate.argtypes = [ctypes.c_void_p]

def foreign_terminate():
    # What pyrender's OffscreenRenderer.delete() and MuJoCo's atexit do: the device display, no attributes.
    d = get(egl.EGL_PLATFORM_DEVICE_EXT, devices[0], egl._attribs(()))
    lib.eglInitialize(d, None, None)
    lib.eglTerminate(d)

h = egl.create_headless(None)
how, private = h.how, h.private
h.destroy()
rec = glrec.Recorder(r"{tmp_path}/t.mkv", size=(160, 96), fps=30, encoder="cpu", **LOSSLESS)
for i in range(10):
    if i == 5:
        foreign_terminate()
    rec.render("plasma")
result = rec.close()
video = decode(result.path)
done(how=how, private=private, frames=result.frames, decoded=len(video), means=[float(v.mean()) for v in video])
"""
    )
    if not out["private"] and "shared" in out["how"]:
        pytest.skip(f"this driver offers glrec no display of its own ({out['how']}); see the test above")
    assert out["frames"] == out["decoded"] == 10, out
    assert min(out["means"]) > 5, out  # no black frames after the foreign eglTerminate


@pytest.mark.parametrize("handoff", ["register", "shared"])
def test_recording_mujocos_context_through_a_cuda_handoff(tmp_path, handoff) -> None:
    need("mujoco")
    out = run_child(
        f"""
import mujoco, glrec
XML = '''<mujoco><worldbody><light pos="0 0 3"/>
  <geom type="plane" size="2 2 .1" rgba=".3 .3 .8 1"/>
  <body pos=".35 0 .55"><joint type="slide" axis="1 0 0"/><geom type="sphere" size=".12" rgba="0 1 0 1"/></body>
  <geom type="box" pos="0 0 .2" size=".2 .2 .2" rgba="1 0 0 1"/>
  <camera name="c" pos="0 -1.4 .45" xyaxes="1 0 0 0 .25 1"/></worldbody></mujoco>'''
model = mujoco.MjModel.from_xml_string(XML)
data = mujoco.MjData(model)
renderer = mujoco.Renderer(model, 240, 320)
frames = []
renderer.update_scene(data, camera="c"); renderer.render()
rec = glrec.Recorder(r"{tmp_path}/mj.mkv", size=(320, 240), context="current", encoder="cpu",
                     handoff="{handoff}", **LOSSLESS)
for i in range(20):
    data.qpos[0] = -0.03 * i
    mujoco.mj_forward(model, data)
    renderer.update_scene(data, camera="c")
    frames.append(renderer.render().copy())
    rec.capture()
result = rec.close()
video = decode(result.path)
done(frames=result.frames, decoded=len(video), encoder=result.encoder, plan=rec.plan.describe(),
     psnr=[psnr(a, b) for a, b in zip(frames, video)])
""",
        {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"},
    )
    assert out["frames"] == out["decoded"] == 20, out
    assert f"CUDA {handoff} handoff" in out["plan"], out["plan"]
    assert min(out["psnr"]) >= 40, out["psnr"]
