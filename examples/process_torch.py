"""A seeded torch model on every frame, its result drawn by GL on the frame, then encoded.

NVIDIA's "inference -> OpenGL draws the result -> encode" loop in a few lines. On an
NVIDIA machine (cuda-python, a CUDA build of PyTorch) every frame stays on the GPU:
the model reads the rendered frame where GL left it (CUDA memory, zero-copy), its heat
map becomes a mask and a box that GL blends over the frame, and the frame goes on to
convert and encode. Elsewhere the same code runs on CPU tensors (host path).

    python examples/process_torch.py out.mp4 [--size 1280x720] [--frames 150]

The model is a stand-in for a detector: two convolutions with weights fixed by a seed
(nothing is downloaded), whose output is high where the picture has strong edges.
"""

from __future__ import annotations

import argparse
import logging

import torch

import glrec
from glrec.process import Boxes, Mask, Overlay, Points, Process


class EdgeDetector(torch.nn.Module):
    """Two seeded convolutions -> a heat map in 0..1 at half resolution (1 at the frame's strongest response)."""

    def __init__(self, seed: int = 7) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.conv1 = torch.nn.Conv2d(3, 8, 5, stride=2, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 1, 3, padding=1)
        with torch.no_grad():
            for conv in (self.conv1, self.conv2):
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator) * 0.5)
                conv.bias.zero_()
            self.conv1.weight -= self.conv1.weight.mean(
                dim=(2, 3), keepdim=True
            )  # respond to edges, not to flat colour

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        response = self.conv2(torch.relu(self.conv1(rgb))).abs()
        return response / (response.amax() + 1e-6)


class Detect:
    """The process function: frame (H x W x 4 uint8 tensor) -> Overlay of a mask, a box and its centre."""

    def __init__(self) -> None:
        self.model = EdgeDetector().eval()

    @torch.no_grad()
    def __call__(self, frame: torch.Tensor) -> Overlay:
        if next(self.model.parameters()).device != frame.device:
            self.model.to(frame.device)  # once: the model lives where the frames are
        h, w = frame.shape[:2]
        rgb = frame[..., :3].permute(2, 0, 1)[None].float() / 255
        heat = torch.nn.functional.interpolate(self.model(rgb), size=(h, w), mode="bilinear")[0, 0]
        hot = heat > 0.3
        # The box around the hot pixels, computed on the device: no sync with the host inside fn.
        ys = torch.arange(h, device=frame.device)[:, None].expand(h, w)
        xs = torch.arange(w, device=frame.device)[None, :].expand(h, w)
        big = torch.tensor(max(h, w), device=frame.device)
        box = torch.stack([torch.where(hot, xs, big).min(), torch.where(hot, ys, big).min(),
                           torch.where(hot, xs, -1).max(), torch.where(hot, ys, -1).max()]).float()  # fmt: skip
        box = box * hot.any()  # no hot pixel: a zero box at the corner
        centre = torch.stack([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        return Overlay(
            Mask(heat, colour=(1.0, 0.0, 1.0, 0.45)),
            Boxes(box[None], colour=(0.0, 1.0, 0.0), width=3),
            Points(centre[None], colour=(1.0, 1.0, 0.0), radius=5),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default="detect.mp4")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--scene", default="cube")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # shows where the model runs
    result = glrec.record(args.scene, args.output, size=args.size, frames=args.frames,
                          process=Process(Detect(), array="torch"), overwrite=True)  # fmt: skip
    print(result.summary())


if __name__ == "__main__":
    main()
