"""GPU tier (``-m gpu``) for the throughput work: packed passes on NVIDIA, nvJPEG dataset colour, batched handoffs.

Skips with the reason where there is no NVIDIA GPU with CUDA-GL interop. The
NVIDIA compiler is the one that could fuse ``n * 127.5 + 127.5`` into one
rounding, so the packed passes are compared with numpy here as on Mesa.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import psnr
from helpers import shard_members
from PIL import Image

from glrec.dataset import DatasetSpec, generate
from glrec.dataset.files.encode import file_array
from glrec.dataset.rendering.pack import PassPacker
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.gl.context import create_context
from glrec.scenes.camera import mask_boxes

pytestmark = pytest.mark.gpu


def table_spec(size="640x480", samples=6, **output):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": size, "seed": 9, "shard_size": 3},
            "output": output,
            "params": {"objects": {"int": [3, 8]}, "camera_azimuth": {"uniform": [0, 360]}},
        }
    )


@pytest.mark.parametrize("size", ["640x480", "642x481"])
def test_packed_passes_on_nvidia_equal_numpy(size):
    spec = table_spec(size)
    with create_context() as gl:
        assert "NVIDIA" in gl.info.renderer or "nvidia" in gl.info.vendor.lower(), gl.info
        renderer = SampleRenderer(spec, gl.mgl, None, keep_rgb=True)
        packer = PassPacker(gl.mgl, renderer.gbuffer, set(spec.output.passes), boxes=True)
        try:
            for index in range(spec.samples):
                host = renderer.render(index).frames[0]
                got = packer.run()
                assert np.array_equal(got.arrays["rgb"], host["rgb"])
                for name in ("depth", "instance", "semantic", "normal"):
                    assert got.arrays[name].tobytes() == file_array(name, host[name], spec.output).tobytes(), name
                assert got.boxes == mask_boxes(host["instance"])
        finally:
            packer.release()
            renderer.close()


def test_nvjpeg_dataset_colour_decodes_close_to_png_and_keeps_lossless_passes(tmp_path):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    generate(table_spec(), tmp_path / "png")
    generate(table_spec(rgb="jpg", rgb_encoder="nvjpeg"), tmp_path / "nvjpeg")
    png, jpg = shard_members(tmp_path / "png"), shard_members(tmp_path / "nvjpeg")
    keys = sorted({n.split(".", 1)[0] for n in png})
    assert len(keys) == 6
    for key in keys:
        ref = np.asarray(Image.open(io.BytesIO(png[f"{key}.rgb.png"])))
        img = Image.open(io.BytesIO(jpg[f"{key}.rgb.jpg"]))  # Pillow's decoder, not nvJPEG's
        assert img.format == "JPEG" and img.size == (640, 480)
        assert psnr(np.asarray(img.convert("RGB")), ref) > 32
        for name in ("depth.npy", "instance.png", "semantic.png", "normal.png", "meta.json"):
            assert jpg[f"{key}.{name}"] == png[f"{key}.{name}"], name


@pytest.mark.parametrize("batch, depth, phased", [(4, 2, False), (8, 1, True), (1, 3, False)])
@pytest.mark.parametrize("pix_fmt", ["rgb24", "nv12"])
def test_batched_shared_handoff_is_bit_exact_and_in_order(batch, depth, phased, pix_fmt):
    from glrec.colour import ColourSpec
    from glrec.convert import Converter, RgbPacker
    from glrec.cuda.driver import CudaDevice
    from glrec.gl.context import create_cuda_context
    from glrec.gl.target import RenderTarget
    from glrec.interop import HostReadback
    from glrec.interop.shared import SharedHandoff
    from glrec.scenes import load_scene

    size = (322, 242)
    cuda = CudaDevice.open(0)
    gl = create_cuda_context(0, cuda.info.pci_bus_id)
    gl.__enter__()  # current until the end (and released there)
    ctx = gl.mgl
    target = RenderTarget(ctx, size)
    scene = load_scene("bars")
    scene.setup(ctx, size)
    source = RgbPacker(ctx, size, pix_fmt) if pix_fmt == "rgb24" else Converter(ctx, size, size, pix_fmt, ColourSpec())
    host = HostReadback(ctx, source, 3)  # the reference: the host path's bytes of the same planes
    handoff = SharedHandoff(ctx, source, cuda, depth=depth, batch=batch, phased=phased, slots=(depth + 1) * batch + 4)
    expected, got, order = {}, {}, []
    try:

        def take(frames):
            for f in frames:
                order.append(f.index)
                got[f.index] = f.to_host().data.tobytes()
                f.release()  # released promptly, as the encoder does: the phase gate must not stall

        for i in range(27):
            handoff.before_frame()
            target.use()
            scene.render(i / 30)
            source.run(target.colour)
            for f in host.submit(i):
                expected[f.index] = f.data.tobytes()
            take(handoff.submit(i))
        take(handoff.drain())
        for f in host.drain():
            expected[f.index] = f.data.tobytes()
    finally:
        for obj in (handoff, host, source, target):
            obj.release()
        scene.close()
        gl.__exit__(None, None, None)
        cuda.release()
    assert order == list(range(27))
    assert [i for i in range(27) if got[i] != expected[i]] == []
    assert len(set(expected.values())) > 1


def test_recorder_with_batched_phased_handoff_writes_every_frame(tmp_path, monkeypatch):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    import av

    import glrec
    from glrec.interop import handoff

    monkeypatch.setattr(handoff, "SHARED_BATCH", 8)
    monkeypatch.setattr(handoff, "SHARED_PHASED", True)
    path = tmp_path / "cube.mkv"
    with glrec.Recorder(path, size=(320, 240), fps=30, encoder="nvjpeg", codec="mjpeg", handoff="shared") as rec:
        for _ in range(45):  # not a multiple of the batch: the partial batch is drained
            rec.render("cube")
    with av.open(str(path)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    from helpers import reference_rgb

    ref = reference_rgb("cube", (320, 240), [i / 30 for i in range(45)])
    assert len(frames) == 45
    assert min(psnr(a, b) for a, b in zip(frames, ref, strict=True)) > 30
