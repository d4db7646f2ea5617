"""Frames handed to Recorder.write: what is accepted and how bad input is refused (no GL needed).

Real producers where they are installed: PIL, matplotlib, PyTorch (CPU tensors, DLPack capsules).
"""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest

from glrec.errors import ConfigError, GlrecError
from glrec.sources.frames import CudaFrameIn, HostFrameIn, inspect_frame
from glrec.sources.frames.unpack import copy_plan


def test_uint8_rgb_and_rgba_pass_as_views_without_a_copy():
    a = np.zeros((4, 6, 3), np.uint8)
    info = inspect_frame(a)
    assert isinstance(info, HostFrameIn) and info.size == (6, 4) and info.channels == 3
    assert np.shares_memory(info.array, a)
    assert inspect_frame(np.zeros((4, 6, 4), np.uint8)).channels == 4


@pytest.mark.parametrize("shape", [(4, 6), (4, 6, 1)])
def test_grey_frames_are_one_channel(shape):
    assert inspect_frame(np.zeros(shape, np.uint8)).array.shape == (4, 6, 1)


def test_strided_and_reversed_views_are_accepted():
    base = np.arange(10 * 12 * 4, dtype=np.uint8).reshape(10, 12, 4)
    for view in (base[::-1], base[:, ::-2], base[2:8, 3:9, :3], base.transpose(1, 0, 2), base[..., ::-1]):
        info = inspect_frame(view)
        assert info.array.shape[:2] == view.shape[:2]
        assert np.array_equal(np.asarray(info.array), view[..., : info.channels] if view.shape[2] <= 4 else view)


@pytest.mark.parametrize(
    ("frame", "words"),
    [
        (np.zeros((4, 6, 2), np.uint8), ["2 channels", "H×W×3"]),
        (np.zeros((4, 6, 5), np.uint8), ["5 channels"]),
        (np.zeros((3, 40, 60), np.uint8), ["channels-first", "transpose(1, 2, 0)"]),
        (np.zeros((2, 4, 6, 3), np.uint8), ["batch of 2", "write_video"]),
        (np.zeros(7, np.uint8), ["shape (7,)"]),
        (np.zeros((0, 6, 3), np.uint8), ["empty"]),
        (np.zeros((4, 6, 3), np.int64), ["dtype is int64", "astype(numpy.uint8)"]),
        (np.zeros((4, 6, 3), np.int32), ["dtype is int32"]),
        (np.zeros((4, 6, 3), bool), ["dtype is bool", "mask"]),
        (np.zeros((4, 6, 3), np.complex64), ["dtype is complex64"]),
        (np.full((4, 6, 3), 255.0, np.float32), ["[255, 255]", "divide by 255"]),
        (np.full((4, 6, 3), -0.5), ["[-0.5, -0.5]", "[0, 1]"]),
        (np.full((4, 6, 3), np.inf, np.float32), ["[0, 1]"]),
        (None, ["None"]),
        ("frame.png", ["not a picture"]),
    ],
)
def test_bad_frames_raise_a_clear_config_error(frame, words):
    with pytest.raises(ConfigError) as info:
        inspect_frame(frame)
    message = str(info.value)
    assert isinstance(info.value, GlrecError) and isinstance(info.value, ValueError)
    for word in words:
        assert word in message, message
    assert len(message) < 400, "the message must not print the array"


def test_nan_is_an_error_naming_the_count():
    a = np.full((4, 6, 3), 0.5, np.float32)
    a[1, 2, 0] = a[3, 3, 2] = np.nan
    with pytest.raises(ConfigError, match=r"2 NaN value\(s\).*nan_to_num"):
        inspect_frame(a)


def test_floats_within_one_code_step_of_the_range_are_accepted():
    a = np.array([[[-1 / 255, 0.0, 1.0 + 1 / 255]]], np.float64)
    assert inspect_frame(a).array.dtype == np.float64
    with pytest.raises(ConfigError):
        inspect_frame(a + 0.01)


