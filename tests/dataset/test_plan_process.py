"""Batches planned in a process of their own: the same plans and samples, and planned here whenever it cannot."""

import os
import time

import numpy as np
import pytest
from test_dataset_layers import gl, make_spec  # noqa: F401 - gl is a fixture
from test_plan_ahead import assert_as_planned_here

from glrec.dataset.rendering import plan_ahead
from glrec.dataset.rendering.plan_child import PlanProcess
from glrec.dataset.rendering.plans import plan_samples
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.errors import SceneError
from glrec.scenes.load import load_scene


def ready(child, seconds=60):
    assert child.ready.wait(seconds), "the planning process did not start"
    return child


def test_the_child_plans_what_this_process_plans():
    spec = make_spec(samples=40)
    child = ready(PlanProcess(spec))
    try:
        futures = [child.submit(list(range(k, k + 10))) for k in (0, 10, 30)]
        got = [f.result(timeout=60)[0] for f in futures]
    finally:
        child.close()
    scene = load_scene(spec.scene_ref())
    for k, plans in zip((0, 10, 30), got, strict=True):
        here = plan_samples(spec, list(range(k, k + 10)), scene)
        assert [p.index for p in plans] == list(range(k, k + 10))
        assert plans == here  # params, seeds and layouts (TableLayout compares params and objects), value for value
        assert [p.layout.objects for p in plans] == [p.layout.objects for p in here]


def test_a_child_that_died_fails_every_request_and_close_is_safe_twice():
    child = ready(PlanProcess(make_spec(samples=20)))
    child._proc.kill()
    child._proc.wait()
    deadline = time.monotonic() + 30
    while child._gone is None and time.monotonic() < deadline:  # the reader sees the end of the connection
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="planning process"):
        child.submit([0, 1]).result(timeout=30)
    child.close()
    child.close()


def test_a_batch_the_child_refuses_is_planned_here_and_raises_the_error_of_planning_here():
    spec = make_spec(samples=20, fov={"choice": [45.0, 0.0]})  # fov 0: the table scene refuses some samples
    child = ready(PlanProcess(spec))
    try:
        with pytest.raises(RuntimeError):
            child.submit(list(range(20))).result(timeout=60)
        planner = plan_ahead.ChunkPlanner(spec, load_scene(spec.scene_ref()), 20, False)
        planner._remotes = [child]  # this planner's requests go to that child
        planner.ahead(range(20))
        with pytest.raises(SceneError, match="fov 0.0"):
            list(planner.chunks(range(20), None))
        planner._remotes = []
        planner.close()
    finally:
        child.close()


@pytest.mark.gl
def test_a_stream_planning_in_a_process_renders_what_threads_render(gl, monkeypatch):  # noqa: F811
    monkeypatch.setattr(plan_ahead, "PROCESS_BATCH", 4)
    monkeypatch.setattr(plan_ahead, "PROCESS_CORES", 1)
    asked = []
    real = PlanProcess.submit
    monkeypatch.setattr(plan_ahead, "PROCESSES", 1)
    monkeypatch.setattr(PlanProcess, "submit", lambda self, idx, cams=False: asked.append(list(idx)) or real(self, idx))
    spec = make_spec(samples=24)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    try:
        r.render_batch(range(0, 8), lambda j, n: None)  # makes the batch renderer, which starts the child
        (child,) = r._layers._planner._remotes
        ready(child)
        r.render_batch(range(8, 16), lambda j, n: None, then=range(16, 24))
        ahead = r.render_batch(range(16, 24), lambda j, n: None)
    finally:
        r.close()
    assert [i for chunk in asked for i in chunk] == list(range(16, 24))
    assert child._proc.poll() is not None  # closed with the renderer
    assert_as_planned_here(gl, spec, ahead)


