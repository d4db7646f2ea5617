"""Resume: a run killed mid-shard (SIGKILL, in a subprocess) finishes with --resume as if never stopped.

In one process (--workers 1), and with two worker processes: one worker killed, or the whole run.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from crash_helpers import child_env

pytestmark = pytest.mark.gl

# The table scene, plus ways to die: with GLREC_TEST_KILL_AT=N the process kills itself (SIGKILL,
# no cleanup of any kind) when it starts rendering its N-th frame; with GLREC_TEST_COUNTER=FILE
# too, N counts the frames of all processes together (the file holds the count). GLREC_TEST_SLOW
# sleeps that many seconds a frame; GLREC_TEST_PIDS=FOLDER leaves a file named by each pid
# that renders. Without them, it is the table.
CRASHING_SCENE = """
import fcntl, os, signal, time
from glrec.scenes.table import Table

class Crashing(Table):
    frames = 0

    def render(self, t):
        Crashing.frames += 1
        n = Crashing.frames
        counter = os.environ.get("GLREC_TEST_COUNTER")
        if counter:
            with open(counter, "a+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                f.seek(0)
                n = int(f.read() or 0) + 1
                f.seek(0)
                f.truncate()
                f.write(str(n))
        if n == int(os.environ.get("GLREC_TEST_KILL_AT", "0")):
            os.kill(os.getpid(), signal.SIGKILL)
        if os.environ.get("GLREC_TEST_PIDS"):
            open(os.path.join(os.environ["GLREC_TEST_PIDS"], str(os.getpid())), "w").close()
        time.sleep(float(os.environ.get("GLREC_TEST_SLOW", "0")))
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


def cli_env(kill_at: int | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in child_env().items() if not k.startswith("GLREC_TEST_")}
    if kill_at is not None:
        env["GLREC_TEST_KILL_AT"] = str(kill_at)
    return {**env, **extra}


def glrec_cli(*args: str, kill_at: int | None = None, **extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", *args]
    return subprocess.run(cmd, env=cli_env(kill_at, **extra), capture_output=True, text=True, timeout=120)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def png_run(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """The PNG spec, and what one uninterrupted process makes of it: the tree each stopped run's resume must equal.

    Made once for the module's five tests of it (a process each of them started the same way, about a second
    apiece); each test stops and resumes runs of that spec into a folder of its own.
    """
    folder = tmp_path_factory.mktemp("png-run")
    spec = write_spec(folder)
    assert glrec_cli(str(spec), "-o", str(folder / "whole"), "--workers", "1").returncode == 0
    return spec, tree(folder / "whole")


def test_killed_mid_shard_then_resumed_equals_an_uninterrupted_run(tmp_path, png_run):
    spec, whole = png_run
    crashed = tmp_path / "crashed"

    # sample 9 is the second of shard 2: die while rendering it. Shard 2 was begun once shard 0 was complete;
    # shard 1, drawn, may be (its samples are written while shard 2 draws).
    proc = glrec_cli(str(spec), "-o", str(crashed), "--workers", "1", kill_at=10)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = tree(crashed)
    assert "shard-000000.tar" in left and ".glrec/shard-000000.json" in left  # shard 0 finished
    assert "shard-000002.tar.partial" in left and "shard-000002.tar" not in left  # shard 2 cut off
    assert "manifest.jsonl" not in left

    refused = glrec_cli(str(spec), "-o", str(crashed))
    assert refused.returncode == 1 and "--resume" in refused.stderr
    assert tree(crashed) == left  # refusing touched nothing

    resumed = glrec_cli(str(spec), "-o", str(crashed), "--resume", "--workers", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert tree(crashed) == whole  # shards, records, manifest, dataset.json: byte for byte


def test_resume_after_kill_with_jpeg_colour_decodes_the_same(tmp_path):
    import io
    import tarfile

    import numpy as np
    from PIL import Image

    spec = write_spec(tmp_path, rgb="jpg")
    whole, crashed = tmp_path / "whole", tmp_path / "crashed"
    assert glrec_cli(str(spec), "-o", str(whole), "--workers", "1").returncode == 0
    assert glrec_cli(str(spec), "-o", str(crashed), "--workers", "1", kill_at=10).returncode == -signal.SIGKILL
    assert glrec_cli(str(spec), "-o", str(crashed), "--resume", "--workers", "1").returncode == 0
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


def test_a_worker_killed_mid_shard_is_one_line_and_resume_with_two_workers_equals_one_process(tmp_path, png_run):
    spec, whole = png_run
    crashed = tmp_path / "crashed"

    # the 6th frame of both workers together: each is inside its first shard
    proc = glrec_cli(str(spec), "-o", str(crashed), "--workers", "2", kill_at=6, GLREC_TEST_COUNTER=str(tmp_path / "n"))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "killed by SIGKILL while rendering sample" in lines[0] and "--resume" in lines[0], lines[0]
    left = tree(crashed)
    assert "manifest.jsonl" not in left and b'"incomplete"' in left["dataset.json"]
    assert not any(name.endswith(".partial") for name in left), sorted(left)  # cut-off shards removed

    resumed = glrec_cli(str(spec), "-o", str(crashed), "--resume", "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert tree(crashed) == whole  # two workers after a crash write what one process writes


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()  # a zombie has stopped; only its parent's reaping is left
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    "sig, status",
    [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130), (signal.SIGTERM, 130)],
    ids=["SIGKILL", "SIGINT", "SIGTERM"],
)
def test_the_whole_run_stopped_stops_its_workers_and_resume_equals_one_process(tmp_path, png_run, sig, status):
    spec, whole = png_run
    crashed, pids = tmp_path / "crashed", tmp_path / "pids"
    pids.mkdir()

    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(crashed), "--workers", "2"]
    env = cli_env(GLREC_TEST_SLOW="0.3", GLREC_TEST_PIDS=str(pids))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while len(list(pids.iterdir())) < 2:  # both workers are rendering
            assert proc.poll() is None and time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        os.kill(proc.pid, sig)  # the run only, not its process group: the workers must be stopped by it
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == status, err
        if sig != signal.SIGKILL:  # the CLI's one line, and no traceback from a worker
            assert "--resume" in err and len(err.strip().splitlines()) == 1, err
    finally:
        if proc.poll() is None:
            proc.kill()
    workers = [int(p.name) for p in pids.iterdir()]
    assert proc.pid not in workers
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived the killed run"
        time.sleep(0.05)
    left = tree(crashed)
    assert "manifest.jsonl" not in left
    # killed, the run leaves its shards cut off; stopped, it removes them as one process does
    assert any(name.endswith(".partial") for name in left) == (sig == signal.SIGKILL), sorted(left)
    time.sleep(0.5)
    assert tree(crashed) == left  # nothing is writing any more

    resumed = glrec_cli(str(spec), "-o", str(crashed), "--resume", "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert tree(crashed) == whole
