"""A process of :mod:`glrec.batch.mux_procs`: env streams muxed (JPEGs the GPU made) or encoded (raw frames in
shared memory, the CPU encoders) off the recorder's GIL.

Started as ``python -m glrec.batch.mux_child`` (a plain subprocess: a user's
script is not imported again, as ``multiprocessing``'s spawn would). Reads
length-prefixed pickled messages on stdin, writes one byte on stdout per frames
message done (the parent's bound on steps in flight), and at the end one
pickled ``("done", videos, ring_peak, error)``. Stdin closing without a stop
(the recorder's process died) finishes every file the same way.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO

HEADER = struct.Struct("<Q")


def read_message(stream: BinaryIO) -> Any:
    """The next message, or None at the end of the stream."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def run(stdin: BinaryIO, stdout: BinaryIO) -> None:
    from ..frame import EncodedFrame
    from .frame_slots import FrameSlots
    from .names import namer
    from .pool import apply, finish_streams
    from .ring import GopRing
    from .routes import Passthrough
    from .stream import EnvStream

    config = read_message(stdin)
    if config is None:
        return
    facts, pattern, overwrite, split, ring, segment, encoder, slots_spec = config
    name = namer(pattern)
    w, h = facts.encoded_size
    streams: dict[int, EnvStream] = {}
    error: BaseException | None = None
    slots = None
    if slots_spec is not None:
        fd, count, per_slot, shape = slots_spec
        slots = FrameSlots(count, per_slot, shape, fd=fd)
    open_encoder: Any = Passthrough if encoder is None else host_encoder(facts, encoder.options, encoder.encoder)

    def stream(env: int) -> EnvStream:
        if env not in streams:
            gops = GopRing(*ring) if ring is not None else None
            streams[env] = EnvStream(env, facts, open_encoder, name, overwrite=overwrite, split_episodes=split,
                                     ring=gops, segment=segment)  # fmt: skip
        return streams[env]

    while True:
        item = read_message(stdin)
        if item is None or item[0] == "stop":
            break
        if error is None:
            if item[0] == "frames":  # the JPEG bytes, or raw frames in their slot (a repeat keeps a copy)
                item = ("frames", [(env, EncodedFrame(0, "mjpeg", w, h, data) if slots is None else
                                    _host(slots.frame(*data), encoder.pix_fmt, w, h, repeat), skipped, repeat)
                                   for env, data, skipped, repeat in item[1]])  # fmt: skip
            try:
                apply(item, stream)
            except BaseException as exc:
                error = exc
        if item[0] == "frames":
            _reply(stdout, b".")
    error = finish_streams(streams.values(), error)  # every file finished, also after an error
    videos = [v for s in streams.values() for v in s.videos]
    peak = max((s.ring.peak_bytes for s in streams.values() if s.ring is not None), default=0)
    try:
        body = pickle.dumps(("done", videos, peak, error))
    except Exception:
        body = pickle.dumps(("done", videos, peak, RuntimeError(repr(error))))
    _reply(stdout, b"!" + HEADER.pack(len(body)) + body)  # the frame slots (streams may view them) go with us


def _reply(stdout: BinaryIO, data: bytes) -> None:
    """Write to the recorder; once it is gone (killed), the rest of the input is still encoded and finished."""
    try:
        stdout.write(data)
        stdout.flush()
    except (BrokenPipeError, OSError):
        pass


def host_encoder(facts: Any, given: dict[str, Any], name: str) -> Any:
    """What opens the host encoder the recorder planned (the same row, ``cpu`` or ``png``, and options) here."""
    from ..encoders.registry import encoder_row, request

    row = encoder_row(name)
    asked = request(row, facts, given)
    return lambda: row.open(asked)


def _host(pixels: Any, pix_fmt: str, w: int, h: int, repeat: bool) -> Any:
    from ..frame import HostFrame

    return HostFrame(0, pix_fmt, w, h, pixels.copy() if repeat else pixels)


if __name__ == "__main__":
    for sig in (signal.SIGINT, signal.SIGTERM):  # the recorder's to handle: it finishes the files through us
        signal.signal(sig, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the replies
    run(sys.stdin.buffer, replies)
    replies.close()
