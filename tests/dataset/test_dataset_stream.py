"""Dataset streams on Mesa: sample i equals shard sample i; fixed buffers, held arrays, errors, leaks."""

import io
import json
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
from gl_child import run_child
from PIL import Image
from where import EXAMPLES, TESTS

from glrec.dataset import DatasetSpec, generate, stream
from glrec.dataset.files.encode import depth_units
from glrec.errors import BuffersHeldError, ConfigError, DeviceError, GlrecError, SceneError

pytestmark = pytest.mark.gl


def make_spec(samples=6, size="64x48", base_dir=EXAMPLES, **over):
    data = {
        "dataset": {"scene": "table", "samples": samples, "size": size, "seed": 11, "shard_size": 4},
        "output": {},
        "params": {"objects": {"int": [2, 5]}, "camera_azimuth": {"uniform": [0, 360]}},
    }
    for section, values in over.items():
        data[section] = {**data[section], **values}
    return DatasetSpec.from_dict(data, base_dir=base_dir)


def shard_samples(root):
    """Every sample of a webdataset output: key -> {member: bytes}, decoded nowhere yet."""
    out = {}
    for shard in sorted(Path(root).glob("shard-*.tar")):
        with tarfile.open(shard) as tar:
            for m in tar.getmembers():
                key, _, member = m.name.partition(".")
                out.setdefault(key, {})[member] = tar.extractfile(m).read()
    return out


def png(data):
    return np.asarray(Image.open(io.BytesIO(data)))  # Pillow: independent of FFmpeg, which wrote it


def check_equals_shards(spec, root, batches):
    files = shard_samples(root)
    seen = []
    for batch in batches:
        for j, index in enumerate(batch["index"].tolist()):
            seen.append(index)
            f = files[spec.key(index)]
            assert batch["key"][j] == spec.key(index)
            np.testing.assert_array_equal(batch["rgb"][j], png(f["rgb.png"]))
            if "depth.npy" in f:
                np.testing.assert_array_equal(batch["depth"][j], np.load(io.BytesIO(f["depth.npy"])))
            else:  # png16 shards hold round(z * depth_scale) of the stream's float32 depth
                units = depth_units(batch["depth"][j], spec.output.depth_scale)
                np.testing.assert_array_equal(units, png(f["depth.png"]))
            np.testing.assert_array_equal(batch["instance"][j], png(f["instance.png"]))
            np.testing.assert_array_equal(batch["semantic"][j], png(f["semantic.png"]))
            if "normal.npy" in f:
                np.testing.assert_array_equal(batch["normal"][j], np.load(io.BytesIO(f["normal.npy"])))
            else:
                np.testing.assert_array_equal(batch["normal"][j], png(f["normal.png"]))
            meta = json.loads(f["meta.json"])
            assert batch["meta"][j] == meta
            np.testing.assert_array_equal(batch["K"][j], meta["camera"]["K"])
            np.testing.assert_array_equal(batch["world_to_camera"][j], meta["camera"]["world_to_camera"])
            visible = [o for o in meta["objects"] if o["visible_bbox"] is not None]
            assert batch["boxes"][j].tolist() == [o["visible_bbox"] for o in visible]
            assert batch["labels"][j].tolist() == [o["class"] for o in visible]
            assert batch["instances"][j].tolist() == [o["instance"] for o in visible]
            assert len(visible) >= 1  # the comparison compared something
    return seen


def test_stream_equals_the_shards_sample_by_sample(tmp_path):
    spec = make_spec()
    generate(spec, tmp_path / "shards")
    with stream(spec, batch_size=4) as s:
        assert len(s) == 2
        batches = list(s)
    assert [b["rgb"].shape for b in batches] == [(4, 48, 64, 3), (2, 48, 64, 3)]
    assert [b["depth"].dtype for b in batches] == [np.float32] * 2
    assert batches[0]["instance"].dtype == np.uint16 and batches[0]["normal"].dtype == np.uint8
    assert check_equals_shards(spec, tmp_path / "shards", batches) == list(range(6))
    assert batches[0]["rgb"].std() > 10  # a real picture, not zeros

    with stream(spec, batch_size=3, start=1, stop=5) as s:  # a range of the samples
        part = list(s)
    assert [b["index"].tolist() for b in part] == [[1, 2, 3], [4]]
    check_equals_shards(spec, tmp_path / "shards", part)


