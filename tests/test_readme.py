"""The code blocks of the README and of the site's pages (docs/) run as pasted.

Every ```python block runs alone in a folder of its own, twice (pytest-markdown-docs).
Alone, so a block that uses a name or a file it does not make itself fails
here (a reader pastes one block, not the page); twice, so that an example that
only works once (an output it refuses to replace, a file it expects not to
exist) fails too. The only fence words are skips for what a CPU-only machine
lacks (```python fixture:needs_nvidia``), from tests/readme_blocks.py. Every
glrec command of a ```bash block may be pasted again (each page on its own).

Both runs are one pytest session (the pages given twice): every block, then
every block again in the folder its first run left. The second run of a block
is its code again in a fresh namespace, so only what its first run wrote can
tell them apart, as for a reader who pastes it again; one session rather than
two saved the second start of the interpreter and of torch, MuJoCo,
matplotlib and Gymnasium (a third of the test's time on the 2-core machine).
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from crash_helpers import child_env
from where import ROOT

pytest.importorskip("pytest_markdown_docs", reason="pip install pytest-markdown-docs (the test extra)")


#: The pages whose blocks a reader pastes: the README and the site's hand-written pages.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.gl
def test_every_readme_python_block_runs_alone_twice(tmp_path):
    blocks = [b for page in PAGES for b in re.findall(r"^```python", page.read_text(), flags=re.M)]
    env = child_env(ROOT / "tests", GLREC_README_DIR=str(tmp_path))
    # --keep-duplicates: the pages twice are every block twice, the first runs before the second ones
    # (readme_blocks makes a UserWarning of a first run an error, and names the run of a failure).
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--markdown-docs", "-p", "readme_blocks", "-p", "no:cacheprovider",
         "-q", "-rs", "--rootdir", str(tmp_path), "--keep-duplicates", *map(str, PAGES), *map(str, PAGES)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    tail = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    passed = int(re.search(r"(\d+) passed", done.stdout).group(1))  # type: ignore[union-attr]
    skipped = re.search(r"(\d+) skipped", done.stdout)
    assert passed + (int(skipped.group(1)) if skipped else 0) == 2 * len(blocks), tail
    for line in done.stdout.splitlines():  # every skip says why
        if line.startswith("SKIPPED"):
            assert re.search(r"needs .+", line), line


def test_readme_python_blocks_define_their_own_inputs():
    """A fence's fixture words are invisible on a rendered page: only skips may be asked for, never inputs."""
    fences = [f for page in PAGES for f in re.findall(r"^```python(.*)$", page.read_text(), flags=re.M)]
    words = {w for fence in fences for w in re.findall(r"fixture:(\w+)", fence)}
    assert words <= {"needs_nvidia", "needs_ray_cluster"}, sorted(words)


#: The commands that write what their -o names, and the flags that let them run again over it.
_WRITERS = {"record", "transcode", "dataset", "dataset-preview"}
_AGAIN = {"-y", "--overwrite", "--resume"}


def _shell_commands(page: Path) -> list[list[str]]:
    """Every glrec command in a page's ```bash blocks, as words (comments and other commands left out)."""
    text = page.read_text()
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["glrec"]:
                    out.append(words)
    return out


def test_readme_shell_commands_run_top_to_bottom_twice():
    """Each page pasted top to bottom, twice: no command refuses what an earlier one (or its own last run) wrote."""
    pages = {page: [w for w in _shell_commands(page) if _writes(w)] for page in PAGES}
    assert sum(map(len, pages.values())) >= 10, pages  # the blocks were found
    for commands in pages.values():
        _pasted_twice(commands)


def _writes(words: list[str]) -> bool:
    return len(words) > 1 and words[1] in _WRITERS and not {"-h", "--help"} & set(words)


def _pasted_twice(commands: list[list[str]]) -> None:
    made: dict[str, str] = {}
    for words in commands:
        line = " ".join(words)
        assert _AGAIN & set(words), f"runs once only (no -y): {line}"
        output = words[words.index("-o") + 1].rstrip("/")
        if "--resume" not in words:  # --resume goes on with the folder an earlier line made, by design
            assert output not in made, f"{line} replaces what {made[output]} made"
            made[output] = line
