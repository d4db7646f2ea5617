"""The typed front door: TypedDicts generated from the option declarations, kept in step, checked by mypy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from where import ROOT


def test_the_generated_typeddicts_match_the_declarations():
    """glrec/_options_typed.py is generated: python -m glrec._gen_options_typed > glrec/_options_typed.py."""
    from glrec._gen_options_typed import generate

    assert (ROOT / "glrec" / "_options_typed.py").read_text() == generate()


def test_every_declared_option_is_a_typed_keyword():
    from glrec._options_typed import RecorderOptions, TranscodeOptions, WriteVideoOptions
    from glrec.options import InputOptions, PipelineOptions, VideoOptions

    recorder = set(VideoOptions.names()) | set(PipelineOptions.names())
    assert set(RecorderOptions.__annotations__) == recorder
    assert set(WriteVideoOptions.__annotations__) == recorder - {"fps"} | {"overwrite", "sink", "sink_options"}
    assert set(TranscodeOptions.__annotations__) == recorder | set(InputOptions.names()) - {"overlay"}


SNIPPET = """
import glrec

glrec.Recorder("x.mp4", size="640x360", fps=30, codec="hevc", encoder_options={"tune": "film"}, handoff="host")
glrec.record("cube", "x.mp4", size=(64, 64), seconds=1, overwrite=True)
glrec.write_video("x.mp4", [], fps=30, quality=90, codec="mjpeg")
glrec.transcode("in.mp4", "out.mp4", overlay="vignette", loop=True, crf=20)
glrec.Recorder("x.mp4", sise=(640, 360))
glrec.record("cube", "x.mp4", fsp=30)
glrec.write_video("x.mp4", [], codec="h265")
"""


def test_mypy_refuses_a_misspelled_keyword(tmp_path):
    pytest.importorskip("mypy")
    (tmp_path / "snippet.py").write_text(SNIPPET)
    # pyproject's settings (its python_version and overrides), this checkout's glrec (MYPYPATH), one file.
    # The optional libraries glrec takes frames from or hands them to (torch, IPython, matplotlib, pyopencl)
    # are not followed: none of their types is in a signature the snippet calls, and with them (torch alone
    # is 1,400 modules) a run with an empty cache, as CI's always is, took 28 s on the 2-core machine against
    # 6.5 s without. Not followed, what they define is Any, which can only take errors away: the exact set of
    # errors asserted below still has to come from glrec's own declarations.
    config = tmp_path / "mypy.ini"
    config.write_text(
        "[mypy]\npython_version = 3.10\nignore_missing_imports = True\n"
        "[mypy-torch.*,IPython.*,matplotlib.*,pyopencl.*]\nfollow_imports = skip\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(ROOT / ".mypy_cache"), "snippet.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "MYPYPATH": str(ROOT)},
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert proc.returncode == 1, out
    assert any('Unexpected keyword argument "sise" for "Recorder"' in e for e in errors), out
    assert any('Unexpected keyword argument "fsp" for "record"' in e for e in errors), out
    assert any('"codec"' in e and "h265" in e for e in errors), out
    # the first four calls are right, and pass
    assert {int(e.split(":")[1]) for e in errors} == {8, 9, 10}, out
