"""Local dataset workers: the same bytes as one process, the default count, bad counts, a worker's error."""

import os
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from where import ROOT

from glrec.cli import main
from glrec.dataset import DatasetSpec, generate
from glrec.dataset.files.local import MAX_DEFAULT_WORKERS, default_workers, resolve_workers, usable_cores
from glrec.dataset.spec.params import sample_params, sample_seed
from glrec.errors import ConfigError, DatasetError, SceneError

pytestmark = pytest.mark.gl


def spec_for(folder: Path, scene: str = "table", layout: str = "webdataset") -> DatasetSpec:
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": scene, "samples": 10, "size": "64x48", "seed": 7, "shard_size": 3},
            "output": {"layout": layout},
            "params": {"objects": {"int": [1, 6]}, "camera_azimuth": {"uniform": [0, 360]}},
        },
        base_dir=folder,
    )


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("layout", ["webdataset", "folder"])
def test_two_and_three_workers_write_the_bytes_of_one_process_every_time(tmp_path, layout):
    spec = spec_for(tmp_path, layout=layout)
    one = generate(spec, tmp_path / "one", workers=1)
    assert one.workers == 1
    ref = tree(tmp_path / "one")
    for run, n in enumerate((2, 2, 3)):
        out = tmp_path / f"w{n}-{run}"
        counted = []
        result = generate(spec, out, workers=n, progress=counted.append)
        assert result.workers == n and result.samples_rendered == 10
        assert sum(counted) == 10 and min(counted) >= 1  # every sample reported once, from every worker
        assert f"on {n} workers" in result.summary()
        assert tree(out) == ref  # shards (or sample folders), records, manifest, dataset.json


def test_the_default_is_one_worker_per_core_at_most_8_and_one_per_shard(tmp_path):
    assert default_workers(4, cores=2) == 2
    assert default_workers(1, cores=8) == 1
    assert default_workers(100, cores=64) == MAX_DEFAULT_WORKERS == 8
    assert resolve_workers(5, 2) == 2  # never more than the pending shards
    result = generate(spec_for(tmp_path), tmp_path / "out")  # 4 shards
    assert result.workers == min(4, usable_cores(), MAX_DEFAULT_WORKERS)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_worker_count_is_refused_before_anything_is_written(tmp_path, bad):
    with pytest.raises(ConfigError, match="workers"):
        generate(spec_for(tmp_path), tmp_path / "out", workers=bad)
    assert not (tmp_path / "out").exists()


def test_workers_with_ray_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="Ray"):
        generate(spec_for(tmp_path), tmp_path / "out", workers=2, ray="")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--workers", "0"], "workers 0"),
        (["--workers", "2", "--ray"], "--workers"),
        (["--retries", "2"], "--retries"),
        (["--only", "3", "--workers", "2"], "--workers"),
    ],
)
def test_cli_options_that_cannot_apply_are_one_line(tmp_path, capsys, args, words):
    path = tmp_path / "spec.toml"
    path.write_text('[dataset]\nscene = "table"\nsamples = 4\nseed = 1\nsize = "64x48"\nshard_size = 2\n')
    assert main(["dataset", str(path), "-o", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "out").exists()


# The table, but rendering the sample whose camera azimuth is GLREC_TEST_FAIL_AZIMUTH raises.
FAILING_SCENE = """
import os
from glrec.errors import SceneError
from glrec.scenes.table import Table

class Failing(Table):
    def randomise(self, params, rng):
        self.azimuth = params.get("camera_azimuth")
        super().randomise(params, rng)

    def render(self, t):
        if repr(self.azimuth) == os.environ.get("GLREC_TEST_FAIL_AZIMUTH"):
            raise SceneError("the test scene refuses this sample")
        super().render(t)
"""

# A colour encoder registered in the test process: PNG colour, or ZeroDivisionError (not a
# glrec error) while GLREC_TEST_FAIL_COLOUR is set. The workers can only know it if it is sent.
FAILING_COLOUR = """
import os
from glrec.dataset.files.encode import encode_png

class FailingColour:
    ext = "png"

    def __init__(self, output):
        self.output = output

    def encode(self, image):
        if os.environ.get("GLREC_TEST_FAIL_COLOUR"):
            1 / 0
        return encode_png(image.array())
"""


def _on_path(monkeypatch, *folders):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*map(str, folders), os.environ.get("PYTHONPATH", "")]))


