"""The grid layout's one stream: a :class:`glrec.Recorder` of the tiled steps (see :mod:`glrec.batch.grid`).

Host batches are tiled by numpy into a canvas the recorder writes; CUDA batches
go into an array texture in the recorder's own GL context and are tiled there by
one pass into its render target, so they stay on the GPU up to the encoder.
Backpressure ``drop`` skips a step while the recorder's encode queue is full:
its time slot stays empty, so the previous picture stays on screen for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .frames import Batch, BatchShape, CudaBatch, HostBatch
from .grid import grid_shape, label_text, tile_host
from .result import BatchVideo


class GridStream:
    """The tiled steps of ``shape``'s batches into ``path`` (see the module docstring)."""

    def __init__(self, path: str, shape: BatchShape, options: Mapping[str, Any], *, overwrite: bool, drop: bool,
                 labels: bool, cuda_device: int | None) -> None:  # fmt: skip
        from ..recorder import Recorder

        cols, rows = grid_shape(shape.envs, shape.size)
        w, h = shape.size
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # as per-env files do
        self.rec = Recorder(path, overwrite=overwrite, **{"pad": True, **options, "size": (cols * w, rows * h)})
        self.shape = shape
        self.dropped = 0
        self._drop = drop
        self._labels = labels
        self._canvas: Any = None
        self._gpu: Any = None
        if cuda_device is not None:
            from ..cuda.driver import CudaDevice
            from .grid import GridPass
            from .layers import LayerUpload

            device = CudaDevice.open(cuda_device)
            ctx = self.rec.ctx
            with ctx:
                self._gpu = (LayerUpload(ctx, shape.envs, shape.size, shape.channels, device),
                             GridPass(ctx, shape.envs, shape.size), device)  # fmt: skip

    @property
    def encoder_name(self) -> str:
        return str(getattr(self.rec, "encoder_name", "auto"))

    def write(self, batch: Batch, labels: Sequence[object] | None) -> None:
        rec = self.rec
        texts = None
        if self._labels or labels is not None:
            texts = [label_text(env, None if labels is None else labels[env]) for env in range(self.shape.envs)]
        if self._drop and rec.encoder_backlogged:
            rec.skip_to(rec.frames_submitted + 1)
            self.dropped += 1
            return
        if isinstance(batch, HostBatch):
            self._canvas = tile_host(batch.frames, texts, self._canvas)
            rec.write(self._canvas)
            return
        assert isinstance(batch, CudaBatch) and self._gpu is not None
        upload, grid_pass, _ = self._gpu
        with rec.frame():
            upload.put(batch)
            grid_pass.draw(upload.texture, texts)

    def close(self) -> BatchVideo | None:
        """Finish the video; the GPU tiling's objects go first, in the recorder's context. Safe twice."""
        gpu, self._gpu = self._gpu, None
        try:
            if gpu is not None:
                with self.rec.ctx:
                    gpu[0].release()
                    gpu[1].release()
                gpu[2].release()
        finally:
            result = self.rec.close()
        return BatchVideo(None, None, result.path, result.frames, result.bytes) if result.frames else None
