"""A streamed batch's metadata is made when first read (glrec.dataset.rendering.deferred_meta).

A consumer that reads only the tensors never pays for the annotations; one that
reads them gets the values the shards hold (tests/dataset/test_dataset_stream.py
compares them with meta.json), K and world_to_camera at once, errors naming the
sample when it is read, and plain lists through pickle (DataLoader workers).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from where import EXAMPLES

from glrec.dataset import DatasetSpec, stream
from glrec.dataset.rendering.deferred_meta import DeferredMetas, LazyColumn
from glrec.errors import SceneError
from glrec.scenes.table import Table

pytestmark = pytest.mark.gl


def make_spec(samples: int = 10) -> DatasetSpec:
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": "48x36", "seed": 5},
            "params": {"objects": {"int": [0, 6]}, "camera_azimuth": {"uniform": [0, 360]},
                       "shapes": {"choice": [["cube", "sphere"], ["cone"], ["cylinder", "cube"]]}},
        },
        base_dir=EXAMPLES,
    )  # fmt: skip


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = Table.annotations_batch

    def counted(self, layouts, times):
        calls.append(len(layouts))
        return original(self, layouts, times)

    monkeypatch.setattr(Table, "annotations_batch", counted)
    return calls


def test_a_consumer_of_the_tensors_alone_never_runs_the_annotations(gl, monkeypatch):
    calls = _counting(monkeypatch)
    batches = []
    with stream(make_spec(), 4) as s:
        for batch in s:
            assert float(batch["rgb"].sum()) > 0 and batch["depth"].shape[0] == len(batch["index"])
            assert isinstance(batch["meta"], DeferredMetas) and not batch["meta"].built
            batches.append(batch)
    # The table says which objects its layouts hold (BatchObjects): no annotation is asked for, not even a probe.
    assert calls == []
    last = batches[-1]
    boxes = last["boxes"]  # read now, from the layouts' objects and the GPU's boxes: still no annotations
    assert isinstance(boxes, LazyColumn) and len(boxes) == 2 and len(boxes[0]) >= 0
    assert calls == [] and not last["meta"].built
    metas = list(last["meta"])  # the metadata itself: the whole batch annotated once
    assert calls == [2]
    for j, meta in enumerate(metas):
        np.testing.assert_array_equal(last["K"][j], meta["camera"]["K"])
        np.testing.assert_array_equal(last["world_to_camera"][j], meta["camera"]["world_to_camera"])
        seen = [o for o in meta["objects"] if o["visible_bbox"] is not None]
        assert last["boxes"][j].tolist() == [o["visible_bbox"] for o in seen]
        assert last["labels"][j].tolist() == [o["class"] for o in seen]
        assert last["instances"][j].tolist() == [o["instance"] for o in seen]
        assert meta["index"] == int(last["index"][j])


def test_deferred_metadata_equals_what_the_renderer_makes_at_once(gl):
    from glrec.dataset.rendering.sample import SampleRenderer
    from glrec.gl.context import create_context

    spec = make_spec(7)
    with stream(spec, 7) as s:
        deferred = next(iter(s))
    with create_context() as gl_ctx:
        renderer = SampleRenderer(spec, gl_ctx.mgl, None, keep_rgb=True, packed=True)
        try:
            at_once = renderer.render_batch(range(7), lambda j, n: None)
        finally:
            renderer.close()
    assert len(deferred["meta"]) == 7
    for got, sample in zip(deferred["meta"], at_once, strict=True):
        assert got == sample.meta


def test_pickled_batches_carry_plain_lists(gl):
    with stream(make_spec(4), 4) as s:
        batch = next(iter(s))
    meta, boxes = pickle.loads(pickle.dumps(batch["meta"])), pickle.loads(pickle.dumps(batch["boxes"]))
    assert type(meta) is list and type(boxes) is list
    assert meta == batch["meta"] and [b.tolist() for b in boxes] == [b.tolist() for b in batch["boxes"]]


def test_an_annotation_that_fails_when_read_names_its_sample_and_fails_again(gl, monkeypatch):
    from glrec.dataset.rendering.plans import plan_samples

    original = Table.annotations_batch
    spec = make_spec(8)
    az6 = plan_samples(spec, [6])[0].params["camera_azimuth"]  # sample 6's own value picks it out

    def failing(self, layouts, times):
        if any(lay.params["camera_azimuth"] == az6 for lay in layouts):
            raise ValueError("no camera for this one")
        return original(self, layouts, times)

    monkeypatch.setattr(Table, "annotations_batch", failing)
    with stream(spec, 4) as s:
        first, second = list(s)  # drawing never needed the annotations
    assert len(first["meta"]) == 4 and first["meta"][0]["index"] == 0
    for _ in range(2):
        with pytest.raises(SceneError, match=r"sample 6: ValueError: no camera for this one"):
            second["meta"][0]


def test_an_interrupt_while_the_metadata_is_made_is_not_kept(gl, monkeypatch):
    original = Table.annotations_batch
    interrupted = []

    def once(self, layouts, times):
        if len(layouts) > 1 and not interrupted:  # the batch's call, not the one-sample probe
            interrupted.append(True)
            raise KeyboardInterrupt
        return original(self, layouts, times)

    monkeypatch.setattr(Table, "annotations_batch", once)
    with stream(make_spec(4), 4) as s:
        batch = next(iter(s))
    with pytest.raises(KeyboardInterrupt):
        batch["meta"][0]
    assert batch["meta"][3]["index"] == 3 and len(batch["boxes"]) == 4  # read again: made this time


_TINTED = """
from glrec.scenes.table import Table


