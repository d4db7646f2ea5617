"""OpenCL kernels as the processing stage, on PoCL (a CPU OpenCL) in CI: the host-copy path, run for real.

The kernels are the examples' (examples/filters.cl); outputs are compared exactly with
the same operation done in numpy on the host copy of the rendered frames.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from process_helpers import LOSSLESS, assert_planes_equal, converted, require, sobel
from test_process import FPS, SIZE, bars_rgba

import glrec
from glrec.errors import KernelBuildError, ProcessUnavailableError
from glrec.process import OpenCLKernel, Process

FILTERS = Path(__file__).resolve().parent.parent / "examples" / "filters.cl"


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
