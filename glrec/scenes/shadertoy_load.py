"""Shadertoy programs from a shader file, a folder of passes, or Shadertoy's JSON export.

A program is a Common source and up to four buffer passes (Buffer A-D, each
rendered every frame into its own float texture, readable by any pass,
including itself for feedback) followed by the Image pass. Each pass binds up
to four channels (``iChannel0..3``) to an image, a video, a camera or stream,
or a buffer.

- **File**: one ``mainImage`` (or a legacy ``void main()`` writing
  ``gl_FragColor``); channels come from ``channels=`` / ``--channelN``.
- **Folder**: ``image.glsl`` plus optional ``common.glsl`` and
  ``buffer_a.glsl`` .. ``buffer_d.glsl`` (``.frag``/``.fs`` too; ``Buffer A``,
  ``buffera`` and ``buf_a`` spell the same pass), and an optional
  ``shadertoy.toml`` binding channels per pass::

      [image]
      iChannel0 = "buffer_a"
      iChannel1 = { src = "noise.png", filter = "mipmap", wrap = "repeat" }
      [buffer_a]
      iChannel0 = "buffer_a"          # its own last frame: feedback

- **JSON**: what Shadertoy's API returns (``{"Shader": {"renderpass": ...}}``,
  inputs with ``ctype``/``src``) or what the site's export saves (a list of
  shaders, inputs with ``type``/``filepath``). Buffers are linked by their
  output ids; media files are looked up next to the JSON by file name.

Inputs glrec cannot provide (sound, microphone, music, keyboard, cubemaps, 3D
textures) and cubemap passes fail here, naming the pass and channel.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SceneError, UnsupportedInputError

BUFFERS = ("Buffer A", "Buffer B", "Buffer C", "Buffer D")
PASS_ORDER = (*BUFFERS, "Image")
FILTERS = ("mipmap", "linear", "nearest")
WRAPS = ("repeat", "clamp")
#: Files that hold one Shadertoy pass; EXPORT_SUFFIXES: a whole shader exported from shadertoy.com.
SHADER_SUFFIXES = (".glsl", ".frag", ".fs")
EXPORT_SUFFIXES = (".json",)
_UNSUPPORTED = {
    "music": "a sound input (music)",
    "musicstream": "a sound input (SoundCloud)",
    "mic": "a sound input (microphone)",
    "keyboard": "the keyboard texture",
    "cubemap": "a cubemap",
    "volume": "a 3D texture",
}


@dataclass
class Channel:
    """What one ``iChannelN`` of one pass samples, and how (Shadertoy's sampler settings)."""

    source: Any  # "Buffer A".."Buffer D", a path or URL, or a VideoSource
    kind: str  # "buffer", "texture" (a still image), "video", "live", "generated" (a built-in texture)
    filter: str
    wrap: str
    vflip: bool = True
    srgb: bool = False
    untrusted: bool = False  # named by a downloaded export: read as that one file only


@dataclass
class Pass:
    name: str  # one of PASS_ORDER
    code: str
    origin: str  # where the code came from, for error messages
    channels: dict[int, Channel] = field(default_factory=dict)


@dataclass
class Program:
    passes: list[Pass]  # in render order: buffers A-D, then Image
    common: str = ""
    origin: str = ""

    @property
    def image(self) -> Pass:
        return self.passes[-1]


def pass_name(text: str) -> str | None:
    """Shadertoy's pass name for a file or table name (``buffer_a``, ``Buf A``, ``image``), or None."""
    key = re.sub(r"[^a-z0-9]", "", text.lower())
    key = key.replace("buffer", "buf")
    names = {"image": "Image", "common": "Common", "bufa": "Buffer A", "bufb": "Buffer B", "bufc": "Buffer C",
             "bufd": "Buffer D", "cubea": "Cube A", "sound": "Sound"}  # fmt: skip
    return names.get(key)


def channel_from(value: Any, where: str, base: Path) -> Channel:
    """A :class:`Channel` from a user's binding: a path/URL/buffer name, a VideoSource, or a dict with ``src``."""
    settings: dict[str, Any] = {}
    if isinstance(value, dict):
        settings = dict(value)
        if "src" not in settings:
            raise SceneError(f"{where}: a channel table needs src = 'file or buffer_a' (got {sorted(settings)}).")
        value = settings.pop("src")
        unknown = set(settings) - {"filter", "wrap", "vflip", "srgb"}
        if unknown:
            raise SceneError(f"{where}: unknown channel settings {sorted(unknown)}; valid: filter, wrap, vflip, srgb.")
    from .shadertoy_channels import GENERATED

    if isinstance(value, str) and not value.strip():
        raise SceneError(f"{where} is bound to an empty name; give a file, URL, camera or buffer_a..buffer_d.")
    if isinstance(value, str) and pass_name(value) in BUFFERS:
        kind, source = "buffer", pass_name(value)
    elif isinstance(value, str) and value in GENERATED:  # a built-in texture (a file of that name: ./noise)
        kind, source = "generated", value
    elif isinstance(value, str) and value.lower() in _UNSUPPORTED:
        raise UnsupportedInputError(f"{where} is bound to {_UNSUPPORTED[value.lower()]}, which glrec does not support.")
    elif isinstance(value, (str, Path)):
        from ..sources.video.media import IMAGE_SUFFIXES, is_url

        text = str(value)
        if is_url(text) or text.startswith("/dev/video"):
            kind, source = "live", text
        else:
            path = Path(text) if Path(text).is_absolute() else base / text
            kind = "texture" if path.suffix.lower() in IMAGE_SUFFIXES else "video"
            source = str(path)
    elif _is_video_source(value):  # a VideoSource made by the caller
        kind, source = ("live" if value.live else "video"), value
    else:
        raise SceneError(
            f"{where}: cannot bind {value!r}; use a file, URL, camera, buffer_a..buffer_d or a VideoSource."
        )
    # Shadertoy's defaults: textures are mipmapped and repeat, videos and buffers are linear and clamp.
    default_filter, default_wrap = ("mipmap", "repeat") if kind in ("texture", "generated") else ("linear", "clamp")
    filt = str(settings.get("filter", default_filter))
    wrap = str(settings.get("wrap", default_wrap))
    if filt not in FILTERS:
        raise SceneError(f"{where}: unknown filter {filt!r}. Valid: {', '.join(FILTERS)}.")
    if wrap not in WRAPS:
        raise SceneError(f"{where}: unknown wrap {wrap!r}. Valid: {', '.join(WRAPS)}.")
    return Channel(source, kind, filt, wrap, _flag(settings.get("vflip", True)), _flag(settings.get("srgb", False)))


def _is_video_source(value: Any) -> bool:
    from ..sources import VideoSource

    return isinstance(value, VideoSource)


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _channel_index(key: Any, where: str) -> int:
    text = str(key)
    m = re.fullmatch(r"(?:ichannel)?([0-3])", text.lower())
    if m is None:
        raise SceneError(f"{where}: {text!r} is not a channel; use iChannel0..iChannel3 (or 0..3).")
    return int(m.group(1))


def _check_code(code: str, origin: str) -> None:
    if "mainImage" in code:
        return
    if re.search(r"\bvoid\s+main\s*\(", code) and "gl_FragColor" in code:
        return  # a legacy shader: its own main() writing gl_FragColor
    if "mainSound" in code:
        raise UnsupportedInputError(f"{origin} is a sound shader (mainSound); glrec renders pictures only.")
    if "mainCubemap" in code:
        raise UnsupportedInputError(f"{origin} is a cubemap pass (mainCubemap), which glrec does not support.")
    raise SceneError(
        f"{origin}: no mainImage() found. A shader scene defines "
        "'void mainImage(out vec4 fragColor, in vec2 fragCoord)' as on Shadertoy."
    )


def _read_text(path: Path) -> str:
    """A shader (or manifest) file's text; not UTF-8 or unreadable is a SceneError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1]
        raise SceneError(
            f"Shader file {str(path)!r} is not UTF-8 text (byte {exc.start} is {bad!r}); "
            "save it as UTF-8 (GLSL itself is ASCII)."
        ) from None
    except OSError as exc:
        raise SceneError(f"Cannot read {str(path)!r}: {exc.strerror}.") from None


def load_program(path: str | Path, *, trusted: bool = False) -> Program:
    """Read a Shadertoy program from a shader file, a folder of passes, or a JSON export.

    Media an export names (a downloaded file, so its names are not the user's) resolve inside the
    export's own folder only and are read as single files (no playlist that names others);
    ``trusted=True`` lets them name any file. A shader file or folder binds only what the user
    names, so ``trusted`` is refused for them rather than ignored.
    """
    p = Path(path)
    if not p.exists():
        raise SceneError(f"Shader {str(p)!r} does not exist; check the path.")
    if trusted and (p.is_dir() or p.suffix.lower() != ".json"):
        raise ConfigError(
            f"--trust-export (trusted=True) is for Shadertoy exports (.json); {str(p)!r} is a shader "
            f"{'folder' if p.is_dir() else 'file'}, whose channels you bind yourself. Leave the option out."
        )
    if p.is_dir():
        return _from_folder(p)
    if p.suffix.lower() == ".json":
        from .shadertoy_json import from_json  # the export's reader, loaded when an export is read

        return from_json(p.absolute(), trusted)
    code = _read_text(p)
    _check_code(code, str(p))
    return Program([Pass("Image", code, str(p))], origin=str(p))


def _from_folder(folder: Path) -> Program:
    files: dict[str, Path] = {}
    for f in sorted(folder.iterdir()):
        name = pass_name(f.stem) if f.suffix.lower() in SHADER_SUFFIXES else None
        if name is None:
            continue
        if name in ("Cube A", "Sound"):
            raise UnsupportedInputError(f"{f} is a {name} pass, which glrec does not support; remove it.")
        if name in files:
            raise SceneError(f"{folder}: both {files[name].name} and {f.name} are the {name} pass; keep one.")
        files[name] = f
    if "Image" not in files:
        raise SceneError(f"{folder} has no image.glsl; a Shadertoy folder needs the Image pass (image.glsl).")
    passes = []
    for name in PASS_ORDER:
        if name in files:
            code = _read_text(files[name])
            _check_code(code, str(files[name]))
            passes.append(Pass(name, code, str(files[name])))
    program = Program(passes, _read_text(files["Common"]) if "Common" in files else "", str(folder))
    manifest = folder / "shadertoy.toml"
    if manifest.is_file():
        _apply_manifest(program, manifest, folder)
    return program


def _apply_manifest(program: Program, manifest: Path, base: Path) -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 has the backport (a dependency there)
        import tomli as tomllib
    try:
        table = tomllib.loads(_read_text(manifest))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SceneError(f"{manifest} is not valid TOML: {exc}") from None
    except RecursionError:
        raise SceneError(f"{manifest} is nested too deeply to be a channel table.") from None
    by_name = {p.name: p for p in program.passes}
    for key, bindings in table.items():
        name = pass_name(key)
        if name not in by_name:
            raise SceneError(f"{manifest}: [{key}] names no pass of this folder (it has {', '.join(by_name)}).")
        if not isinstance(bindings, dict):
            raise SceneError(f"{manifest}: [{key}] must be a table of iChannelN = source.")
        for ch, value in bindings.items():
            where = f"{manifest} [{key}] {ch}"
            by_name[name].channels[_channel_index(ch, where)] = channel_from(value, where, base)
