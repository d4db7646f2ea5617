"""What a finished batch recording holds: its files per env, frame counts, what backpressure dropped or repeated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BatchVideo:
    """One file a batch recording wrote: env ``env``'s episode (or clip), or the grid (``env`` None);
    ``part`` numbers an episode's files cut by ``segment_seconds``."""

    env: int | None
    episode: int | None
    path: Path
    frames: int
    bytes: int
    part: int = 0


@dataclass(frozen=True)
class BatchResult:
    """What :meth:`glrec.BatchRecorder.close` returns.

    ``dropped[i]`` / ``repeated[i]``: env i's frames the encoder fell too far behind to take
    (backpressure ``drop``: not encoded; ``repeat``: the previous picture encoded in their place).
    ``ring_bytes_peak``: the most encoded bytes one env's ring held (clips; 0 without a ring).
    """

    videos: tuple[BatchVideo, ...]
    layout: str
    envs: int
    steps: int
    frames: int  # env-frames written to the recorder (active envs, every step)
    dropped: tuple[int, ...]
    repeated: tuple[int, ...]
    wall_seconds: float
    encoder: str
    codec: str
    ring_bytes_peak: int = 0

    @property
    def files(self) -> dict[int | None, list[Path]]:
        """The paths written, by env (None: the grid), in the order they were finished."""
        out: dict[int | None, list[Path]] = {}
        for video in self.videos:
            out.setdefault(video.env, []).append(video.path)
        return out

    @property
    def bytes(self) -> int:
        """Bytes of every file the recording wrote, in total."""
        return sum(v.bytes for v in self.videos)

    @property
    def frames_per_second(self) -> float:
        """Env-frames recorded per second of wall time (all envs together)."""
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: envs, steps, files, frames, env-frames per second, size, what backpressure dropped or repeated."""
        lost = sum(self.dropped) + sum(self.repeated)
        behind = f", {sum(self.dropped)} dropped, {sum(self.repeated)} repeated" if lost else ""
        ring = f", ring peak {self.ring_bytes_peak / 1e6:.2f} MB/env" if self.ring_bytes_peak else ""
        return (
            f"{self.envs} envs x {self.steps} steps ({self.layout}): {len(self.videos)} files, {self.frames} frames "
            f"in {self.wall_seconds:.2f} s = {self.frames_per_second:.1f} env-frames/s, {self.bytes / 1e6:.2f} MB, "
            f"encoder {self.encoder}{behind}{ring}"
        )
