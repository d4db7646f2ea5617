"""The examples run and produce decodable files."""

import os
import subprocess
import sys

import av
from where import EXAMPLES

import glrec


def test_user_scene_example(gl, tmp_path):
    glrec.record(f"{EXAMPLES / 'my_scene.py'}:Spiral", tmp_path / "s.mp4", size=(160, 90), fps=30, frames=5)
    glrec.record(str(EXAMPLES / "rings.glsl"), tmp_path / "r.mp4", size=(160, 90), fps=30, frames=5)
    for name in ("s.mp4", "r.mp4"):
        with av.open(str(tmp_path / name)) as c:
            assert sum(1 for _ in c.decode(video=0)) == 5


def test_script_examples(gl, tmp_path):
    for script, out in (("record_cube.py", "cube.mp4"), ("own_gl_drawing.py", "own.mp4")):
        args = [sys.executable, str(EXAMPLES / script)] + ([str(tmp_path / out)] if script == "record_cube.py" else [])
        # The checkout's glrec, whether or not it is installed.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        with av.open(str(tmp_path / out)) as c:
            assert sum(1 for _ in c.decode(video=0)) == 90