class Tinted(Table):  # params in effect that use_layout changes: the stream must switch to each layout
    def use_layout(self, layout):
        super().use_layout(layout)
        self.params = {**layout.params, "tint": 2 * int(layout.params["objects"])}


class Declared(Tinted):  # says what use_layout puts in effect: read from the layouts
    def layout_params(self, layout):
        return {**layout.params, "tint": 2 * int(layout.params["objects"])}
"""


@pytest.mark.parametrize("name", ["Tinted", "Declared"])
def test_params_in_effect_are_read_from_layouts_only_where_use_layout_is_not_overridden(gl, tmp_path, name):
    from glrec.dataset.rendering.sample import SampleRenderer
    from glrec.gl.context import create_context
    from glrec.scenes.capabilities import layout_params_agree

    (tmp_path / "tinted.py").write_text(_TINTED)
    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": f"tinted.py:{name}", "samples": 6, "size": "32x24", "seed": 9},
            "params": {"objects": {"int": [0, 5]}},
        },
        base_dir=tmp_path,
    )
    with stream(spec, 6) as s:
        batch = next(iter(s))
    with create_context() as gl_ctx:
        renderer = SampleRenderer(spec, gl_ctx.mgl, None, keep_rgb=True, packed=True)
        try:
            assert layout_params_agree(Table()) and layout_params_agree(renderer.scene) == (name == "Declared")
            at_once = renderer.render_batch(range(6), lambda j, n: None)
        finally:
            renderer.close()
    metas = list(batch["meta"])
    assert [m["params"]["tint"] for m in metas] == [2 * m["params"]["objects"] for m in metas]
    assert len({m["params"]["objects"] for m in metas}) > 1  # the samples differ, so a stale layout would show
    assert metas == [sample.meta for sample in at_once]


def test_boxes_labels_and_instances_are_those_of_the_metadata_over_many_crowded_samples(gl):
    """The columns made from the layouts' objects and the GPU's boxes equal those made from ``meta`` (objects
    hidden behind others have no box and are left out in both), chunk after chunk."""
    from glrec.dataset.rendering.deferred_meta import _meta_columns

    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "table", "samples": 48, "size": "40x30", "seed": 11},
         "params": {"objects": {"int": [4, 14]}, "camera_azimuth": {"uniform": [0, 360]},
                    "camera_elevation": {"uniform": [5, 60]}}},
        base_dir=EXAMPLES,
    )  # fmt: skip
    hidden = listed = 0
    with stream(spec, 16) as s:
        for batch in s:
            made = {name: list(batch[name]) for name in ("boxes", "labels", "instances")}
            assert not batch["meta"].built
            from_meta = _meta_columns(batch["meta"])
            for name in made:
                assert [a.tolist() for a in made[name]] == [a.tolist() for a in from_meta[name]], name
                assert all(a.dtype == np.int64 for a in made[name])
            for meta in batch["meta"]:
                listed += len(meta["objects"])
                hidden += sum(o["visible_bbox"] is None for o in meta["objects"])
    assert listed > 100 and hidden > 0  # crowded enough that some objects are hidden


_RELABELLED = """
from glrec.scenes.table import Table


