"""The CUDA stream's GL half on Mesa: packing into one GL buffer at the batch layout gives the CPU stream's arrays.

The CUDA path packs each frame into a slot of a GL buffer whose storage is CUDA
memory and exports strided DLPack views by :class:`BatchLayout`; here a plain GL
buffer stands in for the shared one, and numpy reads it by the same layout and
through the same DLPack capsules (as host memory), so all but the CUDA calls run.
"""

import numpy as np
import pytest
from test_dataset_stream import make_spec

from glrec.cuda import dlpack
from glrec.dataset import stream
from glrec.dataset.rendering.memory import BatchLayout
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.gl.context import create_context

pytestmark = pytest.mark.gl


class HostCapsule:
    """What CudaArray.__dlpack__ makes, over host memory (DLPack device type 1), for numpy to import."""

    def __init__(self, memory, view):
        self.memory, self.view = memory, view

    def __dlpack__(self, **kwargs):
        v = self.view
        return dlpack.capsule(self.memory.ctypes.data, v.shape, 0, owner=self.memory, dtype=v.dtype,
                              strides=tuple(s // v.itemsize for s in v.strides), byte_offset=v.offset,
                              device_type=1)  # fmt: skip

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("normal", ["png", "npy"])
def test_packing_into_a_gl_buffer_by_the_batch_layout_equals_the_cpu_stream(normal):
    spec = make_spec(samples=3, size="30x22", output={"normal": normal})  # 660 pixels: rows of odd length
    with stream(spec, batch_size=3) as s:
        [want] = list(s)
    with create_context() as gl:
        renderer = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
        packer = renderer.packer
        layout = BatchLayout(3, 1, spec.size, packer.sections, packer.nbytes, normal)
        slot_offset = 2 * 256  # a slot that does not start at the buffer's start, as slot 1 of the pool
        buffer = gl.mgl.buffer(reserve=slot_offset + layout.nbytes)
        for j in range(3):
            sample = renderer.render(j, into=lambda f, j=j: (buffer, slot_offset + layout.frame_offset(j, f)))
            assert sample.frames == [{}]  # nothing read back: the buffer's owner reads it
        memory = np.frombuffer(buffer.read(), np.uint8)[slot_offset:].copy()
        buffer.release()
        renderer.close()
    for name in ("rgb", "depth", "instance", "semantic", "normal"):
        got = np.from_dlpack(HostCapsule(memory, layout.pass_view(name, 3)))
        assert got.dtype == want[name].dtype and got.shape == want[name].shape
        np.testing.assert_array_equal(got, want[name])
    assert want["rgb"].std() > 10


def test_layout_aligns_every_frame_for_gl_and_dlpack():
    layout = BatchLayout(4, 3, (30, 22), {"rgb": (0, 1980), "depth": (1984, 2640)}, 4624, "png")
    assert layout.frame_stride % 256 == 0 and layout.frame_offset(3, 2) % 256 == 0
    view = layout.pass_view("depth", 4)
    assert view.shape == (4, 3, 22, 30) and view.strides == (3 * layout.frame_stride, layout.frame_stride, 120, 4)
    assert view.offset == 1984 and all(s % 4 == 0 for s in view.strides)


def test_host_chunks_are_used_again_only_once_no_view_of_them_is_left():
    from glrec.dataset.rendering.memory import HostChunks

    pool = HostChunks(keep=1)
    first = pool.take(1000)
    first[:] = 7
    address = first.ctypes.data
    sample = first[100:200].view(np.uint16)  # what a sample's pass is: a view of the chunk
    del first
    second = pool.take(1000)
    assert second.ctypes.data != address  # a view still holds the first chunk
    assert (sample == 0x0707).all()
    del sample
    third = pool.take(800)  # the first chunk's memory, now that nothing views it
    assert third.ctypes.data == address and third.nbytes == 800
    del second, third
    [kept] = pool._free
    bigger = pool.take(2000)  # larger than what is kept: new memory, the kept buffer let go
    assert bigger.nbytes == 2000 and bigger.base.obj is not kept and pool._free == []


def test_host_chunks_keep_as_many_as_were_in_use_up_to_keep():
    from glrec.dataset.rendering.memory import KEEP, HostChunks

    pool = HostChunks()
    chunks = [pool.take(4096) for _ in range(KEEP + 2)]  # more in use at once than are kept
    buffers = [c.base.obj for c in chunks]  # their memory (held here too, so no other object can take its place)
    del chunks
    assert len(pool._free) == KEEP
    again = [pool.take(4096) for _ in range(KEEP)]  # all of them the memory given back
    assert all(any(c.base.obj is b for b in buffers) for c in again) and pool._free == []
