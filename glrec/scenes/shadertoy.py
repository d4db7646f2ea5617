"""Shadertoy shaders as pasted: one file, a folder of passes, or Shadertoy's JSON export.

Each pass gets Shadertoy's uniforms: ``iResolution``, ``iTime``,
``iTimeDelta``, ``iFrameRate``, ``iFrame``, ``iChannel0..3`` (with
``iChannelResolution`` and ``iChannelTime``), ``iMouse``, ``iDate`` and
``iSampleRate``, plus the legacy spellings ``iGlobalTime``, ``texture2D`` and
``gl_FragColor`` (a ``void main()`` shader runs as written). Buffers A-D render
before Image each frame, in float textures, with feedback; Common is compiled
into every pass. See :mod:`glrec.scenes.shadertoy_load` for the file layouts.

``iTime`` is the recording time ``t``; ``iFrame`` counts the frames this scene
has rendered; ``iDate`` is ``date`` (default: the wall clock when the scene
was set up) plus ``t``, so a recording is reproducible when ``date`` is given.
``iMouse`` follows Shadertoy's rules, fed from ``glrec serve``'s pointer
(:meth:`ShadertoyScene.on_input`): ``xy`` is where the left button is (or was last) held,
``z`` the click's x (negative once released) and ``w`` its y, positive only
in the frame the click happened.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

import moderngl

from ..errors import ConfigError, SceneError
from ..gl import glsl
from .shadertoy_channels import GENERATED, BufferTarget, SourceChannels, make_sampler
from .shadertoy_load import BUFFERS, Channel, Pass, Program, channel_from, load_program, pass_name

log = logging.getLogger("glrec")

SAMPLE_RATE = 44100.0
_MAIN = """void main() {
    vec4 c = vec4(0.0, 0.0, 0.0, 1.0);
    mainImage(c, gl_FragCoord.xy);
    glrec_colour = %s;
}
"""


class ShadertoyScene:
    """Render a Shadertoy program from ``path`` (a shader file, a folder of passes, or a ``.json`` export).

    ``channels`` binds inputs: ``{0: "image.png", 1: "clip.mp4", 2: "/dev/video0",
    3: "buffer_a"}`` for the Image pass, or ``{"Buffer A": {0: "buffer_a"}}``
    for another pass; a value may be a :class:`~glrec.sources.VideoSource` or a
    dict ``{"src": ..., "filter": "mipmap|linear|nearest", "wrap":
    "repeat|clamp", "vflip": True, "srgb": False}``. These override what a
    folder's ``shadertoy.toml`` or a JSON export binds. ``date`` fixes ``iDate``
    at ``t = 0``. ``trusted`` lets a JSON export name media outside its folder
    (refused for other shaders: they name nothing themselves). ``input_timeout``
    (default 10 s) bounds the waits for a channel that is a stream, camera or
    named pipe (``--input-timeout``).

    >>> scene = ShadertoyScene("toy.glsl", channels={0: "photo.jpg"})  # doctest: +SKIP
    >>> glrec.record(scene, "toy.mp4", seconds=5)  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | Path | Program,
        *,
        channels: dict[Any, Any] | None = None,
        date: dt.datetime | None = None,
        trusted: bool = False,
        input_timeout: float = 10.0,
    ) -> None:
        if trusted and isinstance(path, Program):
            raise ConfigError("trusted=True is for loading a Shadertoy export; this Program is loaded already.")
        self.program = path if isinstance(path, Program) else load_program(path, trusted=trusted)
        self.origin = self.program.origin
        self.path = Path(self.origin) if self.origin else None
        base = self.path.parent if self.path is not None and self.path.is_file() else (self.path or Path("."))
        self._bind(channels or {}, base)
        self._check_buffers()
        self._date = date
        self._sources = SourceChannels([ch for p in self.program.passes for ch in p.channels.values()],
                                       input_timeout=input_timeout)  # fmt: skip
        self._progs: list[moderngl.Program] = []
        self._vaos: list[moderngl.VertexArray] = []
        self._samplers: list[dict[int, moderngl.Sampler]] = []
        self._buffers: dict[str, BufferTarget] = {}
        self.ctx: moderngl.Context | None = None
        self.size = (0, 0)
        self._frame = 0
        self._last_t: float | None = None
        self._start: dt.datetime | None = None
        # iMouse state, in pixels from the bottom-left corner.
        self._mouse = [0.0, 0.0]
        self._click = [0.0, 0.0]
        self._down = False
        self._clicked = False

    # -- loading ---------------------------------------------------------------------------------

    def _bind(self, channels: dict[Any, Any], base: Path) -> None:
        by_name = {p.name: p for p in self.program.passes}
        for key, value in channels.items():
            if isinstance(key, str) and not key.isdigit() and not key.lower().startswith("ichannel"):
                name = pass_name(key)
                if name not in by_name:
                    raise SceneError(f"channels: {key!r} names no pass of {self.origin} (it has {', '.join(by_name)}).")
                if not isinstance(value, dict):
                    raise SceneError(f"channels[{key!r}] must be a dict of channel -> source.")
                for ch, src in value.items():
                    self._bind_one(by_name[name], ch, src, base)
            else:
                self._bind_one(self.program.image, key, value, base)

    @staticmethod
    def _bind_one(p: Pass, key: Any, value: Any, base: Path) -> None:
        text = str(key).lower().removeprefix("ichannel")
        if text not in ("0", "1", "2", "3"):
            raise SceneError(f"channels: {key!r} is not a channel; use 0..3.")
        where = f"{p.name} pass iChannel{text}"
        p.channels[int(text)] = channel_from(value, where, base)

    def _check_buffers(self) -> None:
        present = {p.name for p in self.program.passes}
        for p in self.program.passes:
            for i, ch in p.channels.items():
                if ch.kind == "buffer" and ch.source not in present:
                    raise SceneError(
                        f"{p.name} pass iChannel{i} reads {ch.source}, but {self.origin} has no {ch.source} pass."
                    )

    # -- Scene protocol --------------------------------------------------------------------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Compile every pass and open its channels, for frames of ``size``.

        A pass that does not compile raises ShaderError naming the pass.
        """
        self.ctx, self.size = ctx, size
        vertex = glsl.source("fullscreen.vert")
        for p in self.program.passes:
            prog = glsl.program(ctx, vertex, self._source(p), origin=f"{p.origin} ({p.name} pass)")
            self._progs.append(prog)
            self._vaos.append(ctx.vertex_array(prog, []))
            self._check_sampled(p, prog)
            self._samplers.append({i: make_sampler(ctx, ch) for i, ch in p.channels.items()})
        for name in BUFFERS:
            if any(p.name == name for p in self.program.passes):
                mip = any(c.kind == "buffer" and c.source == name and c.filter == "mipmap"
                          for p in self.program.passes for c in p.channels.values())  # fmt: skip
                self._buffers[name] = BufferTarget(ctx, size, mipmaps=mip)
        self._sources.setup(ctx)
        self._start = self._date or dt.datetime.now()

    def _source(self, p: Pass) -> str:
        legacy = "mainImage" not in p.code
        keep_alpha = p.name != "Image"  # Shadertoy shows the Image pass opaque; buffers keep alpha
        main = "" if legacy else _MAIN % ("c" if keep_alpha else "vec4(c.rgb, 1.0)")
        text = glsl.source("shadertoy.frag")
        return (
            text.replace("//__COMMON__", self.program.common).replace("//__USER__", p.code).replace("//__MAIN__", main)
        )

    def _check_sampled(self, p: Pass, prog: moderngl.Program) -> None:
        """An empty channel a pass samples reads black, as on shadertoy.com, and the log says how to bind one."""
        for i in range(4):
            if f"iChannel{i}" in prog and i not in p.channels:
                hint = f"--channel{i} PATH|noise (Python: channels={{{i}: ...}})" if p.name == "Image" else (
                    f"channels={{{p.name!r}: {{{i}: ...}}}} or the folder's shadertoy.toml"
                )  # fmt: skip
                log.warning(
                    "%s: the %s pass samples iChannel%d, which nothing is bound to: it reads black, as on "
                    "shadertoy.com; bind a file or a built-in texture (%s) with %s",
                    p.origin, p.name, i, ", ".join(GENERATED), hint,
                )  # fmt: skip
                p.channels[i] = Channel("black", "generated", "nearest", "clamp")
                self._sources.add(p.channels[i], [p.channels[i]])

    def render(self, t: float) -> None:
        """Run the buffer passes, then the Image pass into the frame, with Shadertoy's uniforms at time ``t``."""
        assert self.ctx is not None, "call setup() first"
        ctx = self.ctx
        target = ctx.fbo  # the recorder's frame: the Image pass draws here
        viewport = target.viewport if target is not None else (0, 0, *self.size)
        self._sources.update(t)
        for p, prog, vao, samplers in zip(self.program.passes, self._progs, self._vaos, self._samplers, strict=True):
            if p.name == "Image":
                if target is not None:
                    target.use()
                    target.viewport = viewport
            else:
                fbo = self._buffers[p.name].back_fbo
                fbo.use()
                fbo.viewport = (0, 0, *self.size)
            self._set_uniforms(prog, p, t)
            for unit, sampler in samplers.items():
                self._texture(p.channels[unit]).use(unit)
                sampler.use(unit)
            vao.render(moderngl.TRIANGLES, vertices=3)
            for unit, sampler in samplers.items():
                sampler.clear(unit)  # leave texture units without glrec's samplers for whoever draws next
            if p.name != "Image":
                self._buffers[p.name].swap()
        if target is not None:
            target.use()
            target.viewport = viewport
        self._frame += 1
        self._last_t = t
        self._clicked = False  # iMouse.w is positive in the click's frame only

    def _texture(self, ch: Channel) -> moderngl.Texture:
        if ch.kind == "buffer":
            return self._buffers[ch.source].front
        return self._sources.sources[SourceChannels.key(ch)].texture

    def _set_uniforms(self, prog: moderngl.Program, p: Pass, t: float) -> None:
        dt_s = float(t - self._last_t) if self._last_t is not None else 0.0
        assert self._start is not None
        now = self._start + dt.timedelta(seconds=float(t))
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        res, times = [], []
        for i in range(4):
            ch = p.channels.get(i)
            if ch is None:
                res.append((0.0, 0.0, 0.0))
                times.append(0.0)
                continue
            tex = self._texture(ch)
            res.append((float(tex.width), float(tex.height), 1.0))
            src = None if ch.kind == "buffer" else self._sources.sources[SourceChannels.key(ch)]
            times.append(float(src.position) if src is not None else 0.0)  # a video's playback time
        values: dict[str, Any] = {
            "iResolution": (float(self.size[0]), float(self.size[1]), 1.0),
            "iTime": float(t),
            "iTimeDelta": dt_s,
            "iFrameRate": 1.0 / dt_s if dt_s > 0 else 60.0,
            "iFrame": self._frame,
            "iMouse": (
                self._mouse[0],
                self._mouse[1],
                self._click[0] if self._down else -abs(self._click[0]),
                self._click[1] if self._clicked else -abs(self._click[1]),
            ),
            "iDate": (float(now.year), float(now.month - 1), float(now.day), (now - midnight).total_seconds()),
            "iSampleRate": SAMPLE_RATE,
            "iChannelResolution": res,
            "iChannelTime": times,
        }
        for i in range(4):
            values[f"iChannel{i}"] = i
        for name, value in values.items():
            if name in prog:
                uniform = prog[name]
                if isinstance(value, list):
                    # Drivers drop unused trailing array elements: set as many as are active.
                    n = uniform.array_length  # type: ignore[union-attr]
                    value = value[:n] if n > 1 else value[0]
                uniform.value = value  # type: ignore[union-attr]

    def on_input(self, event: Any) -> None:
        """Pointer events from ``glrec serve`` (x, y in 0..1 from the top-left) drive ``iMouse``."""
        if getattr(event, "kind", None) != "pointer":
            return
        x, y = event.x * self.size[0], (1.0 - event.y) * self.size[1]
        left = bool(event.buttons & 1)
        if event.action == "down" and left and not self._down:
            self._down, self._clicked = True, True
            self._mouse, self._click = [x, y], [x, y]
        elif event.action == "move" and self._down:
            self._mouse = [x, y]
        elif event.action == "up" or (self._down and not left):
            self._down = False

    def close(self) -> None:
        """Release the passes' programs, buffers and samplers, and close the channels' inputs; safe to call twice."""
        for objs in (self._vaos, self._progs):
            while objs:
                objs.pop().release()
        for samplers in self._samplers:
            for s in samplers.values():
                s.release()
        self._samplers = []
        for b in self._buffers.values():
            b.release()
        self._buffers = {}
        self._sources.close()
