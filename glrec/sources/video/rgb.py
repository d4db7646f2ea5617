"""Plane textures -> one RGBA8 texture, with the stream's own matrix and range, on the GPU.

The planes hold the picture as the decoder wrote it (rows top-down, chroma at
its own resolution and bit depth). A full-screen pass with
``shaders/yuv_to_rgb.frag`` samples them (nearest: each pixel gets the chroma
sample it was coded with, read back as its integer code, so the same samples
give the same RGB whichever layout held them, FFmpeg's planar or NVDEC's
NV12/P016; linear: the texture unit interpolates chroma), applies the
YUV -> RGB matrix and writes rows bottom-up, the row order of glrec's render
targets: the texture can be drawn, sampled by a scene (``uv.y`` up) or handed
to the convert stage like any rendered frame.
"""

from __future__ import annotations

import logging
import math

import moderngl
import numpy as np

from ...gl import glsl
from .formats import PlaneFormat, yuv_to_rgb

log = logging.getLogger("glrec")

GL_SRGB8_ALPHA8 = 0x8C43


class RgbPass:
    """Owns the RGBA output texture (``texture``) and the program that fills it from plane textures.

    ``mipmaps=True`` rebuilds the mipmap chain after every picture (for
    ``textureLod`` and minifying samplers). ``top_down=True`` stores the top
    row first (Shadertoy's ``vflip`` off). ``srgb=True`` makes the texture
    sRGB-encoded, so sampling it returns linear values (Shadertoy's ``srgb``).
    """

    def __init__(self, ctx: moderngl.Context, *, mipmaps: bool = False, top_down: bool = False,
                 srgb: bool = False) -> None:  # fmt: skip
        self.ctx = ctx
        self.mipmaps = mipmaps
        self.srgb = srgb
        self.top_down = top_down
        # One program per plane layout (made when a format first needs it): fetches and swizzles written in.
        self._programs: dict[tuple[object, ...], tuple[moderngl.Program, moderngl.VertexArray]] = {}
        self._prog: moderngl.Program | None = None
        self._vao: moderngl.VertexArray | None = None
        self.texture: moderngl.Texture | None = None
        self._fbo: moderngl.Framebuffer | None = None
        self._key: tuple[object, ...] | None = None
        self._exact: dict[int, int] = {}  # program -> the exact_codes value it holds
        self.colour_name = ""

    def configure(self, fmt: PlaneFormat, colorspace: int, full_range: bool, size: tuple[int, int],
                  rotation: int = 0, plane_sizes: list[tuple[int, int]] | None = None) -> None:  # fmt: skip
        """Set the uniforms for a format and colour, and (re)make the output for ``size`` (the picture's).

        ``rotation`` (degrees, counter-clockwise, a multiple of 90) is the stream's display rotation; the
        output is the picture as it should be shown, so 90 and 270 swap its width and height.
        """
        key = (fmt.name, colorspace, full_range, size, rotation, tuple(plane_sizes or ()))
        if key == self._key:
            return
        self._key = key
        self._prog, self._vao = self._program(fmt)
        conv = yuv_to_rgb(colorspace, full_range, fmt.bits)
        neutral = (float(conv.offset[1]), float(conv.offset[2]))
        values = {
            "fixed_value": tuple(float(v) for v in fmt.constants(neutral)),
            "value_scale": fmt.value_scale(),
            **code_uniforms(fmt),
            "is_rgb": int(fmt.rgb),
            "yuv_matrix": tuple(float(v) for v in conv.matrix.T.reshape(-1)),
            "yuv_offset": tuple(float(v) for v in conv.offset),
            "yuv_scale": tuple(float(v) for v in conv.scale),
            "orient": _orientation(rotation),
            "plane_scale": _plane_scales(fmt, size, plane_sizes),
        }
        for name, value in values.items():
            if name in self._prog:
                uniform = self._prog[name]
                n = getattr(uniform, "array_length", 1)
                if isinstance(value, list) and n < len(value):  # unused trailing elements are dropped
                    value = value[:n] if n > 1 else value[0]
                uniform.value = value  # type: ignore[union-attr]
        self.colour_name = "rgb" if fmt.rgb else conv.name
        shown = (size[1], size[0]) if rotation % 180 else size
        if self.texture is None or self.texture.size != shown:
            self._release_output()
            # The pass writes encoded values either way: an sRGB target is written without conversion
            # (GL_FRAMEBUFFER_SRGB stays off) and decoded to linear when sampled.
            fmt_args = {"internal_format": GL_SRGB8_ALPHA8} if self.srgb else {}
            self.texture = self.ctx.texture(shown, 4, dtype="f1", **fmt_args)
            self.texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
            self._fbo = self.ctx.framebuffer(color_attachments=[self.texture])
        log.debug("source pass: %s %dx%d, %s, rotation %d", fmt.name, *size, self.colour_name, rotation)

    def _program(self, fmt: PlaneFormat) -> tuple[moderngl.Program, moderngl.VertexArray]:
        key = (len(fmt.textures), fmt.picks)
        if key not in self._programs:
            fragment = glsl.source("yuv_to_rgb.frag").replace("//__FETCH__", fetch_code(fmt))
            prog = glsl.program(self.ctx, glsl.source("fullscreen.vert"), fragment, origin="yuv_to_rgb.frag")
            for unit in range(len(fmt.textures)):
                prog[f"plane{unit}"].value = unit  # type: ignore[union-attr]
            prog["top_down"].value = int(self.top_down)  # type: ignore[union-attr]
            self._programs[key] = (prog, self.ctx.vertex_array(prog, []))
        return self._programs[key]

    def run(self, planes: list[moderngl.Texture]) -> None:
        """Convert ``planes`` into :attr:`texture` (queued on the GPU); the caller's framebuffer stays bound."""
        assert self._fbo is not None and self.texture is not None, "configure() first"
        previous = self.ctx.fbo
        viewport = previous.viewport if previous is not None else None
        self._fbo.use()
        self._fbo.viewport = (0, 0, *self.texture.size)
        self.draw(planes)
        if previous is not None:
            previous.use()
            if viewport is not None:
                previous.viewport = viewport
        if self.mipmaps:
            self.texture.build_mipmaps()

    def draw(self, planes: list[moderngl.Texture]) -> None:
        """Convert ``planes`` straight into the bound framebuffer's viewport (no texture in between)."""
        assert self._vao is not None and self._prog is not None, "configure() first"
        # Stored samples (nearest filtering) are read back as their integer codes; filtered ones are scaled.
        exact = int(all(tex.filter[0] == moderngl.NEAREST for tex in planes))
        if self._exact.get(self._prog.glo) != exact:
            self._exact[self._prog.glo] = exact
            self._prog["exact_codes"].value = exact  # type: ignore[union-attr]
        for unit, tex in enumerate(planes):
            tex.use(unit)
        self._vao.render(moderngl.TRIANGLES, vertices=3)

    def _release_output(self) -> None:
        fbo, self._fbo = self._fbo, None
        if fbo is not None:
            if self.ctx.fbo is fbo:  # see RenderTarget.release: never leave a deleted framebuffer current
                self.ctx.detect_framebuffer(0).use()
            fbo.release()
        tex, self.texture = self.texture, None
        if tex is not None:
            tex.release()

    def release(self) -> None:
        """Release the output texture and the program. Safe twice."""
        self._release_output()
        programs, self._programs = self._programs, {}
        self._exact.clear()
        for prog, vao in programs.values():
            vao.release()
            prog.release()
        self._prog = self._vao = None


