"""The generated pages of the site: the API reference, the CLI, the options, the errors, and the home page.

Each is made from the code at build time (``docs/tools/hooks.py`` adds them to
the site), so none can fall behind it:

- the API pages list every name in the ``__all__`` of the documented modules
  (:data:`API`), rendered by mkdocstrings from the docstrings (read statically
  with griffe: no GL, no optional extra needed), and the keywords a function
  takes through ``**options: Unpack[...]`` as a table from the option
  declarations;
- the CLI page is each command's ``--help``, from the argparse parsers;
- the options page is ``python -m glrec.options`` (``docs/options.md`` holds the
  same text for readers of the repository; a test checks they agree);
- the errors page is the hierarchy of :mod:`glrec.errors`, walked at run time;
- the home page is the README, its links into ``docs/`` made site links;
- the benchmarks page is ``benchmarks/README.md``, as it is.

:func:`undocumented` lists the public names without a docstring (the hook makes
each a warning, so ``mkdocs build --strict`` fails on one).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(__file__).resolve().parent

#: The documented modules, in the order of the reference: (module, what a user finds there).
API: list[tuple[str, str]] = [
    ("glrec", "The front door: record a scene, write frames, transcode a video; the recorders and their results."),
    (
        "glrec.gym",
        "Gymnasium wrappers: drop-ins for `gymnasium.wrappers.RecordVideo`, one env or a vector env "
        "(`pip install glrec[gym]`).",
    ),
    ("glrec.batch", "Batches of frames from vectorised environments: per-env files, a grid, clips by outcome."),
    ("glrec.dataset", "Synthetic datasets: specs, shards on disk, and the stream of batches for training."),
    ("glrec.stream", "Live streaming: the frame clock, network sinks, the browser viewer and its input events."),
    (
        "glrec.process",
        "Processing stages: your function (torch, CuPy, numpy, OpenCL) on every frame, and the "
        "shapes GL draws over it.",
    ),
    ("glrec.scenes", "Scenes: the protocol, the built-in scenes, shader and Shadertoy scenes."),
    ("glrec.sources", "Video, image, network and camera inputs."),
    ("glrec.encoders", "For writing an encoder: the protocol every encoder row implements, and its packets."),
    ("glrec.sinks", "For writing a sink: the protocol, and the table of outputs (extension to sink)."),
]

#: Public names that live outside a documented module's ``__all__``: (page module, dotted path).
EXTRA: list[tuple[str, str]] = [
    ("glrec", "glrec.cuda.pool.DeviceFrame"),
    ("glrec", "glrec.gl.leaks.snapshot"),
]


def load() -> griffe.Module:
    """glrec as mkdocstrings sees it: read statically, docstrings through the same extension.

    The functions below that take ``pkg`` load it themselves when not given it; the build's hook loads it
    once for all of them (a load of glrec is 1.3 s on the 2-core machine).
    """
    if str(TOOLS) not in sys.path:  # griffe_sphinx, beside this file (mkdocs may have reset sys.path since)
        sys.path.insert(0, str(TOOLS))
    from griffe_sphinx import SphinxToMarkdown

    extensions = griffe.load_extensions(SphinxToMarkdown())
    return griffe.load("glrec", search_paths=[str(ROOT)], resolve_aliases=False, extensions=extensions)


def _target(pkg: griffe.Module, module: str, name: str) -> griffe.Object | None:
    """What ``module.name`` is; a name the module hands out lazily (PEP 562) is found in its submodules."""
    mod: Any = pkg if module == "glrec" else pkg[module.removeprefix("glrec.")]
    member = mod.members.get(name)
    if member is None:  # its submodules, and theirs (glrec.dataset.StreamDataset: dataset.streaming.torch_data)
        subs = list(mod.modules.values())
        while subs:
            sub = subs.pop(0)
            if name in sub.members and not sub.members[name].is_alias:
                return sub.members[name]
            subs.extend(sub.modules.values())
        return None
    try:
        return member.final_target if member.is_alias else member
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def documented(pkg: griffe.Module | None = None) -> Iterator[tuple[str, str, griffe.Object | None]]:
    """(page module, public name, object) for every documented name, each object once, in page order."""
    pkg = pkg or load()
    seen: set[str] = set()
    errors = set(_exports(pkg, "glrec.errors"))
    for module, _ in API:
        names = [n for n in _exports(pkg, module) if not (module == "glrec" and n in errors)]
        for name in names:
            obj = _target(pkg, module, name)
            key = obj.canonical_path if obj is not None else f"{module}.{name}"
            if key not in seen:
                seen.add(key)
                yield module, name, obj
    for module, path in EXTRA:
        parent, name = path.rsplit(".", 1)
        yield module, name, _target(pkg, parent, name)


def _exports(pkg: griffe.Module, module: str) -> list[str]:
    mod = pkg if module == "glrec" else pkg[module.removeprefix("glrec.")]
    return [str(n) for n in (mod.exports or [])]


def _needs_docstring(obj: Any) -> bool:
    if obj.is_attribute:
        return "property" in obj.labels
    return obj.is_function or obj.is_class


def undocumented(pkg: griffe.Module | None = None) -> list[str]:
    """Every documented public name (and the public methods and properties of its classes) without a docstring."""
    pkg = pkg or load()
    missing = []
    for module, name, obj in documented(pkg):
        if obj is None:
            missing.append(f"{module}.{name} (not found)")
            continue
        if not obj.docstring or not obj.docstring.value.strip():
            missing.append(f"{module}.{name}")
        if obj.is_class:
            for member_name, member in obj.all_members.items():
                if member_name.startswith("_"):
                    continue
                try:
                    target: Any = member.final_target if member.is_alias else member
                except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                    continue
                if _needs_docstring(target) and not (target.docstring and target.docstring.value.strip()):
                    missing.append(f"{module}.{name}.{member_name}")
    return missing


# -- the API pages -------------------------------------------------------------------------------------------


def api_pages(pkg: griffe.Module | None = None) -> dict[str, str]:
    """``reference/api/MODULE.md`` for each module of :data:`API`, and the index of them."""
    pkg = pkg or load()
    by_page: dict[str, list[tuple[str, griffe.Object | None]]] = {m: [] for m, _ in API}
    for module, name, obj in documented(pkg):
        by_page[module].append((name, obj))
    pages = {}
    index = ["# API reference", "", "Every public name, generated from the docstrings. The keywords the recorders "
             "share (`size`, `fps`, `codec`, `crf`, ...) are in [Options](../../options.md); errors in "
             "[Errors](../errors.md).", "", "| module | what is there |", "|---|---|"]  # fmt: skip
    for module, about in API:
        index.append(f"| [`{module}`]({module}.md) | {about} |")
        lines = [f"# `{module}`", "", about, ""]
        if module == "glrec":
            lines += ["The errors `glrec` exports are on [Errors](../errors.md).", ""]
        for name, obj in sorted(by_page[module], key=lambda item: _order(module, item[0])):
            # the public spelling (glrec.Recorder, not glrec.recorder.Recorder) where the module has the name
            public = _target(pkg, module, name) is not None and name in _members(pkg, module)
            path = f"{module}.{name}" if public or obj is None else obj.path
            lines += [f"::: {path}", ""]
            if obj is not None:
                lines += keyword_table(obj)
        pages[f"reference/api/{module}.md"] = "\n".join(lines)
    pages["reference/api/index.md"] = "\n".join(index) + "\n"
    return pages


#: The front door's names in the order a reader needs them (the rest follow in ``__all__``'s order).
FIRST = ["record", "write_video", "transcode", "Recorder", "RecordResult", "BatchRecorder", "BatchResult"]


def _order(module: str, name: str) -> int:
    return FIRST.index(name) if module == "glrec" and name in FIRST else len(FIRST)


def _members(pkg: griffe.Module, module: str) -> Any:
    return (pkg if module == "glrec" else pkg[module.removeprefix("glrec.")]).members


def _unpacked(obj: griffe.Object) -> str | None:
    """The TypedDict a callable's ``**options: Unpack[X]`` names (classes: their ``__init__``'s), or None."""
    func: Any = obj.members.get("__init__") if obj.is_class else obj
    if func is None or not func.is_function:
        return None
    for param in func.parameters:
        if param.kind is griffe.ParameterKind.var_keyword:
            match = re.search(r"Unpack\[(\w+)\]", str(param.annotation))
            return match.group(1) if match else None
    return None


def keyword_table(obj: griffe.Object) -> list[str]:
    """The keywords ``**options`` takes, with default, CLI flag and meaning from the option declarations."""
    typed = _unpacked(obj)
    if typed is None:
        return []
    from glrec import _options_typed
    from glrec._declare import declared, shown
    from glrec.options import InputOptions, LengthOptions, OutputOptions, VideoOptions
    from glrec.pipeline.options import PipelineOptions

    specs = {}
    for table in (VideoOptions, PipelineOptions, LengthOptions, InputOptions, OutputOptions):
        for f, spec in declared(table):
            specs.setdefault(f.name, (table.__name__, f, spec))
    keys = getattr(_options_typed, typed).__annotations__
    lines = [f"**Keywords** (`**options`, typed by `{typed}`; every one optional):", "",
             "| keyword | default | CLI | meaning |", "|---|---|---|---|"]  # fmt: skip
    for key in keys:
        if key not in specs:
            lines.append(f"| `{key}` | | | see the signature |")
            continue
        table, f, spec = specs[key]
        default = "—" if f.default in (None, MISSING) else f"`{shown(f.default)}`"
        flags = ", ".join(f"`{s}`" for s in spec.flags) or "(Python only)"
        meaning = spec.help.replace("%%", "%").replace("|", "\\|")
        lines.append(f"| [`{key}`](../../options.md#{table.lower()}) | {default} | {flags} | {meaning} |")
    return [*lines, ""]


# -- the CLI page --------------------------------------------------------------------------------------------


def _help(parser: argparse.ArgumentParser) -> str:
    with contextlib.ExitStack() as stack:  # a fixed width: the page is the same on every terminal
        stack.enter_context(_env("COLUMNS", "80"))
        text = parser.format_help()
    return text.rstrip()


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def cli_page() -> str:
    """Every command's ``--help``, as argparse prints it (``glrec COMMAND --help``)."""
    from glrec.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["# The `glrec` command", "", "Generated from the argparse parsers: each section is what "
             "`glrec COMMAND --help` prints. Every option's default and meaning is also in "
             "[Options](../options.md); the Python keywords have the same names (`--pix-fmt` is `pix_fmt`).", "",
             "```text", "$ glrec --help", _help(parser), "```", ""]  # fmt: skip
    for name, command in sub.choices.items():
        lines += [f"## glrec {name}", "", "```text", f"$ glrec {name} --help", _help(command), "```", ""]
    return "\n".join(lines)