def test_pil_images_of_every_common_mode():
    PIL = pytest.importorskip("PIL.Image")
    rgb = PIL.new("RGB", (6, 4), (10, 20, 30))
    assert inspect_frame(rgb).array[0, 0].tolist() == [10, 20, 30]
    assert inspect_frame(PIL.new("RGBA", (6, 4), (1, 2, 3, 4))).channels == 4
    assert inspect_frame(PIL.new("L", (6, 4), 7)).channels == 1
    palette = PIL.new("P", (6, 4), 1)  # index 1 in the array; glrec must see the colour it stands for
    palette.putpalette([0, 0, 0, 10, 20, 30] + [0] * (3 * 254))
    assert inspect_frame(palette).array[0, 0].tolist() == [10, 20, 30]
    assert inspect_frame(PIL.new("LA", (6, 4), (9, 128))).array[0, 0].tolist() == [9, 9, 9, 128]
    assert inspect_frame(PIL.new("I;16", (6, 4), 1000)).array.dtype == np.uint16


def test_matplotlib_figure_and_buffer():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1.5), dpi=50)
    ax.plot([0, 1], [0, 1])
    info = inspect_frame(fig)  # the figure itself: drawn, then its RGBA buffer
    assert info.size == (100, 75) and info.channels == 4
    fig.canvas.draw()
    assert np.array_equal(inspect_frame(fig.canvas.buffer_rgba()).array, info.array)
    plt.close(fig)


def test_cpu_tensors_go_the_array_route():
    torch = pytest.importorskip("torch")
    t = torch.zeros((4, 6, 3), dtype=torch.uint8)
    t[0, 0, 0] = 200
    info = inspect_frame(t)
    assert isinstance(info, HostFrameIn) and info.array[0, 0, 0] == 200
    assert isinstance(inspect_frame(torch.rand(4, 6, 3)), HostFrameIn)
    with pytest.raises(ConfigError, match=r"detach\(\)"):
        inspect_frame(torch.rand(4, 6, 3, requires_grad=True))


def test_dlpack_capsules_are_read_and_handed_back():
    import sys

    from glrec.cuda.dlpack import import_capsule

    a = np.arange(4 * 6 * 3, dtype=np.uint16).reshape(4, 6, 3)[::2, 1::2]
    before = sys.getrefcount(a)
    capsule = a.__dlpack__()
    view = import_capsule(capsule)
    assert (view.ptr, view.shape, view.strides, view.dtype) == (a.ctypes.data, a.shape, a.strides, "u2")
    assert view.device_type == 1
    with pytest.raises(TypeError):
        import_capsule(capsule)  # consumed once
    del capsule
    assert sys.getrefcount(a) > before, "the producer keeps the array until the deleter runs"
    view.release()
    view.release()  # safe twice
    assert sys.getrefcount(a) == before, "release() called numpy's deleter"


def test_dlpack_from_torch():
    torch = pytest.importorskip("torch")
    from glrec.cuda.dlpack import import_capsule

    t = torch.arange(2 * 5 * 4, dtype=torch.float32).reshape(2, 5, 4)[:, ::2]  # strided
    view = import_capsule(t.__dlpack__())
    assert view.shape == (2, 3, 4) and view.dtype == "f4" and view.device_type == 1
    assert view.ptr == t.data_ptr() and view.strides == tuple(s * 4 for s in t.stride())
    view.release()


def test_cuda_array_interface_descriptions_are_checked():
    # Only the parts that need no CUDA: shape and dtype are refused before the device is asked.
    class Fake:
        def __init__(self, **cai):
            self.__cuda_array_interface__ = {"version": 3, "data": (1 << 40, False), "strides": None, **cai}

    with pytest.raises(ConfigError, match="dtype is float64"):
        inspect_frame(Fake(shape=(4, 6, 3), typestr="<f8"))
    with pytest.raises(ConfigError, match="2 channels"):
        inspect_frame(Fake(shape=(4, 6, 2), typestr="|u1"))
    with pytest.raises(ConfigError, match="masked"):
        inspect_frame(Fake(shape=(4, 6, 3), typestr="|u1", mask=object()))
    assert CudaFrameIn.kind == "cuda"


