"""The GL side of Shadertoy channels: buffer passes' ping-pong textures, input sources, and samplers.

A buffer pass renders into the back one of its two float textures and then
swaps, so a pass reading a buffer gets that buffer's latest finished frame:
this frame's when the buffer comes earlier in the order A, B, C, D, Image, the
previous frame's when it comes later or is the pass itself (feedback). Each
channel has its own sampler (filter, wrap), as on Shadertoy, so one texture
can be read with different settings by different passes.

Built-in textures, bound by name (``channels={0: "noise"}``, ``--channel0 noise``),
so that a pasted shader records without a file at hand; each is the same bytes on
every machine (numpy's PCG64 with a fixed seed):

- ``noise``: 256x256 RGBA, every byte uniform in 0..255, each channel
  independent (what shadertoy.com's "RGBA Noise Medium" is; not its bytes);
- ``noise_small``: the same at 64x64 (as "RGBA Noise Small");
- ``grey_noise``: 256x256, one uniform byte per texel in R, G, B and A
  (shadertoy.com's "Gray Noise Medium" is one channel: ``.r`` reads alike);
- ``black``: 1x1 (0, 0, 0, 1), what an empty channel reads.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from .shadertoy_load import Channel


class BufferTarget:
    """Two RGBA32F textures of the frame's size; :attr:`front` is the last finished frame."""

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int], *, mipmaps: bool = False) -> None:
        self.mipmaps = mipmaps
        self.textures = [ctx.texture(size, 4, dtype="f4") for _ in range(2)]
        self.fbos = [ctx.framebuffer(color_attachments=[t]) for t in self.textures]
        for fbo in self.fbos:
            fbo.clear(0.0, 0.0, 0.0, 0.0)  # Shadertoy's buffers start black and transparent
        self._front = 0

    @property
    def front(self) -> moderngl.Texture:
        return self.textures[self._front]

    @property
    def back_fbo(self) -> moderngl.Framebuffer:
        return self.fbos[1 - self._front]

    def swap(self) -> None:
        self._front = 1 - self._front
        if self.mipmaps:
            self.front.build_mipmaps()

    def release(self) -> None:
        ctx = self.fbos[0].ctx if self.fbos else None
        for fbo in self.fbos:
            if ctx is not None and ctx.fbo is fbo:
                ctx.detect_framebuffer(0).use()
            fbo.release()
        for t in self.textures:
            t.release()
        self.fbos, self.textures = [], []


def make_sampler(ctx: moderngl.Context, channel: Channel) -> moderngl.Sampler:
    """A sampler with the channel's filter and wrap."""
    if channel.filter == "mipmap":
        filt = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    elif channel.filter == "nearest":
        filt = (moderngl.NEAREST, moderngl.NEAREST)
    else:
        filt = (moderngl.LINEAR, moderngl.LINEAR)
    repeat = channel.wrap == "repeat"
    return ctx.sampler(repeat_x=repeat, repeat_y=repeat, filter=filt)


#: Built-in texture names and their (width, height, seed); seed None: black.
GENERATED: dict[str, tuple[int, int, int | None]] = {
    "noise": (256, 256, 1),
    "noise_small": (64, 64, 2),
    "grey_noise": (256, 256, 3),
    "black": (1, 1, None),
}


def generated_pixels(name: str) -> np.ndarray:
    """The RGBA uint8 texels of built-in texture ``name``, row 0 first (GL's bottom row)."""
    w, h, seed = GENERATED[name]
    if seed is None:
        return np.tile(np.array([0, 0, 0, 255], np.uint8), (h, w, 1))
    rng = np.random.Generator(np.random.PCG64(seed))
    if name == "grey_noise":
        return np.repeat(rng.integers(0, 256, (h, w, 1), dtype=np.uint8), 4, axis=2)
    return rng.integers(0, 256, (h, w, 4), dtype=np.uint8)


class GeneratedTexture:
    """A built-in texture as a channel source: a still (position 0) made once, at setup."""

    position = 0.0

    def __init__(self, name: str, *, mipmaps: bool) -> None:
        self.name, self.mipmaps = name, mipmaps
        self.texture: Any = None

    def setup(self, ctx: moderngl.Context) -> None:
        if self.texture is None:
            pixels = generated_pixels(self.name)
            self.texture = ctx.texture((pixels.shape[1], pixels.shape[0]), 4, pixels.tobytes())
            if self.mipmaps:
                self.texture.build_mipmaps()

    def update(self, t: float) -> None:
        pass

    def close(self) -> None:
        texture, self.texture = self.texture, None
        if texture is not None:
            texture.release()


class SourceChannels:
    """The image, video and live inputs of a program, one VideoSource per distinct input.

    Inputs named by path are opened here (so a bad file fails before GL work),
    waiting ``input_timeout`` seconds at most for a stream, camera or pipe, and
    closed with the scene; VideoSource objects the caller passed are only used,
    never closed.
    """

    def __init__(self, channels: list[Channel], *, input_timeout: float = 10.0) -> None:
        self.sources: dict[tuple[object, ...], Any] = {}
        self.owned: list[Any] = []
        self.input_timeout = input_timeout
        for ch in channels:
            self.add(ch, channels)

    def add(self, ch: Channel, channels: list[Channel]) -> None:
        """The source of ``ch`` (one per distinct input; ``channels``: all, for their mipmap needs)."""
        from ..sources import VideoSource

        if ch.kind != "buffer" and self.key(ch) not in self.sources:
            key = self.key(ch)
            if ch.kind == "generated":
                mipmaps = any(c.filter == "mipmap" and self.key(c) == key for c in channels)
                src: Any = GeneratedTexture(str(ch.source), mipmaps=mipmaps)
                self.owned.append(src)
            elif isinstance(ch.source, str):
                mipmaps = any(c.filter == "mipmap" and self.key(c) == key for c in channels)
                src = VideoSource(ch.source, loop=ch.kind == "video", mipmaps=mipmaps, vflip=ch.vflip, srgb=ch.srgb,
                                  timeout=self.input_timeout, untrusted=ch.untrusted)  # fmt: skip
                self.owned.append(src)
            else:
                src = ch.source
                if any(c.filter == "mipmap" and self.key(c) == key for c in channels):
                    src.enable_mipmaps()
            self.sources[key] = src

    @staticmethod
    def key(ch: Channel) -> tuple[object, ...]:
        if ch.kind == "generated":
            return ("generated", ch.source)
        if isinstance(ch.source, str):
            return (ch.source, ch.vflip, ch.srgb, ch.untrusted)
        return (id(ch.source),)

    def setup(self, ctx: moderngl.Context) -> None:
        for src in self.sources.values():
            src.setup(ctx)  # idempotent: a source the caller already set up is left as it is

    def update(self, t: float) -> None:
        for src in self.sources.values():
            src.update(t)

    def close(self) -> None:
        owned, self.owned = self.owned, []
        for src in owned:
            src.close()
        self.sources = {}
