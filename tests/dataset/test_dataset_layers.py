"""N samples per GL pass on Mesa: the layered batch path makes the one-sample path's bytes, boxes and meta."""

import ctypes
import json

import numpy as np
import pytest
from where import EXAMPLES

from glrec.dataset import DatasetSpec, render_sample, stream
from glrec.dataset.rendering.render_layers import LayerRenderer
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.gl.context import create_context
from glrec.gl.fences import gl_function
from glrec.scenes.camera import mask_boxes
from glrec.scenes.capabilities import batch_drawable
from glrec.scenes.layers import LayeredGBuffer, can_layer
from glrec.scenes.table import Table

pytestmark = pytest.mark.gl

PASSES = ["rgb", "depth", "instance", "semantic", "normal"]


def make_spec(samples=10, normal="png", **params):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": "64x48", "seed": 5, "shard_size": 4},
            "output": {"passes": PASSES, "normal": normal},
            "params": {
                "objects": {"int": [0, 6]},
                "camera_azimuth": {"uniform": [0, 360]},
                "time": {"uniform": [0, 3]},
                **params,
            },
        },
        base_dir=EXAMPLES,
    )


@pytest.fixture
def gl():
    ctx = create_context()
    with ctx.active():
        if not can_layer(ctx.mgl):
            pytest.skip("needs GL_ARB_shader_viewport_layer_array (Mesa llvmpipe has it)")
        yield ctx
    ctx.release()


def one_by_one(renderer, indices):
    out = {}
    for i in indices:
        s = renderer.render(i)
        out[i] = ({k: v.copy() for k, v in s.frames[0].items()}, json.dumps(s.meta, sort_keys=True))
    return out


def batch(renderer, indices, max_layers=None):
    stride = (renderer.packer.nbytes + 255) // 256 * 256
    memory = np.full(len(indices) * stride, 0xAB, np.uint8)
    chunks = []

    def target(j, n):
        chunks.append((j, n))
        return memory[j * stride : (j + n) * stride]

    samples = renderer.render_batch(indices, target, max_layers=max_layers)
    return samples, chunks


@pytest.mark.parametrize("normal", ["png", "npy"])
def test_every_pass_boxes_and_meta_equal_the_one_sample_path_for_batch_sizes_1_3_8_and_chunks(gl, normal):
    # The background differs per sample too, so layers are cleared to different colours.
    spec = make_spec(normal=normal, background={"choice": [[0.1, 0.2, 0.3], [0.5, 0.1, 0.0]]})
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        assert r.batch_ready
        want = one_by_one(r, range(10))
        assert len({w[0]["rgb"].tobytes() for w in want.values()}) == 10
        assert any(json.loads(m)["objects"] for _, m in want.values())
        for indices, cap in ((range(0, 1), None), (range(4, 7), None), (range(1, 9), None), (range(0, 10), 3)):
            samples, chunks = batch(r, indices, cap)
            assert [s.index for s in samples] == list(indices)
            if cap is not None:  # chunked across the layer cap: 3 + 3 + 3 + 1, each its own GL pass
                assert chunks == [(0, 3), (3, 3), (6, 3), (9, 1)]
                assert r._layers.layers == 3
            else:
                assert chunks == [(0, len(indices))]
            for s in samples:
                arrays, meta = want[s.index]
                assert sorted(s.frames[0]) == sorted(arrays)
                for name, value in arrays.items():
                    assert s.frames[0][name].dtype == value.dtype
                    assert s.frames[0][name].tobytes() == value.tobytes(), (s.index, name)
                assert json.dumps(s.meta, sort_keys=True) == meta
                visible = {o["instance"]: (o["visible_bbox"], o["visible_pixels"]) for o in s.meta["objects"]}
                boxes = mask_boxes(arrays["instance"].astype(np.uint32))
                assert {i: v for i, v in visible.items() if v[1]} == {i: (b[0], b[1]) for i, b in boxes.items()}
    finally:
        r.close()


def test_the_stored_sample_is_what_render_sample_makes(gl):
    spec = make_spec()
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        samples, _ = batch(r, range(2, 5))
    finally:
        r.close()
    alone = render_sample(spec, 3)
    assert alone.frames[0]["rgb"].tobytes() == samples[1].frames[0]["rgb"].tobytes()
    assert alone.frames[0]["depth"].tobytes() == samples[1].frames[0]["depth"].tobytes()
    assert json.dumps(alone.meta, sort_keys=True) == json.dumps(samples[1].meta, sort_keys=True)


