"""Colour JPEG through the GL JPEG encoder in batches (Mesa in CI), colour encoders from the encoder registry."""

import io
import warnings

import numpy as np
import pytest
from helpers import shard_members
from PIL import Image

from glrec.dataset import DatasetSpec, generate, render_sample
from glrec.dataset.files.encode import BatchColour, ColourImage, colour_encoder
from glrec.dataset.files.folder import DatasetFolder
from glrec.dataset.files.gl_jpeg_colour import GlJpegColour
from glrec.dataset.files.runner import ShardWorker
from glrec.errors import ConfigError

pytestmark = pytest.mark.gl


def jpeg_spec(samples=7, shard_size=4, encoder="gl"):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": "96x64", "seed": 5, "shard_size": shard_size},
            "output": {"rgb": "jpg", "rgb_encoder": encoder, "jpeg_quality": 92, "passes": ["rgb", "depth"]},
            "params": {"objects": {"int": [2, 6]}, "camera_azimuth": {"uniform": [0, 360]}},
        }
    )


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0**2 / mse)) if mse else float("inf")


def shards_with_batch(tmp_path, spec, batch, threads=2, kind=GlJpegColour):
    """The shards of ``spec`` with its batched colour encoder (a ``kind``) taking ``batch`` samples a call."""
    root = tmp_path / f"b{batch}-t{threads}"
    root.mkdir()
    folder = DatasetFolder(root, spec)
    folder.records.mkdir(parents=True, exist_ok=True)
    with ShardWorker(spec, folder, threads=threads) as worker:
        worker._image_renderer()
        assert isinstance(worker._colour, kind) and isinstance(worker._colour, BatchColour)
        worker._colour.batch = batch
        for shard in range(spec.shards):
            worker.run(shard)
    return shard_members(root)


def test_gl_jpeg_shards_decode_close_to_the_render_and_do_not_depend_on_the_batch(tmp_path):
    spec = jpeg_spec()
    made = {b: shards_with_batch(tmp_path, spec, b) for b in (1, 3, 8)}
    assert made[1] == made[3] == made[8]
    got = made[1]
    assert sorted(n for n in got if n.endswith(".jpg")) == [f"{spec.key(i)}.rgb.jpg" for i in range(spec.samples)]
    for i in range(spec.samples):
        key = spec.key(i)
        names = [n for n in got if n.startswith(key + ".")]
        assert names[0] == f"{key}.rgb.jpg"  # colour first in the shard, as the CPU path writes it
        image = Image.open(io.BytesIO(got[f"{key}.rgb.jpg"]))
        assert image.format == "JPEG" and image.size == (96, 64)
        want = render_sample(spec, i).frames[0]["rgb"]
        assert psnr(np.asarray(image.convert("RGB")), want) > 30, key


def test_gl_jpeg_batched_bytes_equal_one_image_at_a_time(gl, tmp_path):
    spec = jpeg_spec(samples=3, shard_size=3)
    batched = shards_with_batch(tmp_path, spec, 8, threads=1)
    from glrec.dataset.rendering.sample import SampleRenderer

    one = GlJpegColour(spec.output)
    renderer = SampleRenderer(spec, gl.mgl, one, keep_rgb=False)
    try:
        for i in range(spec.samples):
            sample = renderer.render(i)
            assert sample.colour[0] == batched[f"{spec.key(i)}.rgb.jpg"]
    finally:
        one.close()
        renderer.close()


def layers_equal_alone(ctx, tmp_path, monkeypatch, kind, encoder):
    """Shards whose colour a ``kind`` encoder took from the batch's layers (chunks of 3 and 1, then 3) hold,
    for every sample, the JPEG it makes of that sample drawn alone."""
    from glrec.dataset.files import runner
    from glrec.dataset.rendering.sample import SampleRenderer

    taken: list[tuple[int, int]] = []
    queue_layer = kind.queue_layer

    def counted(self, gbuffer, layer, index):
        taken.append((layer, index))
        return queue_layer(self, gbuffer, layer, index)

    monkeypatch.setattr(kind, "queue_layer", counted)
    monkeypatch.setattr(runner, "SHARD_CHUNK", 3)  # shards of 4: chunks of 3 and 1, then 3
    spec = jpeg_spec(encoder=encoder)
    layered = shards_with_batch(tmp_path, spec, 2, threads=1, kind=kind)
    assert taken == [(0, 0), (1, 1), (2, 2), (0, 3), (0, 4), (1, 5), (2, 6)]  # every sample from its chunk's layer
    one = kind(spec.output)
    renderer = SampleRenderer(spec, ctx, one, keep_rgb=False)
    try:
        for i in range(spec.samples):
            assert renderer.render(i).colour[0] == layered[f"{spec.key(i)}.rgb.jpg"], i
    finally:
        one.close()
        renderer.close()