def test_a_glrec_error_in_a_worker_keeps_its_class_and_names_the_sample(tmp_path, monkeypatch):
    (tmp_path / "failing.py").write_text(textwrap.dedent(FAILING_SCENE))
    spec = spec_for(tmp_path, scene="failing.py:Failing")
    azimuth = sample_params(spec.distributions(), sample_seed(7, 7))["camera_azimuth"]
    monkeypatch.setenv("GLREC_TEST_FAIL_AZIMUTH", repr(azimuth))
    _on_path(monkeypatch, ROOT)
    with pytest.raises(SceneError, match="refuses") as info:
        generate(spec, tmp_path / "out", workers=2)
    assert str(info.value).startswith("Sample 7 (shard 2): "), info.value
    assert not (tmp_path / "out" / "manifest.jsonl").exists()
    # with the cause gone, --resume finishes it as one process would have made it
    monkeypatch.delenv("GLREC_TEST_FAIL_AZIMUTH")
    generate(spec, tmp_path / "out", resume=True, workers=2)
    generate(spec, tmp_path / "one", workers=1)
    assert tree(tmp_path / "out") == tree(tmp_path / "one")


def test_another_error_in_a_worker_is_a_dataset_error_naming_the_sample(tmp_path, monkeypatch):
    from glrec.dataset import register_colour_encoder
    from glrec.dataset.files import encode

    (tmp_path / "failing_colour.py").write_text(textwrap.dedent(FAILING_COLOUR))
    _on_path(monkeypatch, ROOT, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from failing_colour import FailingColour  # type: ignore[import-not-found]

    monkeypatch.setitem(encode.COLOUR_ENCODERS, ("png", "failing"), FailingColour)
    register_colour_encoder("png", "failing", FailingColour)
    spec = spec_for(tmp_path)
    spec = spec.with_(output=replace(spec.output, rgb_encoder="failing"))
    monkeypatch.setenv("GLREC_TEST_FAIL_COLOUR", "1")
    with pytest.raises(DatasetError, match=r"^Sample (\d+) \(shard (\d+)\) failed in dataset worker \d: Zero") as info:
        generate(spec, tmp_path / "out", workers=2)
    index, shard = (int(x) for x in re.match(r"Sample (\d+) \(shard (\d+)\)", str(info.value)).groups())
    assert index in spec.shard_range(shard) and "--resume" in str(info.value)
    monkeypatch.delenv("GLREC_TEST_FAIL_COLOUR")  # the encoder works again: the workers use it
    generate(spec, tmp_path / "out", resume=True, workers=2)
    plain = generate(spec_for(tmp_path), tmp_path / "plain", workers=1)
    assert plain.samples == 10
    assert {k: v for k, v in tree(tmp_path / "out").items() if k.endswith(".tar")} == {
        k: v for k, v in tree(tmp_path / "plain").items() if k.endswith(".tar")
    }


def test_workers_refuse_a_colour_encoder_they_cannot_import(tmp_path, monkeypatch):
    from glrec.dataset.files import encode

    monkeypatch.setitem(encode.COLOUR_ENCODERS, ("png", "local"), lambda output: None)
    spec = spec_for(tmp_path)
    spec = spec.with_(output=replace(spec.output, rgb_encoder="local"))
    with pytest.raises(ConfigError, match="workers=1"):
        generate(spec, tmp_path / "out", workers=2)
    assert not (tmp_path / "out").exists()


def test_clips_on_two_workers_are_the_bytes_of_one_process(tmp_path):
    # Each worker encodes its clips through its own Recorder, in scratch files named by its pid.
    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": 4, "size": "64x48", "seed": 3, "shard_size": 2, "frames": 3},
            "params": {"objects": {"int": [1, 4]}},
        },
        base_dir=tmp_path,
    )
    generate(spec, tmp_path / "one", workers=1)
    assert generate(spec, tmp_path / "two", workers=2).workers == 2
    one, two = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert any(name.endswith(".tar") for name in one)
    assert two == one, clip_differences(one, two)
    assert not list((tmp_path / "two" / ".glrec").glob("clip-*"))  # no scratch video left behind