def _ints(pname, n=1):
    out = (ctypes.c_int * 4)()
    gl_function("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(pname, out)
    return list(out[:n])


def test_a_batch_puts_the_framebuffers_and_viewport_back(gl):
    spec = make_spec()
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    other = gl.mgl.simple_framebuffer((20, 10))
    try:
        other.use()
        gl.mgl.viewport = (1, 2, 13, 7)
        before = (_ints(0x8CA6), _ints(0x8CAA), _ints(0x0BA2, 4))  # draw, read framebuffer; viewport
        assert before[0] == [other.glo]
        batch(r, range(3))
        assert (_ints(0x8CA6), _ints(0x8CAA), _ints(0x0BA2, 4)) == before
        assert gl.mgl.error == "GL_NO_ERROR"
    finally:
        other.release()
        r.close()


def test_layered_gbuffer_refuses_more_layers_than_gl_takes_and_releases_twice(gl):
    from glrec.errors import ConfigError

    cap = int(gl.mgl.info["GL_MAX_ARRAY_TEXTURE_LAYERS"])
    with pytest.raises(ConfigError, match=f"takes 1..{cap}"):
        LayeredGBuffer(gl.mgl, (8, 8), cap + 1)
    gb = LayeredGBuffer(gl.mgl, (8, 8), 2)
    gb.release()
    gb.release()
    assert gl.mgl.error == "GL_NO_ERROR"


def test_a_table_subclass_that_overrides_render_keeps_the_one_sample_path():
    class Drawn(Table):
        def render(self, t):
            super().render(t)

    class Same(Table):
        pass

    assert batch_drawable(Table()) and batch_drawable(Same())
    assert not batch_drawable(Drawn())
    assert not batch_drawable(object())


def test_a_user_scene_without_the_capability_still_streams(gl):
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "dataset_scene.py:Cards", "samples": 5, "size": "40x30", "seed": 3}},
        base_dir=EXAMPLES,
    )
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        assert not r.batch_ready
    finally:
        r.close()
    got = [b for b in stream(spec, 2)]
    assert [b["index"].tolist() for b in got] == [[0, 1], [2, 3], [4]]
    for b in got:
        for j, i in enumerate(b["index"].tolist()):
            assert b["rgb"][j].tobytes() == render_sample(spec, i).frames[0]["rgb"].tobytes()


def test_the_stream_takes_the_layered_path_and_matches_one_by_one(gl, monkeypatch):
    spec = make_spec(samples=7)
    calls = []
    original = LayerRenderer.draw  # the stream draws, and leaves the metadata until it is read

    def counting(self, indices, target, then=None, later=()):
        calls.append((list(indices), None if then is None else list(then), [list(b) for b in later]))
        return original(self, indices, target, then, later)

    monkeypatch.setattr(LayerRenderer, "draw", counting)
    got = {}
    for b in stream(spec, 3):
        for j, i in enumerate(b["index"].tolist()):
            got[i] = (b["rgb"][j].copy(), b["instance"][j].copy(), b["boxes"][j], b["meta"][j])
    # Each batch names the next, and the one after it (planned too where processes plan: plan_ahead.DEPTH).
    assert calls == [([0, 1, 2], [3, 4, 5], [[6]]), ([3, 4, 5], [6], []), ([6], None, [])]
    for i, (rgb, instance, boxes, meta) in got.items():
        alone = render_sample(spec, i)
        assert rgb.tobytes() == alone.frames[0]["rgb"].tobytes()
        assert instance.astype(np.uint32).tobytes() == alone.frames[0]["instance"].tobytes()
        seen = [o["visible_bbox"] for o in alone.meta["objects"] if o["visible_bbox"] is not None]
        assert boxes.tolist() == seen
        assert meta["params"] == json.loads(json.dumps(alone.meta["params"]))


def shard_files(spec, root, monkeypatch, layered):
    import tarfile

    from glrec.dataset.files.folder import DatasetFolder
    from glrec.dataset.files.runner import ShardWorker
    from glrec.dataset.rendering.sample import SampleRenderer as R

    if not layered:
        monkeypatch.setattr(R, "batch_ready", property(lambda self: False))
    root.mkdir()
    folder = DatasetFolder(root, spec)
    folder.records.mkdir(parents=True, exist_ok=True)
    with ShardWorker(spec, folder, threads=2) as worker:
        for shard in range(spec.shards):
            worker.run(shard)
    monkeypatch.undo()
    out = {}
    for tar in sorted(root.glob("shard-*.tar")):
        with tarfile.open(tar) as t:
            out.update({m.name: t.extractfile(m).read() for m in t.getmembers()})
    return out


def test_the_stream_names_as_many_batches_ahead_as_plan_ahead_depth_says_when_it_runs(gl, monkeypatch):
    from glrec.dataset.rendering import plan_ahead

    monkeypatch.setattr(plan_ahead, "DEPTH", 3)  # as a benchmark sets it, after glrec is imported
    calls = []
    original = LayerRenderer.draw

    def counting(self, indices, target, then=None, later=()):
        calls.append([list(b) for b in later])
        return original(self, indices, target, then, later)

    monkeypatch.setattr(LayerRenderer, "draw", counting)
    assert [b["index"].tolist() for b in stream(make_spec(samples=7), 2)] == [[0, 1], [2, 3], [4, 5], [6]]
    assert calls == [[[4, 5], [6]], [[6]], [], []]


