"""Resume: a run killed mid-shard (SIGKILL, in a subprocess) finishes with --resume as if never stopped."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gl
ROOT = Path(__file__).resolve().parent.parent

# The table scene, plus a way to die: with GLREC_TEST_KILL_AT=N the process kills itself (SIGKILL,
# no cleanup of any kind) when it starts rendering its N-th frame. Without it, it is the table.
CRASHING_SCENE = """
import os, signal
from glrec.scenes.table import Table

class Crashing(Table):
    frames = 0

    def render(self, t):
        Crashing.frames += 1
        if Crashing.frames == int(os.environ.get("GLREC_TEST_KILL_AT", "0")):
            os.kill(os.getpid(), signal.SIGKILL)
        super().render(t)
"""


def write_spec(folder: Path, rgb: str = "png") -> Path:
    (folder / "crashing.py").write_text(textwrap.dedent(CRASHING_SCENE))
    spec = folder / "spec.toml"
    spec.write_text(
        textwrap.dedent(f"""
        [dataset]
        scene = "crashing.py:Crashing"
        samples = 10
        size = "64x48"
        seed = 99
        shard_size = 4
        [output]
        rgb = "{rgb}"
        [params]
        objects = {{ int = [1, 6] }}
        camera_azimuth = {{ uniform = [0, 360] }}
        """)
    )
    return spec


def glrec_cli(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GLREC_TEST_KILL_AT", None)
    if kill_at is not None:
        env["GLREC_TEST_KILL_AT"] = str(kill_at)
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_killed_mid_shard_then_resumed_equals_an_uninterrupted_run(tmp_path):
    spec = write_spec(tmp_path)
    whole, crashed = tmp_path / "whole", tmp_path / "crashed"
    assert glrec_cli(str(spec), "-o", str(whole)).returncode == 0

    # sample 6 is the third of shard 1: die while rendering it
    proc = glrec_cli(str(spec), "-o", str(crashed), kill_at=7)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = tree(crashed)
    assert "shard-000000.tar" in left and ".glrec/shard-000000.json" in left  # shard 0 finished
    assert "shard-000001.tar.partial" in left and "shard-000001.tar" not in left  # shard 1 cut off
    assert "manifest.jsonl" not in left

    refused = glrec_cli(str(spec), "-o", str(crashed))
    assert refused.returncode == 1 and "--resume" in refused.stderr
    assert tree(crashed) == left  # refusing touched nothing

    resumed = glrec_cli(str(spec), "-o", str(crashed), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert tree(crashed) == tree(whole)  # shards, records, manifest, dataset.json: byte for byte


def test_resume_after_kill_with_jpeg_colour_decodes_the_same(tmp_path):
    import io
    import tarfile

    import numpy as np
    from PIL import Image

    spec = write_spec(tmp_path, rgb="jpg")
    whole, crashed = tmp_path / "whole", tmp_path / "crashed"
    assert glrec_cli(str(spec), "-o", str(whole)).returncode == 0
    assert glrec_cli(str(spec), "-o", str(crashed), kill_at=10).returncode == -signal.SIGKILL
    assert glrec_cli(str(spec), "-o", str(crashed), "--resume").returncode == 0
    for shard in ("shard-000000.tar", "shard-000001.tar", "shard-000002.tar"):
        with tarfile.open(whole / shard) as a, tarfile.open(crashed / shard) as b:
            assert a.getnames() == b.getnames()
            for name in a.getnames():
                da, db = a.extractfile(name).read(), b.extractfile(name).read()
                if name.endswith(".jpg"):
                    pa, pb = (np.asarray(Image.open(io.BytesIO(d))) for d in (da, db))
                    np.testing.assert_array_equal(pa, pb)
                else:
                    assert da == db, name
