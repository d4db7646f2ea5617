"""OpenCL kernels as the processing stage, on PoCL (a CPU OpenCL) in CI: the host-copy path, run for real.

The kernels are the examples' (examples/filters.cl); outputs are compared exactly with
the same operation done in numpy on the host copy of the rendered frames.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

import pytest
from process_helpers import LOSSLESS, assert_planes_equal, cl_counts, converted, fd_growth, open_fds, require, sobel
from test_process import FPS, SIZE, bars_rgba
from where import EXAMPLES, ROOT

import glrec
from glrec.errors import KernelBuildError, ProcessUnavailableError
from glrec.process import OpenCLKernel, Process, clcontext

FILTERS = EXAMPLES / "filters.cl"


@pytest.fixture
def cl():
    cl = require("pyopencl", "pip install glrec[opencl] and apt-get install pocl-opencl-icd")
    try:
        if not [d for p in cl.get_platforms() for d in p.get_devices()]:
            raise cl.Error("no device")
    except cl.Error as exc:
        pytest.fail(f"pyopencl is installed but finds no OpenCL device ({exc}); apt-get install pocl-opencl-icd")
    return cl


def record(path, process, n=4, **options):
    return glrec.record("bars", path, frames=n, size=SIZE, fps=FPS, **LOSSLESS, process=process, **options)


def test_invert_kernel_through_host_memory_is_exact_and_says_so(gl, cl, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="glrec"):
        record(tmp_path / "inv.mkv", OpenCLKernel.from_file(FILTERS, "invert"))
    expected = [f.copy() for f in bars_rgba(4)]
    for f in expected:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(tmp_path / "inv.mkv", converted(expected))
    said = [r.getMessage() for r in caplog.records if "OpenCL kernel invert" in r.getMessage()]
    assert len(said) == 1 and "copying each frame through host memory" in said[0], said


def test_sobel_kernel_matches_numpy_on_the_host_copy(gl, cl, tmp_path):
    record(tmp_path / "sobel.mkv", f"{FILTERS}:sobel")  # the CLI's form, FILE.cl:KERNEL
    assert_planes_equal(tmp_path / "sobel.mkv", converted([sobel(f) for f in bars_rgba(4)]))


def test_a_kernel_can_make_another_size(gl, cl, tmp_path):
    record(tmp_path / "half.mkv", Process(OpenCLKernel.from_file(FILTERS, "halve"), size=(32, 24)))
    assert_planes_equal(tmp_path / "half.mkv", converted([f[::2, ::2].copy() for f in bars_rgba(4)]))


def test_extra_kernel_arguments_follow_the_fixed_four(gl, cl, tmp_path):
    import numpy as np

    source = """__kernel void fill(__global const uchar4 *src, __global uchar4 *dst, int width, int height,
                                   uchar level) {
        int i = get_global_id(1) * width + get_global_id(0);
        dst[i] = (uchar4)(level, level, level, 255);
    }"""
    record(tmp_path / "fill.mkv", OpenCLKernel(source, args=(np.uint8(77),)), n=2)
    want = np.full((48, 64, 4), 77, np.uint8)
    want[..., 3] = 255
    assert_planes_equal(tmp_path / "fill.mkv", converted([want, want]))


def test_a_kernel_that_does_not_build_names_itself_and_shows_the_log(gl, cl, tmp_path):
    broken = OpenCLKernel("__kernel void k(__global const uchar4 *s, __global uchar4 *d, int w, int h) "
                          "{ d[0] = undefined_thing; }", origin="broken.cl")  # fmt: skip
    out = tmp_path / "b.mkv"
    with pytest.raises(
        KernelBuildError, match=r"(?s)OpenCL kernel .* from broken.cl failed to build on .*undefined_thing"
    ):
        record(out, broken)
    assert not out.exists()


def test_kernel_names_and_arguments_are_checked(gl, cl, tmp_path):
    with pytest.raises(KernelBuildError, match="has no kernel 'blur'; it has .*sobel"):
        record(tmp_path / "n.mkv", f"{FILTERS}:blur")
    with pytest.raises(KernelBuildError, match="has kernels .*; name one"):
        record(tmp_path / "n.mkv", str(FILTERS))
    two = "__kernel void k(__global const uchar4 *s, __global uchar4 *d) { }"
    with pytest.raises(KernelBuildError, match=r"takes 2 arguments; glrec passes \(src, dst, width, height\)"):
        record(tmp_path / "n.mkv", OpenCLKernel(two))
    assert not (tmp_path / "n.mkv").exists()


def test_pyopencl_missing_names_the_extra(gl, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)
    with pytest.raises(ProcessUnavailableError, match=r"pyopencl.*glrec\[opencl\]"):
        record(tmp_path / "m.mkv", OpenCLKernel.from_file(FILTERS, "invert"))
    assert not (tmp_path / "m.mkv").exists()


def test_recordings_share_one_context_and_release_what_they_made(gl, cl, tmp_path, monkeypatch):
    invert, sobel_kernel = OpenCLKernel.from_file(FILTERS, "invert"), OpenCLKernel.from_file(FILTERS, "sobel")
    broken = OpenCLKernel("__kernel void k(__global const uchar4 *s, __global uchar4 *d, int w, int h) { nope; }")
    two = OpenCLKernel("__kernel void k(__global const uchar4 *s, __global uchar4 *d) { }")  # builds, wrong args
    # The first recordings make the shared context and build the programs; later ones must add nothing.
    record(tmp_path / "warm0.mkv", invert, n=2)
    with pytest.raises(KernelBuildError, match="takes 2 arguments"):
        record(tmp_path / "warm1.mkv", two)
    contexts = [e.context for e in clcontext.entries()]
    fds, counts = open_fds(), cl_counts()
    made = []
    real_context = cl.Context
    monkeypatch.setattr(cl, "Context", lambda *a, **k: made.append(1) or real_context(*a, **k))

    def nothing_left(after: str) -> None:  # checked at once: a reference cycle would be collected later
        assert not made and [e.context for e in clcontext.entries()] == contexts, f"{after} made its own context"
        now = cl_counts()
        assert now == counts, f"{after} left OpenCL objects alive (context, queue, [programs]): {counts} -> {now}"

    record(tmp_path / "a.mkv", invert)
    nothing_left("a recording")
    record(tmp_path / "b.mkv", Process(sobel_kernel))
    nothing_left("a second kernel of the same program")
    with pytest.raises(KernelBuildError, match="failed to build"):
        record(tmp_path / "c.mkv", broken)
    nothing_left("a kernel that did not build")
    with pytest.raises(KernelBuildError, match="takes 2 arguments"):
        record(tmp_path / "c.mkv", two)
    nothing_left("a kernel with the wrong arguments")
    with (
        pytest.raises(RuntimeError, match="the caller stopped"),
        glrec.Recorder(tmp_path / "d.mkv", size=SIZE, fps=FPS, **LOSSLESS, process=invert) as rec,
    ):  # ended by the caller's error, with frames still inside the stage
        for _ in range(3):
            rec.render("bars")
        raise RuntimeError("the caller stopped")
    nothing_left("a recording ended by an error")
    record(tmp_path / "e.mkv", invert)
    nothing_left("the last recording")
    after = open_fds()
    assert sum(after.values()) == sum(fds.values()), (
        f"{sum(fds.values())} descriptors after the first recordings, {sum(after.values())} after six more; "
        f"new: {fd_growth(fds, after)}; gone: {fd_growth(after, fds)}"
    )
    expected = [f.copy() for f in bars_rgba(4)]
    for f in expected:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(tmp_path / "e.mkv", converted(expected))  # the reused program still computes


EXIT_CHILD = """
import atexit, os, sys, weakref
from pathlib import Path
alive = []
# Registered before glrec's own handler, so it runs after it: what is left once glrec has let go.
atexit.register(lambda: print("at exit:", len(clcontext.entries()), "entries,",
                              sum(r() is not None for r in alive), "contexts alive", flush=True))