def test_shard_workers_draw_chunks_per_gl_pass_and_write_the_same_files(tmp_path, monkeypatch):
    from glrec.dataset.files import runner

    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": 9, "size": "48x36", "seed": 2, "shard_size": 7},
            "output": {"passes": PASSES, "depth": "png16"},
            "params": {"objects": {"int": [1, 6]}, "camera_azimuth": {"uniform": [0, 360]}},
        }
    )
    calls = []
    original = LayerRenderer.render

    def counting(self, indices, target, then=None, later=()):
        calls.append((list(indices), None if then is None else list(then)))
        return original(self, indices, target, then, later)

    monkeypatch.setattr(runner, "SHARD_CHUNK", 3)
    monkeypatch.setattr(LayerRenderer, "render", counting)
    layered = shard_files(spec, tmp_path / "layered", monkeypatch, True)
    assert calls == [([0, 1, 2], [3, 4, 5]), ([3, 4, 5], [6]), ([6], []), ([7, 8], [])]  # per shard
    calls.clear()
    alone = shard_files(spec, tmp_path / "alone", monkeypatch, False)
    assert calls == []
    assert len(layered) == 9 * 6  # five passes and meta.json per sample
    assert layered == alone


def test_boxes_fall_back_to_the_mask_for_ids_beyond_the_table(gl, monkeypatch):
    from glrec.dataset.rendering.layer_pack import LayerPacker

    spec = make_spec(objects={"int": [3, 6]})
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        want = one_by_one(r, range(4))
        r._layers_for(4, None)  # made (and its driver check run) before the table is shrunk
        run = LayerPacker.run
        fell_back = []

        def small_table(self, n, stride, ids, into, fallback, meanwhile=None, **kw):
            def counted(layer):
                fell_back.append(layer)
                return fallback(layer)

            return run(self, n, stride, 2, into, counted, meanwhile, **kw)  # room for instance id 1 only

        monkeypatch.setattr(LayerPacker, "run", small_table)
        samples, _ = batch(r, range(4))
    finally:
        r.close()
    assert fell_back == [0, 1, 2, 3]
    for s in samples:
        assert json.dumps(s.meta, sort_keys=True) == want[s.index][1]


def test_only_the_passes_read_get_layered_targets(gl):
    from dataclasses import replace

    from glrec.scenes.layers import state_bytes

    spec = make_spec()
    spec = spec.with_(output=replace(spec.output, passes=("rgb", "depth")))
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        samples, _ = batch(r, range(3))
        # instance and semantic stay: the box pass reads them for meta.json's visible boxes
        assert sorted(r._layers.gbuffer.textures) == ["depth", "instance", "rgb", "semantic"]
        assert sorted(samples[0].frames[0]) == ["depth", "rgb"]
        assert samples[1].frames[0]["rgb"].tobytes() == r.render(1).frames[0]["rgb"].tobytes()
    finally:
        r.close()
    assert state_bytes((10, 10), {"rgb", "depth", "instance", "semantic"}) == 100 * 20
    assert state_bytes((10, 10)) == 100 * 36


@pytest.mark.parametrize("marks", [True, False])
def test_targets_left_uncleared_read_as_cleared_where_nothing_was_drawn_across_chunks(gl, monkeypatch, marks):
    # The table says its depth marks what it drew, so only colour and depth are cleared per chunk and the packer
    # masks the rest by depth; a scene that does not say so gets every target cleared. Both: the same bytes.
    monkeypatch.setattr(Table, "depth_marks_drawn", marks)
    spec = make_spec(objects={"int": [0, 6]})
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        want = one_by_one(r, range(8))
        samples, chunks = batch(r, range(8), max_layers=3)  # later chunks draw over what earlier ones left
        masked = r._layers.gbuffer.masked
    finally:
        r.close()
    assert masked == ({"depth", "instance", "semantic", "normal"} if marks else set())
    assert len(chunks) == 3
    for s in samples:
        frames, meta = want[s.index]
        assert {k: v.tobytes() for k, v in s.frames[0].items()} == {k: v.tobytes() for k, v in frames.items()}
        assert json.dumps(s.meta, sort_keys=True) == meta


def test_a_driver_that_fails_the_masking_check_gets_every_target_cleared_and_the_same_bytes(gl, monkeypatch, caplog):
    # A packer that ignores the depth-test buffer (as a driver whose depth reads misbehaved would) reads the
    # markers left in the uncleared targets: the check at the renderer's start catches it and clears everything.
    from glrec.dataset.rendering import layer_pack

    defines = layer_pack.pack_defines
    monkeypatch.setattr(layer_pack, "pack_defines", lambda *a, **k: {**defines(*a, **k), "MASKED": 0})
    spec = make_spec(objects={"int": [0, 6]})
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        want = one_by_one(r, range(6))
        with caplog.at_level("WARNING", logger="glrec"):
            samples, chunks = batch(r, range(6), max_layers=2)
        masked = r._layers.gbuffer.masked
    finally:
        r.close()
    assert masked == frozenset() and len(chunks) == 3
    assert any("failed the check" in rec.getMessage() for rec in caplog.records)
    for s in samples:
        frames = want[s.index][0]
        assert {k: v.tobytes() for k, v in s.frames[0].items()} == {k: v.tobytes() for k, v in frames.items()}
