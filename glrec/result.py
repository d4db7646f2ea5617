"""What a finished recording holds: the value every recording verb returns (a ground type)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RecordResult:
    """What a finished recording holds."""

    path: Path
    frames: int
    seconds: float  # duration of the video
    wall_seconds: float  # time the recording took
    bytes: int
    encoder: str
    codec: str = ""  # h264, hevc, av1, mjpeg ("" where not known)
    #: What the summary should say beyond the numbers (damaged input skipped), one phrase each.
    notes: tuple[str, ...] = ()
    #: Why ``encoder="auto"`` passed over the encoders it tried before this one, in a few words ("no NVIDIA
    #: GPU"; "" when it did not): what the summary says.
    fallback: str = ""
    #: The same reasons in full, one each (the driver's words, each encoder's refusal).
    fallback_reasons: tuple[str, ...] = ()

    @property
    def fps_achieved(self) -> float:
        """Frames recorded per second of wall-clock time (0 for an instant recording)."""
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def bitrate(self) -> float:
        """Average bits per second of video."""
        return self.bytes * 8 / self.seconds if self.seconds > 0 else 0.0

    def _repr_html_(self) -> str:
        """The video inline in Jupyter: embedded when small, linked when large (see :mod:`glrec._notebook`)."""
        from ._notebook import video_html

        return video_html(self)

    def summary(self) -> str:
        """The one line the CLI prints at the end.

        Path, frames, video length, speed, size, bitrate, the encoder (and why ``auto`` passed one over), notes.
        """
        return (
            f"{self.path}: {self.frames} frames ({self.seconds:.2f} s of video) in {self.wall_seconds:.2f} s "
            f"= {self.fps_achieved:.1f} fps, {self.bytes / 1e6:.2f} MB, {self.bitrate / 1e6:.2f} Mbit/s, "
            f"encoder {self.encoder}"
            + (f" ({self.fallback})" if self.fallback else "")
            + "".join(f"; {note}" for note in self.notes)
        )