def test_a_cuda_array_interface_without_a_stream_goes_through_dlpack():
    # PyTorch's __cuda_array_interface__ is version 2 (no stream): reading it would not wait for a tensor
    # still being written on a side stream, so glrec asks DLPack, which orders the producer's work first.
    from glrec.cuda.dlpack import capsule

    data = np.zeros((4, 6, 3), np.uint8)  # host bytes stand in for device memory: nothing here reads them

    streams: list[object] = []

    class TorchLike:
        def __init__(self, version: int, **extra: object) -> None:
            cai = {"data": (data.ctypes.data, False), "shape": (4, 6, 3), "typestr": "|u1", "strides": None}
            self.__cuda_array_interface__ = {"version": version, **cai, **extra}

        def __dlpack__(self, stream: object = None) -> object:
            streams.append(stream)
            return capsule(data.ctypes.data, (4, 6, 3), 0, owner=data)

        def __dlpack_device__(self) -> tuple[int, int]:
            return 2, 0  # kDLCUDA

    info = inspect_frame(TorchLike(2))
    assert isinstance(info, CudaFrameIn) and streams == [1]
    assert info.stream == 1 and info.ptr == data.ctypes.data and info.shape == (4, 6, 3)
    info.release()
    # Version 3 names the stream itself: the interface is used as it is (here it then asks CUDA for the
    # pointer's device, which this CPU machine cannot answer), and DLPack is not called.
    with contextlib.suppress(GlrecError):
        inspect_frame(TorchLike(3, stream=7))
    assert streams == [1]


# -- the CUDA copy plan, checked against host memory ---------------------------------------------------


def _emulate(view: np.ndarray) -> np.ndarray:
    """Do what the CUDA source does, on host memory: copy by the plan, then read elements by its strides."""
    h, w = view.shape[:2]
    c = view.shape[2] if view.ndim == 3 else 1
    strides = view.strides if view.ndim == 3 else (*view.strides, view.itemsize)
    plan = copy_plan((h, w, c), strides, view.itemsize)
    start = view.ctypes.data + plan.src_offset
    staged = b"".join(ctypes.string_at(start + r * plan.src_pitch, plan.row_bytes) for r in range(plan.rows))
    assert len(staged) == plan.nbytes
    out = np.ndarray((h, w, c), view.dtype, buffer=staged, offset=plan.origin, strides=plan.strides)
    return out, plan


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b,
        lambda b: b[::-1],
        lambda b: b[:, ::-1],
        lambda b: b[::-2, 3:17:3],
        lambda b: b[2:9, 4:11, ::-1],
        lambda b: b.transpose(1, 0, 2),
        lambda b: b.transpose(1, 0, 2)[::-1, ::-1],
        lambda b: b[:, :, 0],
        lambda b: b[3:4],
        lambda b: np.broadcast_to(b[:1], b.shape),
    ],
    ids=[
        "contiguous",
        "rows-reversed",
        "cols-reversed",
        "stepped-crop",
        "crop-bgr",
        "transposed",
        "transposed-reversed",
        "grey-plane",
        "one-row",
        "broadcast-rows",
    ],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_copy_plan_keeps_every_element_and_copies_no_more_than_needed(make, dtype):
    base = (np.arange(12 * 20 * 3) % 251).astype(dtype).reshape(12, 20, 3)
    view = make(base)
    out, plan = _emulate(view)
    expected = view if view.ndim == 3 else view[:, :, None]
    assert np.array_equal(out, expected)
    if view.flags.c_contiguous or view.flags.f_contiguous:
        assert plan.nbytes == view.nbytes
    assert plan.nbytes <= base.nbytes
