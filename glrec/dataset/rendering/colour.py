"""What a colour encoder is to the renderer: the image it is handed and the calls it answers.

The renderer encodes colour in its own GL context where the encoder reads the GPU
(GL JPEG, nvJPEG), so these types belong to rendering; the encoders themselves and
the registry that picks one live with the files (:mod:`glrec.dataset.files.encode`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import moderngl
import numpy as np

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

__all__ = ["BatchColour", "ColourEncoder", "ColourImage", "LayerColour"]


class ColourImage:
    """The colour of one rendered sample, handed to a colour encoder.

    ``texture`` is the live RGBA8 GL texture (rows bottom-up, as GL stores
    them) for encoders that read GPU memory; :meth:`array` reads it back to an
    (h, w, 3) uint8 top-down array once, for encoders that work on the host.
    """

    def __init__(self, texture: object, read: Callable[[], np.ndarray]) -> None:
        self.texture = texture
        self._read = read
        self._array: np.ndarray | None = None

    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = self._read()
        return self._array


class ColourEncoder(Protocol):
    """Turns a :class:`ColourImage` into the bytes of one image file with extension :attr:`ext`.

    Two optional class attributes tell the dataset runner what an encoder reads
    (absent, it assumes the most: the live texture, and the host array):

    - ``host_only = True``: ``encode`` reads only ``image.array()``, so it may run
      on a worker thread after the next sample has been drawn over the texture;
    - ``needs_array = False``: ``encode`` never calls ``image.array()`` (a GPU
      encoder reading the texture), so the colour is not read back to the host.
    """

    ext: str

    def encode(self, image: ColourImage) -> bytes: ...


@runtime_checkable
class BatchColour(Protocol):
    """A GPU colour encoder that takes a shard's samples in batches (GL thread only).

    :meth:`queue` copies the colour of sample ``index`` out of the framebuffer (so the next sample
    may draw over it) and returns the (index, file bytes) of samples finished meanwhile;
    :meth:`flush` finishes every queued sample. A sample's bytes do not depend on the batch.
    """

    ext: str

    def encode(self, image: ColourImage) -> bytes: ...

    def queue(self, fbo: moderngl.Framebuffer, index: int) -> list[tuple[int, bytes]]: ...

    def flush(self) -> list[tuple[int, bytes]]: ...


@runtime_checkable
class LayerColour(BatchColour, Protocol):
    """A :class:`BatchColour` that also takes colour from a layer of a batch's G-buffer (GL thread only).

    :meth:`queue_layer` copies layer ``layer`` of ``gbuffer``'s colour target (sample ``index``) on the GPU, so
    the shards of a batch-drawing scene keep their batch path (N samples per GL pass) with JPEG made on the GPU.
    A sample's bytes are those :meth:`queue` makes of the same sample drawn alone.
    """

    def queue_layer(self, gbuffer: LayeredGBuffer, layer: int, index: int) -> list[tuple[int, bytes]]: ...
