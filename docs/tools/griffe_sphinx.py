"""A griffe extension: glrec's reST-flavoured docstrings as the Markdown mkdocstrings renders.

glrec's docstrings are written as PyPI readers and ``help()`` see them, with
Sphinx roles (:class:`~glrec.Recorder`), doctest examples (``>>>``) and literal
blocks after ``::``. mkdocstrings renders docstrings as Markdown, where those
would show as stray colons and run-together lines. So, once the package is
loaded (every object known), each docstring is rewritten:

- a role naming a glrec object becomes a cross-reference (autorefs), which
  links where that object is documented on the site and shows as code where it
  is an internal one; a role that names nothing (a typo, a renamed object) is
  a warning, so ``mkdocs build --strict`` fails on a broken cross-reference;
- a run of ``>>>`` lines and their output becomes a ``pycon`` fence (doctest
  directives dropped: they are for the doctest runner, not the reader);
- a paragraph ending in ``::`` followed by an indented block becomes a fence;
- a module or class attribute documented the Sphinx way, by ``#:`` comment
  lines just above it, gets them as its docstring (griffe reads only a string
  after the assignment);
- a method or property without a docstring of its own takes the one it
  overrides, as ``help()`` and ``inspect.getdoc`` show it (a scene's
  ``render`` is the protocol's ``render``).
"""

from __future__ import annotations

import builtins
import html
import logging
import re
import sys
import textwrap
from typing import Any

import griffe

# mkdocs counts warnings of loggers under "mkdocs" (strict mode turns them into a failed build).
log = logging.getLogger("mkdocs.plugins.glrec.docstrings")

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj|const):`([^`]+)`")
DOCTEST = re.compile(r"\s*#\s*doctest:.*$")

#: Broken references found while loading, for a test to read (also logged as warnings).
BROKEN: list[str] = []


def lookup(pkg: griffe.Module, path: str) -> griffe.Object | griffe.Alias | None:
    """The object at dotted ``path`` under ``pkg`` (following imports), or None."""
    parts = path.split(".")
    if parts[0] != pkg.name:
        return None
    obj: Any = pkg
    for part in parts[1:]:
        try:  # a class's members include what it inherits (Recorder.close is Recording's)
            obj = (obj.all_members if obj.is_class else obj.members)[part]
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    return obj


#: Libraries outside glrec that its docstrings may name (left as code). Checked by name, not imported: the
#: build must give the same result whichever optional extras are installed.
OTHERS = {"av", "cupy", "gymnasium", "jax", "matplotlib", "moderngl", "mujoco", "numpy", "PIL", "pyopencl",
          "pyrender", "ray", "torch", "webdataset", "websockets"}  # fmt: skip


def _external(name: str) -> bool:
    """Whether ``name`` is a builtin, a standard-library module's, or one of :data:`OTHERS` (never a link)."""
    head = name.split(".")[0]
    return hasattr(builtins, head) or head in sys.stdlib_module_names or head in OTHERS


def _scopes(obj: griffe.Object) -> list[str]:
    """Where a bare name in ``obj``'s docstring is looked up, nearest first (as Sphinx does)."""
    scopes, here = [], obj if (obj.is_class or obj.is_module) else obj.parent
    while here is not None:
        scopes.append(here.path)
        here = here.parent
    return scopes


def resolve(pkg: griffe.Module, obj: griffe.Object, target: str) -> str | None:
    """The canonical path ``target`` names from ``obj``'s docstring; ``""`` for a name outside glrec; None: nothing."""
    name = target.lstrip("~!")
    if name.startswith("."):
        name = name.lstrip(".")
        candidates = [f"{scope}.{name}" for scope in _scopes(obj)]
    elif name.startswith(pkg.name + ".") or name == pkg.name:
        candidates = [name]
    else:
        candidates = [*(f"{scope}.{name}" for scope in _scopes(obj)), f"{pkg.name}.{name}"]
    for path in candidates:
        found = lookup(pkg, path)
        if found is not None:
            try:
                return found.canonical_path
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return path
    if not name.startswith(pkg.name) and _external(name):
        return ""
    return None


def _roles(pkg: griffe.Module, obj: griffe.Object, text: str) -> str:
    def one(match: re.Match[str]) -> str:
        role, target = match.group(1), match.group(2)
        shown = target.lstrip("~!")
        if target.startswith("~"):
            shown = shown.rsplit(".", 1)[-1]
        shown = shown.lstrip(".")
        code = f"<code>{html.escape(shown)}</code>"
        path = resolve(pkg, obj, target)
        if path is None:
            where = f"{obj.relative_filepath}:{obj.lineno}"
            BROKEN.append(f"{obj.path}: :{role}:`{target}`")
            if BROKEN.count(BROKEN[-1]) == 1:  # glrec is loaded more than once per build: say it once
                log.warning(
                    "broken cross-reference :%s:`%s` in the docstring of %s (%s)", role, target, obj.path, where
                )
            return code
        if not path:
            return code
        return f'<autoref identifier="{path}" optional>{code}</autoref>'

    return ROLE.sub(one, text)


def _blocks(text: str) -> str:
    """Doctest runs and ``::`` literal blocks as fenced code."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = len(line) - len(line.lstrip())
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(DOCTEST.sub("", lines[i][indent:]))
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if line.rstrip().endswith("::") and i + 1 < len(lines):
            out.append(line.rstrip()[:-1] if line.strip() != "::" else "")
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```text", *textwrap.dedent("\n".join(block)).splitlines(), "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def rewrite(pkg: griffe.Module, obj: griffe.Object) -> None:
    """Rewrite ``obj``'s docstring (if any) in place."""
    if obj.docstring is not None:
        obj.docstring.value = _roles(pkg, obj, _blocks(obj.docstring.value))


def inherit(cls: griffe.Class) -> None:
    """Give ``cls``'s own undocumented members the docstring of the member they override."""
    try:
        bases = cls.mro()
    except (griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
        return
    for name, member in cls.members.items():
        if member.is_alias or (member.docstring and member.docstring.value.strip()):
            continue
        for base in bases:
            found = base.members.get(name)
            if found is not None and not found.is_alias and found.docstring and found.docstring.value.strip():
                member.docstring = griffe.Docstring(found.docstring.value, parent=member)
                break


def comment_docstring(attr: griffe.Object) -> None:
    """Give an attribute without a docstring the ``#:`` comment lines just above it, if any."""
    if attr.docstring is not None or attr.lineno is None or attr.filepath is None:
        return
    try:  # (a LinesCollection has no .get)
        lines = attr.lines_collection[attr.filepath]
    except KeyError:
        return
    above, i = [], attr.lineno - 2
    while i >= 0 and lines[i].strip().startswith("#:"):
        above.insert(0, lines[i].strip()[2:].strip())
        i -= 1
    if above:
        attr.docstring = griffe.Docstring(" ".join(above), lineno=i + 2, parent=attr)


def walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from walk(member)  # type: ignore[arg-type]


class SphinxToMarkdown(griffe.Extension):
    """Rewrites every docstring of a loaded package once (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        objects = list(walk(pkg))
        for obj in objects:
            if obj.is_attribute:
                comment_docstring(obj)
            rewrite(pkg, obj)
        for obj in objects:
            if obj.is_class:
                inherit(obj)  # type: ignore[arg-type]
