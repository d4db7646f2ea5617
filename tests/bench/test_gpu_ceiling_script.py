"""benchmarks/gpu_ceiling.py, checked where it cannot run (no GPU): its variants name real runners and arguments.

The script itself runs on the lent H200 (see the README's Performance section); a typo
there would cost a device run, so every variant's runner and keyword arguments are
bound against the runner's signature here.
"""

import importlib.util
import inspect
import subprocess
import sys

from where import BENCHMARKS

SCRIPT = BENCHMARKS / "gpu_ceiling.py"


def load():
    spec = importlib.util.spec_from_file_location("gpu_ceiling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_variant_binds_to_its_runner():
    m = load()
    assert len(m.VARIANTS) >= 20
    for name, (what, runner, kwargs) in m.VARIANTS.items():
        fn = getattr(m, runner)
        inspect.signature(fn).bind(object(), **kwargs)  # raises on an unknown or missing argument
        assert what, name
        if runner == "processes":
            assert kwargs["inner"] in m.VARIANTS and m.VARIANTS[kwargs["inner"]][1] != "processes"
    # the summary needs these three
    assert {"gl:shared", "nvjpeg:b1", "pipe:recorder"} <= set(m.VARIANTS)


def test_list_and_unknown_variant_exit_codes():
    out = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True, check=True).stdout
    assert "pipe:phased-b8" in out and "nvjpeg:no-copy" in out
    bad = subprocess.run([sys.executable, str(SCRIPT), "--only", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown variant" in bad.stderr


def test_summary_states_the_serial_bound():
    m = load()
    results = {
        "gl:shared": {"status": "ok", "fps": 3000.0},
        "nvjpeg:b1": {"status": "ok", "fps": 6000.0},
        "pipe:recorder": {"status": "ok", "fps": 1000.0},
        "pipe:phased-b8": {"status": "ok", "fps": 1800.0},
    }
    lines = m._summary(results)
    assert "one after the other 2000 fps" in lines[0]
    assert "0.50 of the serial bound" in lines[1]
    assert lines[2].startswith("fastest chain: pipe:phased-b8 1800 fps")
