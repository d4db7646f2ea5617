"""One environment's stream, on an encode worker: its encoder, its files (or its ring of GOPs), its episodes.

Everything here runs on the worker thread that owns the env, in the order the
steps were written; the recorder only queues work (:mod:`glrec.batch.pool`).

- **Files**: packets go to the env's sink as they come. With ``{episode}`` in
  the name, an episode's end finishes its file (encoder flushed, trailer
  written) and the next frame opens the next one, starting again at t = 0.
  With ``segment`` frames, a file is finished the same way every ``segment``
  frames (``{part}`` numbers them within the episode): each file is a normal
  one starting on a keyframe, and the muxer's index (kept in memory until the
  trailer) stays bounded however long the recording.
- **Clips** (``keep=`` or ``ring_seconds=``): packets go to a :class:`~glrec.batch.ring.GopRing`.
  Each episode starts on a keyframe (requested at its first frame), so a kept
  episode is the ring's GOPs from there. A clip is written once every packet of
  its frames is out of the encoder: at the next keyframe (every frame before it
  is then out, in decode order) or when the stream ends.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..encoders import Encoder
from ..frame import EncodedFrame, Frame, HostFrame, Packet
from ..sinks import Sink, open_sink
from ..sinks.paths import check_output_path
from ..video_facts import VideoFacts
from .names import Namer
from .result import BatchVideo
from .ring import GopRing

log = logging.getLogger("glrec")


@dataclass
class _Clip:
    """A clip decided on, written once every packet of frames ``first..last`` is out of the encoder."""

    path: Path
    first: int  # the first frame wanted (episodes: their first frame, a keyframe; save_last: now - seconds)
    last: int
    episode: int | None
    exact: bool  # an episode's own first frame (True), or the newest keyframe at or before ``first``


def _retimed(frame: Frame, index: int) -> Frame:
    """``frame`` as frame ``index`` of its file (the worker numbers frames: drops leave gaps, repeats fill them)."""
    if isinstance(frame, HostFrame):
        return HostFrame(index, frame.pix_fmt, frame.width, frame.height, frame.data, frame.av_frame)
    if isinstance(frame, EncodedFrame):
        return EncodedFrame(index, frame.codec, frame.width, frame.height, frame.data)
    frame.index = index  # a DeviceFrame: the protocol's index is writable
    return frame


class EnvStream:
    """Env ``env``'s encoder and output (see the module docstring); made and used on its worker thread only."""

    def __init__(self, env: int, facts: VideoFacts, open_encoder: Callable[[], Encoder], namer: Namer, *,
                 overwrite: bool, split_episodes: bool, ring: GopRing | None,
                 segment: int | None = None) -> None:  # fmt: skip
        self.env = env
        self.facts = facts
        self._open_encoder = open_encoder
        self._namer = namer
        self._overwrite = overwrite
        self._split = split_episodes
        self.ring = ring
        self.episode = 0
        self.part = 0  # the file's number within the episode (segments)
        self._segment = segment if ring is None else None
        self.videos: list[BatchVideo] = []
        self.frames = 0  # frames encoded (repeats included)
        self._encoder: Encoder | None = None
        self._sink: Sink | None = None
        self._path: Path | None = None
        self._next = 0  # the next frame's index in the current file (files) or the stream (clips)
        self._episode_start = 0  # clips: the index of the current episode's first frame
        self._last: Frame | None = None  # for repeats
        self._clips: list[_Clip] = []
        self._started = time.perf_counter()

    # -- the work a worker does, in step order

    def frame(self, frame: Frame, skipped: int, repeat: bool) -> None:
        """Encode ``frame`` after ``skipped`` frames the recorder could not queue (dropped, or repeated)."""
        self._catch_up(skipped, repeat)
        if self._segment is not None and self._next >= self._segment:  # the file is a whole segment: the next
            self._finish_file()
            self.part += 1
        self._encode(frame, self._next)
        self._next += 1

    def tail(self, skipped: int, repeat: bool) -> None:
        """Frames skipped after the env's last queued one (the recording ends): repeats fill their slots."""
        self._catch_up(skipped, repeat)

    def _catch_up(self, skipped: int, repeat: bool) -> None:
        if not skipped:
            return
        if repeat and self._last is not None:  # constant frame rate: the last picture again in each slot
            for _ in range(skipped):
                self._encode(self._last, self._next)
                self._next += 1
        else:  # dropped: their slots stay empty, so the previous picture stays on screen for their time
            self._next += skipped

    def _encode(self, frame: Frame, index: int) -> None:
        encoder = self._encoder
        if encoder is None:
            encoder = self._encoder = self._open_encoder()
            self._open_output()
        frame = _retimed(frame, index)
        if self.ring is not None and index == self._episode_start:
            encoder.request_keyframe()  # a kept episode starts on a keyframe
        self._route(encoder.encode(frame))
        self._last = frame
        self.frames += 1

    def _open_output(self) -> None:
        if self.ring is not None:
            return
        name = Path(self._namer(self.env, self.episode, self.part))
        name.parent.mkdir(parents=True, exist_ok=True)  # folders the pattern names (per env, per run)
        self._path = check_output_path(name, self._overwrite)
        self._sink = open_sink(self._path, self.facts, overwrite=self._overwrite)

    def _route(self, packets: list[Packet]) -> None:
        if not packets:
            return
        if self.ring is None:
            assert self._sink is not None
            self._sink.write(packets)
            return
        for packet in packets:
            if packet.keyframe:  # every frame before it is out of the encoder: clips up to it are complete
                self._write_clips(before=packet.pts)
            self.ring.add([packet])

    def end_episode(self, skipped: int, repeat: bool, keep: bool | None, last_path: str | None) -> None:
        """The env's episode ended after its last queued frame; ``keep`` decides its clip (clips only)."""
        self._catch_up(skipped, repeat)
        if self.ring is not None:
            if keep and self._next > self._episode_start:
                path = Path(last_path or self._namer(self.env, self.episode, 0))
                self._clips.append(_Clip(path, self._episode_start, self._next - 1, self.episode, True))
            self._episode_start = self._next
        elif self._split:
            self._finish_file()
        self.episode += 1
        self.part = 0

    def save_last(self, frames: int, path: str, skipped: int, repeat: bool) -> None:
        """Write the last ``frames`` frames (from the keyframe at or before them) to ``path`` once they are out."""
        self._catch_up(skipped, repeat)
        if self.ring is None or self._next == 0:
            log.warning("glrec: save_last for env %d: nothing recorded yet; no file", self.env)
            return
        self._clips.append(_Clip(Path(path), self._next - frames, self._next - 1, None, False))
        if self._encoder is not None:
            self._encoder.request_keyframe()  # its keyframe tells when every packet of the clip is out

    def finish(self, skipped: int, repeat: bool) -> None:
        """Flush the encoder; finish the file (or write the clips decided on). Safe twice."""
        self._catch_up(skipped, repeat)
        if self.ring is not None:
            encoder, self._encoder = self._encoder, None
            if encoder is not None:
                try:
                    self._route(encoder.flush())
                finally:
                    encoder.close()
            self._write_clips(before=None)
            return
        self._finish_file()

    # -- files and clips

    def _finish_file(self) -> None:
        encoder, self._encoder = self._encoder, None
        sink, self._sink = self._sink, None
        try:
            if encoder is not None and sink is not None:
                sink.write(encoder.flush())
        finally:
            if encoder is not None:
                encoder.close()
            if sink is not None:
                sink.close()  # the trailer, also while an error propagates
                self._add_video(Path(str(sink.path)) if self._path is None else self._path, sink.packets,
                                self.episode, kept=True)  # fmt: skip
            self._next = 0

    def _write_clips(self, before: int | None) -> None:
        assert self.ring is not None
        waiting = []
        for clip in self._clips:
            if before is not None and clip.last >= before:
                waiting.append(clip)
                continue
            if clip.exact:
                packets = self.ring.since(clip.first, clip.last)
            else:
                packets = [p for p in self.ring.last(clip.last + 1 - clip.first, clip.last + 1) if p.pts <= clip.last]
            self._write_clip(clip, packets)
        self._clips = waiting

    def _write_clip(self, clip: _Clip, packets: list[Packet]) -> None:
        if not packets:
            log.warning("glrec: env %d: the ring no longer holds frames %d..%d; no clip", self.env, clip.first,
                        clip.last)  # fmt: skip
            return
        base = packets[0].pts  # a keyframe: the clip starts at t = 0 there, as a recording does
        clip.path.parent.mkdir(parents=True, exist_ok=True)
        path = check_output_path(clip.path, self._overwrite)
        sink = open_sink(path, self.facts, overwrite=self._overwrite)
        try:
            sink.write([Packet(p.data, p.pts - base, p.dts - base, p.keyframe) for p in packets])
        finally:
            sink.close()
        self._add_video(path, sink.packets, clip.episode, kept=True)

    def _add_video(self, path: Path, frames: int, episode: int | None, *, kept: bool) -> None:
        if frames == 0:
            return
        size = os.path.getsize(path) if path.exists() else 0
        self.videos.append(BatchVideo(self.env, episode, path, frames, size, self.part if self.ring is None else 0))

    def abandon(self) -> None:
        """After a failure elsewhere: finish what is open, as :meth:`finish`, logging a second failure."""
        try:
            self.finish(0, False)
        except Exception as exc:
            log.warning("glrec: finishing env %d after an error failed too: %r", self.env, exc)
