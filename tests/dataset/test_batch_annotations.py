"""A batch's annotations computed at once (Table.annotations_batch) are the one-sample path's, bit for bit."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from glrec.dataset import DatasetSpec
from glrec.dataset.rendering.plans import TIME_PARAM, plan_samples
from glrec.errors import SceneError
from glrec.scenes.camera import look_at, look_at_batch
from glrec.scenes.capabilities import batch_annotated
from glrec.scenes.table import Table

SPEC = {
    "dataset": {"scene": "table", "samples": 400, "size": "640x480", "seed": 7},
    "output": {"passes": ["rgb", "depth", "instance"]},
    "params": {
        "objects": {"int": [0, 9]},
        "object_size": [0.2, 0.9],
        "camera_distance": {"uniform": [0.6, 4.0]},  # close enough that objects leave the frame or sit behind it
        "camera_elevation": {"uniform": [5.0, 85.0]},
        "camera_azimuth": {"uniform": [0.0, 360.0]},
        "fov": {"choice": [30.0, 50.0, 90.0]},
        "spin": {"uniform": [-1.0, 1.0]},
        "orbit": {"uniform": [-40.0, 40.0]},
        TIME_PARAM: {"uniform": [0.0, 5.0]},
        "shapes": ["cube", "sphere", "cylinder", "cone"],
    },
}


def _plans(spec: DatasetSpec, table: Table, n: int) -> list[Any]:
    return plan_samples(spec, range(n), table)


def _plain_types(value: Any) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _plain_types(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain_types(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def test_look_at_batch_has_look_ats_bits():
    rng = np.random.default_rng(3)
    eyes = np.concatenate([rng.normal(0, 5, (2000, 3)), rng.uniform(-1e-3, 1e-3, (200, 3)), [[0.0, 2.0, 1e-12]]])
    want = np.stack([look_at(e, np.zeros(3), np.array([0.0, 1.0, 0.0])) for e in eyes])
    got = look_at_batch(eyes, np.array([0.0, 1.0, 0.0]))
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))  # bits, signed zeros included


def test_annotations_batch_equals_annotations_sample_by_sample():
    spec = DatasetSpec.from_dict(SPEC)
    table = Table()
    table.size = spec.size
    plans = _plans(spec, table, 400)
    times = [float(p.params[TIME_PARAM]) for p in plans]
    batch = table.annotations_batch([p.layout for p in plans], times)
    outside = behind = objects = 0
    for plan, t, got in zip(plans, times, batch, strict=True):
        table.use_layout(plan.layout)
        want = json.loads(json.dumps(table.annotations(t)))  # what meta.json holds
        assert got == want, plan.index
        assert json.dumps(got) == json.dumps(want)  # same key order, same float reprs
        assert _plain_types(got)
        boxes = [o["bbox"] for o in got["objects"]]
        objects += len(boxes)
        behind += sum(b is None for b in boxes)
        outside += sum(b is not None and (b[0] == 0 or b[2] == spec.size[0]) for b in boxes)
    assert objects > 1000 and behind > 0 and outside > 0  # the cases the box code branches on were met


def test_one_sample_and_empty_batches():
    spec = DatasetSpec.from_dict(SPEC)
    table = Table()
    table.size = (33, 17)
    plan = _plans(spec, table, 1)[0]
    table.use_layout(plan.layout)
    assert table.annotations_batch([plan.layout], [1.5]) == [json.loads(json.dumps(table.annotations(1.5)))]
    assert table.annotations_batch([], []) == []


def test_a_camera_that_is_not_finite_is_a_scene_error():
    spec = DatasetSpec.from_dict({**SPEC, "params": {**SPEC["params"], "camera_distance": {"uniform": [1e300, 1e301]}}})
    table = Table()
    table.size = spec.size
    plans = _plans(spec, table, 3)
    with pytest.raises(SceneError, match="not finite"):
        table.annotations_batch([p.layout for p in plans], [0.0, 0.0, 0.0])


def test_only_a_class_whose_annotations_batch_agrees_with_annotations_is_batch_annotated():
    class Boxes(Table):  # changes one sample's annotations: its batch must not be used
        def annotations(self, t: float) -> dict[str, Any]:
            return {**super().annotations(t), "extra": 1}

    class Both(Boxes):
        def annotations_batch(self, layouts: Any, times: Any) -> list[dict[str, Any]]:
            return [{**a, "extra": 1} for a in super().annotations_batch(layouts, times)]

    assert batch_annotated(Table())
    assert not batch_annotated(Boxes())
    assert batch_annotated(Both())
    assert not batch_annotated(object())
