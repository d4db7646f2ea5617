"""GPU tier of the NVENC contract test, run inside ``nvenc_child.py`` with the real libcuda.

Renders a scene, converts (or packs, for rgba) it on the GPU, hands each frame to
NVENC through glrec's real CUDA handoff (``register`` or ``shared``) and writes,
as the reference for frame ``i``, what ``glReadPixels`` reads from the planes the
handoff copied (``inputs/frame_<i>.bin``, glrec's host layout).

The reference is read per output texture with that texture's own component count
(``PlaneLayout.textures``: a texel holds up to four bytes of a plane row), not the
plane's bytes per sample: reading an rgba8 Y texture as one component would give
every fourth byte (a quarter of the plane). Its length is checked against the
layout, so a wrong reference fails as such, not as a short NVENC surface.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np


def read_pixels(ctx, tex, components: int) -> np.ndarray:
    """glReadPixels of a texture, through a framebuffer that has it as its colour attachment."""
    fbo = ctx.framebuffer(color_attachments=[tex])
    try:
        w, h = tex.size
        return np.frombuffer(fbo.read(components=components, alignment=1), np.uint8).reshape(h, w, components)
    finally:
        fbo.release()


def reference_bytes(ctx, source, target) -> bytes:
    """What ``glReadPixels`` reads from ``source``'s output planes, in glrec's host layout (rows top-down).

    rgba is read from the render target itself (flipped, alpha 1 as the pack stage writes it), so the
    pack shader is checked too; YUV planes are read from the converter's textures.
    """
    layout = source.layout
    if layout.pix_fmt == "rgba":
        w, h = target.size
        rgba = np.frombuffer(target.fbo.read(components=4, alignment=1), np.uint8).reshape(h, w, 4)
        ref = rgba[::-1].copy()
        ref[..., 3] = 255  # the pack stage writes opaque alpha
        data = ref.tobytes()
    else:
        data = b"".join(read_pixels(ctx, t, c).tobytes()
                        for t, (_, _, c) in zip(source.planes, layout.textures, strict=True))  # fmt: skip
    if len(data) != layout.nbytes:
        raise AssertionError(f"reference for {layout.pix_fmt} {layout.width}x{layout.height} holds {len(data)} bytes, "
                             f"the layout {layout.nbytes}")  # fmt: skip
    return data


def encode_through_handoff(job: dict, work: Path) -> dict:
    from nvenc_child import error_json, packets_json

    from glrec.convert import Converter
    from glrec.convert.pack import RgbPacker
    from glrec.cuda.driver import CudaDevice
    from glrec.encoders.nvenc import NvencEncoder
    from glrec.gl.context import create_cuda_context
    from glrec.gl.target import RenderTarget
    from glrec.interop.handoff import open_handoff
    from glrec.options import VideoOptions
    from glrec.scenes import load_scene

    options = VideoOptions.create(**job["options"])
    size, n = options.size, job.get("count", 7)
    device = CudaDevice.open(0)
    out: dict = {"calls": [], "flush": []}
    with contextlib.ExitStack() as stack:
        stack.callback(device.release)
        gl = stack.enter_context(create_cuda_context(0, device.info.pci_bus_id))  # current until released
        ctx = gl.mgl
        target = RenderTarget(ctx, size)
        stack.callback(target.release)
        scene = load_scene(job.get("scene", "cube"))
        scene.setup(ctx, size)
        stack.callback(scene.close)
        if options.pix_fmt == "rgba":
            source = RgbPacker(ctx, size, "rgba")
        else:
            source = Converter(ctx, size, options.encoded_size, options.pix_fmt, options.colour)
        stack.callback(source.release)
        handoff = open_handoff(job["handoff"], ctx, source, device, depth=3, consumer_slots=4)
        stack.callback(handoff.release)
        try:
            asked = options.request("nvenc", device=device)
            enc = NvencEncoder(asked.facts, asked.options, device)
        except Exception as exc:
            out["error"] = error_json(exc)
            return out
        stack.callback(enc.close)

        def feed(frames) -> None:
            for frame in frames:
                out["calls"].append({"frame": frame.index, "packets": packets_json(enc.encode(frame))})

        for i in range(n):
            target.use()
            scene.render(i / options.fps)
            source.run(target.colour)
            (work / "inputs" / f"frame_{i}.bin").write_bytes(reference_bytes(ctx, source, target))
            feed(handoff.submit(i))
        feed(handoff.drain())
        out["flush"] = packets_json(enc.flush())
    return out
