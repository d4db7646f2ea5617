"""pytest plugin for the ```python blocks of the README and docs/ (pytest-markdown-docs), used by test_readme.py.

Each block runs as a newcomer pastes it: alone, in a folder of its own under
``GLREC_README_DIR`` that holds nothing but a link to ``examples/`` (the README
is read in the checkout, where ``examples/`` is), so a block that uses a name
or a file it does not make fails here. The test runs every block twice, each
time in the same folder, so one that only works once (an output it refuses to
replace) fails too: it gives the pages twice (``--keep-duplicates``), so each
block is collected twice, and here the first of the two is its first run. A
warning a block gives the first time it is pasted is one every reader sees, an
error here; the second time Gymnasium's RecordVideo, and glrec's, warn that they
replace the videos of the first run. A block that cannot run on a CPU-only machine asks for a
skip fixture in its fence (```python fixture:needs_nvidia``,
``fixture:needs_ray_cluster``), which skips it with the reason; a block whose
optional package is missing is skipped saying which extra brings it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Optional packages a README block may import, and what brings each.
EXTRAS = {"gymnasium": "glrec[gym]", "pygame": "glrec[gym]", "matplotlib": "glrec[test]", "torch": "glrec[torch]",
          "mujoco": "glrec[interop]", "webdataset": "glrec[test]"}  # fmt: skip


#: The stash key of a block's run: 1 the first time it is collected, 2 the second.
RUN = pytest.StashKey[int]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    runs: dict[str, int] = {}
    for item in items:
        runs[item.nodeid] = item.stash[RUN] = runs.get(item.nodeid, 0) + 1
        if item.stash[RUN] == 1:
            item.add_marker(pytest.mark.filterwarnings("error::UserWarning"))


@pytest.fixture(autouse=True)
def _readme_folder(request, monkeypatch):
    name = re.sub(r"[^A-Za-z0-9]+", "_", request.node.nodeid).strip("_")[-120:]  # the page and the block
    folder = Path(os.environ["GLREC_README_DIR"]) / name
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(folder)
    os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A block whose optional package is not installed is skipped, naming the extra (not failed)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:  # both runs of a block have its name: which one this was
        report.sections.append(("run", f"run {item.stash.get(RUN, 1)} of the block, in its folder"))
    excinfo = call.excinfo
    if report.when == "call" and excinfo is not None and excinfo.errisinstance(ModuleNotFoundError):
        missing = (excinfo.value.name or "").split(".")[0]
        if missing in EXTRAS:
            report.outcome = "skipped"
            why = f"Skipped: needs {missing} (pip install {EXTRAS[missing]})"
            report.longrepr = (str(item.path), item.start_line, why)


# -- skips: blocks that need what a CPU-only machine lacks ------------------------------------------


@pytest.fixture
def needs_nvidia():
    pytest.skip("needs an NVIDIA GPU with the CUDA extras (pip install glrec[cuda,nvjpeg,nvenc])")


@pytest.fixture
def needs_ray_cluster():
    pytest.skip("needs a Ray cluster (ray.init(address=...))")
