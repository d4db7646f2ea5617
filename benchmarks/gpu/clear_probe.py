"""How to clear a chunk's layered targets fastest on this GPU: GL timer queries around each way, then the draw.

The layered G-buffer of the training stream is cleared before every chunk. On the H200 the framebuffer clear
(``glClearBuffer*``) took more GPU time than the draw itself (stream_timeline.py). This probe clears the same
targets each of these ways, draws the same prepared chunk after it, and reports GPU microseconds per sample of
the clear and of the draw, and whether every target's bytes equal the framebuffer clear's:

- ``framebuffer``: what ``LayeredGBuffer.clear`` does (``glClearBufferfv/uiv`` on the layered framebuffer);
- ``cleartex``: ``glClearTexImage`` on each texture array (colour from the framebuffer clear's bytes);
- ``copy-full`` / ``copy-8th``: ``glCopyImageSubData`` from template arrays cleared once by the framebuffer
  clear (all the layers, or an eighth of them copied eight times).

python benchmarks/gpu/clear_probe.py --size 640x480 --passes rgb,depth,instance,semantic,normal --batch 256
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from glrec.dataset import DatasetSpec  # noqa: E402
from glrec.gl.fences import gl_function  # noqa: E402
from glrec.options import parse_size  # noqa: E402

_TIMESTAMP, _RESULT, _TEX_2D_ARRAY = 0x8E28, 0x8866, 0x8C1A


def gl(name: str, *argtypes: Any) -> Any:
    return gl_function(name, None, *argtypes)


def stamp() -> int:
    q = ctypes.c_uint()
    gl("glGenQueries", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(q))
    gl("glQueryCounter", ctypes.c_uint, ctypes.c_uint)(q.value, _TIMESTAMP)
    return q.value


def result(q: int) -> int:
    out = ctypes.c_uint64()
    get = gl("glGetQueryObjectui64v", ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64))
    get(q, _RESULT, ctypes.byref(out))
    return out.value


def textures(gb: Any) -> dict[str, tuple[int, int, int, int]]:
    """name -> (GL texture, width, height, layers) of every target and of the depth-test buffer."""
    w, h = gb.size
    out = {name: (tex.glo, w, h, gb.layers) for name, tex in gb.textures.items()}
    out["depth-test"] = (gb._depth, w, h, gb.layers)
    return out


def read_all(tex: int, w: int, h: int, layers: int) -> bytes:
    """Every byte of a texture array (its own format as stored, read as raw 32-bit words or bytes)."""
    out = (ctypes.c_ubyte * (w * h * layers * 16))()
    fmt = ctypes.c_int()
    gl("glGetTextureLevelParameteriv", ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(
        tex, 0, 0x1003, ctypes.byref(fmt)
    )  # GL_TEXTURE_INTERNAL_FORMAT
    f = fmt.value
    if f == 0x81A6:  # DEPTH_COMPONENT24
        pix, typ, size = 0x1902, 0x1405, 4  # DEPTH_COMPONENT, UNSIGNED_INT
    elif f in (0x8236,):  # R32UI
        pix, typ, size = 0x8D94, 0x1405, 4
    elif f in (0x822E,):  # R32F
        pix, typ, size = 0x1903, 0x1406, 4
    else:  # RGBA8 and the rest: as RGBA floats
        pix, typ, size = 0x1908, 0x1406, 16
    n = w * h * layers * size
    gl("glGetTextureImage", ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p)(
        tex, 0, pix, typ, n, out
    )
    return bytes(out[:n])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--passes", default="rgb,depth,instance,semantic,normal")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--check", action="store_true", help="compare every target's bytes with the framebuffer clear")
    args = ap.parse_args()
    spec = DatasetSpec.load(args.spec).with_(samples=args.batch, size=parse_size(args.size))
    spec = spec.with_(output=replace(spec.output, passes=tuple(args.passes.split(","))))
    from glrec.dataset.rendering.cuda import open_cuda
    from glrec.dataset.rendering.plans import plan_samples
    from glrec.dataset.rendering.render_layers import LayerRenderer
    from glrec.dataset.rendering.sample import SampleRenderer

    try:
        owner, ctx = open_cuda(0, None)
    except Exception as exc:  # the development machine: Mesa, for checking the probe itself
        from glrec.gl.context import create_context

        print(f"(no CUDA device: {exc}; Mesa's GL)")
        owner, ctx = None, create_context()
    with ctx.active():
        r = SampleRenderer(spec, ctx.mgl, None, keep_rgb=True, packed=True)
        lr = LayerRenderer(r, args.batch)
        gb = lr.gbuffer
        assert gb is not None
        n = gb.layers
        plans = plan_samples(spec, range(n), r.scene)
        prepared = r.scene.prepare_batch([p.layout for p in plans], [0.0] * n)  # type: ignore[attr-defined]
        bg = prepared.backgrounds
        texs = textures(gb)
        # Templates: the same arrays, cleared once by the framebuffer clear.
        from glrec.scenes.layers import LayeredGBuffer

        full = LayeredGBuffer(ctx.mgl, gb.size, n, set(gb.textures))
        eighth = LayeredGBuffer(ctx.mgl, gb.size, max(1, n // 8), set(gb.textures))
        for t in (full, eighth):
            with t.bound():
                t.clear([bg[0]] * t.layers)
        copy = gl("glCopyImageSubData", *([ctypes.c_uint, ctypes.c_uint, ctypes.c_int] + [ctypes.c_int] * 3) * 2,
                  *[ctypes.c_int] * 3)  # fmt: skip

        def copy_from(t: Any) -> None:
            src = textures(t)
            for name, (dst, w, h, layers) in texs.items():
                s = src[name][0]
                for z in range(0, layers, t.layers):
                    k = min(t.layers, layers - z)
                    copy(s, _TEX_2D_ARRAY, 0, 0, 0, 0, dst, _TEX_2D_ARRAY, 0, 0, 0, z, w, h, k)

        template_bytes: dict[str, bytes] = {}
        clear_tex = gl("glClearTexImage", ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)

        def cleartex() -> None:
            for name, (tex, *_rest) in texs.items():
                data = template_bytes[name]
                if name == "depth-test":
                    clear_tex(tex, 0, 0x1902, 0x1406, ctypes.c_char_p(np.float32(1.0).tobytes()))
                elif name in ("instance", "semantic"):
                    clear_tex(tex, 0, 0x8D94, 0x1405, ctypes.c_char_p(bytes(4)))
                else:
                    clear_tex(tex, 0, 0x1908, 0x1406, ctypes.c_char_p(data[:16]))  # RGBA floats of texel 0

        def framebuffer() -> None:
            gb.clear(bg)

        ways = {"framebuffer": framebuffer, "cleartex": cleartex, "copy-full": lambda: copy_from(full),
                "copy-8th": lambda: copy_from(eighth)}  # fmt: skip
        reference: dict[str, bytes] = {}
        with gb.bound():
            framebuffer()
            ctx.mgl.finish()
            for name, t in texs.items():
                template_bytes[name] = read_all(*t)[:16]
        print(f"{spec.size[0]}x{spec.size[1]}, {len(gb.textures)} targets + depth test, {n} layers per chunk; "
              f"GPU us/sample, median of {args.repeat}", flush=True)  # fmt: skip
        for way, clear in ways.items():
            clears, draws = [], []
            for _ in range(args.repeat + 1):
                with gb.bound():
                    q0 = stamp()
                    clear()
                    q1 = stamp()
                    r.scene._submit(prepared)  # type: ignore[attr-defined]
                    q2 = stamp()
                ctx.mgl.finish()
                clears.append((result(q1) - result(q0)) / 1e3 / n)
                draws.append((result(q2) - result(q1)) / 1e3 / n)
            same = ""
            if args.check:
                got = {name: read_all(*t) for name, t in texs.items()}
                if not reference:
                    reference.update(got)
                diff = [name for name in got if got[name] != reference[name]]
                same = "; every target equals the framebuffer clear's" if not diff else f"; differ: {diff}"
            print(f"  {way:12s} clear {np.median(clears[1:]):8.2f}  draw after it {np.median(draws[1:]):8.2f}{same}",
                  flush=True)  # fmt: skip
        full.release()
        eighth.release()
        lr.release()
        r.close()
    ctx.release()
    if owner is not None:
        owner.release()


if __name__ == "__main__":
    main()
