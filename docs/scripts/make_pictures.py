"""Make the site's pictures (docs/pictures/) from real runs and from the measured results.

    PYTHONPATH=. python docs/scripts/make_pictures.py            # all of them
    PYTHONPATH=. python docs/scripts/make_pictures.py plots      # only: dataset, viewer, plots

- ``dataset``: one sample of ``examples/dataset.toml``, every pass side by side, rendered here by
  ``glrec dataset-preview`` (on Mesa llvmpipe on a CPU-only machine; the passes are the same bytes
  on a GPU);
- ``viewer``: the browser viewer, ``glrec serve cube`` shown in headless Chromium (Debian's
  ``chromium``, driven through ``tests/cdp.py``), after a drag has turned the cube;
- ``plots``: matplotlib plots of the JSON in ``benchmarks/results/``, each naming its machine.

The two older pictures (``transcode-before-after.png``, made by ``glrec record ... --overlay``, and
``process-torch-h200.png``, a frame of ``examples/process_torch.py`` on the H200) are kept as made;
their captions say how. Pictures are written as 8-bit palette PNGs where that keeps them small.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "pictures"
RESULTS = ROOT / "benchmarks" / "results"


def dataset() -> None:
    subprocess.run([sys.executable, "-m", "glrec", "dataset-preview", str(ROOT / "examples" / "dataset.toml"),
                    "-o", str(OUT / "dataset-sample.png"), "--index", "2", "-y"], check=True)  # fmt: skip


def viewer() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from cdp import Browser, chromium_path

    exe = chromium_path()
    if exe is None:
        raise SystemExit("viewer: needs Debian's chromium (apt-get install chromium)")
    server = subprocess.Popen(
        [sys.executable, "-m", "glrec", "serve", "cube", "--port", "0", "--size", "640x360", "--fps", "30",
         "--seconds", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "glrec: open http://127.0.0.1:PORT/ in a browser ..."
        url = line.split("open ", 1)[1].split()[0]
        with Browser(exe) as browser:
            browser.call("Emulation.setDeviceMetricsOverride", session=True, width=800, height=520,
                         deviceScaleFactor=1, mobile=False)  # fmt: skip
            browser.goto(url)
            browser.wait_for("window.glrecViewer && window.glrecViewer.stats().frames >= 60", timeout=60)
            for kind, x in (("mousePressed", 300), ("mouseMoved", 380), ("mouseMoved", 460), ("mouseReleased", 460)):
                browser.mouse(kind, x, 220, buttons=1 if kind != "mouseReleased" else 0)
                time.sleep(0.2)
            time.sleep(2)  # the latency figures settle
            shot = browser.call("Page.captureScreenshot", session=True, format="png")
        (OUT / "viewer.png").write_bytes(base64.b64decode(shot["data"]))
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    _small(OUT / "viewer.png")


def _small(path: Path) -> None:
    """Quantise a screenshot or plot to a 256-colour palette: a fraction of the bytes, no visible change."""
    from PIL import Image

    Image.open(path).convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)


def plots() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # 1. The H200's GPU path: where one recording stops (benchmarks/gpu_ceiling.py).
    ceiling = json.loads((RESULTS / "2026-12-02_nvidia-h200_gpu-ceiling.json").read_text())
    fps = {k: v["fps"] for k, v in ceiling["variants"].items() if v.get("status") == "ok"}
    serial = 1 / (1 / fps["gl:shared"] + 1 / fps["nvjpeg:b1"])
    rows = [
        ("GL alone (render, pack, shared handoff)", fps["gl:shared"]),
        ("nvJPEG alone (frames in CUDA memory)", fps["nvjpeg:b1"]),
        ("one after the other (serial bound)", serial),
        ("one thread: 32 frames GL, then 32 nvJPEG", fps["nvjpeg:gl-turns32"]),
        ("nvJPEG while another thread renders GL", fps["nvjpeg:gl-busy"]),
        ("the Recorder, nvJPEG to .mkv", fps["pipe:recorder"]),
        ("4 Recorders in 4 processes (total)", fps["procs:4x-recorder"]),
    ]
    fig, ax = plt.subplots(figsize=(8, 3.4), dpi=100)
    ax.barh([r[0] for r in rows][::-1], [r[1] for r in rows][::-1], color="#3f51b5")
    for y, (_, v) in enumerate(rows[::-1]):
        ax.text(v + 40, y, f"{v:,.0f}", va="center", fontsize=8)
    ax.set_xlabel("frames/s, 1920x1080 plasma")
    fig.suptitle("NVIDIA H200 (driver 580.159, 16 cores), 2026-12-02: benchmarks/gpu_ceiling.py", fontsize=9)
    ax.set_xlim(0, max(r[1] for r in rows) * 1.15)
    fig.tight_layout()
    fig.savefig(OUT / "perf-h200-gpu-path.png")
    plt.close(fig)
    _small(OUT / "perf-h200-gpu-path.png")

    # 2. Datasets on every core of the H200 machine (benchmarks/dataset_workers.py, two runs).
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    for name, marker in (("1-2-4-8", "o"), ("1-4-16", "s")):
        run = json.loads((RESULTS / f"2026-12-02_nvidia-h200_dataset-workers-{name}.json").read_text())
        points = sorted((v["workers"], v["samples_per_s"]) for k, v in run["summary"].items() if k.startswith("png"))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=f"run with {name} workers")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_xlabel("local workers (glrec dataset --workers N)")
    ax.set_ylabel("samples/s (PNG colour)")
    ax.set_title("examples/dataset.toml, 800 samples: NVIDIA H200 machine, 16 cores, 2026-12-02", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT / "perf-h200-dataset-workers.png")
    plt.close(fig)
    _small(OUT / "perf-h200-dataset-workers.png")

    # 3. Vectorised environments on the 2-core machine: speed and memory (benchmarks/vector_record.py).
    vec = json.loads((RESULTS / "2026-12-02_2c_vector-record-2core.json").read_text())["rows"]
    names = {"lists-imageio": "per-env lists, imageio at the end", "lists-moviepy": "per-env lists, moviepy",
             "tile-imageio": "CPU tiling, one imageio writer", "glrec-files": "BatchRecorder, a file per env",
             "glrec-grid": "BatchRecorder, the grid"}  # fmt: skip
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4), dpi=100)
    left.barh(list(names.values())[::-1], [vec[k]["env_frames_per_s"] for k in names][::-1], color="#3f51b5")
    left.set_xlabel("env-frames/s (16 CartPole envs, 600x400)")
    for key, label in (("lists-imageio", "per-env lists (300 steps)"), ("glrec-long", "BatchRecorder (10,000 steps)")):
        samples = vec[key]["rss_samples"]
        right.plot([s[0] for s in samples], [s[1] for s in samples], label=label)
    right.set_xscale("symlog", linthresh=100)
    right.set_xlabel("step")
    right.set_ylabel("RSS, MB")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle("2-core development machine (AMD EPYC, Mesa llvmpipe), 2026-12-02: benchmarks/vector_record.py",
                 fontsize=9)  # fmt: skip
    fig.tight_layout()
    fig.savefig(OUT / "perf-2core-vector-record.png")
    plt.close(fig)
    _small(OUT / "perf-2core-vector-record.png")


if __name__ == "__main__":
    which = sys.argv[1:] or ["dataset", "viewer", "plots"]
    for name in which:
        {"dataset": dataset, "viewer": viewer, "plots": plots}[name]()
        print(f"made {name}")