def test_float_normals_and_png16_depth_equal_their_shards(tmp_path):
    spec = make_spec(samples=3, output={"normal": "npy", "depth": "png16"})
    generate(spec, tmp_path / "shards")
    with stream(spec, batch_size=2) as s:
        batches = list(s)
    assert batches[0]["normal"].dtype == np.float32 and batches[0]["depth"].dtype == np.float32
    assert check_equals_shards(spec, tmp_path / "shards", batches) == [0, 1, 2]


def test_fewer_passes_give_fewer_arrays():
    spec = make_spec(samples=2, output={"passes": ["rgb", "depth"]})
    with stream(spec, batch_size=2) as s:
        [batch] = list(s)
    assert {"rgb", "depth"} <= set(batch) and not {"instance", "semantic", "normal"} & set(batch)


def test_held_arrays_are_never_overwritten_and_memory_is_a_fixed_pool():
    spec = make_spec(samples=24, size="32x24")
    first = None
    held = []  # (batch, copies) of the last two batches, plus the first one all along
    addresses = set()
    batches = 0
    with stream(spec, batch_size=2, buffers=4) as s:
        for batch in s:
            batches += 1
            addresses.add(batch["rgb"].__array_interface__["data"][0])
            copies = {k: batch[k].copy() for k in ("rgb", "depth", "instance", "normal")}
            if first is None:
                first = (batch, copies)
            held = [*held[-1:], (batch, copies)]
            for b, c in [first, *held]:  # everything still held is as it was handed out
                for k, v in c.items():
                    np.testing.assert_array_equal(b[k], v)
            del batch
    assert batches == 12
    assert len(addresses) <= 4  # 12 batches went through 4 buffers
    a, b = first[1]["rgb"], held[-1][1]["rgb"]
    assert not np.array_equal(a, b)  # different samples, so the check above could fail
    for k, v in first[1].items():  # still intact after the stream closed
        np.testing.assert_array_equal(first[0][k], v)


def test_a_slow_consumer_makes_the_renderer_wait():
    spec = make_spec(samples=20, size="32x24")
    with stream(spec, batch_size=1, buffers=2) as s:
        batch = next(s)
        time.sleep(1.5)  # far longer than a 32x24 sample takes
        producer = s._producer
        assert producer.slots.free == 0 and producer.slots.waiting_since is not None
        assert producer.out.qsize() == 1  # one rendered ahead, then it waits: nothing grows
        del batch
        assert [int(next(s)["index"][0]) for _ in range(3)] == [1, 2, 3]


def test_holding_every_buffer_is_one_clear_error_and_letting_go_recovers():
    spec = make_spec(samples=6, size="32x24")
    with stream(spec, batch_size=1, buffers=2, timeout=0.5) as s:
        a, b = next(s), next(s)
        started = time.monotonic()
        with pytest.raises(BuffersHeldError, match="buffers= larger"):
            next(s)
        assert time.monotonic() - started < 10
        del a
        assert int(next(s)["index"][0]) == 2
        del b


def test_closing_early_keeps_held_batches_and_stops_rendering():
    spec = make_spec(samples=40, size="32x24")
    s = stream(spec, batch_size=2)
    batch = next(s)
    copy = batch["rgb"].copy()
    s.close()
    s.close()  # twice is fine
    assert not s._thread.is_alive()
    with pytest.raises(StopIteration):
        next(s)
    np.testing.assert_array_equal(batch["rgb"], copy)


BAD_SCENE = """
from glrec.scenes.table import Table


class Fails(Table):
    def randomise(self, params, rng):
        if params.get("camera_azimuth") == AZIMUTH:  # sample 3's, written in by the test
            raise ValueError("no table today")
        super().randomise(params, rng)


class FailsToDraw(Table):
    def render(self, t):
        raise RuntimeError("the GPU melted")
"""


