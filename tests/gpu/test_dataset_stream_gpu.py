"""The dataset stream on CUDA (``-m gpu``): torch tensors in CUDA memory equal the CPU stream; held ones stay.

Written without a GPU at hand (the CPU twin is tests/dataset/test_dataset_stream*.py); run on the H200 with -m gpu.
"""

import numpy as np
import pytest
from test_dataset_stream import make_spec

from glrec.dataset import StreamDataset, stream

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="needs PyTorch with CUDA")
PASSES = ("rgb", "depth", "instance", "semantic", "normal")


def test_cuda_batches_equal_the_cpu_stream_and_held_tensors_stay():
    spec = make_spec(samples=12, size="64x48")
    with stream(spec, batch_size=2, buffers=6) as s:
        want = list(s)
    held = []
    with stream(spec, batch_size=2, device="cuda", buffers=4) as s:
        for k, batch in enumerate(s):
            tensors = {p: torch.from_dlpack(batch[p]) for p in PASSES}
            assert tensors["rgb"].is_cuda and tensors["rgb"].shape == want[k]["rgb"].shape
            sums = {p: float(t.double().sum()) for p, t in tensors.items()}  # on the consumer's stream
            held = [*held[-2:], (k, tensors, sums)]
            del batch
            for j, ts, ss in held:  # tensors held across batches are never written over
                for p, t in ts.items():
                    assert float(t.double().sum()) == ss[p]
                    np.testing.assert_array_equal(t.cpu().numpy(), want[j][p])


def test_stream_dataset_on_cuda_gives_cuda_tensors():
    ds = StreamDataset(make_spec(samples=4, size="64x48"), batch_size=2, device="cuda")
    batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
    assert [b["index"].tolist() for b in batches] == [[0, 1], [2, 3]]
    assert all(b["depth"].is_cuda and b["K"].is_cuda for b in batches)


def test_cuda_samples_are_the_same_in_batches_of_1_3_8_and_equal_the_cpu_stream():
    spec = make_spec(samples=9, size="64x48")
    with stream(spec, batch_size=9) as s:
        [want] = list(s)
    for size in (1, 3, 8):
        with stream(spec, batch_size=size, device="cuda") as s:
            for batch in s:
                for j, index in enumerate(batch["index"].tolist()):
                    for p in PASSES:
                        got = torch.from_dlpack(batch[p])[j].cpu().numpy()
                        assert got.tobytes() == np.asarray(want[p][index]).tobytes(), (size, index, p)


@pytest.mark.parametrize("batch_size", [1, 64, 256])
def test_cuda_batches_go_n_per_gl_pass_with_no_host_copy_and_equal_the_cpu_stream(monkeypatch, batch_size):
    from glrec.dataset.rendering.layer_pack import LayerPacker
    from glrec.scenes.passes import GBuffer

    spec = make_spec(samples=300, size="32x24")
    with stream(spec, batch_size=300) as s:
        [want] = list(s)
    targets = []
    run = LayerPacker.run

    def spying(self, n, stride, ids, into, *rest, **kw):
        targets.append((n, type(into).__name__))
        return run(self, n, stride, ids, into, *rest, **kw)

    def no_read(self, name):
        raise AssertionError(f"the {name} pass was read to the host")

    monkeypatch.setattr(LayerPacker, "run", spying)
    monkeypatch.setattr(GBuffer, "read", no_read)
    seen = 0
    with stream(spec, batch_size=batch_size, device="cuda") as s:
        for batch in s:
            for p in PASSES:
                got = torch.from_dlpack(batch[p]).cpu().numpy()
                assert got.tobytes() == np.asarray(want[p][batch["index"]]).tobytes(), (batch_size, p)
            for j, index in enumerate(batch["index"].tolist()):
                assert batch["boxes"][j].tolist() == want["boxes"][index].tolist()
            seen += len(batch["index"])
    assert seen == 300
    # Every chunk packed straight into the CUDA-shared batch buffer (a GL buffer, offset), never host memory;
    # besides them, only the renderer's check of the masked read on this driver (one layer, depth 1 then 0.5).
    checks = [t for t in targets if t == (1, "NoneType")]
    targets = [t for t in targets if t not in checks]
    assert len(checks) == 2
    assert targets and all(kind == "tuple" for _, kind in targets)
    assert sum(n for n, _ in targets) == 300
    assert max(n for n, _ in targets) == min(batch_size, 300)
