"""Ray: a local cluster (CPU tasks on Mesa) makes the same dataset as one process, also when a worker dies."""

import os
import textwrap
from pathlib import Path

import pytest
from where import ROOT

from glrec.dataset import DatasetSpec, generate
from glrec.dataset.files.folder import DatasetFolder

ray = pytest.importorskip(
    "ray",
    reason="Ray is not installed: pip install 'glrec[ray]'. CI should install it (add 'ray' to the test "
    "install in .ci/run) so the Ray scale-out path is tested.",
)
pytestmark = pytest.mark.gl

# The table, but the first worker to render while the marker file exists removes it and kills
# itself (SIGKILL): Ray must retry that shard in a new worker.
FLAKY_SCENE = """
import os, signal
from glrec.scenes.table import Table

class Flaky(Table):
    def render(self, t):
        marker = os.environ.get("GLREC_TEST_DIE_ONCE")
        if marker:
            try:
                os.remove(marker)
            except FileNotFoundError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        super().render(t)
"""


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """One local cluster of 2 CPUs for the module's tests (starting one took 4-8 s on the 2-core machine).

    Its workers inherit the environment the cluster starts with: this checkout on the path, and the files
    the test scenes use, named here (the marker a worker dies at once, the log of set-ups), and made or read
    by the test that uses them.
    """
    folder = tmp_path_factory.mktemp("ray")
    files = {"die_once": folder / "die-once", "setup_log": folder / "setups.log"}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GLREC_TEST_DIE_ONCE", str(files["die_once"]))
        env.setenv("GLREC_TEST_SETUP_LOG", str(files["setup_log"]))
        env.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield files
        finally:
            ray.shutdown()


def test_ray_local_cluster_makes_the_single_process_dataset(local_ray, tmp_path, monkeypatch):
    marker = local_ray["die_once"]
    marker.write_text("")
    (tmp_path / "flaky.py").write_text(textwrap.dedent(FLAKY_SCENE))
    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "flaky.py:Flaky", "samples": 9, "size": "64x48", "seed": 5, "shard_size": 3},
            "params": {"objects": {"int": [1, 5]}, "camera_azimuth": {"uniform": [0, 360]}},
        },
        base_dir=tmp_path,
    )
    progress, checked = [], []
    real = DatasetFolder.check_done
    monkeypatch.setattr(DatasetFolder, "check_done", lambda self, shard: checked.append(shard) or real(self, shard))
    result = generate(spec, tmp_path / "ray", ray="", progress=progress.append)
    assert not marker.exists()  # a worker did die once, and its shard was retried
    assert result.samples_rendered == 9 and sum(progress) == 9  # one bar, every sample counted once
    assert sorted(checked) == [0, 1, 2]  # each checked on disk as it completed, once

    monkeypatch.delenv("GLREC_TEST_DIE_ONCE")  # the single-process run must not die
    generate(spec, tmp_path / "single")
    assert tree(tmp_path / "ray") == tree(tmp_path / "single")


# The table, logging each set-up (one per SampleRenderer, i.e. per GL context a worker makes).
COUNTING_SCENE = """
import os
from glrec.scenes.table import Table

class Counting(Table):
    def setup(self, ctx, size):
        with open(os.environ["GLREC_TEST_SETUP_LOG"], "a") as f:
            f.write(f"{os.getpid()}\\n")
        super().setup(ctx, size)
"""


def test_a_ray_worker_keeps_its_context_across_shards(local_ray, tmp_path):
    log = local_ray["setup_log"]
    (tmp_path / "counting.py").write_text(textwrap.dedent(COUNTING_SCENE))
    spec = DatasetSpec.from_dict(
        {"dataset": {"scene": "counting.py:Counting", "samples": 8, "size": "32x24", "seed": 2, "shard_size": 2}},
        base_dir=tmp_path,
    )
    # one worker: each takes both CPUs of the cluster (as a 1-CPU cluster of its own gave one worker of 1 CPU)
    result = generate(spec, tmp_path / "out", ray="", ray_options={"cpus_per_task": 2})
    assert result.samples_rendered == 8 and spec.shards == 4
    # the one worker set the scene (and its GL context) up once for all 4 shards, in its own process
    pids = log.read_text().split()
    assert len(pids) == 1 and pids[0] != str(os.getpid()), pids
