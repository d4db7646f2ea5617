"""Dataset colour JPEG on the GPU in batches (``-m gpu``): nvJPEG and the GL JPEG encoder on hardware GL.

Written without a GPU at hand (the Mesa twin is tests/dataset/test_dataset_colour_batch.py); run on the H200 with
-m gpu. The shards must not depend on the batch, and must decode close to the rendered colour.
"""

import io

import numpy as np
import pytest
from helpers import shard_members
from PIL import Image
from test_dataset_colour_batch import jpeg_spec, layers_equal_alone, psnr, shards_with_batch

from glrec.dataset import generate, render_sample
from glrec.dataset.files.gl_jpeg_colour import GlJpegColour

pytestmark = pytest.mark.gpu


def check_decodes(spec, got):
    for i in range(spec.samples):
        image = Image.open(io.BytesIO(got[f"{spec.key(i)}.rgb.jpg"]))
        assert image.format == "JPEG" and image.size == (96, 64)
        assert psnr(np.asarray(image.convert("RGB")), render_sample(spec, i).frames[0]["rgb"]) > 30


def test_nvjpeg_shards_do_not_depend_on_the_batch(tmp_path):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    from glrec.dataset.files.nvjpeg_colour import NvJpegColour

    spec = jpeg_spec(samples=21, shard_size=10, encoder="nvjpeg")
    made = {b: shards_with_batch(tmp_path, spec, b, kind=NvJpegColour) for b in (1, 4, 16)}
    assert made[1] == made[4] == made[16]
    check_decodes(spec, made[1])


def test_nvjpeg_shards_are_the_same_on_two_workers(tmp_path):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    spec = jpeg_spec(samples=21, shard_size=5, encoder="nvjpeg")
    generate(spec, tmp_path / "one", workers=1)
    generate(spec, tmp_path / "two", workers=2)
    assert shard_members(tmp_path / "one") == shard_members(tmp_path / "two")


def test_gl_jpeg_on_hardware_gl_does_not_depend_on_the_batch(tmp_path):
    spec = jpeg_spec(samples=21, shard_size=10, encoder="gl")
    made = {b: shards_with_batch(tmp_path, spec, b, kind=GlJpegColour) for b in (1, 8)}
    assert made[1] == made[8]
    check_decodes(spec, made[1])


def test_auto_takes_the_gl_jpeg_encoder_on_hardware_gl():
    from glrec.dataset.files.encode import colour_encoder

    assert isinstance(colour_encoder(jpeg_spec(encoder="auto").output), GlJpegColour)


def test_nvjpeg_shards_take_colour_from_the_batch_layers_with_the_bytes_of_one_sample_drawn_alone(
    gl, tmp_path, monkeypatch
):
    pytest.importorskip("nvidia.nvimgcodec", reason="needs nvImageCodec: pip install glrec[nvjpeg]")
    from glrec.dataset.files.nvjpeg_colour import NvJpegColour

    layers_equal_alone(gl.mgl, tmp_path, monkeypatch, NvJpegColour, "nvjpeg")


def test_gl_jpeg_on_hardware_gl_takes_colour_from_the_batch_layers(gl, tmp_path, monkeypatch):
    layers_equal_alone(gl.mgl, tmp_path, monkeypatch, GlJpegColour, "gl")
