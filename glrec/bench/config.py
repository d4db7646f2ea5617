"""What a benchmark run covers: scenes, sizes, frames, backends, baselines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..options import parse_size
from ..scenes import BUILTINS

BASELINES = ("naive-imageio", "naive-pyav")
DEFAULT_SIZES = ((1280, 720), (1920, 1080), (3840, 2160))
#: Sizes with more pixels than this use ``frames_large`` frames (4K is slow on a CPU).
LARGE_PIXELS = 1920 * 1080


@dataclass(frozen=True)
class BenchConfig:
    """A benchmark run. Defaults are the full matrix the README's figures come from.

    >>> BenchConfig.quick().sizes
    ((320, 180),)
    """

    scenes: tuple[str, ...] = ("plasma", "cube")
    sizes: tuple[tuple[int, int], ...] = DEFAULT_SIZES
    frames: int = 120
    frames_large: int = 30
    fps: float = 30.0
    preset: str = "veryfast"  # glrec's libx264 default (glrec/encoders/cpu.py)
    crf: float = 20.0  # likewise
    backends: tuple[str, ...] = ("cpu",)
    baselines: tuple[str, ...] = BASELINES
    repeat: int = 5  # runs of each compared row (baselines and glrec end to end), interleaved
    stages: bool = True  # stage-alone rows
    profile: bool = True  # the profiled glrec pass that fills the per-stage table
    memory_frames: int = 60  # memory check: N and 10N frames in fresh processes (0: off)
    memory_size: tuple[int, int] = (1280, 720)
    gl_clock: str = "auto"  # auto | query | finish
    timeout: float = 600.0  # seconds one row may take
    keep_outputs: Path | None = None  # keep the videos here (default: a temporary folder)
    processes: tuple[int, ...] = ()  # glrec-xN rows: N recordings of each backend at once, total frames/s
    dataset_workers: tuple[str, ...] = ("1", "auto")  # dataset rows: examples/dataset.toml with these workers
    dataset_samples: int = 200
    dataset_shard_size: int = 50
    quick_mode: bool = field(default=False, compare=False)

    @classmethod
    def quick(cls, **changes: Any) -> BenchConfig:
        """A run of a few seconds: one small size, few frames, one scene (the CI test uses it)."""
        base: dict[str, Any] = {
            "scenes": ("plasma",),
            "sizes": ((320, 180),),
            "frames": 10,
            "frames_large": 10,
            "repeat": 1,
            "memory_frames": 5,
            "memory_size": (320, 180),
            "dataset_workers": (),
            "dataset_samples": 8,
            "dataset_shard_size": 2,
            "quick_mode": True,
        }
        base.update(changes)
        return cls(**base).checked()

    def checked(self) -> BenchConfig:
        """Validate every field; raise ConfigError naming the value and the fix."""
        for s in self.scenes:
            if s not in BUILTINS:
                raise ConfigError(f"Unknown scene {s!r} for bench. Valid: {', '.join(sorted(BUILTINS))}.")
        for w, h in (*self.sizes, self.memory_size):
            if w <= 0 or h <= 0 or w % 2 or h % 2:
                raise ConfigError(f"bench size {w}x{h} must be positive and even, e.g. 1280x720.")
        for name, value in (("frames", self.frames), ("frames_large", self.frames_large), ("repeat", self.repeat)):
            if value < 1:
                raise ConfigError(f"{name} {value} must be at least 1.")
        for n in self.processes:
            if n < 1:
                raise ConfigError(f"--processes {n}: give counts of 1 or more, e.g. --processes 2,4.")
        for count in self.dataset_workers:
            if count != "auto" and not (count.isdigit() and int(count) >= 1):
                raise ConfigError(f"--dataset-workers {count!r}: give counts of 1 or more or auto, e.g. 1,2,auto.")
        for name, value in (("dataset samples", self.dataset_samples), ("dataset shard size", self.dataset_shard_size)):
            if value < 1:
                raise ConfigError(f"{name} {value} must be at least 1.")
        if self.memory_frames < 0:
            raise ConfigError(f"memory frames {self.memory_frames} must be 0 (off) or more.")
        for b in self.baselines:
            if b not in BASELINES:
                raise ConfigError(f"Unknown baseline {b!r}. Valid: {', '.join(BASELINES)}.")
        if self.gl_clock not in ("auto", "query", "finish"):
            raise ConfigError(f"Unknown GL stage clock {self.gl_clock!r}. Valid: auto, finish, query.")
        from .backends import BACKENDS, pick_backends

        if not self.backends:
            raise ConfigError(f"Give at least one backend: {', '.join(BACKENDS)} or all.")
        pick_backends(list(self.backends))
        return self

    def frames_for(self, size: tuple[int, int]) -> int:
        return self.frames_large if size[0] * size[1] > LARGE_PIXELS else self.frames

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["sizes"] = [f"{w}x{h}" for w, h in self.sizes]
        d["memory_size"] = "{}x{}".format(*self.memory_size)
        d["keep_outputs"] = str(self.keep_outputs) if self.keep_outputs else None
        return d


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """``"1280x720,1920x1080"`` -> ``((1280, 720), (1920, 1080))``."""
    return tuple(parse_size(s.strip()) for s in text.split(",") if s.strip())


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())