class Relabelled(Table):
    # Annotations that change every object's class: the table's BatchObjects no longer stands for them.
    def annotations_batch(self, layouts, times):
        out = super().annotations_batch(layouts, times)
        for meta in out:
            for obj in meta["objects"]:
                obj["class"] = 7
        return out

    def annotations(self, t):
        out = super().annotations(t)
        for obj in out["objects"]:
            obj["class"] = 7
        return out
"""


def test_a_scene_that_overrides_its_annotations_gets_its_columns_from_them(gl, tmp_path):
    from glrec.dataset.rendering.deferred_meta import _meta_columns
    from glrec.scenes import load_scene
    from glrec.scenes.capabilities import batch_objects_agree

    (tmp_path / "relabelled.py").write_text(_RELABELLED)
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "relabelled.py:Relabelled", "samples": 8, "size": "40x30", "seed": 3},
         "params": {"objects": {"int": [3, 6]}}},
        base_dir=tmp_path,
    )  # fmt: skip
    assert batch_objects_agree(Table()) and not batch_objects_agree(load_scene(spec.scene_ref()))
    with stream(spec, 8) as s:
        batch = next(iter(s))
    labels = [a.tolist() for a in batch["labels"]]
    assert sum(map(len, labels)) > 0 and {c for row in labels for c in row} == {7}
    assert labels == [a.tolist() for a in _meta_columns(batch["meta"])["labels"]]


def test_counted_columns_read_the_box_table_its_mask_fallbacks_and_plain_dicts_alike():
    """``_counted_columns`` without GL: a box table whose layer 1 was boxed from its mask (ids beyond the table),
    and a chunk whose boxes are plain dicts, give what the layers' dicts give, object by object."""
    from types import SimpleNamespace

    from glrec.dataset.rendering.deferred_meta import _counted_columns
    from glrec.dataset.rendering.layer_pack import BoxTable

    class Objects:  # two samples: ids 1, 2, 3 (class 4, 5, 6) and ids 2, 9 (class 1, 2)
        def objects_batch(self, layouts):
            return np.array([3, 2]), np.array([1, 2, 3, 2, 9]), np.array([4, 5, 6, 1, 2])

    table = np.zeros((5, 2, 4), np.uint32)  # (count, x1, y1, x0, y0) x (layers, ids 0..3)
    table[:, 0, 1] = (12, 9, 8, 2, 3)  # layer 0: id 1 seen, id 2 not, id 3 seen
    table[:, 0, 3] = (5, 20, 21, 10, 11)
    over = {1: {9: ([1, 1, 4, 4], 9)}}  # layer 1's ids went beyond the table: boxed from its mask
    boxed = BoxTable(table, np.array([3, 9]), over)
    plans = [SimpleNamespace(layout=None)] * 2
    dicts = [{1: ([2, 3, 9, 8], 12), 3: ([10, 11, 20, 21], 5)}, {9: ([1, 1, 4, 4], 9)}]
    assert [boxed[j] for j in range(2)] == dicts  # the dicts the metadata path reads
    for boxes in (BoxTable(table, np.array([3, 9]), dict(over)), dicts):
        got = _counted_columns(Objects(), [SimpleNamespace(plans=plans, boxes=boxes)])  # type: ignore[arg-type]
        assert [b.tolist() for b in got["boxes"]] == [[[2, 3, 9, 8], [10, 11, 20, 21]], [[1, 1, 4, 4]]]
        assert [b.tolist() for b in got["labels"]] == [[4, 6], [2]]
        assert [b.tolist() for b in got["instances"]] == [[1, 3], [9]]
