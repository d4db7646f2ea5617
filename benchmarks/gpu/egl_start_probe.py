"""How long a fresh process takes to get a GL context from glrec, alone and with N started at once, per step.

Each process imports ``glrec.gl.context`` (timed), then calls ``create_context()`` with its steps timed: choosing
and initialising the EGL display (``egl._display``), the rest of ``egl.create_headless`` (config, context), and
the rest (made current, moderngl's functions loaded), then draws one clear of 640x480 and reads a pixel back.
``--trees`` runs the same from other source trees (``.before``: the tree sent along as the base), alternating
ABBA per process count, so a change to any step is measured beside its base in one run. Prints per tree and
count the median and the slowest process of each step, in milliseconds.

    python benchmarks/gpu/egl_start_probe.py --procs 1,16 --rounds 2 --trees .,.before --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
t0 = float(sys.argv[1])
while time.time() < t0:  # every process starts its steps at once
    time.sleep(0.0005)
a = time.perf_counter()
from glrec.gl import context, egl
b = time.perf_counter()
steps = {"import": b - a}
def timed(name, fn):
    def wrapper(*args, **kwargs):
        s = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            steps[name] = steps.get(name, 0.0) + time.perf_counter() - s
    return wrapper
egl._display = timed("display", egl._display)
egl.create_headless = timed("headless", egl.create_headless)
c = time.perf_counter()
gl = context.create_context()
d = time.perf_counter()
with gl.active():
    fbo = gl.mgl.simple_framebuffer((640, 480))
    fbo.use()
    gl.mgl.clear(0.2, 0.4, 0.6, 1.0)
    pixel = fbo.read(viewport=(0, 0, 1, 1))
e = time.perf_counter()
steps["headless"] -= steps["display"]  # the rest of create_headless: config and context
steps["current_and_wrap"] = (d - c) - steps["headless"] - steps["display"]
steps["first_draw"] = e - d
steps["total"] = e - a
print(json.dumps({"steps": steps, "how": gl._headless.how, "pixel": list(pixel)}))
gl.release()
"""


def one(tree: Path, procs: int) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree.resolve()), os.environ.get("PYTHONPATH", "")])}
    start = time.time() + 0.5 + 0.05 * procs  # after every interpreter is up
    kids = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(start)], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(procs)
    ]
    out = []
    for kid in kids:
        text, _ = kid.communicate(timeout=120)
        out.append(json.loads(text.strip().splitlines()[-1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", default="1,16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--trees", default=".")
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = [Path(t) for t in args.trees.split(",")]
    results: dict[str, list[dict]] = {}
    for n in [int(p) for p in args.procs.split(",")]:
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                key = f"{tree} procs={n}"
                results.setdefault(key, []).extend(one(tree, n))
    summary = {}
    for key, runs in results.items():
        steps = {s: [r["steps"][s] * 1000 for r in runs] for s in runs[0]["steps"]}
        summary[key] = {s: {"median_ms": statistics.median(v), "max_ms": max(v)} for s, v in steps.items()}
        summary[key]["how"] = sorted({r["how"] for r in runs})
        line = "  ".join(f"{s} {v['median_ms']:.0f}/{v['max_ms']:.0f}" for s, v in summary[key].items() if s != "how")
        print(f"{key}: {line} ms (median/max; {summary[key]['how']})")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