def test_scene_errors_name_the_sample(tmp_path):
    from glrec.dataset.rendering.sample import sample_plan

    spec = make_spec(samples=6, size="32x24", base_dir=tmp_path, dataset={"scene": "table"})
    azimuth = sample_plan(spec, 3)[1]["camera_azimuth"]
    (tmp_path / "bad.py").write_text(f"AZIMUTH = {azimuth!r}\n" + BAD_SCENE)
    spec = make_spec(samples=6, size="32x24", base_dir=tmp_path, dataset={"scene": "bad.py:Fails"})
    s = stream(spec, batch_size=2)
    assert next(s)["index"].tolist() == [0, 1]
    with pytest.raises(SceneError, match=r"sample 3 .*ValueError: no table today"):
        next(s)
    assert not s._thread.is_alive()  # the stream closed itself
    spec = make_spec(samples=2, size="32x24", base_dir=tmp_path, dataset={"scene": "bad.py:FailsToDraw"})
    with pytest.raises(GlrecError, match=r"sample 0 .*RuntimeError: the GPU melted"), stream(spec, 1) as s:
        next(s)


def test_bad_arguments_and_devices_are_refused_at_once(tmp_path):
    spec = make_spec(samples=4, size="32x24")
    for kwargs, text in [
        ({"batch_size": 0}, "batch_size 0"),
        ({"stop": 9}, "outside"),
        ({"start": 3, "stop": 2}, "outside"),
        ({"part": (2, 2)}, "part"),
        ({"buffers": 1}, "buffers 1"),
        ({"device": "tpu"}, "Valid: cpu, cuda"),
    ]:
        with pytest.raises(ConfigError, match=text):
            stream(spec, **kwargs)
    from glrec.cuda.driver import cuda_problem

    if cuda_problem() is not None:  # this machine: no CUDA, so no silent CPU fallback either
        with pytest.raises(DeviceError, match="device='cpu'"):
            stream(spec, device="cuda")
    with pytest.raises(ConfigError, match="no parameter 'legs'"):
        stream(make_spec(params={"legs": 4}))
    (tmp_path / "bad.toml").write_text("[dataset]\nscene = 'table'\n")
    with pytest.raises(ConfigError, match="needs 'samples'"):
        stream(tmp_path / "bad.toml")


# Run in a fresh interpreter: what the rest of the suite left in Mesa's allocator (up to 180 MB more over
# 100 cycles in CI, fragmentation rather than leaks) would otherwise hide or fake a leak.
CYCLES_CHILD = """
import gc, os, sys
sys.path[:0] = TESTS
from test_dataset_stream import make_spec
from glrec.dataset import stream
from glrec.gl.leaks import snapshot

def fds():
    return len(os.listdir("/proc/self/fd"))

spec = make_spec(samples=4, size="16x12")

def cycle(n):
    if n % 3 == 0:
        with stream(spec, batch_size=1) as s:
            next(s)
    elif n % 3 == 1:
        for _ in stream(spec, batch_size=1):  # dropped without close(): its finalizer stops it
            break
    else:
        s = stream(spec, batch_size=1)
        batch = next(s)
        s.close()
        del batch

for n in range(3):
    cycle(n)
gc.collect()
before, fd_before = snapshot(), fds()
for n in range(100):
    cycle(n)
gc.collect()
after = snapshot()
done(grew={str(k): v for k, v in after.grew_from(before).items()}, fds=fds() - fd_before, rss=after.rss - before.rss)
"""


def test_100_start_stop_cycles_leave_nothing_behind():
    folders = [str(Path(__file__).resolve().parent), str(TESTS)]  # this test's module, and the helpers it imports
    result = run_child(f"TESTS = {folders!r}\n" + CYCLES_CHILD, timeout=300)
    assert result["grew"] == {}
    assert result["fds"] == 0
    # A context left unreleased costs about 6 MB a cycle (600 MB over 100); alone, Mesa's allocator grows
    # by under 40 MB.
    assert result["rss"] < 100 << 20, f"RSS grew by {result['rss'] / 1e6:.1f} MB"
