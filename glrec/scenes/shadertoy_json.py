"""Shadertoy's JSON export read into a :class:`~glrec.scenes.shadertoy_load.Program` (see that module).

What Shadertoy's API returns (``{"Shader": {"renderpass": ...}}``, inputs with ``ctype``/``src``) or what
the site's export saves (a list of shaders, inputs with ``type``/``filepath``). Buffers are linked by their
output ids; media files are looked up next to the JSON by file name, inside the export's folder unless
``trusted``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._userfile import inside_folder
from ..errors import SceneError, UnsupportedInputError
from .shadertoy_load import (
    _UNSUPPORTED,
    BUFFERS,
    PASS_ORDER,
    Channel,
    Pass,
    Program,
    _check_code,
    _read_text,
    channel_from,
    pass_name,
)

__all__ = ["from_json"]

# Output ids Shadertoy gives buffers: the old numeric ones and the newer strings.
_BUFFER_IDS = {
    "257": "Buffer A",
    "258": "Buffer B",
    "259": "Buffer C",
    "260": "Buffer D",
    "4dxgr8": "Buffer A",
    "xsxgr8": "Buffer B",
    "4sxgr8": "Buffer C",
    "xdfgr8": "Buffer D",
}


def from_json(path: Path, trusted: bool = False) -> Program:
    """The program of the export at ``path`` (absolute); see the module docstring."""
    try:
        data = json.loads(_read_text(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SceneError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise SceneError(f"{path} is nested too deeply to be a Shadertoy export.") from None
    if isinstance(data, dict) and "Shader" in data:
        data = data["Shader"]
    if isinstance(data, list):
        if len(data) != 1:
            raise SceneError(f"{path} holds {len(data)} shaders; export one shader per file.")
        data = data[0]
    if not isinstance(data, dict) or not isinstance(data.get("renderpass"), list):
        raise SceneError(f"{path} is not a Shadertoy export (no 'renderpass' list).")
    ids: dict[str, str] = {}
    raw: dict[str, dict[str, Any]] = {}
    common = ""
    for n, rp in enumerate(data["renderpass"]):
        if not isinstance(rp, dict):
            raise SceneError(f"{path}: renderpass[{n}] is {_json_type(rp)}, not an object with code and inputs.")
        kind = str(rp.get("type", "")).lower()
        name = pass_name(str(rp.get("name", ""))) or {"image": "Image", "common": "Common"}.get(kind)
        if kind == "common" or name == "Common":
            common = _json_str(rp, "code", f"{path}: renderpass[{n}]")
            continue
        if kind == "sound":
            raise UnsupportedInputError(f"{path}: the Sound pass is not supported (glrec renders pictures only).")
        if kind == "cubemap" or name == "Cube A":
            raise UnsupportedInputError(f"{path}: the cubemap pass {rp.get('name')!r} is not supported.")
        if name not in PASS_ORDER:
            raise SceneError(f"{path}: unknown render pass {rp.get('name')!r} of type {kind!r}.")
        raw[name] = rp
        for out in _json_list(rp, "outputs", f"{path} ({name})"):
            if not isinstance(out, dict) or "id" not in out:
                raise SceneError(f"{path} ({name}): each of 'outputs' must be an object with an 'id', not {out!r}.")
            ids[str(out["id"]).lower()] = name
    if "Image" not in raw:
        raise SceneError(f"{path} has no Image pass.")
    passes = []
    for name in PASS_ORDER:
        if name not in raw:
            continue
        rp = raw[name]
        origin = f"{path} ({name})"
        code = _json_str(rp, "code", origin)
        _check_code(code, origin)
        p = Pass(name, code, origin)
        for inp in _json_list(rp, "inputs", origin):
            if not isinstance(inp, dict):
                raise SceneError(f"{origin}: each of 'inputs' must be an object, not {_json_type(inp)}.")
            ch = _json_channel(inp, origin)
            p.channels[ch] = _json_input(inp, f"{origin} iChannel{ch}", path.parent, ids, trusted)
        passes.append(p)
    return Program(passes, common, str(path))


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _json_str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise SceneError(f"{where}: '{key}' must be a string, not {_json_type(value)}.")
    return value


def _json_list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SceneError(f"{where}: '{key}' must be a list, not {_json_type(value)}.")
    return value


def _json_channel(inp: dict[str, Any], where: str) -> int:
    ch = inp.get("channel", 0)
    if isinstance(ch, bool) or not isinstance(ch, int) or not 0 <= ch <= 3:
        raise SceneError(f"{where}: an input's 'channel' must be 0, 1, 2 or 3, not {ch!r}.")
    return ch


def _json_input(inp: dict[str, Any], where: str, base: Path, ids: dict[str, str], trusted: bool = False) -> Channel:
    kind = str(inp.get("ctype") or inp.get("type") or "").lower()
    sampler = inp.get("sampler") or {}
    settings = {k: sampler[k] for k in ("filter", "wrap", "vflip", "srgb") if k in sampler}
    if kind == "buffer":
        ident = str(inp.get("id", "")).lower()
        target = ids.get(ident) or _BUFFER_IDS.get(ident)
        if target not in BUFFERS:
            raise SceneError(f"{where} reads a buffer with id {inp.get('id')!r} that no pass of the export writes.")
        return channel_from({"src": target, **settings}, where, base)
    if kind in _UNSUPPORTED:
        raise UnsupportedInputError(f"{where} is {_UNSUPPORTED[kind]}, which glrec does not support.")
    if kind == "webcam":
        raise UnsupportedInputError(
            f"{where} is the webcam; bind a camera or stream instead (channels={{N: '/dev/video0'}}, "
            "or --channelN /dev/video0)."
        )
    if kind not in ("texture", "video"):
        raise UnsupportedInputError(f"{where} is an input of type {kind!r}, which glrec does not support.")
    src = inp.get("src") or inp.get("filepath") or ""
    if not isinstance(src, str):
        raise SceneError(f"{where}: 'src' must be a file name, not {_json_type(src)}.")
    if len(src) > 4096 or "\0" in src:
        raise SceneError(f"{where}: 'src' is not a usable file name ({len(src)} characters).")
    name = Path(src).name
    for candidate in (base / name, base / src.lstrip("/"), base / "media" / name):
        if not name or not _is_file(candidate):
            continue
        if not trusted and not inside_folder(candidate, base):
            raise SceneError(
                f"{where} names {src!r}, which lies outside the export's folder {base}; an export's media must "
                "sit beside it. Move the file there, or load the export with trusted=True if you trust it."
            )
        channel = channel_from({"src": str(candidate.absolute()), **settings}, where, base)
        channel.untrusted = not trusted
        return channel
    raise UnsupportedInputError(
        f"{where} is the {kind} {src!r}, which is not next to the JSON file; save it as {base / name} "
        "or bind another file to this channel."
    )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system, say
        return False
