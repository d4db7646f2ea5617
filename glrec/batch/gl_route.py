"""The GL JPEG route: a step's N frames in one upload, encoded by one dispatch per pass, N JPEGs back.

The batch becomes the layers of one array texture (:mod:`glrec.batch.layers`:
from host memory, or device to device from CUDA), and the GL JPEG stage
(:class:`~glrec.encoders.gl_jpeg.stage.GlJpegStage`, ``batch=N``) encodes every
layer in one dispatch per pass. Its ring of outputs lets the GPU encode step s
while earlier steps' bytes are read; only JPEG bytes come back to the host. No
CUDA in the encode: any GPU with GL 4.3 compute, and llvmpipe.

CUDA batches go in turns of K steps (:func:`turn_steps`): each step's copy is
queued on the CUDA side as it is written (no GL call, no wait), and every K
steps the GL context fills and encodes the K in one activation. Measured on
the H200 (``benchmarks/gpu/vector_profile.py --timing``, 64 x 256x256), one
step each way cost 1.2 ms to make the context current and 1.9 ms for the
upload, the GPU switching contexts at each; the turn pays both once per K.
A step's JPEGs come back one turn (and the ring) later, in step order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..encoders import Encoder
from ..frame import EncodedFrame
from ..video_facts import VideoFacts
from .frames import Batch
from .layers import LayerUpload
from .routes import ChildEncoder, Handed, Passthrough

log = logging.getLogger("glrec")


#: Upload slots' budget (2K steps are staged at most) and the largest K.
TURN_BYTES = 128 << 20
MOST_TURN_STEPS = 8


def turn_steps(step_bytes: int) -> int:
    """K, the CUDA steps staged per GL turn: as many as fit half of :data:`TURN_BYTES`, 1 to 8."""
    return max(1, min(MOST_TURN_STEPS, TURN_BYTES // 2 // max(1, step_bytes)))


class GlJpegRoute:
    """N env frames per step into N JPEGs on the GPU (see the module docstring)."""

    name = "gl (GL-compute JPEG, batch)"  # the summary's words: the option value first, as the one-frame encoder's
    muxes_only = True  # the streams only mux what the GPU encoded (one worker by default)
    child_encoder: ChildEncoder | None = None

    def __init__(self, facts: VideoFacts, quality: int, envs: int, channels: int, *, cuda: bool,
                 cuda_device: int, egl_device: int | None, depth: int = 3) -> None:  # fmt: skip
        from ..encoders.gl_jpeg.stage import GlJpegStage
        from ..gl.context import create_context, create_cuda_context

        self.facts = facts
        self._envs = envs
        self._stack = ExitStack()
        self._active: dict[int, Sequence[bool]] = {}  # step -> per env: its JPEG goes on
        self._staged: list[tuple[int, int]] = []  # (step, slot) copied on the CUDA side, not yet in GL
        device = None
        try:
            if cuda:
                from ..cuda.driver import CudaDevice

                device = CudaDevice.open(cuda_device)
                self._stack.callback(device.release)
                info = device.info
                self.gl = create_cuda_context(info.ordinal, info.pci_bus_id, egl_device)
            else:
                self.gl = create_context(egl_device)
            self._stack.callback(self.gl.release)
            w, h = facts.size
            ahead = turn_steps(envs * w * h * channels) if cuda else 1
            with self.gl.active():
                ctx = self.gl.mgl
                self.layers = LayerUpload(ctx, envs, facts.size, channels, device, ahead=ahead)
                self._stack.callback(self._release_in_gl, self.layers.release)
                # Steps per GL turn; 0: one activation per step (host batches, or no CUDA memory shared with GL).
                self.turn = self.layers.ahead if self.layers.shared else 0
                # A turn's K steps find their outputs free: the ring holds a turn and the reads behind it.
                self.stage = GlJpegStage(ctx, facts.encoded_size, quality=quality, pix_fmt=facts.pix_fmt,
                                         depth=max(depth, self.turn + 1), source_size=facts.size, batch=envs,
                                         top_down=True)  # fmt: skip
                self._stack.callback(self._release_in_gl, self.stage.release)
        except BaseException:
            self._stack.close()
            raise

    def _release_in_gl(self, release: Any) -> None:
        with self.gl.active():
            release()

    def stream_encoder(self) -> Encoder:
        return Passthrough()

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> Handed:
        wanted = [False] * self._envs
        for env in active:
            wanted[env] = True
        self._active[step] = wanted
        if self.turn == 0:
            with self.gl.active():
                self.layers.put(batch)
                return self._frames(self._encode(step))
        self._staged.append((step, self.layers.stage(batch)))  # CUDA only; the caller may reuse the batch
        if len(self._staged) < self.turn:
            return []
        return self._gl_turn()

    def _encode(self, step: int) -> list[tuple[int, bytes]]:
        """Encode the texture as step ``step`` (GL current); JPEGs of earlier steps that completed."""
        self.stage.run_batch(self.layers.texture)
        return self.stage.submit_batch([step * self._envs + env for env in range(self._envs)])

    def _gl_turn(self) -> Handed:
        """Fill and encode every staged step in one activation of the GL context."""
        staged, self._staged = self._staged, []
        done: list[tuple[int, bytes]] = []
        with self.gl.active():
            for step, slot in staged:
                self.layers.fill(slot)
                done += self._encode(step)
            self.layers.settle(keep=len(staged))  # the previous turn's slots may be staged again
        return self._frames(done)

    def _frames(self, done: list[tuple[int, bytes]]) -> Handed:
        w, h = self.facts.encoded_size
        out: Handed = []
        n = self._envs
        for index, data in done:
            step, env = divmod(index, n)
            if self._active[step][env]:
                out.append((step, env, EncodedFrame(0, "mjpeg", w, h, data)))
            if env == n - 1:
                del self._active[step]
        return out

    def drain(self) -> Handed:
        out = self._gl_turn() if self._staged else []
        with self.gl.active():
            return out + self._frames(self.stage.drain())

    def release(self) -> None:
        """Release the stage, the upload, the context (and the CUDA device). Safe twice."""
        self._stack.close()
