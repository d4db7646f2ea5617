"""Counter-based draws: a sample is the same whatever batch it is drawn in (sizes 1, 3, 8, alone)."""

import json

import numpy as np
import pytest
from where import EXAMPLES

from glrec.dataset import DatasetSpec, render_sample, stream
from glrec.dataset.rendering.sample import plan_samples
from glrec.scenes.capabilities import BatchRandomisable, batch_randomisable
from glrec.scenes.table import Table

pytestmark = pytest.mark.gl
PASSES = ("rgb", "depth", "instance", "semantic", "normal")


def make_spec(samples=9):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": "40x30", "seed": 21},
            "params": {
                "objects": {"int": [0, 9]},
                "camera_azimuth": {"uniform": [0, 360]},
                "fov": {"normal": [45, 5], "clip": [30, 60]},
                "ambient": {"loguniform": [0.1, 0.5]},
                "shapes": {"choice": [["cube"], ["sphere", "cone"], ["cube", "cylinder"]], "weights": [1, 2, 3]},
            },
        },
        base_dir=EXAMPLES,
    )


def test_plans_of_any_batch_equal_each_sample_planned_alone():
    spec, table = make_spec(samples=40), Table()
    whole = plan_samples(spec, range(40), table)
    assert len({json.dumps(p.params, sort_keys=True) for p in whole}) == 40
    for size in (1, 3, 8):
        for start in range(0, 40, size):
            assert plan_samples(spec, range(start, min(40, start + size)), table) == whole[start : start + size]
    assert plan_samples(spec, [17, 2], table) == [whole[17], whole[2]]  # order and gaps do not matter either
    assert {len(p.layout.objects) for p in whole} >= {0, 9}


def test_a_sample_is_the_same_in_batches_of_1_3_8_and_alone():
    spec = make_spec()
    seen = {}
    for size in (1, 3, 8):
        with stream(spec, batch_size=size) as s:
            for batch in s:
                for j, index in enumerate(batch["index"].tolist()):
                    arrays = {name: np.array(batch[name][j]) for name in PASSES}
                    meta = json.dumps(batch["meta"][j], sort_keys=True)
                    if index in seen:
                        want_arrays, want_meta = seen[index]
                        for name in PASSES:
                            assert arrays[name].tobytes() == want_arrays[name].tobytes(), (size, index, name)
                        assert meta == want_meta, (size, index)
                    else:
                        seen[index] = arrays, meta
    assert sorted(seen) == list(range(9))
    assert len({seen[i][0]["rgb"].tobytes() for i in seen}) == 9  # nine different pictures
    alone = render_sample(spec, 7)
    assert alone.frames[0]["rgb"].tobytes() == seen[7][0]["rgb"].tobytes()
    assert alone.frames[0]["depth"].tobytes() == seen[7][0]["depth"].tobytes()
    assert json.dumps(alone.meta["params"], sort_keys=True) == json.dumps(
        json.loads(seen[7][1])["params"], sort_keys=True
    )


def test_a_subclass_that_changes_randomise_keeps_the_per_sample_path():
    class Tinted(Table):
        def randomise(self, params, rng):
            super().randomise(params, rng)
            self.params = {**self.params, "ambient": 0.9}

    class Batched(Table):
        pass

    assert batch_randomisable(Table()) and batch_randomisable(Batched())
    assert isinstance(Tinted(), BatchRandomisable) and not batch_randomisable(Tinted())
    assert not batch_randomisable(object())
    spec = make_spec()
    assert all(p.layout is None for p in plan_samples(spec, range(3), Tinted()))
