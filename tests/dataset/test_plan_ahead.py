"""The next batch planned on a planning thread while this one draws: the same plans, the same errors, no leftovers."""

import threading

import pytest
from test_dataset_layers import batch, gl, make_spec  # noqa: F401 - gl is a fixture

from glrec.dataset.rendering import plans as plans_module
from glrec.dataset.rendering.render_layers import LayerRenderer
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.errors import SceneError

pytestmark = pytest.mark.gl


def planned_on(monkeypatch):
    """Which thread planned each batch: {tuple(indices): thread name}."""
    seen = {}
    original = plans_module.plan_samples

    def spy(spec, indices, scene=None):
        seen[tuple(indices)] = threading.current_thread().name
        return original(spec, indices, scene)

    monkeypatch.setattr(plans_module, "plan_samples", spy)
    return seen


def assert_as_planned_here(gl, spec, samples):  # noqa: F811
    """``samples`` (planned ahead) have the passes and metadata a fresh renderer makes planning them itself."""
    fresh = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        inline = fresh.render_batch([s.index for s in samples], lambda j, n: None)
    finally:
        fresh.close()
    for a, b in zip(samples, inline, strict=True):
        assert a.meta == b.meta
        assert {k: v.tobytes() for k, v in a.frames[0].items()} == {k: v.tobytes() for k, v in b.frames[0].items()}


def test_a_batch_planned_ahead_is_taken_from_the_planning_thread_and_renders_the_same(gl, monkeypatch):  # noqa: F811
    spec = make_spec(samples=12)
    seen = planned_on(monkeypatch)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        first = r.render_batch(range(0, 4), lambda j, n: None, then=range(4, 8))
        ahead = r.render_batch(range(4, 8), lambda j, n: None)
    finally:
        r.close()
    assert seen[(0, 1, 2, 3)] == threading.current_thread().name  # the first batch: nothing was planned ahead
    assert seen[(4, 5, 6, 7)].startswith("glrec-plan")
    assert [s.index for s in first + ahead] == list(range(8))
    assert_as_planned_here(gl, spec, ahead)


def test_plans_made_ahead_for_other_samples_are_dropped_and_the_batch_is_planned_itself(gl, monkeypatch):  # noqa: F811
    spec = make_spec(samples=12)
    seen = planned_on(monkeypatch)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        r.render_batch(range(0, 4), lambda j, n: None, then=range(4, 8))
        got = r.render_batch(range(6, 10), lambda j, n: None)  # not what was planned ahead
        layers = r._layers
        assert isinstance(layers, LayerRenderer) and layers._planner.planned_ahead is None
    finally:
        r.close()
    assert [s.index for s in got] == [6, 7, 8, 9]
    assert seen[(6, 7, 8, 9)] == threading.current_thread().name
    assert not any(t.name.startswith("glrec-plan") for t in threading.enumerate())  # closed with the renderer


def refusing_spec():
    """A spec whose sample 0 is fine and one of samples 4..7 draws an object size the table refuses."""
    bad = [0.5, 0.1]
    for seed in range(100):
        spec = make_spec(samples=12, object_size={"choice": [[0.3, 0.5], bad]}).with_(seed=seed)
        sizes = [p.params["object_size"] for p in plans_module.plan_samples(spec, list(range(8)))]
        if sizes[0] != bad and bad in sizes[4:]:
            return spec
    raise AssertionError("no seed below 100 gives the case")


def test_an_error_planning_ahead_is_raised_by_the_batch_that_takes_the_plans(gl):  # noqa: F811
    spec = refusing_spec()
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        with pytest.raises(SceneError, match="object_size") as inline:
            r.render_batch(range(4, 8), lambda j, n: None)
        r.render_batch(range(0, 1), lambda j, n: None, then=range(4, 8))  # 4..7 planned ahead, and failing there
        with pytest.raises(SceneError, match="object_size") as ahead:
            r.render_batch(range(4, 8), lambda j, n: None)
    finally:
        r.close()
    assert str(ahead.value) == str(inline.value)


def test_a_chunk_planned_ahead_is_drawn_from_its_prepared_arrays_and_matches_the_draw_from_layouts(gl, monkeypatch):  # noqa: F811
    from glrec.scenes.table import Table

    spec = make_spec(samples=12)
    drawn = []
    for name in ("render_batch", "render_prepared"):
        original = getattr(Table, name)

        def spy(self, *args, _name=name, _original=original):
            drawn.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(Table, name, spy)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        r.render_batch(range(0, 4), lambda j, n: None, then=range(4, 8))
        assert drawn.count("render_batch") == 1  # the first batch: from its layouts (render_batch's own halves)
        drawn.clear()
        ahead = r.render_batch(range(4, 8), lambda j, n: None)
        assert drawn == ["render_prepared"]  # prepared on the planning thread; only GL calls here
    finally:
        r.close()
    assert_as_planned_here(gl, spec, ahead)


def test_a_failed_preparation_draws_the_chunk_from_its_layouts_on_the_render_thread(gl, monkeypatch):  # noqa: F811
    from glrec.scenes.table import Table

    spec = make_spec(samples=12)

    original = Table.prepare_batch
    failed = []

    def broken(self, layouts, times):  # fails on the planning thread only
        if threading.current_thread().name.startswith("glrec-plan"):
            failed.append(len(layouts))
            raise RuntimeError("no arrays today")
        return original(self, layouts, times)

    monkeypatch.setattr(Table, "prepare_batch", broken)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        r.render_batch(range(0, 4), lambda j, n: None, then=range(4, 8))
        got = r.render_batch(range(4, 8), lambda j, n: None)
        assert failed == [4]
    finally:
        r.close()
    assert [s.index for s in got] == [4, 5, 6, 7]
    assert all(s.frames[0]["rgb"].any() for s in got)


def test_a_subclass_that_draws_its_own_batches_is_not_drawn_from_the_table_s_prepared_halves():
    from glrec.scenes.capabilities import batch_prepared
    from glrec.scenes.table import Table

    class Marked(Table):
        def render_batch(self, target, layouts, times):  # draws something more than the table's halves
            super().render_batch(target, layouts, times)

    class Prepared(Marked):
        def prepare_batch(self, layouts, times):
            return super().prepare_batch(layouts, times)

        def render_prepared(self, target, prepared):
            super().render_prepared(target, prepared)

    assert batch_prepared(Table())
    assert not batch_prepared(Marked())
    assert batch_prepared(Prepared())  # its halves are below its render_batch: they stand for it
