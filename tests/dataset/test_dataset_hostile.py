"""Datasets against careless and hostile input: nothing of the user's removed, one-line errors, no code run unasked.

Issue 13: ``--overwrite`` removed any folder named with 6+ digits and all of
``.glrec/``; ``--only --overwrite`` threw away the resume records; a full disk
gave a chained traceback and left a ``.tar.partial``; NaN, infinity and other
impossible values in a spec reached the renderer (or meta.json); a spec could
name a Python scene anywhere on disk and run it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from crash_helpers import child_env

import glrec
from glrec.cli import main
from glrec.dataset import generate
from glrec.dataset.files.only import write_samples
from glrec.dataset.spec.document import DatasetSpec

SPEC = """
[dataset]
scene = "table"
samples = {samples}
size = "64x48"
seed = 5
shard_size = 2
[output]
layout = "{layout}"
[params]
objects = {{ int = [1, 3] }}
"""


def _spec(folder: Path, samples: int = 4, layout: str = "webdataset", extra: str = "") -> Path:
    path = folder / "spec.toml"
    path.write_text(textwrap.dedent(SPEC.format(samples=samples, layout=layout)) + extra)
    return path


# -- --overwrite and --only remove only what glrec wrote -------------------------------------


def test_overwrite_keeps_what_the_dataset_does_not_consist_of(gl, tmp_path):
    spec = DatasetSpec.load(_spec(tmp_path))
    out = tmp_path / "out"
    generate(spec, out)
    mine = [out / "20241201" / "photo.jpg", out / ".glrec" / "notes.txt", out / "notes.txt", out / "shard-1.tar"]
    for p in mine:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"mine")
    result = generate(spec, out, overwrite=True)
    assert result.samples_rendered == 4
    assert all(p.read_bytes() == b"mine" for p in mine)
    assert sorted(p.name for p in out.glob("shard-*.tar")) == ["shard-000000.tar", "shard-000001.tar", "shard-1.tar"]


def test_overwrite_of_a_folder_dataset_keeps_files_added_to_a_sample(gl, tmp_path):
    spec = DatasetSpec.load(_spec(tmp_path, layout="folder"))
    out = tmp_path / "out"
    generate(spec, out)
    label = out / "000001" / "label.txt"
    label.write_text("a person wrote this")
    generate(spec, out, overwrite=True)
    assert label.read_text() == "a person wrote this"
    assert json.loads((out / "000001" / "meta.json").read_text())["index"] == 1


def test_only_with_overwrite_keeps_the_resume_records_of_a_finished_dataset(gl, tmp_path):
    spec = DatasetSpec.load(_spec(tmp_path, layout="folder"))
    out = tmp_path / "out"
    generate(spec, out)
    records = sorted(p.name for p in (out / ".glrec").iterdir())
    assert records
    write_samples(spec, [1], out, overwrite=True)
    assert sorted(p.name for p in (out / ".glrec").iterdir()) == records
    again = generate(spec, out, resume=True)
    assert again.samples_rendered == 0 and again.shards_skipped == spec.shards


# -- a full disk -----------------------------------------------------------------------------

_LIMITED = (
    "import resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    "from glrec.cli import main\n"
    "sys.exit(main())\n"
)


def test_a_full_disk_is_one_line_and_leaves_no_partial_shard(gl, tmp_path):
    spec = _spec(tmp_path)
    out = tmp_path / "out"
    env = child_env()
    proc = subprocess.run(
        [sys.executable, "-c", _LIMITED.format(limit=20_000), "dataset", "-q", str(spec), "-o", str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "disk is full or a file-size limit" in lines[0] and "--resume" in lines[0], lines
    assert not list(out.glob("*.partial")) and not list(out.glob(".glrec/*.partial"))
    assert json.loads((out / "dataset.json").read_text())["status"] == "incomplete"
    # With room again, --resume finishes it.
    assert main(["dataset", "-q", str(spec), "-o", str(out), "--resume"]) == 0
    assert json.loads((out / "dataset.json").read_text())["status"] == "complete"


# -- values no renderer or JSON reader can use -----------------------------------------------


@pytest.mark.parametrize(
    "params, words",
    [
        ('shapes = { choice = ["cube", "cone"], weights = [nan, 1] }', "weights"),
        ("fov = 0.0", "fov"),
        ("fov = inf", "not a finite number"),
        ("camera_distance = { uniform = [2.0, inf] }", "two finite numbers"),
        ("camera_distance = { uniform = [nan, 3.0] }", "two finite numbers"),
        ("camera_distance = nan", "not a finite number"),
        ("camera_distance = { normal = [3.0, 0.5], clip = [70, 15] }", "clip low 70 is above high 15"),
        ("table_colour = " + "[" * 40 + "0.5" + "]" * 40, "deep"),
    ],
)
def test_an_impossible_parameter_is_one_line_before_anything_is_written(gl, tmp_path, capsys, params, words):
    spec = _spec(tmp_path, extra=params + "\n")
    out = tmp_path / "out"
    assert main(["dataset", "-q", str(spec), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("glrec: error:") and words in err[0], err
    assert not out.exists()


def test_nesting_too_deep_for_the_toml_reader_is_one_line(tmp_path, capsys):
    spec = _spec(tmp_path, extra="x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["dataset", "-q", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nests" in err[0], err


def test_a_size_no_render_target_can_hold_is_refused(tmp_path, capsys):
    spec = tmp_path / "big.toml"
    spec.write_text('[dataset]\nscene = "table"\nsamples = 1\nsize = "16384x16384"\nseed = 1\n')
    assert main(["dataset", "-q", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "16384x16384 needs 9.7 GB" in err and "8192x8192" in err
    assert not (tmp_path / "out").exists()


def test_meta_json_refuses_nan_from_any_source():
    """The last guard: a NaN that a scene's annotations produce is an error, not a meta.json no reader takes."""
    from glrec.dataset.files.samples import meta_json

    assert json.loads(meta_json({"camera": {"distance": 3.5}}, "000000")) == {"camera": {"distance": 3.5}}
    with pytest.raises(glrec.SceneError, match="000007: meta.json would hold NaN"):
        meta_json({"camera": {"distance": float("nan")}}, "000007")


