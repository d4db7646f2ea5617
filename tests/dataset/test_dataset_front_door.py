"""The dataset front door (issue 30, items 4, 7, 8, 12): every value checked before anything is touched.

Values of the wrong type, non-finite numbers and strings where a boolean is
meant were tracebacks, or accepted (``depth_scale = inf`` wrote all-zero depth
PNGs and a dataset.json holding ``Infinity``); a bogus colour encoder or EGL
device failed after ``dataset.json`` was written, blamed on sample 0; a worker
killed while it started was a ``ConnectionResetError`` traceback; a killed clip
run left its scratch videos in ``.glrec/`` after ``--resume``.
"""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import tarfile
import textwrap
import threading
from pathlib import Path

import av
import pytest
from crash_helpers import child_env

import glrec
from glrec.cli import main
from glrec.dataset import DatasetSpec, generate, stream, write_samples

SPEC = """
[dataset]
scene = "table"
samples = 4
size = "64x48"
seed = 5
shard_size = 2
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "spec.toml"
    path.write_text(textwrap.dedent(text))
    return path


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], words: str, status: int = 2) -> None:
    assert main(argv) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("glrec: error:") and words in err[0], err


@pytest.mark.parametrize(
    "dataset, output, words",
    [
        ("", 'jpeg_quality = "90"', "jpeg_quality '90' must be a whole number"),
        ("", 'png_compression = "3"', "png_compression '3' must be a whole number"),
        ("", 'depth_scale = "1000"', "depth_scale '1000' must be a number"),
        ("", "depth_scale = inf", "depth_scale inf must be a finite number"),
        ("", "depth_scale = -inf", "depth_scale -inf must be a finite number"),
        ("", "depth_scale = nan", "depth_scale nan must be a finite number"),
        ("", 'video_crf = "18"', "video_crf '18' must be a number"),
        ("", "jpeg_quality = 90.5", "jpeg_quality 90.5 must be a whole number"),
        ("", "jpeg_quality = true", "jpeg_quality True must be a whole number"),
        ("", "png_compression = 2.5", "png_compression 2.5 must be a whole number"),
        ("", "rgb_encoder = 5", "rgb_encoder 5"),
        ("fps = true", "", "fps True must be a number"),
        ("fps = inf", "", "fps inf must be a finite number"),
    ],
)
def test_a_spec_value_of_the_wrong_type_is_one_line_naming_the_field(tmp_path, capsys, dataset, output, words):
    spec = write(tmp_path, SPEC + dataset + "\n[output]\n" + output + "\n")
    out = tmp_path / "out"
    refused(capsys, ["dataset", "-q", str(spec), "-o", str(out)], words)
    assert not out.exists()


@pytest.mark.parametrize(
    "text, words",
    [
        ("dataset = 5\n", "[dataset] must be a table"),
        ('output = "x"\n' + SPEC, "[output] must be a table"),
        ("params = [1, 2]\n" + SPEC, "[params] must be a table"),
    ],
)
def test_a_section_that_is_not_a_table_is_one_line_naming_it(tmp_path, capsys, text, words):
    out = tmp_path / "out"
    refused(capsys, ["dataset", "-q", str(write(tmp_path, text)), "-o", str(out)], words)
    assert not out.exists()


def test_a_spec_path_that_is_a_folder_is_one_line(tmp_path, capsys):
    refused(capsys, ["dataset", "-q", str(tmp_path), "-o", str(tmp_path / "out")], "is a folder")
    refused(capsys, ["dataset-preview", str(tmp_path), "-o", str(tmp_path / "p.png")], "is a folder")


@pytest.mark.gl
def test_a_string_where_a_boolean_is_meant_is_refused_and_nothing_is_replaced(tmp_path):
    spec = DatasetSpec.load(write(tmp_path, SPEC))
    out = tmp_path / "out"
    generate(spec, out, workers=1)
    made = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for flags in ({"overwrite": "False"}, {"resume": "False"}, {"overwrite": 0}):
        with pytest.raises(glrec.ConfigError, match="must be True or False"):
            generate(spec, out, workers=1, **flags)
    with pytest.raises(glrec.ConfigError, match="must be True or False"):
        write_samples(spec, [1], out, overwrite="False")
    with pytest.raises(glrec.ConfigError, match="allow_scene_outside 'yes' must be True or False"):
        DatasetSpec.load(tmp_path / "spec.toml", allow_scene_outside="yes")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == made


@pytest.mark.gl
@pytest.mark.parametrize(
    "extra, args, words",
    [
        ('[output]\nrgb = "jpg"\nrgb_encoder = "bogus"\n', [], "rgb_encoder 'bogus'"),
        ("", ["--device", "-1"], "device -1 must be an EGL device index"),
        ("", ["--device", "99"], "device 99 is not an EGL device of this machine"),
        ("", ["--device", "99", "--workers", "2"], "device 99 is not an EGL device"),
        ("", ["--device", "99", "--only", "1"], "device 99 is not an EGL device"),
    ],
)
def test_a_bogus_encoder_or_device_is_refused_before_the_folder_is_touched(tmp_path, capsys, extra, args, words):
    spec = write(tmp_path, SPEC + extra)
    out = tmp_path / "out"
    refused(capsys, ["dataset", "-q", str(spec), "-o", str(out), *args], words)
    assert not out.exists()  # the old code wrote dataset.json first, then blamed sample 0


# A worker process that dies before it has read its set-up: its socket closes with the set-up
# unread, so the parent reads ECONNRESET (ConnectionResetError), not an end of file.
KILL_WORKERS = """
import os, signal, sys
if "glrec._dataset_worker" in sys.orig_argv:
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.gl
def test_a_worker_killed_while_it_starts_is_one_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(KILL_WORKERS)
    spec, out = write(tmp_path, SPEC), tmp_path / "out"
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(out), "--workers", "2"]
    proc = subprocess.run(cmd, env=child_env(site), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "was killed by SIGKILL while starting (before its first sample" in lines[0]
        and "--resume" in lines[0]
    ), lines
    assert json.loads((out / "dataset.json").read_text())["status"] == "incomplete"
    assert not list(out.glob("shard-*")) and not (out / ".glrec" / "lock").exists()


