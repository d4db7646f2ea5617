"""`glrec bench` rows that use the whole machine: N recordings at once, and the dataset with N workers."""

import json
import math

import pytest
from where import ROOT

from glrec.bench.scale import DATASET_SPEC
from glrec.cli import main
from glrec.dataset import DatasetSpec

pytestmark = pytest.mark.gl


def test_the_dataset_rows_render_the_example_spec():
    ours = DatasetSpec.from_dict(DATASET_SPEC, base_dir=ROOT / "examples")
    assert ours.to_dict() == DatasetSpec.load(ROOT / "examples" / "dataset.toml").to_dict()


def test_processes_and_dataset_rows(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["bench", "--quick", "--baselines", "none", "--no-stages", "--no-profile", "--memory-frames", "0",
            "--no-plot", "--processes", "2", "--dataset-workers", "1,2", "--json", str(out)]  # fmt: skip
    assert main(args) == 0
    doc = json.loads(out.read_text())
    rows = {r["row"]: r for r in doc["rows"]}
    assert set(rows) == {"glrec:cpu", "glrec-x2:cpu", "dataset:w1", "dataset:w2"}
    for r in rows.values():
        assert r["status"] == "ok", r
        assert math.isclose(r["fps"], r["frames"] / r["seconds"]) and r["frames_timed"] == r["frames"]
    two = rows["glrec-x2:cpu"]
    assert two["processes"] == 2 and two["frames"] == 2 * rows["glrec:cpu"]["frames"] == two["frames_written"]
    assert len(two["per_process_fps"]) == 2 and two["startup_seconds"] > 0
    assert two["x264"]["options"] == rows["glrec:cpu"]["x264"]["options"]  # the same recorder, twice
    assert [rows[f"dataset:w{n}"]["workers_used"] for n in (1, 2)] == [1, 2]
    assert rows["dataset:w1"]["frames"] == 8 and rows["dataset:w1"]["unit"] == "samples/s"
    # The workers' CPU counts though a run returns before they have exited (the same work as in one process)
    assert rows["dataset:w2"]["cpu_seconds"] > 0.5 * rows["dataset:w1"]["cpu_seconds"], rows
    summary = {s["row"] for s in doc["summary"]}
    assert {"glrec-x2:cpu", "dataset:w2"} <= summary
    table = capsys.readouterr().out
    assert "glrec-x2:cpu" in table and "dataset:w2" in table and "total frames/s" in table


@pytest.mark.parametrize(
    "args, words",
    [
        (["--processes", "0"], "--processes 0"),
        (["--processes", "two"], "list of counts"),
        (["--dataset-workers", "0"], "--dataset-workers '0'"),
        (["--dataset-samples", "0"], "dataset samples 0"),
    ],
)
def test_bad_scale_options_exit_2(args, words, capsys, tmp_path):
    try:
        code = main(["bench", "--out", str(tmp_path), *args])
    except SystemExit as exc:  # argparse's own refusal of a value its type cannot read
        code = exc.code
    assert code == 2
    assert words in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_recordings_at_once_are_compared_rows_run_interleaved_with_the_others():
    from glrec.bench.config import BenchConfig
    from glrec.bench.runner import plan

    config = BenchConfig(scenes=("plasma",), sizes=((320, 180),), repeat=2, processes=(2, 4), stages=False,
                         profile=False, memory_frames=0, dataset_workers=("auto",))  # fmt: skip
    rows = [(s.row, s.processes, s.tag) for s in plan(config, "/tmp")]
    assert [r for r in rows if r[0].startswith("glrec-x")] == [
        ("glrec-x2:cpu", 2, "_r0"), ("glrec-x4:cpu", 4, "_r0"), ("glrec-x2:cpu", 2, "_r1"), ("glrec-x4:cpu", 4, "_r1"),
    ]  # fmt: skip
    assert rows[-1] == ("dataset:wauto", 1, "")


def test_recordings_at_once_of_a_backend_this_machine_lacks_are_skipped_with_its_reason(tmp_path, capsys):
    from glrec.cuda.driver import cuda_problem

    if cuda_problem() is None:
        pytest.skip("nvJPEG's CUDA is usable here: the row would run")
    out = tmp_path / "r.json"
    args = ["bench", "--quick", "--backends", "nvjpeg", "--baselines", "none", "--no-stages", "--no-profile",
            "--memory-frames", "0", "--no-plot", "--processes", "2", "--json", str(out)]  # fmt: skip
    assert main(args) == 0
    rows = {r["row"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"glrec:nvjpeg", "glrec-x2:nvjpeg"}
    one, two = rows["glrec:nvjpeg"], rows["glrec-x2:nvjpeg"]
    assert one["status"] == two["status"] == "skipped", (one, two)
    assert two["reason"] == one["reason"] and "CUDA" in two["reason"]
    assert "Traceback" not in capsys.readouterr().err
