"""The README's ```python blocks run as written, in order, twice in one folder (pytest-markdown-docs).

Twice, so that an example that only works once (an output it refuses to
replace, a file it expects not to exist) fails here. Names a block uses but
does not define, and skips for what a CPU-only machine lacks, come from
tests/readme_blocks.py, asked for in the block's fence (```python fixture:NAME).
"""

import re
import subprocess
import sys

import pytest
from crash_helpers import child_env
from where import ROOT

pytest.importorskip("pytest_markdown_docs", reason="pip install pytest-markdown-docs (the test extra)")


@pytest.mark.gl
def test_every_readme_python_block_runs_twice_in_order(tmp_path):
    blocks = re.findall(r"^```python", (ROOT / "README.md").read_text(), flags=re.M)
    env = child_env(ROOT / "tests", GLREC_README_DIR=str(tmp_path))
    for run in (1, 2):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--markdown-docs", "-p", "readme_blocks", "-p", "no:cacheprovider",
             "-q", "-rs", "--rootdir", str(tmp_path), str(ROOT / "README.md")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500,
        )  # fmt: skip
        tail = done.stdout[-6000:] + done.stderr[-2000:]
        assert done.returncode == 0, f"run {run}:\n{tail}"
        passed = int(re.search(r"(\d+) passed", done.stdout).group(1))  # type: ignore[union-attr]
        skipped = re.search(r"(\d+) skipped", done.stdout)
        assert passed + (int(skipped.group(1)) if skipped else 0) == len(blocks), tail
        for line in done.stdout.splitlines():  # every skip says why
            if line.startswith("SKIPPED"):
                assert re.search(r"needs .+", line), line