def code_uniforms(fmt: PlaneFormat) -> dict[str, float]:
    """How the shader turns a nearest-sampled texture value back into the sample's code (see yuv_to_rgb.frag).

    ``unorm_max`` undoes the texture's normalisation, ``code_div`` drops the low bits of a
    high-aligned 16-bit sample (P010/P016) and ``code_top`` is the code range, ``2**bits - 1``.
    """
    nbytes = fmt.textures[0][1]
    return {
        "unorm_max": 255.0 if nbytes == 1 else 65535.0,
        "code_div": float(1 << (16 - fmt.bits)) if fmt.msb and nbytes == 2 else 1.0,
        "code_top": float((1 << fmt.bits) - 1),
    }


def fetch_code(fmt: PlaneFormat) -> str:
    """GLSL that samples each plane texture once and assigns ``raw``'s channels from the components."""
    lines = [f"    vec4 s{i} = texture(plane{i}, p * plane_scale[{i}]);" for i in range(len(fmt.textures))]
    parts = [f"s{pick[0]}.{'rgba'[pick[1]]}" if pick is not None else "0.0" for pick in fmt.picks]
    lines.append(f"    raw = vec4({', '.join(parts)});")
    return "\n".join(lines)


def _plane_scales(
    fmt: PlaneFormat, size: tuple[int, int], plane_sizes: list[tuple[int, int]] | None
) -> list[tuple[float, float]]:
    """Per texture, picture coordinates -> texture coordinates.

    A subsampled plane of an odd-sized picture covers one pixel more than the
    picture (33 pixels have 17 chroma samples, for 34), so its coordinates are
    scaled to keep each sample over the pixels it belongs to.
    """
    out = []
    for i in range(4):
        if plane_sizes is None or i >= len(plane_sizes):
            out.append((1.0, 1.0))
            continue
        _, _, sx, sy = fmt.textures[i]
        w, h = plane_sizes[i]
        out.append((size[0] / (w * sx), size[1] / (h * sy)))
    return out


def _orientation(rotation: int) -> tuple[float, float, float, float]:
    """Column-major 2x2 that maps shown picture coordinates to stored ones (y down), for a CCW ``rotation``."""
    a = math.radians(rotation % 360)
    c, s = round(math.cos(a)), round(math.sin(a))
    # Stored = R(-rotation) * shown in a y-down frame; written out as columns.
    m = np.array([[c, -s], [s, c]], np.float64)
    return tuple(float(v) for v in m.T.reshape(-1))  # type: ignore[return-value]
