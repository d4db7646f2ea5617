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
    # Only a one-sample probe per batch (does its metadata list objects?), never a whole batch.
    assert calls == [1, 1, 1]
    calls.clear()
    last = batches[-1]
    boxes = last["boxes"]  # read now: the whole batch is annotated once, for meta and every column
    assert isinstance(boxes, LazyColumn) and len(boxes) == 2
    metas = list(last["meta"])
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
