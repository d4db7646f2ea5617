"""Two runs into one dataset folder (issue 30, item 1): the second is refused, the first's shards stay whole.

A run holds an exclusive lock on ``OUT/.glrec/lock`` from before it touches the
folder until it ends; any other writer (``--resume``, ``--overwrite``, the
Python API, ``--only``) is refused with one line naming the holder. And
"complete" is written only after every shard has been found on disk.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest
from blake3 import blake3
from crash_helpers import child_env
from PIL import Image

import glrec
from glrec.dataset import generate, write_samples
from glrec.dataset.files.folder import DatasetFolder
from glrec.dataset.files.local import wait_for_workers
from glrec.dataset.files.lock import FolderLock
from glrec.dataset.files.runner import ShardWorker
from glrec.dataset.spec.document import DatasetSpec

pytestmark = pytest.mark.gl

# The table, except that with GLREC_TEST_GATE=FILE set its 9th frame (GLREC_TEST_GATE_AT; in one process the
# first of shard 2) waits until FILE exists, having first made FILE.waiting: the run is caught mid-dataset for
# as long as the test needs, with shard 0 complete (a shard is begun once all but the one before it are),
# shard 1 drawn and not yet written, shard 2 begun.
GATED_SCENE = """
import os, time
from glrec.scenes.table import Table

