"""Per-step cost of recording Gymnasium episodes: glrec.gym.RecordVideo against gymnasium.wrappers.RecordVideo.

    PYTHONPATH=. python benchmarks/gym_overhead.py --env CartPole-v1 --steps 500 --episodes 2 --repeat 3
    MUJOCO_GL=egl PYTHONPATH=. python benchmarks/gym_overhead.py --env HalfCheetah-v5 --steps 200 --repeat 3

Rows (each in a fresh process, interleaved, the median of --repeat runs kept), on the same seeded episodes
(a balancing policy keeps CartPole's pole up, so every episode is --steps long; other envs take seeded
random actions, and HalfCheetah's episodes run to the step limit):
  bare          env.step() only
  render        env.step() + env.render() each step: the frames both wrappers need, without recording them
  gymnasium     Gymnasium's RecordVideo recording every episode (frames kept in a list, moviepy encodes at reset)
  glrec-render  glrec.gym.RecordVideo(fast_path=False): each env.render() frame written to a Recorder as it comes
  glrec         glrec.gym.RecordVideo as it comes: for a MuJoCo env, frames recorded from MuJoCo's framebuffer
                (glrec.gym.mujoco); for others the same as glrec-render
--width/--height set a MuJoCo env's render size (its default is 480x480).
Per-step overhead = (row seconds - bare seconds) / steps, everything included up to env.close() (the last
video finished). Peak RSS shows what each wrapper holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from glrec.bench import runner
from glrec.bench.meter import LoopMeter, peak_rss_mb
from glrec.bench.spec import RowSpec, row
from glrec.bench.system import machine


def _episodes(env: Any, spec: RowSpec, render: bool) -> int:
    steps = 0
    cartpole = spec.scene.startswith("CartPole")
    env.action_space.seed(0)
    for episode in range(int(spec.options.get("episodes", 2))):
        obs, _ = env.reset(seed=episode)
        if render:
            env.render()
        done = False
        while not done:
            action = int(obs[2] + 0.5 * obs[3] > 0) if cartpole else env.action_space.sample()  # CartPole balances
            obs, _, terminated, truncated, _ = env.step(action)
            if render:
                env.render()
            steps += 1
            done = terminated or truncated
    env.close()
    return steps


def _row(spec: RowSpec, wrap: str) -> dict[str, Any]:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import gymnasium as gym

    size = spec.options.get("render_size")
    extra = {"width": size[0], "height": size[1]} if size else {}
    env = gym.make(spec.scene, render_mode="rgb_array", max_episode_steps=spec.frames, **extra)
    folder = str(Path(spec.workdir) / f"{wrap}{spec.tag}")
    if wrap == "gymnasium":
        env = gym.wrappers.RecordVideo(env, folder, episode_trigger=lambda e: True)
    elif wrap.startswith("glrec"):
        import glrec.gym

        env = glrec.gym.RecordVideo(env, folder, episode_trigger=lambda e: True, fast_path=wrap == "glrec")
    meter = LoopMeter()
    meter.start()
    steps = _episodes(env, spec, render=wrap == "render")
    meter.stop()
    files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return {"row": spec.row, "steps": steps, "seconds": meter.seconds, "cpu_seconds": meter.cpu,
            "peak_rss_mb": peak_rss_mb()[0], "files": files}  # fmt: skip


WRAPS = ("bare", "render", "gymnasium", "glrec-render", "glrec")
for _wrap in WRAPS:
    row(f"gym:{_wrap}")(lambda spec, w=_wrap: _row(spec, w))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--steps", type=int, default=500, help="steps per episode")
    p.add_argument("--episodes", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--width", type=int, help="a MuJoCo env's render width (with --height)")
    p.add_argument("--height", type=int)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    runner.ROW_MODULES.append("gym_overhead")
    names = [f"gym:{w}" for w in WRAPS]
    size = [args.width, args.height] if args.width and args.height else None
    seconds: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    peaks: dict[str, list[float]] = {n: [] for n in names}
    result: dict[str, Any] = {"machine": machine(), "load_before": os.getloadavg(), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for n in names:
                spec = RowSpec(n, scene=args.env, frames=args.steps, workdir=tmp, tag=f"_{r}",
                               options={"episodes": args.episodes, "render_size": size})  # fmt: skip
                out = runner.run_isolated(spec)
                if out["status"] != "ok":
                    print(f"{n}: {out['status']}: {out.get('reason')}", file=sys.stderr)
                    return 1
                result["rows"].append(out)
                seconds[n].append(out["seconds"] / out["steps"])
                cpu[n].append(out["cpu_seconds"] / out["steps"])
                peaks[n].append(out["peak_rss_mb"])
    bare = statistics.median(seconds["gym:bare"])
    overhead = {n: statistics.median(seconds[n]) - bare for n in names}
    # CPU time per step as well: on a machine shared with other work it moves far less than the wall clock.
    cpu_overhead = {n: statistics.median(cpu[n]) - statistics.median(cpu["gym:bare"]) for n in names}
    for n in names:
        print(f"{n:16} {1e3 * statistics.median(seconds[n]):7.2f} ms/step  overhead {1e3 * overhead[n]:7.2f} ms/step"
              f"  CPU overhead {1e3 * cpu_overhead[n]:7.2f} ms/step"
              f"  peak RSS {statistics.median(peaks[n]):6.0f} MB")  # fmt: skip
    ratio = overhead["gym:gymnasium"] / overhead["gym:glrec"]
    ratio_render = overhead["gym:gymnasium"] / overhead["gym:glrec-render"]
    what = f"({args.env}, {args.episodes} episodes of {args.steps} steps)"
    print(f"glrec's per-step overhead is {ratio:.2f}x lower than Gymnasium's RecordVideo {what}; "
          f"{ratio_render:.2f}x with fast_path=False")  # fmt: skip
    cpu_ratio = cpu_overhead["gym:gymnasium"] / cpu_overhead["gym:glrec"]
    print(
        f"in CPU time per step: {cpu_ratio:.2f}x lower; "
        f"{cpu_overhead['gym:gymnasium'] / cpu_overhead['gym:glrec-render']:.2f}x with fast_path=False"
    )
    result.update(overhead_ms={n: 1e3 * v for n, v in overhead.items()}, ratio=ratio, ratio_fast_path_off=ratio_render,
                  cpu_overhead_ms={n: 1e3 * v for n, v in cpu_overhead.items()}, cpu_ratio=cpu_ratio,
                  load_after=os.getloadavg())  # fmt: skip
    print(f"load average before {result['load_before'][0]:.1f}, after {result['load_after'][0]:.1f} "
          f"on {os.cpu_count()} cores (other work on the machine shares them)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