# -- the training stream: StreamDataset and stream() check everything when they are made --------------


def small_spec(samples: int = 10, **params: object) -> DatasetSpec:
    return DatasetSpec.from_dict(
        {"dataset": {"scene": "table", "samples": samples, "size": "32x24", "seed": 1}, "params": params}
    )


BAD_STREAM_ARGS = [
    ({"batch_size": 0}, "batch_size 0 must be at least 1"),
    ({"batch_size": -4}, "batch_size -4 must be at least 1"),
    ({"batch_size": 2.5}, "batch_size 2.5 must be a whole number"),
    ({"batch_size": "4"}, "batch_size '4' must be a whole number"),
    ({"batch_size": float("nan")}, "batch_size nan must be a whole number"),
    ({"batch_size": True}, "batch_size True must be a whole number"),
    ({"start": -1}, "start -1 must be at least 0"),
    ({"start": "0"}, "start '0' must be a whole number"),
    ({"stop": 11}, "outside the spec's 0..9"),
    ({"stop": 2.5}, "stop 2.5 must be a whole number"),
    ({"start": 5, "stop": 4}, "Samples 5..3 are outside"),
    ({"buffers": 1}, "buffers 1 must be at least 2"),
    ({"buffers": 2.5}, "buffers 2.5 must be a whole number"),
    ({"timeout": 0}, "timeout 0 must be positive"),
    ({"timeout": float("nan")}, "timeout nan must be a finite number"),
    ({"timeout": "30"}, "timeout '30' must be a number"),
    ({"gl_device": -1}, "gl_device -1 must be an EGL device index"),
    ({"gl_device": 99}, "gl_device 99 is not an EGL device"),
    ({"gl_device": "0"}, "gl_device '0' must be an EGL device index"),
    ({"device": "gpu"}, "Unknown device 'gpu'"),
    ({"device": 0}, "Unknown device 0"),
]


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("glrec")}


@pytest.mark.parametrize("kwargs, words", [*BAD_STREAM_ARGS, ({"part": 5}, "part 5 must be (p, parts)")])
def test_stream_refuses_a_bad_argument_when_made(kwargs, words):
    before = _threads()
    with pytest.raises(glrec.ConfigError, match=_pattern(words)):
        stream(small_spec(), **{"batch_size": 2, **kwargs})
    assert _threads() == before  # no render thread was started


