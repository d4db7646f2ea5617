"""The grid layout: a step's N frames tiled k x k (row-major, env 0 top left) into one picture, labelled, one stream.

Host batches are tiled with numpy into a canvas the recorder writes (on a CPU
that is the copy a writer makes anyway); CUDA batches are tiled on the GPU by one
fragment pass that reads the step's array texture (:mod:`glrec.batch.layers`)
and draws into the recorder's target, so the frames never leave the GPU. Labels
(the env's index and a text per tile, e.g. its episode return) are drawn from
one 3x5 bitmap font, by numpy or by the pass, the same pixels either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import moderngl

#: A 3x5 font: each glyph 15 bits, row-major from the top row, high bit first.
_FONT_ROWS = {
    "0": ("111", "101", "101", "101", "111"), "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"), "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"), "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"), "7": ("111", "001", "010", "010", "010"),
    "8": ("111", "101", "111", "101", "111"), "9": ("111", "101", "111", "001", "111"),
    ".": ("000", "000", "000", "000", "010"), "-": ("000", "000", "111", "000", "000"),
    ":": ("000", "010", "000", "010", "000"), "#": ("101", "111", "101", "111", "101"),
    " ": ("000", "000", "000", "000", "000"),
}  # fmt: skip
GLYPHS = "".join(_FONT_ROWS)
FONT = [int("".join(_FONT_ROWS[g]), 2) for g in GLYPHS]
LABEL_CHARS = 12  # characters a tile's label holds (longer ones are cut)


def grid_shape(envs: int, size: tuple[int, int]) -> tuple[int, int]:
    """(columns, rows) of the grid: k x k with k = ceil(sqrt(N)), fewer rows where they would be empty."""
    k = math.ceil(math.sqrt(envs))
    return k, math.ceil(envs / k)


def label_text(env: int, extra: object | None) -> str:
    """A tile's label: ``#env`` and the caller's value (numbers to 1 decimal), in the font's characters."""
    text = f"#{env}"
    if extra is not None:
        value = f"{extra:.1f}" if isinstance(extra, float) else str(extra)
        text += " " + value
    return "".join(c for c in text if c in _FONT_ROWS)[:LABEL_CHARS]


def scale_for(height: int) -> int:
    """Pixels per font pixel: labels stay readable (about 1/16 of a tile's height)."""
    return max(1, height // 80)


def draw_label(tile: np.ndarray, text: str) -> None:
    """Draw ``text`` white on a black box at the tile's top left (``tile`` is H x W x C, modified)."""
    s = scale_for(tile.shape[0])
    box_w, box_h = min(tile.shape[1], (4 * len(text) + 1) * s), min(tile.shape[0], 7 * s)
    tile[:box_h, :box_w, :3] = 0
    for i, ch in enumerate(text):
        bits = FONT[GLYPHS.index(ch)]
        for r in range(5):
            for c in range(3):
                if bits >> (14 - (r * 3 + c)) & 1:
                    y, x = (1 + r) * s, (1 + 4 * i + c) * s
                    tile[y : y + s, x : x + s, :3] = 255


def tile_host(frames: Sequence[np.ndarray], labels: Sequence[str] | None, out: np.ndarray | None) -> np.ndarray:
    """The grid canvas of ``frames`` (each H x W x C), with ``labels`` per tile; ``out`` reused where given."""
    h, w, c = frames[0].shape
    cols, rows = grid_shape(len(frames), (w, h))
    if out is None or out.shape != (rows * h, cols * w, c):
        out = np.zeros((rows * h, cols * w, c), np.uint8)
    for env, frame in enumerate(frames):
        r, col = divmod(env, cols)
        tile = out[r * h : (r + 1) * h, col * w : (col + 1) * w]
        tile[...] = frame
        if labels is not None:
            draw_label(tile, labels[env])
    return out


_VERTEX = """#version 330
const vec2 corners[4] = vec2[4](vec2(-1, -1), vec2(1, -1), vec2(-1, 1), vec2(1, 1));
void main() { gl_Position = vec4(corners[gl_VertexID], 0.0, 1.0); }
"""
_FRAGMENT = """#version 330
uniform sampler2DArray layers;  // the step's frames, rows top row first
uniform ivec2 tile;             // a frame's size
uniform int cols;
uniform int envs;
uniform int grid_h;
uniform int scale;
uniform int font[%(glyphs)d];
uniform int label[%(cells)d];   // per tile, LABEL_CHARS glyph indices (-1: none)
out vec4 colour;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    p.y = grid_h - 1 - p.y;     // the target is bottom-up, the grid top-down
    ivec2 t = p / tile;
    int env = t.y * cols + t.x;
    if (env >= envs) { colour = vec4(0.0, 0.0, 0.0, 1.0); return; }
    ivec2 q = p - t * tile;
    colour = vec4(texelFetch(layers, ivec3(q, env), 0).rgb, 1.0);
    int n = 0;
    for (int i = 0; i < %(chars)d; i++) { if (label[env * %(chars)d + i] >= 0) n = i + 1; }
    if (n == 0 || q.x >= min(tile.x, (4 * n + 1) * scale) || q.y >= min(tile.y, 7 * scale)) return;
    colour = vec4(0.0, 0.0, 0.0, 1.0);
    ivec2 f = q / scale - ivec2(1, 1);
    int i = f.x / 4, c = f.x - 4 * i;
    if (f.x < 0 || f.y < 0 || f.y >= 5 || c >= 3 || i >= n) return;
    int g = label[env * %(chars)d + i];
    if (g >= 0 && ((font[g] >> (14 - (f.y * 3 + c))) & 1) == 1) colour = vec4(1.0);
}
"""


class GridPass:
    """Draws the step's array texture as the labelled grid into the bound framebuffer (CUDA batches)."""

    def __init__(self, ctx: moderngl.Context, envs: int, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.envs = envs
        self.size = size
        self.cols, rows = grid_shape(envs, size)
        source = _FRAGMENT % {"glyphs": len(FONT), "cells": envs * LABEL_CHARS, "chars": LABEL_CHARS}
        self.program = ctx.program(vertex_shader=_VERTEX, fragment_shader=source)
        self.vao = ctx.vertex_array(self.program, [])
        h = size[1]
        for name, value in (("tile", size), ("cols", self.cols), ("envs", envs), ("grid_h", rows * h),
                            ("scale", scale_for(h)), ("layers", 0)):  # fmt: skip
            self.program[name].value = value  # type: ignore[union-attr]
        self.program["font"].value = FONT  # type: ignore[union-attr]

    def draw(self, texture: Any, labels: Sequence[str] | None) -> None:
        codes = [-1] * (self.envs * LABEL_CHARS)
        if labels is not None:
            for env, text in enumerate(labels):
                for i, ch in enumerate(text[:LABEL_CHARS]):
                    codes[env * LABEL_CHARS + i] = GLYPHS.index(ch)
        self.program["label"].value = codes  # type: ignore[union-attr]
        texture.use(0)
        self.vao.render(mode=5, vertices=4)  # GL_TRIANGLE_STRIP: the whole target

    def release(self) -> None:
        for name in ("vao", "program"):
            obj = getattr(self, name)
            setattr(self, name, None)
            if obj is not None:
                obj.release()
