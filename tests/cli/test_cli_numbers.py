"""Numbers the command line cannot use end in one line and exit status 2, never a traceback.

Found by fuzzing ``glrec record`` (issue 13, item 9). The option layer refuses
them; these tests run the real command in a child process and read what a
user would see.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from crash_helpers import child_env


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--bitrate", "inf"], "bitrate"),
        (["--seconds", "inf"], "seconds"),
        (["--fps", "nan"], "fps"),
        (["--fps", "1e-4", "--frames", "3"], "fps"),
    ],
)
def test_a_number_that_cannot_work_is_one_line_and_status_2(tmp_path, flags, words):
    out = tmp_path / "n.mp4"
    proc = subprocess.run(
        [sys.executable, "-m", "glrec", "record", "bars", "-o", str(out), "--size", "64x48", *flags],
        capture_output=True, text=True, env=child_env(), timeout=120,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert lines and "error:" in lines[-1] and words in lines[-1], lines
    # argparse may print its usage line above the error; glrec's own refusals are the one line alone
    assert len([line for line in lines if not line.startswith("usage:") and not line.startswith(" ")]) == 1, lines
    assert not out.exists()
