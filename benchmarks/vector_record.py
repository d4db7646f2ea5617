"""Recording vectorised environments: glrec.BatchRecorder against the loops users write today, side by side.

    PYTHONPATH=. python benchmarks/vector_record.py                       # the 2-core goal (CartPole, see below)
    PYTHONPATH=. python benchmarks/vector_record.py --preset h200         # the GPU goals (torch CUDA batches)
    PYTHONPATH=. python benchmarks/vector_record.py --steps 200 --long 0  # a quick look

Each row runs in a fresh process (its memory its own), one after the other, and records the same
simulator: ``--envs`` envs stepped together, every env's frame recorded every step.

preset ``2core`` (default): Gymnasium ``SyncVectorEnv`` of CartPole-v1 at 600x400 (pygame renders on the CPU),
a balancing policy with a little noise:
  render         step + render only: the simulator's own cost, no recording
  lists-imageio  the loop users write: per-env lists of frames, each list written with imageio (libx264) at
                 the end (what Isaac Lab's recorder and Gymnasium's RecordVideo do, one file per env)
  lists-imageio-same  the same with glrec's x264 settings (preset veryfast, crf 20, no resize to a multiple
                 of 16): the loop's cost with the encoder's share equal to glrec's
  lists-moviepy  the same, written with moviepy's ImageSequenceClip (Gymnasium's wrapper's writer)
  tile-imageio   tiling on the CPU each step, one imageio writer for the grid (ManiSkill's way)
  glrec-files    glrec.BatchRecorder: one file per env, encoded as frames come on a pool of threads
  glrec-grid     glrec.BatchRecorder(layout="grid"): the grid, one stream
  glrec-long     glrec-files over --long steps (default 10,000), memory sampled as it goes
preset ``h200``: a torch CUDA batch (--envs 64 x 256x256 by default) changed on the GPU each step:
  gl-jpeg-files  64 MJPEG files, the GL JPEG route (one upload, one dispatch per pass for all N)
  nvjpeg-files   64 MJPEG files, nvImageCodec (all N in one call)
  grid-nvjpeg    the 8x8 grid (2048x2048) into one MJPEG video, tiled on the GPU
  cpu-h264       64 H.264 files through the CPU encoders on the machine's cores
  x264-alone     libx264 alone on the same cores (PyAV, one encoder per env on a thread each, the same pictures as
                 cpu-h264 already in host memory as YUV, converted beforehand): the ceiling cpu-h264 is measured against
  gl-jpeg-long   the GL JPEG route over --long steps into each env's ring of 10 s of JPEGs (clips mode with
                 nothing kept: 100,000 steps of 64 files would not fit on the disk), memory sampled

The table at the end: env-frames/s (all envs together), the speed-up over the first baseline, peak RSS and the
RSS growth over the run (MB per 1,000 steps). JSON goes to --json, or $OUT/vector_record.json when $OUT is set,
and with --save to benchmarks/results/DATE_MACHINE_vector-record.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import write_results

ROWS = {
    "2core": [
        "render",
        "lists-imageio",
        "lists-imageio-same",
        "lists-moviepy",
        "tile-imageio",
        "glrec-files",
        "glrec-grid",
        "glrec-long",
    ],
    "h200": ["gl-jpeg-files", "nvjpeg-files", "grid-nvjpeg", "cpu-h264", "x264-alone", "gl-jpeg-long"],
}


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Samples:
    """RSS every ``every`` steps: peak, and growth per 1,000 steps fitted over the run's second half."""

    def __init__(self, every: int) -> None:
        self.every, self.points = max(1, every), []  # type: list[tuple[int, float]]

    def at(self, step: int) -> None:
        if step % self.every == 0:
            self.points.append((step, rss_mb()))

    def summary(self) -> dict[str, Any]:
        if len(self.points) < 2:
            return {"rss_samples": self.points}
        half = self.points[len(self.points) // 2 :]
        (s0, m0), (s1, m1) = half[0], half[-1]
        growth = (m1 - m0) / (s1 - s0) * 1000 if s1 > s0 else 0.0
        return {"rss_samples": self.points, "rss_growth_mb_per_1k_steps": round(growth, 2),
                "rss_peak_mb": round(max(m for _, m in self.points), 1)}  # fmt: skip


# -- the 2-core rows: CartPole


def cartpoles(n: int) -> Any:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1", render_mode="rgb_array") for _ in range(n)])
    return envs


def policy(obs: Any, rng: Any) -> Any:
    """Balance the pole (long episodes, as a trained agent's), with a little noise so envs differ."""
    return ((obs[:, 2] + 0.5 * obs[:, 3] + rng.normal(0, 0.02, len(obs))) > 0).astype(int)


def cartpole_row(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import numpy as np

    n, steps = args.envs, (args.long if name == "glrec-long" else args.steps)
    envs = cartpoles(n)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    samples = Samples(max(1, steps // 50))
    lists: list[list[Any]] = [[] for _ in range(n)]
    writer: Any = None
    rec: Any = None
    if name.startswith("glrec"):
        import glrec

        layout = "grid" if name == "glrec-grid" else "files"
        path = out / ("grid.mp4" if layout == "grid" else "env{env:02d}.mp4")
        rec = glrec.BatchRecorder(str(path), fps=50, layout=layout)
    elif name == "tile-imageio":
        import imageio.v2 as imageio

        writer = imageio.get_writer(str(out / "grid.mp4"), fps=50)
    t0 = time.perf_counter()
    for step in range(steps):
        obs, *_ = envs.step(policy(obs, rng))
        frames = envs.render()
        if rec is not None:
            rec.write(frames)
        elif name.startswith("lists"):
            for i, frame in enumerate(frames):
                lists[i].append(frame)
        elif writer is not None:
            k = int(np.ceil(np.sqrt(n)))
            h, w, c = frames[0].shape
            grid = np.zeros((-(-n // k) * h, k * w, c), np.uint8)
            for i, frame in enumerate(frames):
                r, col = divmod(i, k)
                grid[r * h : (r + 1) * h, col * w : (col + 1) * w] = frame
            writer.append_data(grid)
        samples.at(step)
    peak_before_write = rss_mb()
    if rec is not None:
        result = rec.close()
        extra = {"summary": result.summary(), "files": len(result.videos)}
    elif name.startswith("lists-imageio"):
        import imageio.v2 as imageio

        same = {"macro_block_size": 1, "quality": None, "ffmpeg_params": ["-preset", "veryfast", "-crf", "20"]}
        for i, frames in enumerate(lists):
            imageio.mimwrite(str(out / f"env{i:02d}.mp4"), frames, fps=50, **(same if name.endswith("same") else {}))
        extra = {"files": n}
    elif name == "lists-moviepy":
        from moviepy import ImageSequenceClip

        for i, frames in enumerate(lists):
            ImageSequenceClip(frames, fps=50).write_videofile(str(out / f"env{i:02d}.mp4"), logger=None)
        extra = {"files": n}
    elif writer is not None:
        writer.close()
        extra = {"files": 1}
    else:
        extra = {"files": 0}
    wall = time.perf_counter() - t0
    envs.close()
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    rate = round(n * steps / wall, 1)
    return {"steps": steps, "envs": n, "wall_s": round(wall, 2), "env_frames_per_s": rate,
            "rss_before_writing_mb": round(peak_before_write, 1), "bytes": size,
            **samples.summary(), **extra}  # fmt: skip


# -- the H200 rows: a torch CUDA batch


def cuda_batches(n: int, size: int) -> Any:
    import torch

    # Blocks of 16x16 pixels, as a rendered scene compresses (noise would make 100 kB JPEGs and fill the disk).
    coarse = torch.randint(0, 200, (n, size // 16, size // 16, 3), dtype=torch.uint8, device="cuda")
    base = coarse.repeat_interleave(16, dim=1).repeat_interleave(16, dim=2)
    ramp = (torch.arange(size, device="cuda") % 256).to(torch.uint8).view(1, 1, size, 1)

    def at(step: int) -> Any:  # a cheap "render" on the GPU: the picture scrolls, each env differs
        return torch.roll(base, shifts=step % size, dims=2) // 2 + ramp // 2

    return at


def gpu_row(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import glrec

    n, size = args.envs, args.size
    steps = args.long if name.endswith("-long") else args.steps
    render = cuda_batches(n, size)
    samples = Samples(max(1, steps // 50))
    if name == "x264-alone":
        return x264_alone(args, render)
    kw: dict[str, Any] = {"fps": 60}
    if name.endswith("-long"):  # into each env's ring of 10 s, nothing written: 100,000 steps would fill the disk
        kw.update(ring_seconds=10)
    if name.startswith("gl-jpeg"):
        kw.update(encoder="gl", codec="mjpeg")
        path = out / "env{env:02d}.mkv"
    elif name == "nvjpeg-files":
        kw.update(encoder="nvjpeg", codec="mjpeg")
        path = out / "env{env:02d}.mkv"
    elif name == "grid-nvjpeg":
        kw.update(layout="grid", encoder="nvjpeg", codec="mjpeg")
        path = out / "grid.mkv"
    else:  # cpu-h264
        kw.update(encoder="cpu", codec="h264")
        path = out / "env{env:02d}.mp4"
    from glrec.batch import routes

    copies0 = routes.HOST_COPIES[0]
    rec = glrec.BatchRecorder(str(path), **kw)
    rec.write(render(0))  # set-up (contexts, encoders) outside the timed loop
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        rec.write(render(step))
        samples.at(step)
    result = rec.close()
    wall = time.perf_counter() - t0
    return {"steps": steps, "envs": n, "size": size, "wall_s": round(wall, 2),
            "env_frames_per_s": round(n * steps / wall, 1), "steps_per_s": round(steps / wall, 1),
            "host_copies_of_raw_frames": routes.HOST_COPIES[0] - copies0, "summary": result.summary(),
            "encoder": result.encoder, "bytes": result.bytes, **samples.summary()}  # fmt: skip


def x264_alone(args: argparse.Namespace, render: Any) -> dict[str, Any]:
    """libx264 alone: PyAV, one encoder per env, each on a thread of a pool of the cores, frames pre-converted."""
    import threading
    from fractions import Fraction

    import av

    n, size, steps = args.envs, args.size, args.steps
    # The pictures cpu-h264 encodes (step s is render(s), which repeats every `size` steps), converted beforehand.
    period = min(size, steps + 1)
    frames = []
    for step in range(period):
        host = render(step).cpu().numpy()
        frames.append(
            [av.VideoFrame.from_ndarray(host[i], format="rgb24").reformat(format="yuv420p") for i in range(n)]
        )
    cores = os.cpu_count() or 1

    def work(envs: list[int]) -> None:
        encoders = []
        for _ in envs:
            cc = av.CodecContext.create("libx264", "w")
            cc.width = cc.height = size
            cc.pix_fmt, cc.time_base, cc.framerate = "yuv420p", Fraction(1, 60), 60
            cc.thread_count = max(1, cores // n)
            cc.options = {"preset": "veryfast", "crf": "20"}
            cc.open()
            encoders.append(cc)
        for step in range(steps + 1):  # as cpu-h264: the set-up step 0, then steps 1..steps
            for cc, env in zip(encoders, envs, strict=True):
                frame = frames[step % period][env]
                frame.pts = step
                cc.encode(frame)
        for cc in encoders:
            cc.encode(None)

    threads = [threading.Thread(target=work, args=(list(range(w, n, cores)),)) for w in range(min(cores, n))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"steps": steps, "envs": n, "size": size, "wall_s": round(wall, 2),
            "env_frames_per_s": round(n * (steps + 1) / wall, 1), "threads": len(threads)}  # fmt: skip


def run_row(name: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"vector-{name}-") as folder:
        out = Path(folder)
        row = cartpole_row(name, args, out) if args.preset == "2core" else gpu_row(name, args, out)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(ROWS), default="2core")
    parser.add_argument("--envs", type=int, default=None, help="envs (2core: 16, h200: 64)")
    parser.add_argument("--size", type=int, default=256, help="h200: each env's frame is SIZE x SIZE")
    parser.add_argument("--steps", type=int, default=None, help="steps of each row (2core: 300, h200: 2000)")
    parser.add_argument("--long", type=int, default=None, help="steps of the long row (2core: 10000, h200: 100000)")
    parser.add_argument("--rows", default=None, help="comma-separated rows to run (default: the preset's)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--save", action="store_true", help="also write benchmarks/results/DATE_MACHINE_...json")
    parser.add_argument("--row", default=None, help=argparse.SUPPRESS)  # internal: run one row, print its JSON
    args = parser.parse_args()
    gpu = args.preset == "h200"
    args.envs = args.envs or (64 if gpu else 16)
    args.steps = args.steps or (2000 if gpu else 300)
    args.long = args.long if args.long is not None else (100_000 if gpu else 10_000)
    if args.row:
        print(json.dumps(run_row(args.row, args)))
        return
    rows = args.rows.split(",") if args.rows else ROWS[args.preset]
    if not args.long:
        rows = [r for r in rows if not r.endswith("-long")]
    results: dict[str, Any] = {}
    for name in rows:
        cmd = [sys.executable, __file__, "--preset", args.preset, "--envs", str(args.envs), "--size", str(args.size),
               "--steps", str(args.steps), "--long", str(args.long), "--row", name]  # fmt: skip
        print(f"-- {name} ...", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            results[name] = {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output"}
        else:
            results[name] = json.loads(lines[-1])
        brief = {k: v for k, v in results[name].items() if k != "rss_samples"}
        print(f"   {brief}", flush=True)
    from glrec.bench.system import machine

    doc = {"benchmark": "vector_record", "preset": args.preset, "date": dt.date.today().isoformat(),
           "machine": machine(), "args": {k: v for k, v in vars(args).items() if k not in ("json", "row")},
           "rows": results}  # fmt: skip
    print(table(results, gpu))
    write_results(doc, args.json, "vector_record.json")
    if args.save:
        slug = "h200" if gpu else f"{os.cpu_count()}c"
        path = Path(__file__).parent / "results" / f"{doc['date']}_{slug}_vector-record-{args.preset}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"saved: {path}")


def table(rows: dict[str, Any], gpu: bool) -> str:
    base_name = "gl-jpeg-files" if gpu else "lists-imageio"
    base = rows.get(base_name, {}).get("env_frames_per_s")
    lines = [f"{'row':<15} {'steps':>7} {'env-frames/s':>13} {'vs ' + base_name:>19} {'peak RSS MB':>12} "
             f"{'RSS MB/1k steps':>16}"]  # fmt: skip
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"{name:<15} error: {r['error']}")
            continue
        rate = r.get("env_frames_per_s", 0.0)
        ratio = f"{rate / base:.2f}x" if base else "-"
        peak = r.get("rss_peak_mb", r.get("rss_before_writing_mb", "-"))
        growth = r.get("rss_growth_mb_per_1k_steps", "-")
        lines.append(f"{name:<15} {r.get('steps', '-'):>7} {rate:>13} {ratio:>19} {peak!s:>12} {growth!s:>16}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