def test_gl_jpeg_shards_take_colour_from_the_batch_layers_with_the_bytes_of_one_sample_drawn_alone(
    gl, tmp_path, monkeypatch
):
    layers_equal_alone(gl.mgl, tmp_path, monkeypatch, GlJpegColour, "gl")


def test_a_chunk_that_fails_as_a_batch_is_drawn_one_by_one_with_the_same_gl_jpegs(tmp_path, monkeypatch):
    from glrec.dataset.rendering.render_layers import LayerRenderer
    from glrec.errors import SceneError

    spec = jpeg_spec()
    want = shards_with_batch(tmp_path, spec, 3, threads=1)
    real, failed = LayerRenderer.render, []

    def fail_once(self, indices, target, then=None, later=()):
        if not failed:
            failed.append(list(indices))
            raise SceneError("a chunk that fails as a batch")
        return real(self, indices, target, then, later)

    monkeypatch.setattr(LayerRenderer, "render", fail_once)
    (tmp_path / "again").mkdir()
    assert shards_with_batch(tmp_path / "again", spec, 3, threads=1) == want
    assert failed == [[0, 1, 2, 3]]


def test_the_cpu_row_still_makes_ffmpeg_jpegs(tmp_path):
    spec = jpeg_spec(samples=2, shard_size=2, encoder="cpu")
    generate(spec, tmp_path / "o", workers=1)
    data = shard_members(tmp_path / "o")[f"{spec.key(0)}.rgb.jpg"]
    assert data[:2] == b"\xff\xd8"
    want = render_sample(spec, 0).frames[0]["rgb"]
    assert psnr(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), want) > 27  # FFmpeg at qscale 4


@pytest.mark.parametrize(
    ("fmt", "encoder", "words"),
    [
        ("jpg", "nvenc", "NVENC does not make JPEG; the encoders that make JPEG: cpu, gl, nvjpeg"),
        ("jpg", "nope", "no encoder of that name"),
        ("png", "gl", 'png colour is encoded on the CPU: use rgb_encoder = "cpu"'),
    ],
)
def test_colour_encoders_come_from_the_encoder_rows(fmt, encoder, words):
    spec = jpeg_spec(encoder=encoder)
    output = spec.output.__class__(**{**spec.output.__dict__, "rgb": fmt})
    with pytest.raises(ConfigError, match="cannot encode") as err:
        colour_encoder(output)
    assert words in str(err.value)


def test_a_registered_colour_encoder_still_works(monkeypatch):
    from glrec.dataset.files import encode

    class Mine:
        ext = "jpg"
        host_only = True

        def __init__(self, output):
            self.output = output

        def encode(self, image: ColourImage) -> bytes:
            return b"mine"

    monkeypatch.setattr(encode, "COLOUR_ENCODERS", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode.register_colour_encoder("jpg", "mine", Mine)
    assert isinstance(colour_encoder(jpeg_spec(encoder="mine").output), Mine)


def test_auto_takes_the_first_jpeg_row_that_runs_here(monkeypatch, caplog):
    import dataclasses

    from glrec.encoders import registry

    output = jpeg_spec(encoder="auto").output
    with caplog.at_level("INFO", logger="glrec"):
        chosen = colour_encoder(output)  # Mesa: GL JPEG is passed over (software GL), nvJPEG absent here
    if isinstance(chosen, GlJpegColour):
        pytest.skip("GL here is hardware: auto takes the GL JPEG encoder (tests/gpu covers it)")
    assert type(chosen).__name__ == "_CpuColour"
    assert "rgb_encoder auto -> cpu; not gl (GL here is software" in caplog.text
    gl_row = dataclasses.replace(registry.ENCODERS["gl"], auto_problem=lambda request: None)
    monkeypatch.setitem(registry.ENCODERS, "gl", gl_row)
    assert isinstance(colour_encoder(output), GlJpegColour)
    png = output.__class__(**{**output.__dict__, "rgb": "png"})
    assert type(colour_encoder(png)).__name__ == "_CpuColour"  # png is the CPU's whatever auto finds


def test_a_named_jpeg_encoder_that_cannot_run_here_is_refused_before_the_folder_is_made(tmp_path):
    from glrec.encoders.nvjpeg.row import nvjpeg_problem
    from glrec.errors import EncoderUnavailableError

    why = nvjpeg_problem()
    if why is None:
        pytest.skip("nvJPEG runs here; the refusal needs a machine without it")
    out = tmp_path / "out"
    with pytest.raises(EncoderUnavailableError, match=r"rgb_encoder 'nvjpeg' cannot run here: .*Use rgb_encoder"):
        generate(jpeg_spec(encoder="nvjpeg"), out)
    assert not out.exists()
