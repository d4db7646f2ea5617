"""JPEG colour for datasets through nvJPEG: the colour texture is packed on the GPU and encoded in CUDA memory.

``[output] rgb = "jpg"``, ``rgb_encoder = "nvjpeg"``. The colour target is
flipped and packed to RGB by the pack stage (:class:`glrec.convert.RgbPacker`),
handed to CUDA without a host copy (the shared handoff where GL can import CUDA
memory, else the register handoff) and encoded by nvImageCodec; only the JPEG
comes back to the host. nvJPEG converts RGB to YCbCr with the JFIF equations
(BT.601, full range) and subsamples chroma to 4:2:0, as the CPU encoder's
files are described; the bytes differ from FFmpeg's encoder (another JPEG
encoder), the lossless passes do not change.

Needs an NVIDIA GPU whose GL context is the one the dataset renders in, CUDA
(``pip install glrec[cuda]``) and nvImageCodec (``pip install glrec[nvjpeg]``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import EncoderError, EncoderUnavailableError
from .encode import ColourImage
from .spec import OutputSpec

log = logging.getLogger("glrec")


def cuda_device_of_current_context() -> int:
    """The CUDA ordinal the current GL context renders on (``cuGLGetDevices``), or 0 where the driver cannot say."""
    from ..cuda.driver import call
    from ..gl.devices import verify_gl_device

    answers = {i: verify_gl_device(i) for i in range(call("cuDeviceGetCount"))}
    for ordinal, on_it in answers.items():
        if on_it:
            return ordinal
    if any(v is False for v in answers.values()) and all(v is not None for v in answers.values()):
        raise EncoderUnavailableError(
            "The dataset's GL context does not run on any visible CUDA device, so nvJPEG cannot read its "
            'colour; render on an NVIDIA EGL device (--device) or use rgb_encoder = "cpu".'
        )
    log.info("nvjpeg colour: the driver cannot say which CUDA device runs the GL context; using CUDA 0")
    return 0


class NvJpegColour:
    """A :class:`~glrec.dataset.encode.ColourEncoder` that reads the colour texture on the GPU.

    Its GPU stages are made at the first image, in the GL context that image's
    texture belongs to; :meth:`close` releases them (the dataset worker calls it
    before releasing the context).
    """

    ext = "jpg"
    needs_array = False  # reads the texture, never image.array()
    host_only = False  # runs on the GL thread, before the next sample is drawn over the texture

    def __init__(self, output: OutputSpec) -> None:
        from ..encoders.nvjpeg.encoder import load_nvimgcodec

        load_nvimgcodec()  # fail now, with the install hint, rather than at the first sample
        self.output = output
        self._stages: list[Any] = []  # packer, handoff, encoder, device: released in reverse
        self._count = 0

    def _open(self, texture: Any) -> None:
        from ..convert import RgbPacker
        from ..cuda.driver import CudaDevice
        from ..encoders.nvjpeg.encoder import NvJpegEncoder
        from ..interop.handoff import cuda_handoff_kind, open_handoff
        from ..options import VideoOptions

        ctx = texture.ctx
        size = tuple(texture.size)
        device = CudaDevice.open(cuda_device_of_current_context())
        self._stages.append(device)
        packer = RgbPacker(ctx, size, "rgb24")
        self._stages.append(packer)
        kind = cuda_handoff_kind("auto", ctx)
        self._stages.append(open_handoff(kind, ctx, packer, device, depth=1, consumer_slots=2, live=True))
        options = VideoOptions.create(size, 30, codec="mjpeg", encoder="nvjpeg", quality=self.output.jpeg_quality)
        asked = options.request(device=device)
        self._stages.append(NvJpegEncoder(asked.facts, asked.options, device))
        log.info("nvjpeg colour: %dx%d, quality %d, CUDA %s handoff", *size, self.output.jpeg_quality, kind)

    def encode(self, image: ColourImage) -> bytes:
        if not self._stages:
            try:
                self._open(image.texture)
            except BaseException:
                self.close()
                raise
        _, packer, handoff, encoder = self._stages
        packer.run(image.texture)
        frames = [*handoff.submit(self._count), *handoff.drain()]
        self._count += 1
        packets = [p for f in frames for p in encoder.encode(f)] + encoder.flush()
        if len(packets) != 1:
            raise EncoderError(f"nvJPEG returned {len(packets)} images for one colour image.")
        return packets[0].data

    def close(self) -> None:
        """Release the encoder, handoff, pack stage and CUDA device; safe twice."""
        stages, self._stages = self._stages, []
        for stage in reversed(stages):
            close = getattr(stage, "close", None) or stage.release
            close()
