"""Huge sample counts (issue 30, item 5): nothing walks the shards or batches before the first sample.

``samples = 9223372036854775807`` (2**63 - 1, TOML's largest integer) is how an
endless training stream is asked for; ``glrec dataset`` with it renders at once
(and is stopped by the user), and a stream of 10**12 samples starts with flat memory.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import tarfile
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from crash_helpers import child_env
from PIL import Image

from glrec.dataset import DatasetSpec, render_sample, stream
from glrec.dataset.streaming.tensors import batch_ranges

pytestmark = pytest.mark.gl

ENDLESS = 2**63 - 1

# Kills itself (SIGKILL) when it starts drawing its GLREC_TEST_KILL_AT-th frame: the way to stop an endless run.
KILLING_SCENE = """
import os, signal
from glrec.scenes.table import Table

class Killing(Table):
    frames = 0

    def render(self, t):
        Killing.frames += 1
        if Killing.frames == int(os.environ.get("GLREC_TEST_KILL_AT", "0")):
            os.kill(os.getpid(), signal.SIGKILL)
        super().render(t)
"""


def endless_spec(folder: Path) -> Path:
    (folder / "killing.py").write_text(textwrap.dedent(KILLING_SCENE))
    spec = folder / "endless.toml"
    spec.write_text(
        textwrap.dedent(f"""
        [dataset]
        scene = "killing.py:Killing"
        samples = {ENDLESS}
        size = "32x24"
        seed = 7
        shard_size = 1
        [params]
        objects = {{ int = [1, 3] }}
        """)
    )
    return spec


def run_until_killed(spec: Path, out: Path, kill_at: int, *flags: str) -> None:
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(out), "--workers", "1", *flags]
    proc = subprocess.run(
        cmd, env=child_env(GLREC_TEST_KILL_AT=str(kill_at)), capture_output=True, text=True, timeout=120
    )  # on the old code this timed out: it went through 2**63 - 1 shards before drawing one
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def shard_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_a_dataset_of_2_63_minus_1_samples_renders_at_once_resumes_and_overwrites(tmp_path):
    spec, out = endless_spec(tmp_path), tmp_path / "out"
    # Killed drawing sample 3: a shard is begun once all but the one before it are complete, so shards 0 and 1
    # (one sample each) are, and 2 may be.
    run_until_killed(spec, out, 4)
    info = json.loads((out / "dataset.json").read_text())
    assert info["samples"] == ENDLESS and info["shards"] == ENDLESS and info["status"] == "incomplete"
    first = shard_members(out / "shard-000000.tar")
    key = "0" * 19  # keys are as wide as the largest index
    assert sorted(first) == sorted(f"{key}.{n}" for n in ("rgb.png", "depth.npy", "instance.png",
                                                           "semantic.png", "normal.png", "meta.json"))  # fmt: skip
    assert json.loads(first[f"{key}.meta.json"])["index"] == 0
    alone = render_sample(DatasetSpec.load(spec), 1)  # sample 1 as the spec makes it alone
    second = shard_members(out / "shard-000001.tar")
    rgb = np.asarray(Image.open(io.BytesIO(second["0000000000000000001.rgb.png"])))
    np.testing.assert_array_equal(rgb, alone.frames[0]["rgb"])

    # The complete shards are kept; the first pending one (2, or 3 if 2 was complete) is complete once the run
    # draws its third sample.
    run_until_killed(spec, out, 3, "--resume")
    assert shard_members(out / "shard-000000.tar") == first
    assert "0000000000000000002.meta.json" in shard_members(out / "shard-000002.tar")

    run_until_killed(spec, out, 3, "--overwrite")  # removing it lists the folder; it does not walk 2**63 shards
    assert shard_members(out / "shard-000000.tar") == first  # made again: the same bytes
    assert not (out / "shard-000002.tar").exists() and not (out / ".glrec" / "shard-000002.json").exists()


def test_a_stream_of_10_12_samples_starts_at_once_with_flat_memory(tmp_path):
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "table", "samples": 10**12, "size": "32x24", "seed": 3},
         "params": {"objects": {"int": [1, 3]}}}
    )  # fmt: skip
    tracemalloc.start()
    try:
        with stream(spec, batch_size=4) as s:
            assert len(s) == 25 * 10**10 and s.samples == 10**12
            batches = [next(s) for _ in range(2)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [b["index"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert batches[1]["key"][0] == "000000000004"  # 12 digits: as wide as the largest index
    np.testing.assert_array_equal(batches[1]["rgb"][1], render_sample(spec, 5).frames[0]["rgb"])
    assert peak < 20e6, f"{peak / 1e6:.1f} MB traced"  # the old code built 2.5e11 ranges first


def test_an_endless_stream_from_any_start_and_its_parts():
    spec = DatasetSpec.from_dict({"dataset": {"scene": "table", "samples": ENDLESS, "size": "32x24", "seed": 3}})
    ranges = batch_ranges(10**18, ENDLESS, 64, (1, 3))  # batches 1, 4, 7, ... of samples 10**18 onwards
    batches = -(-(ENDLESS - 10**18) // 64)
    last = (batches - 2) // 3 * 3 + 1
    assert len(ranges) == (last - 1) // 3 + 1
    assert ranges[0] == range(10**18 + 64, 10**18 + 128) and ranges[1] == range(10**18 + 256, 10**18 + 320)
    assert ranges[-1] == range(10**18 + last * 64, min(ENDLESS, 10**18 + last * 64 + 64))
    # A small case checked against the list the ranges stand for, every part and every length.
    for start, stop, size, parts in [(0, 10, 3, 2), (5, 23, 4, 3), (0, 1, 7, 4), (2, 2, 1, 1)]:
        for p in range(parts):
            listed = [range(s, min(stop, s + size)) for k, s in enumerate(range(start, stop, size)) if k % parts == p]
            lazy = batch_ranges(start, stop, size, (p, parts))
            assert list(lazy) == listed and len(lazy) == len(listed) and lazy.samples == sum(map(len, listed))
    with stream(spec, batch_size=2, start=ENDLESS - 3) as s:  # the end of the endless stream
        assert [b["index"].tolist() for b in s] == [[ENDLESS - 3, ENDLESS - 2], [ENDLESS - 1]]