# -- the errors page -----------------------------------------------------------------------------------------


def errors_page() -> str:
    """The hierarchy of :mod:`glrec.errors` as a tree, then each error's docstring."""
    import glrec.errors as errors

    classes = [getattr(errors, n) for n in errors.__all__]

    def builtins_of(cls: type) -> str:
        names = [b.__name__ for b in cls.__mro__[1:] if b.__module__ == "builtins" and b not in (object, Exception,
                 BaseException)]  # fmt: skip
        return f" — also `{'`, `'.join(dict.fromkeys(names))}`" if names else ""

    def tree(parent: type, depth: int) -> list[str]:
        out = []
        for cls in classes:
            glrec_bases = [b for b in cls.__bases__ if b in classes]
            if glrec_bases and glrec_bases[0] is parent:
                out.append(f"{'    ' * depth}- [`{cls.__name__}`](#glrec.errors.{cls.__name__}){builtins_of(cls)}")
                out += tree(cls, depth + 1)
        return out

    root = errors.GlrecError
    lines = ["# Errors", "", "Every error glrec raises on purpose is a `glrec.GlrecError` **and** the built-in a plain "
             "`except` expects (`ConfigError` is a `ValueError`, `OutputExistsError` a `FileExistsError`), so "
             "either catches it. Messages are one line: what happened, the value, and what to do. Logging goes to "
             "the `glrec` logger; the command line shows warnings (`-v` for more) and exits 1 on an error, 2 on a "
             "usage error, 130 when interrupted.", "",
             "For example `Size 641x480 has an odd dimension, which yuv420p (4:2:0) cannot hold. Use an even size "
             "such as 642x480, pass pad=True (--pad) ...`. What a failure leaves on disk is in "
             "[Reliability](../guides/reliability.md).", "", "## The hierarchy", "",
             f"- [`{root.__name__}`](#glrec.errors.GlrecError) — an `Exception`", *tree(root, 1), "",
             "## Each error", ""]  # fmt: skip
    lines += [f"::: glrec.errors.{cls.__name__}\n    options:\n      heading_level: 3\n" for cls in classes]
    return "\n".join(lines)


# -- the options page and the home page ----------------------------------------------------------------------


def options_page() -> str:
    """``python -m glrec.options``, with the Sphinx roles of the tables' docstrings as code."""
    from glrec.options import reference

    return re.sub(r":(?:class|meth|func|mod|attr|data):`~?([^`]+)`", r"`\1`", reference()) + "\n"


def home_page() -> str:
    """The README, whose links into ``docs/`` become links between the site's pages."""
    text = (ROOT / "README.md").read_text()
    return re.sub(r"\]\(docs/", "](", text)


def generated(pkg: griffe.Module | None = None) -> dict[str, str]:
    """Every generated page, by its path in the site."""
    pages = {"index.md": home_page(), "reference/cli.md": cli_page(), "reference/errors.md": errors_page(),
             "options.md": options_page()}  # fmt: skip
    pages.update(api_pages(pkg))
    # the benchmarks' own README: what each figure of the performance guide measures, and the commands
    pages["benchmarks.md"] = (ROOT / "benchmarks" / "README.md").read_text()
    return pages


if __name__ == "__main__":  # python docs/tools/reference.py: the public names without a docstring
    with contextlib.redirect_stdout(io.StringIO()):
        missing = undocumented()
    print("\n".join(missing) or "every public name has a docstring")
