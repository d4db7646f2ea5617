"""The dataset stream in PyTorch: StreamDataset in a DataLoader with workers, tensors, errors from workers."""

import traceback

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch (pip install torch)")

from test_dataset_stream import BAD_SCENE, make_spec  # noqa: E402
from where import EXAMPLES  # noqa: E402

from glrec.dataset import StreamDataset, stream  # noqa: E402
from glrec.dataset.streaming.tensors import batch_ranges  # noqa: E402
from glrec.errors import GlrecError  # noqa: E402

pytestmark = pytest.mark.gl
# The test process has made GL contexts already (conftest, other tests): its workers must be spawned.
SPAWN = {"multiprocessing_context": "spawn"}


def _let_go(caught: pytest.ExceptionInfo[BaseException]) -> None:
    """Free the DataLoader iterator that raised now: its error's traceback holds it in a reference cycle.

    Left to the garbage collector, the cycle's weak references go first: the iterator's index queues
    shut their feeder threads before its ``__del__`` asks the workers to stop, the stop never reaches
    them, and torch waits 5 s for each worker before it terminates it (10-15 s in all, spent in
    whichever later test the collector happens to run in). With the frames cleared the iterator goes
    by reference count, its queues still open, and the workers stop at once.
    """
    traceback.clear_frames(caught.tb)


def test_batch_ranges_split_every_sample_once_in_dataloader_order():
    for start, stop, size, parts in [(0, 10, 2, 2), (3, 20, 4, 3), (0, 7, 7, 4), (5, 5, 3, 2), (0, 100, 1, 8)]:
        per_part = [batch_ranges(start, stop, size, (p, parts)) for p in range(parts)]
        flat = [i for ranges in per_part for r in ranges for i in r]
        assert sorted(flat) == list(range(start, stop))  # each once, none missing
        # A DataLoader takes one batch from each worker in turn: that is index order.
        turns = [per_part[k % parts][k // parts] for k in range(sum(map(len, per_part)))]
        assert [i for r in turns for i in r] == list(range(start, stop))
        assert all(len(r) == size for r in turns[:-1])


def test_dataloader_with_two_workers_yields_each_sample_once_equal_to_one_process():
    spec = make_spec(samples=10, size="32x24")
    ds = StreamDataset(spec, batch_size=2)
    assert len(ds) == 5
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, **SPAWN)
    batches = list(loader)
    indices = [i for b in batches for i in b["index"].tolist()]
    assert indices == list(range(10))  # no sample twice, none missing, in order
    with stream(spec, batch_size=2, buffers=6) as s:  # all 5 batches held at once: 5 buffers and one to render
        alone = list(s)
    for got, want in zip(batches, alone, strict=True):
        assert isinstance(got["rgb"], torch.Tensor) and got["rgb"].dtype == torch.uint8
        for name in ("rgb", "depth", "instance", "semantic", "normal", "K"):
            np.testing.assert_array_equal(got[name].numpy(), want[name])
        assert [b.tolist() for b in got["boxes"]] == [b.tolist() for b in want["boxes"]]
        assert got["meta"] == want["meta"]


def test_ranks_and_workers_split_the_samples_between_them():
    spec = make_spec(samples=9, size="16x12")
    seen = []
    for rank in range(2):
        ds = StreamDataset(spec, batch_size=2, rank=rank, world_size=2)
        for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, **SPAWN):
            seen += batch["index"].tolist()
    assert sorted(seen) == list(range(9)) and len(seen) == 9


def test_a_scene_error_in_a_worker_reaches_the_training_process_with_the_sample(tmp_path):
    from glrec.dataset.rendering.sample import sample_plan

    azimuth = sample_plan(make_spec(samples=6, size="32x24"), 3)[1]["camera_azimuth"]
    (tmp_path / "bad.py").write_text(f"AZIMUTH = {azimuth!r}\n" + BAD_SCENE)
    spec = make_spec(samples=6, size="32x24", base_dir=tmp_path, dataset={"scene": "bad.py:Fails"})
    loader = torch.utils.data.DataLoader(StreamDataset(spec, batch_size=1), batch_size=None, num_workers=2, **SPAWN)
    with pytest.raises(GlrecError, match=r"sample 3 .*no table today") as caught:
        list(loader)
    _let_go(caught)


def test_a_worker_forked_after_egl_refuses_instead_of_hanging():
    from glrec.errors import ContextError
    from glrec.gl.context import create_context

    create_context().release()  # this process has opened EGL
    loader = torch.utils.data.DataLoader(
        StreamDataset(make_spec(samples=2, size="16x12"), batch_size=1), batch_size=None, num_workers=1,
        multiprocessing_context="fork", timeout=120,
    )  # fmt: skip
    with pytest.raises(ContextError, match="multiprocessing_context='spawn'") as caught:
        list(loader)
    _let_go(caught)


def test_a_tiny_model_trains_on_the_stream():
    spec = make_spec(samples=16, size="32x24")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 1, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        for batch in torch.utils.data.DataLoader(StreamDataset(spec, batch_size=4), batch_size=None):
            x = batch["rgb"].permute(0, 3, 1, 2).float() / 255
            loss = torch.nn.functional.mse_loss(model(x)[:, 0], batch["depth"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert len(losses) == 12 and losses[-1] < losses[0]


def test_refuses_cuda_without_it_in_the_training_process():
    from glrec.cuda.driver import cuda_problem

    if cuda_problem() is None:
        pytest.skip("CUDA works here; the refusal is for machines without it")
    from glrec.errors import DeviceError

    with pytest.raises(DeviceError, match="needs CUDA"):
        StreamDataset(make_spec(samples=2), device="cuda")


EXAMPLE = EXAMPLES / "train_on_stream.py"
