"""Shard workers read a chunk's packed passes where the GPU put them: views of a lent mapping, no host copy."""

import logging

import numpy as np
import pytest
from test_dataset_workers import spec_for, tree

from glrec.dataset import generate
from glrec.dataset.rendering import layer_pack, memory


def test_a_lent_mapping_is_free_again_only_when_its_last_view_is_gone(gl, caplog):
    lent = memory.LentMappings(most=2)
    a = lent.free(4096)
    assert a is not None
    first = lent.lend(a, 4096)
    view = first[100:200]  # a sample's pass: a view of the chunk
    del first
    b = lent.free(4096)
    assert b is not None and b is not a  # ``a`` is still read through ``view``
    second = lent.lend(b, 1000)
    assert lent.free(4096) is None and lent.misses == 1  # both lent: the caller copies instead
    ctypes_bytes = np.frombuffer(bytes(range(256)) * 16, np.uint8)
    view[:] = ctypes_bytes[:100]  # the mapping is the host's memory, written and read in place
    assert bytes(view) == bytes(range(100))
    del view
    assert lent.free(4096) is a  # used again, not made again
    assert lent.free(8192) is not a  # too small for a larger chunk: made again at its size
    with caplog.at_level(logging.WARNING, logger="glrec"):
        lent.release()
    assert "1 lent chunk(s)" in caplog.text  # ``second`` outlived the release: said, not hidden
    del second
    lent.release()  # safe twice


@pytest.mark.gl
@pytest.mark.parametrize("mode", ["copy", "direct"])
def test_shards_from_lent_chunks_are_the_bytes_of_copied_ones(tmp_path, monkeypatch, caplog, mode):
    """Encode threads (two on the 2-core machine) still hold a chunk while the next draws: both buffers lent,
    or a chunk copied when they are; the shards are the same bytes as reading every chunk back with a copy."""
    spec = spec_for(tmp_path)
    monkeypatch.setattr(layer_pack, "READBACK", "get")  # read back into host memory, never lent
    generate(spec, tmp_path / "get", workers=1)
    made, lends = [], []
    real_free, real_lend = memory.LentMappings.free, memory.LentMappings.lend
    monkeypatch.setattr(memory.LentMappings, "free", lambda self, n: made.append(real_free(self, n)) or made[-1])
    monkeypatch.setattr(memory.LentMappings, "lend", lambda self, b, n: lends.append(b) or real_lend(self, b, n))
    monkeypatch.setattr(layer_pack, "READBACK", mode)
    with caplog.at_level(logging.WARNING, logger="glrec"):
        generate(spec, tmp_path / mode, workers=1)
    assert "lent chunk" not in caplog.text  # every sample's arrays were dropped before the worker closed
    assert lends and len({id(b) for b in lends}) <= memory.LEND_AT_MOST
    assert len(lends) == sum(b is not None for b in made)
    assert tree(tmp_path / mode) == tree(tmp_path / "get")


@pytest.mark.gl
@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_shard_drops_its_lent_arrays_before_the_worker_closes(tmp_path, monkeypatch, caplog, threads):
    """Encoded on the GL thread (one thread: a worker per core) or on encode threads, a sample whose encoding
    fails, and those behind it, let go of their views before the worker releases the mappings."""
    from glrec.dataset.files import samples
    from glrec.errors import DatasetError, GlrecError

    monkeypatch.setattr(layer_pack, "READBACK", "copy")
    monkeypatch.setattr("glrec.dataset.files.runner.encode_threads", lambda: threads)
    real = samples.sample_files
    calls = [0]

    def failing(spec, sample, video=None, **kw):
        calls[0] += 1
        if calls[0] == 7:
            raise DatasetError("an encode that fails mid-shard")
        return real(spec, sample, video, **kw)

    monkeypatch.setattr("glrec.dataset.files.runner.sample_files", failing)
    with caplog.at_level(logging.WARNING, logger="glrec"), pytest.raises(GlrecError, match="fails mid-shard"):
        generate(spec_for(tmp_path), tmp_path / "out", workers=1)
    assert "lent chunk" not in caplog.text


@pytest.mark.gl
def test_lent_arrays_outlive_the_batch_path_made_again_for_a_larger_batch(monkeypatch, caplog):
    """The pool belongs to the renderer's borrower, not to the batch path: a larger batch makes the path (and its
    packer) again while encode threads may still read the chunk before; that chunk's arrays stay as they were."""
    from glrec.dataset import DatasetSpec
    from glrec.dataset.rendering.sample import SampleRenderer
    from glrec.gl.context import create_context
    from glrec.scenes.layers import can_layer

    monkeypatch.setattr(layer_pack, "READBACK", "copy")
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "table", "samples": 13, "size": "64x48", "seed": 3, "shard_size": 13},
         "params": {"objects": {"int": [1, 5]}, "camera_azimuth": {"uniform": [0, 360]}}}
    )  # fmt: skip
    gl = create_context()
    try:
        with gl.active():
            if not can_layer(gl.mgl):
                pytest.skip("needs GL_ARB_shader_viewport_layer_array (Mesa llvmpipe has it)")
            r = SampleRenderer(spec, gl.mgl, keep_rgb=False, packed=True)
            r.lent = memory.LentMappings()
            first = r.render_batch(range(3), lambda j, n: None)
            kept = [{k: v.copy() for k, v in s.frames[0].items()} for s in first]
            assert r.lent.lends == 1  # the chunk is a view of a mapping
            layers = r._layers
            second = r.render_batch(range(3, 13), lambda j, n: None)
            assert r._layers is not layers  # made again (and the old packer released) for 10 layers
            for s, want in zip(first, kept, strict=True):
                assert all(np.array_equal(s.frames[0][k], v) for k, v in want.items())
            alone = SampleRenderer(spec, gl.mgl, keep_rgb=False, packed=True)
            again = alone.render_batch(range(3), lambda j, n: None)  # copied into host memory: the reference
            for s, ref in zip(first, again, strict=True):
                assert all(np.array_equal(s.frames[0][k], ref.frames[0][k]) for k in ref.frames[0])
            alone.close()
            del first, second, s, again
            r.close()
            with caplog.at_level(logging.WARNING, logger="glrec"):
                r.lent.release()
            assert "lent chunk" not in caplog.text
    finally:
        gl.release()