@pytest.mark.parametrize(
    "kwargs, words",
    [
        *BAD_STREAM_ARGS,
        ({"rank": True}, "rank True must be a whole number"),
        ({"rank": 2, "world_size": 2}, "rank 2 is outside 0..1"),
        ({"world_size": 0}, "world_size 0 must be at least 1"),
    ],
)
def test_stream_dataset_refuses_a_bad_argument_when_made_not_in_its_workers(kwargs, words):
    torch_data = pytest.importorskip("glrec.dataset.streaming.torch_data", exc_type=ImportError)
    before = _threads()
    with pytest.raises(glrec.ConfigError, match=_pattern(words)):
        torch_data.StreamDataset(small_spec(), **{"batch_size": 2, **kwargs})
    assert _threads() == before


def test_stream_dataset_refuses_what_the_scene_cannot_make_and_counts_batches_arithmetically():
    torch_data = pytest.importorskip("glrec.dataset.streaming.torch_data", exc_type=ImportError)
    with pytest.raises(glrec.ConfigError, match="no parameter 'wings'"):
        torch_data.StreamDataset(small_spec(wings=2), batch_size=2)
    with pytest.raises(glrec.SceneError):
        torch_data.StreamDataset(DatasetSpec.from_dict({"dataset": {"scene": "nope", "samples": 4, "seed": 1}}))
    with pytest.raises(glrec.ConfigError, match=r"batch_size 1000000000000 needs .* GB of batch buffers"):
        torch_data.StreamDataset(small_spec(samples=10**12), batch_size=10**12)
    assert len(torch_data.StreamDataset(small_spec(samples=10**12), batch_size=64)) == 15625000000
    assert len(torch_data.StreamDataset(small_spec(), batch_size=3)) == 4
    assert len(torch_data.StreamDataset(small_spec(), batch_size=10**12)) == 1  # one batch of all 10 samples
    assert len(torch_data.StreamDataset(small_spec(), batch_size=3, rank=1, world_size=2)) == 2  # batches 1 and 3


def _pattern(words: str) -> str:
    return re.escape(words)


# -- a killed clip dataset leaves no scratch video behind once resumed -----------------------------

KILLING_CLIPS = """
import os, signal
from glrec.scenes.table import Table

class Killing(Table):
    def render(self, t):
        # counted in the environment: a clip's renderer loads the scene file anew for each sample
        n = int(os.environ.get("GLREC_TEST_FRAMES", "0")) + 1
        os.environ["GLREC_TEST_FRAMES"] = str(n)
        if n == int(os.environ.get("GLREC_TEST_KILL_AT", "0")):
            os.kill(os.getpid(), signal.SIGKILL)
        super().render(t)
"""


@pytest.mark.gl
def test_resume_of_a_killed_clip_dataset_removes_its_scratch_videos(tmp_path):
    (tmp_path / "killing.py").write_text(textwrap.dedent(KILLING_CLIPS))
    spec = write(tmp_path, SPEC.replace('"table"', '"killing.py:Killing"') + "frames = 60\n")
    whole, out = tmp_path / "whole", tmp_path / "out"

    def run(target: Path, *flags: str, kill_at: int = 0) -> int:
        cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(target), "--workers", "1"]
        env = child_env(GLREC_TEST_KILL_AT=str(kill_at))
        return subprocess.run([*cmd, *flags], env=env, capture_output=True, timeout=300).returncode

    assert run(whole) == 0
    # Late in sample 1's clip: the encoder has begun writing its scratch video (x264 holds the first ~40 frames).
    assert run(out, kill_at=115) == -signal.SIGKILL
    assert [p.name for p in (out / ".glrec").glob("clip-*.mp4")], "the killed run left no scratch video"
    assert run(out, "--resume") == 0
    assert not list((out / ".glrec").glob("clip-*.mp4"))
    tree = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert tree == {p.relative_to(whole): p.read_bytes() for p in whole.rglob("*") if p.is_file()}
    with tarfile.open(out / "shard-000000.tar") as tar:
        video = tar.extractfile("000001.rgb.mp4").read()
    with av.open(io.BytesIO(video)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 60