class Gated(Table):
    frames = 0

    def render(self, t):
        Gated.frames += 1
        gate = os.environ.get("GLREC_TEST_GATE")
        if gate and Gated.frames == int(os.environ.get("GLREC_TEST_GATE_AT", "9")):
            open(gate + ".waiting", "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.02)
        super().render(t)
"""


def write_spec(folder: Path, samples: int = 10) -> Path:
    (folder / "gated.py").write_text(textwrap.dedent(GATED_SCENE))
    spec = folder / "spec.toml"
    spec.write_text(
        textwrap.dedent(f"""
        [dataset]
        scene = "gated.py:Gated"
        samples = {samples}
        size = "64x48"
        seed = 99
        shard_size = 4
        [params]
        objects = {{ int = [1, 6] }}
        """)
    )
    return spec


def cli(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", *args]
    base = {k: v for k, v in child_env().items() if not k.startswith("GLREC_TEST_")}
    return subprocess.run(cmd, env={**base, **extra}, capture_output=True, text=True, timeout=180)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def check_against_manifest(root: Path) -> None:
    """Every member of every shard is the bytes the manifest lists (BLAKE3, the default), and every PNG decodes
    (Pillow)."""
    lines = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]
    assert [line["index"] for line in lines] == list(range(len(lines)))
    for line in lines:
        with tarfile.open(root / line["location"]) as tar:
            for name, digest in line["files"].items():
                data = tar.extractfile(f"{line['key']}.{name}").read()
                assert blake3(data).hexdigest() == digest["blake3"], (line["key"], name)
                if name.endswith(".png"):
                    Image.open(io.BytesIO(data)).load()


def test_a_second_run_is_refused_naming_the_first_whose_shards_stay_whole(tmp_path):
    spec = write_spec(tmp_path)
    whole, out, gate = tmp_path / "whole", tmp_path / "out", tmp_path / "gate"
    assert cli(str(spec), "-o", str(whole), "--workers", "1").returncode == 0

    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(out), "--workers", "1"]
    first = subprocess.Popen(cmd, env=child_env(GLREC_TEST_GATE=str(gate)), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not Path(str(gate) + ".waiting").exists():  # shard 0 written, shards 1 and 2 begun
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not get to shard 2"
            time.sleep(0.05)
        before = tree(out)
        assert "shard-000000.tar" in before and "shard-000001.tar.partial" in before

        for flag in ("--resume", "--overwrite"):
            second = cli(str(spec), "-o", str(out), flag)
            assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr
            lines = second.stderr.strip().splitlines()
            assert len(lines) == 1, lines
            assert f"pid {first.pid} on {socket.gethostname()}" in lines[0] and "being written" in lines[0], lines
        refused_here = DatasetSpec.load(spec)
        with pytest.raises(glrec.OutputError, match=f"pid {first.pid}"):
            generate(refused_here, out, resume=True, workers=1)
        with pytest.raises(glrec.OutputError, match=f"pid {first.pid}"):
            write_samples(refused_here, [1], out, overwrite=True)
        assert tree(out) == before  # the refused runs touched nothing (the first run waits at the gate)
    finally:
        gate.touch()
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads((out / "dataset.json").read_text())["status"] == "complete"
    assert tree(out) == tree(whole)  # every shard, record and the manifest: the bytes of an undisturbed run
    assert not (out / ".glrec" / "lock").exists()  # the lock goes with the run
    check_against_manifest(out)


def _stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command's name (state, parent pid, ...); [] once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _children(pid: int) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and _stat(e.name)[1:2] == [str(pid)]]


def _holds(pid: int, path: Path) -> bool:
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == str(path):
                return True
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_local_workers_hold_the_lock_too(tmp_path):
    spec, out, gate = write_spec(tmp_path), tmp_path / "out", tmp_path / "gate"
    cmd = [sys.executable, "-m", "glrec", "dataset", "-q", str(spec), "-o", str(out), "--workers", "2"]
    env = child_env(GLREC_TEST_GATE=str(gate), GLREC_TEST_GATE_AT="5")
    run = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not Path(str(gate) + ".waiting").exists():  # a worker is at its 5th frame: in its second shard
            assert run.poll() is None and time.monotonic() < deadline, "no worker got to its second shard"
            time.sleep(0.05)
        lock = (out / ".glrec" / "lock").resolve()
        workers = _children(run.pid)
        assert len(workers) == 2 and _holds(run.pid, lock)
        assert all(_holds(w, lock) for w in workers)  # the lock's descriptor, inherited: held while they live
    finally:
        gate.touch()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    check_against_manifest(out)


def test_the_lock_is_free_again_once_a_run_ends_or_fails(tmp_path):
    spec = DatasetSpec.load(write_spec(tmp_path, samples=4))
    out = tmp_path / "out"
    generate(spec, out, workers=1)
    with FolderLock(out) as lock:  # nobody holds it now
        holder = json.loads((out / ".glrec" / "lock").read_text())
        assert holder["pid"] == os.getpid() and holder["token"] == lock.token
        with pytest.raises(glrec.OutputError, match="this process"):
            generate(spec, out, resume=True, workers=1)  # even from the same process
    assert generate(spec, out, resume=True, workers=1).shards_skipped == 1


def test_complete_is_written_only_once_every_shard_is_found_on_disk(tmp_path):
    spec = DatasetSpec.load(write_spec(tmp_path))
    whole, out = tmp_path / "whole", tmp_path / "out"
    generate(spec, whole, workers=1)
    written = 0

    def progress(n: int) -> None:
        nonlocal written
        written += n
        if written == 6:  # shard 0 is complete and recorded; now something removes it
            (out / "shard-000000.tar").unlink()

    with pytest.raises(glrec.DatasetError, match=r"Shard 0 of .* not complete on disk: shard-000000.tar is missing"):
        generate(spec, out, workers=1, progress=progress)
    assert json.loads((out / "dataset.json").read_text())["status"] == "incomplete"
    assert not (out / "manifest.jsonl").exists()
    assert generate(spec, out, resume=True, workers=1).samples_rendered == 4  # shard 0 again, the rest kept
    assert tree(out) == tree(whole)


def test_a_worker_of_another_run_touches_nothing(tmp_path):
    """What a Ray actor checks before each shard: the folder's lock still names its run."""
    spec = DatasetSpec.load(write_spec(tmp_path, samples=4))
    out = tmp_path / "out"
    generate(spec, out, workers=1)
    made = tree(out)
    with FolderLock(out):
        stale = DatasetFolder(out, spec, owner="a run that ended")
        with ShardWorker(spec, stale, threads=1) as worker, pytest.raises(glrec.OutputError, match="no longer held"):
            worker.run(0)
    assert tree(out) == made


def test_a_stopped_workers_cleanup_keeps_a_complete_shard(tmp_path):
    spec = DatasetSpec.load(write_spec(tmp_path, samples=8))
    out = tmp_path / "out"
    generate(spec, out, workers=1)
    made = tree(out)
    folder = DatasetFolder(out, spec)
    folder.discard(0)  # its record is there and the shard has the recorded size: not the worker's to remove
    assert tree(out) == made
    (out / ".glrec" / "shard-000001.json").unlink()  # as if the worker died before recording shard 1
    folder.discard(1)
    assert (
        not (out / "shard-000001.tar").exists() and (out / "shard-000000.tar").read_bytes() == made["shard-000000.tar"]
    )


# With GLREC_TEST_EXIT_GATE=FILE set, a dataset worker process, as it exits (after its last shard and the
# parent's None), makes FILE.PID and waits until FILE exists: it is caught after the run has returned.
HELD_SCENE = """
import atexit, os, sys, time
from glrec.scenes.table import Table

def _hold():
    gate = os.environ.get("GLREC_TEST_EXIT_GATE")
    if gate and "glrec._dataset_worker" in sys.orig_argv:
        open(f"{gate}.{os.getpid()}", "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.02)

atexit.register(_hold)

class Held(Table):
    pass
"""


def _state(pid: int) -> str | None:
    """The process's state letter (``Z``: exited, not yet reaped), or None once it is gone."""
    return next(iter(_stat(pid)), None)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_a_run_returns_once_its_workers_let_go_of_the_folder_not_once_they_have_exited(tmp_path, monkeypatch):
    """A worker's GL context and interpreter are torn down after the run has returned (on the 2-core machine
    0.16 s of a 2.3 s run were spent waiting for that): by then it holds nothing of the folder, the lock
    included, and a thread of the run reaps it once it exits."""
    (tmp_path / "held.py").write_text(HELD_SCENE)
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "held.py:Held", "samples": 8, "size": "64x48", "seed": 5, "shard_size": 4}},
        base_dir=tmp_path,
    )
    out, gate = tmp_path / "out", tmp_path / "gate"
    monkeypatch.setenv("GLREC_TEST_EXIT_GATE", str(gate))
    held: list[int] = []
    try:
        assert generate(spec, out, workers=2).workers == 2
        deadline = time.monotonic() + 60
        while len(held := [int(p.suffix[1:]) for p in tmp_path.glob("gate.*")]) < 2:
            assert time.monotonic() < deadline, "the workers did not reach their exit"
            time.sleep(0.02)
        for pid in held:  # alive after the run returned, and holding nothing in the folder
            assert _state(pid) not in (None, "Z")
            assert not any(os.readlink(fd).startswith(str(out)) for fd in Path(f"/proc/{pid}/fd").iterdir())
        with FolderLock(out):
            pass
        assert generate(spec, out, resume=True, workers=2).shards_skipped == 2
        check_against_manifest(out)
    finally:
        gate.touch()
    wait_for_workers()
    assert all(_state(pid) is None for pid in held)  # exited and reaped: no zombie left behind
