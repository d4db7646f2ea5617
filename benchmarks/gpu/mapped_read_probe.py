"""How fast the host reads what the GPU put in a persistently mapped GL buffer, per way of asking for the storage.

A shard worker lends the arrays of a chunk's passes straight from such a mapping (``MappedBuffer(client=True)``:
read, persistent, coherent, client storage) to its PNG writer and ``.npy`` writer, which read every byte. If the
driver hands out that storage uncached, every one of those reads crosses uncached memory. This probe fills
40 MB on the GPU (``glCopyNamedBufferSubData`` from a GL buffer, fence waited), then times, per set of flags: a
``memmove`` of it into host memory, and glrec's PNG row filter (``png_rows``) and its whole PNG encode on
640x480x3 views of it, against the same on an ordinary host array. Medians of ``--repeat`` rounds, GB/s and ms.

    python benchmarks/gpu/mapped_read_probe.py --repeat 20 --json out.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import time
from pathlib import Path

import numpy as np

from glrec.encoders.png.writer import encode_png, png_rows
from glrec.gl.context import create_context
from glrec.gl.fences import Fence, gl_function

READ, PERSISTENT, COHERENT, CLIENT = 0x0001, 0x0040, 0x0080, 0x0200
FLAGS = {
    "read|persistent|coherent|client (glrec)": READ | PERSISTENT | COHERENT | CLIENT,
    "read|persistent|client": READ | PERSISTENT | CLIENT,
    "read|persistent|coherent": READ | PERSISTENT | COHERENT,
}
NBYTES = 40 << 20
IMAGE = (480, 640, 3)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(host: np.ndarray, repeat: int) -> dict[str, float]:
    out = np.empty(NBYTES, np.uint8)
    img = host[: int(np.prod(IMAGE))].reshape(IMAGE)
    ids = host[: 2 * IMAGE[0] * IMAGE[1]].view(np.uint16).reshape(IMAGE[:2])  # 16-bit, swapped to big-endian
    copy_s = timed(lambda: ctypes.memmove(out.ctypes.data, host.ctypes.data, NBYTES), repeat)
    return {
        "memmove_GB_s": NBYTES / copy_s / 1e9,
        "png_rows_ms": timed(lambda: png_rows(img), repeat) * 1e3,
        "encode_png_ms": timed(lambda: encode_png(img, 2), repeat) * 1e3,
        "png_rows_u16_ms": timed(lambda: png_rows(ids), repeat) * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    # Rendered-looking bytes: smooth ramps with a little noise, so deflate works as on normals.
    data = (np.arange(NBYTES, dtype=np.uint32) // 97 % 256).astype(np.uint8)
    data[::7] += rng.integers(0, 3, data[::7].shape, dtype=np.uint8)
    results: dict[str, dict[str, float]] = {"host array": measure(data.copy(), args.repeat)}
    gl = create_context()
    with gl.active():
        src = gl.mgl.buffer(data.tobytes())
        for label, flags in FLAGS.items():
            name = ctypes.c_uint(0)
            gl_function("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
            gl_function("glNamedBufferStorage", None, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p,
                        ctypes.c_uint)(name.value, NBYTES, None, flags)  # fmt: skip
            address = gl_function("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint, ctypes.c_ssize_t,
                                  ctypes.c_ssize_t, ctypes.c_uint)(name.value, 0, NBYTES, flags & ~CLIENT)  # fmt: skip
            gl_function("glCopyNamedBufferSubData", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_ssize_t,
                        ctypes.c_ssize_t, ctypes.c_ssize_t)(src.glo, name.value, 0, 0, NBYTES)  # fmt: skip
            gl.mgl.memory_barrier(0x00004000)  # CLIENT_MAPPED_BUFFER_BARRIER
            Fence().wait()
            view = np.ctypeslib.as_array((ctypes.c_uint8 * NBYTES).from_address(address))
            assert np.array_equal(view[:4096], data[:4096]) and np.array_equal(view[-4096:], data[-4096:])
            results[label] = measure(view, args.repeat)
            del view
            gl_function("glUnmapNamedBuffer", ctypes.c_ubyte, ctypes.c_uint)(name.value)
            gl_function("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        src.release()
        renderer = gl.info.renderer
    gl.release()
    for label, r in results.items():
        print(f"{label:42s} memmove {r['memmove_GB_s']:6.2f} GB/s  png_rows {r['png_rows_ms']:.3f} ms  "
              f"encode_png {r['encode_png_ms']:.3f} ms  (640x480x3); png_rows {r['png_rows_u16_ms']:.3f} ms "
              "(640x480 16-bit)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"renderer": renderer, "results": results}, indent=1))


if __name__ == "__main__":
    main()
