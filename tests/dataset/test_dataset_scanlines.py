"""The shard worker's PNG passes filtered on the GPU (``scanlines``): the rows the host filter makes, exactly.

``SampleRenderer(packed=True, scanlines=True)`` packs the id passes and 8-bit normals into a scratch buffer and
has ``shaders/dataset_rows.comp`` write their PNG scanlines (Up filter, 16-bit big-endian) where the host reads.
Every sample, one at a time and in layered batches (chunked too), at an even size and at one where neither the
pixels nor a row's bytes are a multiple of 4, must give :func:`png_rows` of the pixels the packer gives without.
"""

import numpy as np
import pytest
from where import EXAMPLES

from glrec.dataset import DatasetSpec
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.encoders.png.writer import ScanLines, encode_png, png_rows
from glrec.gl.context import create_context

pytestmark = pytest.mark.gl

PASSES = ["rgb", "depth", "instance", "semantic", "normal"]


def make_spec(size, normal):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": 8, "size": size, "seed": 11, "shard_size": 4},
            "output": {"passes": PASSES, "normal": normal},
            "params": {"objects": {"int": [1, 6]}, "camera_azimuth": {"uniform": [0, 360]}},
        },
        base_dir=EXAMPLES,
    )


def batch(renderer, indices, max_layers=None):
    stride = (renderer.packer.nbytes + 255) // 256 * 256
    memory = np.full(len(indices) * stride, 0xAB, np.uint8)  # bytes the shaders must overwrite
    return renderer.render_batch(indices, lambda j, n: memory[j * stride : (j + n) * stride], max_layers=max_layers)


def frames(renderer, how):
    if how == "one by one":
        return {i: renderer.render(i).frames[0] for i in range(8)}
    samples = batch(renderer, range(8), max_layers=3 if how == "chunks of 3" else None)
    return {s.index: s.frames[0] for s in samples}


@pytest.mark.parametrize("size", ["64x48", "37x23"])
@pytest.mark.parametrize("normal", ["png", "npy"])
@pytest.mark.parametrize("how", ["one by one", "one batch", "chunks of 3"])
def test_scanlines_are_the_host_filters_rows_of_the_same_pixels(size, normal, how):
    spec = make_spec(size, normal)
    gl = create_context()
    try:
        with gl.active():
            plain = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
            lines = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True, scanlines=True)
            try:
                want = {i: {k: v.copy() for k, v in f.items()} for i, f in frames(plain, how).items()}
                got = frames(lines, how)
            finally:
                plain.close()
                lines.close()
    finally:
        gl.release()
    filtered = {"instance", "semantic"} | ({"normal"} if normal == "png" else set())
    assert any(want[i]["instance"].any() for i in want), "no sample shows an object: nothing was tested"
    for i, arrays in want.items():
        assert sorted(got[i]) == sorted(arrays)
        for name, pixels in arrays.items():
            out = got[i][name]
            if name not in filtered:
                assert not isinstance(out, ScanLines) and out.tobytes() == pixels.tobytes(), (i, name)
                continue
            assert isinstance(out, ScanLines), (i, name)
            assert np.asarray(out).tobytes() == png_rows(pixels).tobytes(), (size, how, i, name)
            assert out.pixels().dtype == pixels.dtype and np.array_equal(out.pixels(), pixels), (i, name)
            assert out.png(2) == encode_png(pixels, 2)


@pytest.mark.parametrize("normal", ["png", "npy"])
def test_shards_are_the_same_bytes_with_the_rows_filtered_on_the_gpu_or_the_host(tmp_path, monkeypatch, normal):
    """The shard path end to end (in this process, so the switch applies): under Mesa "auto" filters on the host,
    so the GPU filter is asked for here; on the H200 "auto" is the GPU (the GPU tier's shard tests run it)."""
    from glrec.dataset import generate
    from glrec.dataset.rendering import scanlines

    spec = make_spec("37x23", normal).with_(samples=10, shard_size=4)
    deflated = []
    real = ScanLines.png
    monkeypatch.setattr(ScanLines, "png", lambda self, level=2: deflated.append(1) or real(self, level))
    made, lines = {}, {}
    for where in ("gpu", "host"):
        monkeypatch.setattr(scanlines, "ON_GPU", where)
        deflated.clear()
        generate(spec, tmp_path / where, workers=1)
        made[where] = {p.name: p.read_bytes() for p in sorted((tmp_path / where).glob("shard-*.tar"))}
        lines[where] = len(deflated)
    assert lines == {"gpu": 10 * (3 if normal == "png" else 2), "host": 0}  # the PNG passes of every sample
    assert len(made["gpu"]) == 3
    assert made["gpu"] == made["host"]