@pytest.mark.gl
def test_with_processes_two_batches_are_planned_ahead_each_once_and_render_what_threads_render(gl, monkeypatch):  # noqa: F811
    monkeypatch.setattr(plan_ahead, "PROCESS_BATCH", 4)
    monkeypatch.setattr(plan_ahead, "PROCESS_CORES", 1)
    monkeypatch.setattr(plan_ahead, "PROCESSES", 1)
    monkeypatch.setattr(plan_ahead, "DEPTH", 2)
    asked = []
    real = PlanProcess.submit
    monkeypatch.setattr(PlanProcess, "submit", lambda self, idx, cams=False: asked.append(list(idx)) or real(self, idx))
    spec = make_spec(samples=40)
    r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
    drawn = []
    try:
        r.render_batch(range(0, 8), lambda j, n: None)  # makes the batch renderer, which starts the child
        planner = r._layers._planner
        (child,) = planner._remotes
        ready(child)
        assert planner.depth == 2
        drawn += r.render_batch(range(8, 16), lambda j, n: None, then=range(16, 24), later=[range(24, 32)])
        assert [k[0] for k, _ in planner._ahead] == [16, 24]  # both batches on their way, in order
        drawn += r.render_batch(range(16, 24), lambda j, n: None, then=range(24, 32), later=[range(32, 40)])
        drawn += r.render_batch(range(24, 32), lambda j, n: None, then=range(32, 40))
        drawn += r.render_batch(range(32, 40), lambda j, n: None)
    finally:
        r.close()
    assert asked == [list(range(k, k + 8)) for k in (16, 24, 32)]  # each batch asked for once
    assert [s.index for s in drawn] == list(range(8, 40))
    assert_as_planned_here(gl, spec, drawn)


def test_a_planner_on_threads_plans_one_batch_ahead_and_drops_batches_that_no_longer_come():
    spec = make_spec(samples=24)
    planner = plan_ahead.ChunkPlanner(spec, load_scene(spec.scene_ref()), 4, False)
    try:
        assert planner.depth == 1
        list(planner.chunks(range(0, 4), range(4, 8), later=[range(8, 12)]))
        assert [k for k, _ in planner._ahead] == [tuple(range(4, 8))]  # threads: one ahead, whatever comes later
        planner._remotes = [object()]  # as if a process planned (depth 2); nothing is submitted to it here
        planner._ahead.append((tuple(range(12, 16)), []))
        list(planner.chunks(range(4, 8), None, later=[]))
        assert planner._ahead == []  # 12..15 no longer comes: dropped
    finally:
        planner._remotes = []
        planner.close()