import glrec
from glrec.process import OpenCLKernel, clcontext
kernel = OpenCLKernel.from_file(Path(sys.argv[1]), "invert")
out = Path(sys.argv[2])
glrec.record("bars", out / "1.mkv", frames=2, size=(64, 48), fps=30, process=kernel)
alive.append(weakref.ref(clcontext.entries()[0].context))
pid = os.fork()
if pid == 0:  # only looks: a forked child must not touch its parent's OpenCL objects
    os._exit(len(clcontext.entries()))
print("child saw", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), "entries", flush=True)
glrec.record("bars", out / "2.mkv", frames=2, size=(64, 48), fps=30, process=kernel)
print("parent has", len(clcontext.entries()), "entries, the same context:",
      clcontext.entries()[0].context is alive[0](), flush=True)
"""


def test_the_shared_context_is_dropped_at_exit_and_not_inherited_by_a_fork(gl, cl, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                     os.environ.get("PYTHONPATH")]))}  # fmt: skip
    run = subprocess.run([sys.executable, "-c", EXIT_CHILD, str(FILTERS), str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines == [
        "child saw 0 entries",
        "parent has 1 entries, the same context: True",
        "at exit: 0 entries, 0 contexts alive",
    ], run.stdout + run.stderr[-3000:]


def test_an_opencl_error_when_a_recording_ends_retires_the_shared_context(gl, cl, tmp_path):
    kernel = OpenCLKernel.from_file(FILTERS, "invert")
    record(tmp_path / "a.mkv", kernel, n=1)
    [entry] = clcontext.entries()

    class FailingQueue:  # what a queue whose context broke answers
        def finish(self):
            raise cl.Error("CL_OUT_OF_RESOURCES")

    with pytest.raises(cl.Error, match="CL_OUT_OF_RESOURCES"):
        clcontext.finish(cl, entry, FailingQueue())
    assert clcontext.entries() == []
    record(tmp_path / "b.mkv", kernel, n=2)  # the next recording makes a new context and works
    [fresh] = clcontext.entries()
    assert fresh is not entry and fresh.context is not entry.context
    expected = [f.copy() for f in bars_rgba(2)]
    for f in expected:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(tmp_path / "b.mkv", converted(expected))


def test_the_external_memory_runners_events_are_waited_for_and_released_once(cl):
    # The external-memory path itself needs NVIDIA (tests/gpu/test_process_gpu.py); its event handling goes through
    # ctypes on the loader, checked here on PoCL's real events.
    import ctypes

    from glrec.process.clexternal import ExternalRunner, function

    device = cl.get_platforms()[0].get_devices()[0]
    entry = clcontext.shared(cl, device)
    retain = function("clRetainEvent", ctypes.c_int32, ctypes.c_void_p)
    runner = object.__new__(ExternalRunner)  # only its event book-keeping: no CUDA memory here
    markers = [cl.enqueue_marker(entry.queue) for _ in range(2)]
    for m in markers:
        assert retain(m.int_ptr) == 0  # the reference clEnqueueRelease...KHR would hand the runner
    runner._events = {0: markers[0].int_ptr, 1: markers[1].int_ptr}
    runner._wait(0)
    runner._wait(0)  # a second wait finds nothing to release
    runner._forget_event(1)  # a frame dropped after a failure: released without a wait
    assert runner._events == {}
    # PoCL's own reference to a completed event goes on its thread, a moment later under load: the counts are
    # read until they settle (a second release would take one to 0 and destroy it, never to 1).
    entry.queue.finish()
    deadline = time.monotonic() + 5.0
    while [m.reference_count for m in markers] != [1, 1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [m.reference_count for m in markers] == [1, 1]
