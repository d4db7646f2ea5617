"""The dataset spec: a TOML file (or dict) naming the scene, the samples, the outputs and the parameters.

::

    [dataset]
    scene = "table"          # built-in name, or file.py:Class
    samples = 1000
    size = "640x480"
    seed = 2024              # the meta-seed every sample seed derives from
    shard_size = 100         # samples per shard (the unit of resume and of Ray tasks)
    frames = 1               # 1: images; N > 1: clips of N frames
    fps = 30                 # clips only

    [output]
    layout = "webdataset"    # or "folder"
    passes = ["rgb", "depth", "instance", "semantic", "normal"]
    rgb = "png"              # or "jpg"
    depth = "npy"            # float32, or "png16" (uint16 of depth * depth_scale)
    normal = "png"           # 8-bit (n + 1) / 2, or "npy" (float32)

    [params]
    objects = { int = [3, 8] }

Every key is checked; an unknown one is an error that lists the valid ones.

A spec whose scene is a Python file (``scene = "my_scene.py:MyScene"``) runs
that file's code when the dataset is made, as ``glrec record my_scene.py``
does. So the file must be inside the spec's folder (after following links);
a scene elsewhere is refused unless ``allow_scene_outside=True``
(``--allow-scene-outside``) says the user trusts it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..._userfile import inside_folder
from ...errors import ConfigError
from ...options import check_choice, parse_size
from ...scenes.passes import PASS_ROWS, PASSES
from .params import Distribution, parse_param

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has the backport (a dependency there)
    import tomli as tomllib

__all__ = ["MAX_SAMPLES", "PASSES", "DatasetSpec", "OutputSpec"]

#: Every pass a dataset can hold, in the order of the render targets (fragment output locations).
LAYOUTS = ("webdataset", "folder")
RGB_FORMATS = PASS_ROWS["rgb"].encodings
DEPTH_FORMATS = PASS_ROWS["depth"].encodings
NORMAL_FORMATS = PASS_ROWS["normal"].encodings
VIDEO_CODECS = ("h264", "hevc")
#: What ``[output] digest`` takes (glrec.dataset.files.digests).
DIGESTS = ("blake3", "sha256", "none")
#: Bytes of render target per pixel: every G-buffer target exists whatever passes are written
#: (RGBA8 + R32F + 2 x R32UI + RGBA32F + a 32-bit depth buffer); see glrec.scenes.passes.
GBUFFER_BYTES_PER_PIXEL = 36
#: The most G-buffer one sample may need (a 16384x16384 sample would need 9.7 GB).
MAX_GBUFFER_BYTES = 4 << 30
#: The most samples a spec may have: TOML's largest integer, and Python's largest ``len()``. It is
#: the count of an endless training stream (at a million samples a second it lasts 292,000 years).
MAX_SAMPLES = 2**63 - 1


@dataclass(frozen=True)
class OutputSpec:
    """What is written per sample, and how. Defaults: all passes, webdataset shards, PNG colour."""

    layout: str = "webdataset"
    passes: tuple[str, ...] = PASSES
    rgb: str = "png"
    rgb_encoder: str = "cpu"  # an encoder row that makes JPEG (cpu, gl, nvjpeg) or a registered colour encoder
    jpeg_quality: int = 90
    png_compression: int = 2  # zlib-ng's levels: 0 stores, 1 fastest, 9 smallest (glrec.encoders.png.writer)
    depth: str = "npy"
    depth_scale: float = 1000.0  # png16 units per scene unit (1000: millimetres of metres)
    normal: str = "png"
    video_codec: str = "h264"
    video_crf: float = 18.0
    #: The manifest's file digests and the shard records': blake3, sha256 or none (glrec.dataset.files.digests);
    #: None: blake3 for a new dataset, a resumed one's own.
    digest: str | None = None

    def check(self) -> None:
        """Raise ConfigError, naming the field, where the ``[output]`` table cannot be written.

        Checked: layout, passes, file formats, JPEG quality, PNG compression, digest.
        """
        check_choice("output layout", self.layout, LAYOUTS)
        if not isinstance(self.passes, (tuple, list)):
            raise ConfigError(f'[output] passes {_shown(self.passes)} must be a list, e.g. ["rgb", "depth"].')
        if not self.passes or "rgb" not in self.passes:
            raise ConfigError(f"output passes {list(self.passes)} must include 'rgb'.")
        for p in self.passes:
            check_choice("pass", p, tuple(PASS_ROWS))
        if len(set(self.passes)) != len(self.passes):
            raise ConfigError(f"output passes {list(self.passes)} name a pass twice.")
        check_choice("rgb format", self.rgb, RGB_FORMATS)
        if not isinstance(self.rgb_encoder, str) or not self.rgb_encoder:
            raise ConfigError(f'[output] rgb_encoder {self.rgb_encoder!r} must be an encoder name, e.g. "cpu".')
        for row in PASS_ROWS.values():  # each [output] key that picks a pass's file encoding
            if row.option is not None and row.option != "rgb":
                check_choice(f"{row.option} format", getattr(self, row.option), row.encodings)
        check_choice("video codec", self.video_codec, VIDEO_CODECS)
        if self.digest is not None:
            check_choice("digest", self.digest, DIGESTS)
        whole_number("[output] jpeg_quality", self.jpeg_quality, 1, 100, "90")
        whole_number("[output] png_compression", self.png_compression, 0, 9, "2")
        real_number("[output] depth_scale", self.depth_scale, "1000 for millimetres of metres", positive=True)
        real_number("[output] video_crf", self.video_crf, "18")
        # The clip's encoding options are the recorder's own, checked by the same declarations.
        from ...options import VideoOptions

        VideoOptions.create(codec=self.video_codec, crf=self.video_crf)


@dataclass(frozen=True)
class DatasetSpec:
    """A validated dataset spec. Build with :meth:`load` (TOML file) or :meth:`from_dict`.

    >>> spec = DatasetSpec.from_dict({"dataset": {"scene": "table", "samples": 8, "size": "64x48", "seed": 1}})
    >>> spec.shards
    1
    """

    scene: str
    samples: int
    size: tuple[int, int]
    seed: int
    shard_size: int = 100
    frames: int = 1
    fps: float = 30.0
    output: OutputSpec = field(default_factory=OutputSpec)
    params: dict[str, Any] = field(default_factory=dict)  # the [params] table as written
    base_dir: str = "."  # where a relative scene file is looked up (the spec's folder)
    allow_scene_outside: bool = False  # a scene file outside base_dir may run (the user trusts it)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, allow_scene_outside: bool = False) -> DatasetSpec:
        """Read and validate a TOML spec file."""
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigError(f"Dataset spec {path!r} must be the path of a TOML file (or a DatasetSpec).")
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"Dataset spec {str(p)!r} does not exist; check the path.") from None
        except IsADirectoryError:
            raise ConfigError(f"Dataset spec {str(p)!r} is a folder; give the spec's TOML file.") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Dataset spec {str(p)!r} is not valid TOML: {exc}.") from None
        except RecursionError:
            raise ConfigError(f"Dataset spec {str(p)!r} nests tables or lists too deeply to read.") from None
        except OSError as exc:
            raise ConfigError(f"Dataset spec {str(p)!r} cannot be read ({exc.strerror or exc}).") from None
        return cls.from_dict(data, base_dir=p.resolve().parent, allow_scene_outside=allow_scene_outside)

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], base_dir: str | os.PathLike[str] = ".", *, allow_scene_outside: bool = False
    ) -> DatasetSpec:
        """Validate a spec given as nested dicts (the TOML's tables)."""
        if not isinstance(data, dict):
            raise ConfigError(
                f"A dataset spec is a table of tables ([dataset], [output], [params]), not {_shown(data)}."
            )
        check_flag("allow_scene_outside", allow_scene_outside)
        _only(data, {"dataset", "output", "params"}, "top-level table")
        ds = _table(data, "dataset", 'scene = "table", samples = 100, seed = 1')
        _only(ds, {"scene", "samples", "size", "seed", "shard_size", "frames", "fps"}, "[dataset] key")
        for key in ("scene", "samples", "seed"):
            if key not in ds:
                raise ConfigError(f'[dataset] needs {key!r}, e.g. scene = "table", samples = 100, seed = 1.')
        out = _table(data, "output", 'rgb = "jpg"')
        _only(out, set(OutputSpec.__dataclass_fields__), "[output] key")
        if "passes" in out:
            if not isinstance(out["passes"], list):
                raise ConfigError(f'[output] passes {out["passes"]!r} must be a list, e.g. ["rgb", "depth"].')
            out["passes"] = tuple(out["passes"])
        output = OutputSpec(**out)  # the keys are the fields (checked above); the values are checked next
        spec = cls(
            scene=ds["scene"],
            samples=ds["samples"],
            size=parse_size(ds.get("size", "640x480")),
            seed=ds["seed"],
            shard_size=ds.get("shard_size", 100),
            frames=ds.get("frames", 1),
            fps=ds.get("fps", 30.0),
            output=output,
            params=_table(data, "params", "objects = { int = [3, 8] }"),
            base_dir=str(base_dir),
            allow_scene_outside=allow_scene_outside,
        )
        spec.check()
        return spec

    def check(self) -> None:
        """Raise ConfigError for any value glrec cannot use."""
        if not isinstance(self.scene, str) or not self.scene:
            raise ConfigError(f"scene {self.scene!r} must be a built-in name or file.py:Class.")
        for name, lo in (("samples", 1), ("shard_size", 1), ("frames", 1), ("seed", 0)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ConfigError(f"{name} {v!r} must be a whole number of at least {lo}.")
        if self.samples > MAX_SAMPLES:
            raise ConfigError(
                f"samples {self.samples} is more than {MAX_SAMPLES} (2**63 - 1, TOML's largest integer), which is "
                "the endless stream's count; use at most that."
            )
        w, h = parse_size(self.size)
        if not isinstance(self.size, tuple):
            raise ConfigError(f'size {self.size!r} must be a (width, height) tuple here; a spec file says "640x480".')
        if w > 16384 or h > 16384:
            raise ConfigError(f"size {w}x{h} must be between 1x1 and 16384x16384.")
        need = w * h * GBUFFER_BYTES_PER_PIXEL
        if need > MAX_GBUFFER_BYTES:
            raise ConfigError(
                f"size {w}x{h} needs {need / 1e9:.1f} GB of render targets per sample "
                f"({GBUFFER_BYTES_PER_PIXEL} bytes a pixel), more than glrec's {MAX_GBUFFER_BYTES / 1e9:.1f} GB "
                "limit; use at most 8192x8192 (or render tiles as separate samples)."
            )
        if self.frames > 1 and (w % 2 or h % 2):
            raise ConfigError(f"size {w}x{h} must be even in both dimensions for clips (4:2:0 video).")
        real_number("[dataset] fps", self.fps, "30")
        if not 0 < self.fps <= 1000:
            raise ConfigError(f"fps {self.fps!r} must be a number in (0, 1000], e.g. 30.")
        if not isinstance(self.output, OutputSpec):
            raise ConfigError(f"output {_shown(self.output)} must be an OutputSpec (the [output] table).")
        self.output.check()
        if not isinstance(self.params, dict):
            raise ConfigError(f"params {_shown(self.params)} must be a table of parameters (the [params] table).")
        self.distributions()
        check_flag("allow_scene_outside", self.allow_scene_outside)
        self._check_scene_place()

    def _check_scene_place(self) -> None:
        p = self.scene_path()
        if p is None or self.allow_scene_outside:
            return
        base = Path(self.base_dir).resolve()
        if not inside_folder(p, base):
            raise ConfigError(
                f"The spec's scene {self.scene!r} is outside the spec's folder ({base}). A spec that names a "
                "Python scene runs that file's code, so glrec runs only files beside the spec; move the scene "
                "there, or pass --allow-scene-outside (allow_scene_outside=True) if you trust it."
            )

    # -- derived -----------------------------------------------------------------------------

    @property
    def shards(self) -> int:
        """How many shards the samples make."""
        return -(-self.samples // self.shard_size)

    @property
    def is_clip(self) -> bool:
        """Whether each sample is a clip of ``frames`` > 1 frames (``rgb.mp4`` and stacks) rather than one picture."""
        return self.frames > 1

    def shard_range(self, shard: int) -> range:
        """The sample indices of ``shard``."""
        return range(shard * self.shard_size, min(self.samples, (shard + 1) * self.shard_size))

    def key(self, index: int) -> str:
        """The sample's key: its index, zero-padded to the width of the largest index (at least 6)."""
        return f"{index:0{self._key_width}d}"

    @functools.cached_property
    def _key_width(self) -> int:  # once per spec: the keys of a batch are made per sample
        return max(6, len(str(self.samples - 1)))

    def distributions(self) -> dict[str, Distribution]:
        """Each ``[params]`` entry parsed into the distribution (or constant) it names.

        A malformed entry raises ConfigError naming it.
        """
        return {name: parse_param(name, value) for name, value in self.params.items()}

    def scene_path(self) -> Path | None:
        """The scene's Python file when the scene is a file (resolved against the spec's folder)."""
        path_text = self.scene.partition(":")[0]
        if not path_text.endswith(".py"):
            return None
        p = Path(path_text)
        return p if p.is_absolute() else Path(self.base_dir) / p

    def scene_ref(self) -> str:
        """The scene as :func:`glrec.scenes.load_scene` takes it, with a file resolved to an absolute path."""
        p = self.scene_path()
        if p is None:
            return self.scene
        _, colon, name = self.scene.partition(":")
        return str(p.resolve()) + (colon + name)

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (what ``dataset.json`` records)."""
        d = asdict(self)
        d["size"] = list(self.size)
        d["output"]["passes"] = list(self.output.passes)
        d.pop("base_dir")
        d.pop("allow_scene_outside")
        return d

    def identity(self) -> str:
        """A hash of everything that decides the dataset's content, including a scene file's text.

        Two specs with the same identity make the same dataset; ``--resume`` requires it. The digest is not
        part of it (it names how files are checked, not what they hold; a resumed folder keeps its own).
        """
        d = self.to_dict()
        d["output"].pop("digest")
        p = self.scene_path()
        if p is not None and p.is_file():
            d["scene_file_sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

    def with_(self, **changes: Any) -> DatasetSpec:
        """A copy with fields changed, validated again."""
        spec = replace(self, **changes)
        spec.check()
        return spec


def _table(data: dict[str, Any], name: str, example: str) -> dict[str, Any]:
    """The table ``[name]`` of the spec (empty if absent); anything else there is a ConfigError naming it."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"[{name}] must be a table (a [{name}] section, e.g. {example}), not {_shown(table)}.")
    return dict(table)


def _shown(value: object) -> str:
    """``value`` for a message: its repr, cut short (a spec may hold a long list)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def whole_number(what: str, value: object, lo: int, hi: int | None, example: str) -> int:
    """``value`` if it is an int (not a bool, not a float) in ``lo..hi``, else a ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} {_shown(value)} must be a whole number, e.g. {example} (no quotes, no fraction).")
    if hi is None and value < lo:
        raise ConfigError(f"{what} {value} must be at least {lo}; e.g. {example}.")
    if hi is not None and not lo <= value <= hi:
        raise ConfigError(f"{what} {value} is outside {lo}..{hi}; e.g. {example}.")
    return value


def real_number(what: str, value: object, example: str, *, positive: bool = False) -> float:
    """``value`` if it is a finite int or float (not a bool, not text), else a ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{what} {_shown(value)} must be a number, e.g. {example} (no quotes).")
    if not math.isfinite(value):
        raise ConfigError(f"{what} {value!r} must be a finite number, e.g. {example}.")
    if positive and not value > 0:
        raise ConfigError(f"{what} {value!r} must be positive, e.g. {example}.")
    return float(value)


def check_flag(what: str, value: object) -> bool:
    """``value`` if it is True or False; a string such as "False" from a config file is refused, not read as true."""
    if not isinstance(value, bool):
        raise ConfigError(f"{what} {_shown(value)} must be True or False.")
    return value


def _only(table: dict[str, Any], valid: set[str], what: str) -> None:
    unknown = sorted(set(table) - valid)
    if unknown:
        raise ConfigError(f"Unknown {what} {unknown[0]!r}. Valid: {', '.join(sorted(valid))}.")
