"""Draw data a process function returns for glrec to draw on the frame with GL, in the same pass.

The loop NVIDIA's video pipelines publish (inference on the frame, the result
drawn by OpenGL, the frame encoded) is ``fn`` returning an :class:`Overlay`:

>>> def detect(frame):  # doctest: +SKIP
...     boxes = model(frame)                       # (N, 4) x0, y0, x1, y1 in pixels
...     return Overlay(Boxes(boxes, colour=(0, 1, 0)), Points(keypoints, radius=4))

Coordinates are pixels of the output frame as ``fn`` saw it: origin top-left,
y down, like array indices. Arrays may be numpy, torch (CPU or CUDA) or CuPy;
boxes, points and lines are small and copied to the host after the frame's
GPU work has finished (no wait inside ``fn``); a mask stays on the device on
the CUDA path. Colours are RGB or RGBA floats in 0..1.

For drawing of your own, give ``Process(overlay=...)`` an object with
``setup(ctx, size)``, ``draw(data)`` and ``close()``: ``draw`` runs with the
frame's framebuffer bound for every ``Overlay(data=...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import moderngl

from ..errors import ProcessOutputError

Colour = tuple[float, float, float] | tuple[float, float, float, float]


def _rgba(colour: Sequence[float], what: str) -> tuple[float, float, float, float]:
    values = tuple(float(c) for c in colour)
    if len(values) not in (3, 4) or not all(0.0 <= c <= 1.0 for c in values):
        raise ProcessOutputError(f"{what} colour {tuple(colour)!r} must be 3 or 4 floats in 0..1, e.g. (0, 1, 0).")
    return values if len(values) == 4 else (*values, 1.0)  # type: ignore[return-value]


@dataclass(frozen=True)
class Boxes:
    """Rectangle outlines: ``xyxy`` is (N, 4) ``x0, y0, x1, y1``; ``width`` in pixels."""

    xyxy: Any
    colour: Colour = (0.0, 1.0, 0.0, 1.0)
    width: float = 2.0


@dataclass(frozen=True)
class Points:
    """Filled discs: ``xy`` is (N, 2); ``radius`` in pixels (keypoints, detections' centres)."""

    xy: Any
    colour: Colour = (1.0, 0.2, 0.2, 1.0)
    radius: float = 3.0


@dataclass(frozen=True)
class Lines:
    """Line segments: ``segments`` is (N, 4) ``x0, y0, x1, y1`` (or (N, 2, 2)); ``width`` in pixels (skeletons)."""

    segments: Any
    colour: Colour = (1.0, 1.0, 0.0, 1.0)
    width: float = 2.0


@dataclass(frozen=True)
class Mask:
    """A per-pixel mask of the output frame's size (H, W), blended over it.

    Without ``palette``: coverage, uint8 0..255 (or bool, or float 0..1) scaling
    ``colour``'s alpha. With ``palette`` (up to 255 colours): class ids, uint8,
    ``k > 0`` drawn in ``palette[k - 1]``, 0 left alone. One mask per frame.
    """

    values: Any
    colour: Colour = (1.0, 0.0, 0.0, 0.5)
    palette: Sequence[Colour] | None = None


Shape = Boxes | Points | Lines | Mask
_SHAPES = (Boxes, Points, Lines, Mask)


class Overlay:
    """What ``fn`` returns to have shapes drawn on the frame: ``Overlay(*shapes, frame=None, data=None)``.

    ``frame`` is a new frame (None: the input frame, as ``fn`` left it);
    ``data`` goes to ``Process(overlay=...)``'s ``draw(data)``.
    """

    __slots__ = ("data", "frame", "shapes")

    def __init__(self, *shapes: Shape, frame: Any = None, data: Any = None) -> None:
        for s in shapes:
            if not isinstance(s, _SHAPES):
                raise ProcessOutputError(
                    f"Overlay takes Boxes, Points, Lines and Mask; got {type(s).__name__}. "
                    "Put other data in Overlay(data=...) for your own Process(overlay=...)."
                )
        if sum(isinstance(s, Mask) for s in shapes) > 1:
            raise ProcessOutputError("An Overlay takes one Mask; combine several into one Mask with a palette.")
        self.shapes: tuple[Shape, ...] = shapes
        self.frame = frame
        self.data = data

    @property
    def mask(self) -> Mask | None:
        """The overlay's Mask, if it has one (at most one per overlay)."""
        return next((s for s in self.shapes if isinstance(s, Mask)), None)

    def __repr__(self) -> str:
        kinds = ", ".join(type(s).__name__ for s in self.shapes)
        return (
            f"Overlay({kinds}{', frame' if self.frame is not None else ''}{', data' if self.data is not None else ''})"
        )


@runtime_checkable
class OverlayScene(Protocol):
    """Your own GL drawing on the processed frame (``Process(overlay=...)``)."""

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Make GL objects in ``ctx`` for frames of ``size``; called once, before the first ``draw``."""

    def draw(self, data: Any) -> None:
        """Draw over the frame bound now, given the ``data`` of the frame's ``Overlay(data=...)``."""

    def close(self) -> None:
        """Release what ``setup`` made; safe to call twice."""