def test_small_batches_and_small_machines_plan_on_threads(monkeypatch):
    monkeypatch.setattr(plan_ahead, "PROCESS_CORES", 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(plan_ahead, "PROCESSES", 2)
    assert plan_ahead.plans_in_process(4096) == 0
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert plan_ahead.plans_in_process(plan_ahead.PROCESS_BATCH) == 2 and plan_ahead.plans_in_process(256) == 0
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert plan_ahead.plans_in_process(4096) == 1


def test_small_images_get_more_planning_processes_than_large_ones(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(plan_ahead, "PROCESS_CORES", 4)
    monkeypatch.setattr(plan_ahead, "PROCESSES", 4)
    monkeypatch.setattr(plan_ahead, "FEW_LAYER_PROCESSES", 2)
    many = plan_ahead.MANY_LAYERS
    assert plan_ahead.plans_in_process(4096, layers=many) == 4  # 128x128: planning bounds, four processes
    assert plan_ahead.plans_in_process(4096, layers=97) == 2  # 640x480: the fill bounds, two
    assert plan_ahead.plans_in_process(4096) == 4  # layers unknown: as many as the batch
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert plan_ahead.plans_in_process(4096, layers=many) == 2  # one per 4 cores, whatever the layers


def test_a_child_that_cannot_start_leaves_planning_to_threads(monkeypatch):
    from glrec.dataset.rendering import plan_child

    def refuse(*args, **kwargs):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(plan_child, "start_child", refuse)
    spec = make_spec(samples=8)
    scene = load_scene(spec.scene_ref())
    planner = plan_ahead.ChunkPlanner(spec, scene, 4, False, processes=2)
    try:
        assert planner._remotes == []
        planner.ahead(range(4, 8))
        got = [plan for _, chunk, *_ in planner.chunks(range(4, 8), None) for plan in chunk]
    finally:
        planner.close()
    assert got == plan_samples(spec, list(range(4, 8)), scene)


@pytest.mark.gl
def test_two_planning_processes_make_the_prepared_draws_and_cameras_of_a_stream_that_equals_one_planned_here(
    monkeypatch,
):
    from glrec.dataset import stream
    from glrec.scenes.table import Table

    def batches(processes):
        monkeypatch.setattr(plan_ahead, "PROCESS_BATCH", 4 if processes else None)
        monkeypatch.setattr(plan_ahead, "PROCESS_CORES", 1)
        monkeypatch.setattr(plan_ahead, "PROCESSES", processes)
        out = []
        with stream(spec, 8, device="cpu") as s:
            for batch in s:
                out.append({k: np.array(batch[k]) for k in ("index", "rgb", "depth", "K", "world_to_camera")})
                # Plans from a process stay pickled through the tensors and cameras, until the metadata is read.
                chunks = batch["meta"].chunks
                unread.append([getattr(c.plans, "unread", False) for c in chunks])
                out[-1]["meta"] = list(batch["meta"])
                assert not any(getattr(c.plans, "unread", False) for c in chunks)  # read for the metadata
        return out

    unread: list[list[bool]] = []

    spec = make_spec(samples=40)
    here = batches(0)
    made = {"prepare_batch": 0, "cameras_batch": 0}  # in this process
    for name in made:
        real = getattr(Table, name)

        def counted(self, *args, real=real, name=name):
            made[name] += 1
            return real(self, *args)

        monkeypatch.setattr(Table, name, counted)
    real_init = PlanProcess.__init__

    def started(self, spec):  # every batch after the first is planned by the processes
        real_init(self, spec)
        ready(self)

    monkeypatch.setattr(PlanProcess, "__init__", started)
    asked = []
    real_submit = PlanProcess.submit
    monkeypatch.setattr(PlanProcess, "submit", lambda self, idx, cams=False: asked.append(
        (id(self), cams)) or real_submit(self, idx, cams))  # fmt: skip
    unread.clear()
    there = batches(2)
    assert unread == [[False]] + [[True]] * 4  # the first batch is planned here
    assert len(asked) == 4 and len({who for who, _ in asked}) == 2 and all(cams for _, cams in asked)
    assert made == {"prepare_batch": 1, "cameras_batch": 1}  # only for the first batch, planned here at once
    assert len(here) == len(there) == 5
    for a, b in zip(here, there, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if key == "meta":
                assert a[key] == b[key]
            else:
                assert np.array_equal(np.asarray(a[key]), np.asarray(b[key])), key


def test_a_table_whose_own_setup_keeps_state_is_not_planned_without_gl():
    from glrec.scenes.capabilities import plans_without_gl
    from glrec.scenes.table import Table

    class Lit(Table):  # its setup keeps what its prepare_batch may read: prepared where it was set up
        def setup(self, ctx, size):
            super().setup(ctx, size)
            self.gain = 2.0

    class LitPlanned(Lit):  # says how to set up for planning too
        def setup_planning(self, size):
            super().setup_planning(size)
            self.gain = 2.0

    assert plans_without_gl(Table()) and not plans_without_gl(Lit()) and plans_without_gl(LitPlanned())


def test_packed_plans_stay_pickled_until_read_and_read_as_the_plans():
    import pickle

    from glrec.dataset.rendering.plans import PackedPlans, chunk_layouts, chunk_times

    spec = make_spec(samples=12)
    scene = load_scene(spec.scene_ref())
    plans = plan_samples(spec, list(range(12)), scene)
    packed = PackedPlans(plans)
    assert len(packed) == 12 and packed.unread
    assert chunk_times(packed) == [float(p.params.get("time", 0.0)) for p in plans]
    assert packed.ids == 1 + max(p.layout.object_count for p in plans)
    layouts = chunk_layouts(packed)
    assert len(layouts) == 12 and packed.unread  # a view: nothing read yet
    again = pickle.loads(pickle.dumps(packed))  # still pickled inside: it travels as it came
    assert again.unread and again == plans and not again.unread
    assert [lay.objects for lay in layouts] == [p.layout.objects for p in plans] and not packed.unread
    assert packed[3] == plans[3] and packed[2:4] == plans[2:4] and list(packed) == plans