# -- a spec runs only the scene files beside it ----------------------------------------------

OUTSIDE_SCENE = """
from pathlib import Path
Path(__file__).with_suffix(".ran").write_text("this file's code ran")
from glrec.scenes.table import Table as Outside
"""


@pytest.mark.parametrize("where", ["relative", "absolute", "link"])
def test_a_python_scene_outside_the_specs_folder_is_refused_and_not_run(gl, tmp_path, capsys, where):
    outside = tmp_path / "elsewhere" / "outside.py"
    outside.parent.mkdir()
    outside.write_text(textwrap.dedent(OUTSIDE_SCENE))
    folder = tmp_path / "specs" / "mine"
    folder.mkdir(parents=True)
    if where == "link":
        (folder / "scene.py").symlink_to(outside)
    scene = {"relative": "../../elsewhere/outside.py", "absolute": str(outside), "link": "scene.py"}[where]
    spec = folder / "spec.toml"
    spec.write_text(f'[dataset]\nscene = "{scene}:Outside"\nsamples = 1\nsize = "64x48"\nseed = 1\n')
    out = tmp_path / "out"
    assert main(["dataset", "-q", str(spec), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "outside the spec's folder" in err and "--allow-scene-outside" in err
    assert not outside.with_suffix(".ran").exists()  # refused before it was imported
    assert not out.exists()
    # The user can say they trust it.
    assert main(["dataset", "-q", str(spec), "-o", str(out), "--allow-scene-outside"]) == 0
    assert outside.with_suffix(".ran").exists()


def test_the_help_says_a_python_scene_runs(capsys):
    with pytest.raises(SystemExit):
        main(["dataset", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "runs that file's code" in text and "--allow-scene-outside" in text


def test_a_scene_file_beside_the_spec_still_runs(gl, tmp_path):
    (tmp_path / "here.py").write_text("from glrec.scenes.table import Table as Here\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('[dataset]\nscene = "here.py:Here"\nsamples = 1\nsize = "64x48"\nseed = 1\n')
    assert generate(DatasetSpec.load(spec), tmp_path / "out").samples_rendered == 1