def clip_differences(one: dict[str, bytes], two: dict[str, bytes]) -> str:
    """Which tar members differ and, for videos, how: packet sizes and, frame by frame, the pixels that differ
    (this test failed twice in 2026-12-04's full runs, on the one-process side's last clip, 19 bytes longer,
    and did not come back in about 150 runs meant to reproduce it)."""
    import io
    import tarfile

    import av
    import numpy as np

    def members(data: bytes) -> dict[str, bytes]:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def video(data: bytes) -> tuple[list[int], list[np.ndarray]]:
        with av.open(io.BytesIO(data)) as c:
            sizes = [p.size for p in c.demux(video=0) if p.size]
        with av.open(io.BytesIO(data)) as c:
            return sizes, [f.to_ndarray(format="rgb24").astype(int) for f in c.decode(video=0)]

    lines = []
    for name in sorted(n for n in one if n.endswith(".tar") and one[n] != two.get(n)):
        a, b = members(one[name]), members(two.get(name, b""))
        for member in sorted(m for m in a if a[m] != b.get(m)):
            lines.append(f"{name}/{member}: {len(a[member])} bytes in one process, {len(b.get(member, b''))} on two")
            if member.endswith(".mp4") and member in b:
                (pa, fa), (pb, fb) = video(a[member]), video(b[member])
                lines.append(f"  packets {pa} against {pb}")
                for k, (x, y) in enumerate(zip(fa, fb, strict=False)):
                    differ = int((x != y).any(axis=2).sum())
                    lines.append(f"  frame {k}: {differ} pixels differ, at most by {np.abs(x - y).max()}")
    return "\n".join(lines)


def test_the_cli_summary_says_how_many_workers_rendered(tmp_path, capsys):
    path = tmp_path / "spec.toml"
    path.write_text('[dataset]\nscene = "table"\nsamples = 4\nseed = 1\nsize = "64x48"\nshard_size = 2\n')
    assert main(["dataset", str(path), "-o", str(tmp_path / "out"), "--workers", "2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "4 samples in 2 shards" in out[0] and "on 2 workers" in out[0], out


def test_workers_import_this_glrec_from_the_folder_holding_it():
    """Workers get the folder that holds glrec/ first on PYTHONPATH, never glrec/ itself (where glrec/cuda would
    shadow cuda-python's ``cuda``: the H200 run of 2026-12-02 failed so after the dataset modules moved)."""
    import os
    from pathlib import Path

    import glrec
    from glrec.dataset.files.local import _child_env

    first = Path(_child_env(1)["PYTHONPATH"].split(os.pathsep)[0])
    assert first == Path(glrec.__file__).resolve().parents[1]
    assert (first / "glrec" / "__init__.py").exists() and not (first / "cuda").exists()


def test_workers_wait_for_the_gpu_sleeping_unless_told_otherwise(monkeypatch):
    """NVIDIA's GL driver sleeps rather than spins while a worker waits for the GPU (``__GL_YIELD=USLEEP``: less
    CPU a sample on the H200, where the workers are bound by their CPU); a value the user set stays, as the
    thread counts' do."""
    from glrec.dataset.files.local import _child_env

    monkeypatch.delenv("__GL_YIELD", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    env = _child_env(3)
    assert env["__GL_YIELD"] == "USLEEP" and env["OMP_NUM_THREADS"] == "3"
    monkeypatch.setenv("__GL_YIELD", "NOTHING")
    assert _child_env(3)["__GL_YIELD"] == "NOTHING"


def test_a_worker_reports_samples_written_together_and_before_each_draw(monkeypatch):
    """One message per sample was 2,000 a second to the parent at full speed: samples are counted and sent at
    most every PROGRESS_S, before each draw (which may take a while) and before a shard's ``done``."""
    from glrec.dataset.files import local_worker as local

    sent = []

    class Conn:
        def send(self, message):
            sent.append(message)

    clock = [100.0]
    monkeypatch.setattr(local.time, "monotonic", lambda: clock[0])
    written = local._Written(Conn())
    for _ in range(5):
        written.add(1)  # within PROGRESS_S of the worker's start: kept
    assert sent == []
    clock[0] += 2 * local.PROGRESS_S
    written.add(1)
    assert sent == [("progress", 6)]
    written.add(1)
    written.before_draw(32)
    assert sent[1:] == [("progress", 1), ("sample", 32)]
    written.before_draw(64)  # nothing written since: no empty report
    written.flush()
    assert sent[3:] == [("sample", 64)]
