"""The GL JPEG route: a step's N frames in one upload, encoded by one dispatch per pass, N JPEGs back.

The batch becomes the layers of one array texture (:mod:`glrec.batch.layers`:
from host memory, or device to device from CUDA), and the GL JPEG stage
(:class:`~glrec.encoders.gl_jpeg.stage.GlJpegStage`, ``batch=N``) encodes every
layer in one dispatch per pass. Its ring of ``depth`` outputs lets the GPU
encode step s while step s - 1's bytes are read; only JPEG bytes come back to
the host. No CUDA in the encode: any GPU with GL 4.3 compute, and llvmpipe.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..encoders import Encoder
from ..frame import EncodedFrame, Frame
from ..video_facts import VideoFacts
from .frames import Batch
from .layers import LayerUpload
from .routes import Passthrough

log = logging.getLogger("glrec")


class GlJpegRoute:
    """N env frames per step into N JPEGs on the GPU (see the module docstring)."""

    name = "gl (GL-compute JPEG, batch)"  # the summary's words: the option value first, as the one-frame encoder's

    def __init__(self, facts: VideoFacts, quality: int, envs: int, channels: int, *, cuda: bool,
                 cuda_device: int, egl_device: int | None, depth: int = 3) -> None:  # fmt: skip
        from ..encoders.gl_jpeg.stage import GlJpegStage
        from ..gl.context import create_context, create_cuda_context

        self.facts = facts
        self._envs = envs
        self._stack = ExitStack()
        self._active: dict[int, Sequence[int]] = {}  # step -> envs whose JPEGs go on
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
            with self.gl.active():
                ctx = self.gl.mgl
                self.layers = LayerUpload(ctx, envs, facts.size, channels, device)
                self._stack.callback(self._release_in_gl, self.layers.release)
                self.stage = GlJpegStage(ctx, facts.encoded_size, quality=quality, pix_fmt=facts.pix_fmt, depth=depth,
                                         source_size=facts.size, batch=envs, top_down=True)  # fmt: skip
                self._stack.callback(self._release_in_gl, self.stage.release)
        except BaseException:
            self._stack.close()
            raise

    def _release_in_gl(self, release: Any) -> None:
        with self.gl.active():
            release()

    def stream_encoder(self) -> Encoder:
        return Passthrough()

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> list[tuple[int, Frame]]:
        with self.gl.active():
            self.layers.put(batch)
            self.stage.run_batch(self.layers.texture)
            self._active[step] = tuple(active)
            done = self.stage.submit_batch([step * self._envs + env for env in range(self._envs)])
        return self._frames(done)

    def _frames(self, done: list[tuple[int, bytes]]) -> list[tuple[int, Frame]]:
        w, h = self.facts.encoded_size
        out: list[tuple[int, Frame]] = []
        for index, data in done:
            step, env = divmod(index, self._envs)
            if env in self._active.get(step, ()):
                out.append((env, EncodedFrame(0, "mjpeg", w, h, data)))
            if env == self._envs - 1:
                self._active.pop(step, None)
        return out

    def drain(self) -> list[tuple[int, Frame]]:
        with self.gl.active():
            return self._frames(self.stage.drain())

    def release(self) -> None:
        """Release the stage, the upload, the context (and the CUDA device). Safe twice."""
        self._stack.close()
