"""Chosen samples of a dataset rendered into per-sample folders (``glrec dataset --only``): the full run's files."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..rendering.devices import check_egl_device
from ..spec.document import DatasetSpec, check_flag
from .encode import check_colour_encoder
from .folder import DatasetFolder, holds_anything
from .lock import FolderLock
from .runner import ShardWorker
from .writers import FolderWriter

__all__ = ["write_samples"]


def write_samples(
    spec: DatasetSpec | str | os.PathLike[str],
    indices: list[int],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    device: int | None = None,
) -> list[Path]:
    """Render only ``indices`` of ``spec`` (a DatasetSpec or a TOML path) into per-sample folders ``OUT/KEY/``.

    The same files the full run makes.

    >>> write_samples(spec, [17], "sample17/")  # doctest: +SKIP
    [PosixPath('sample17/000017')]
    """
    from ...errors import ConfigError, OutputExistsError

    spec = spec if isinstance(spec, DatasetSpec) else DatasetSpec.load(spec)  # a TOML path, as generate() takes
    bad = [i for i in indices if not 0 <= i < spec.samples]
    if bad:
        raise ConfigError(f"Sample index {bad[0]} is outside the spec's samples 0..{spec.samples - 1}.")
    check_flag("overwrite", overwrite)
    check_colour_encoder(spec.output)
    check_egl_device(device)
    root = Path(out)
    if root.is_dir() and holds_anything(root) and not overwrite:
        raise OutputExistsError(f"Output folder {str(root)!r} is not empty; pass --overwrite or choose another.")
    with FolderLock(root):  # no other run writes here meanwhile (a dataset's run, another --only)
        if overwrite:
            for i in indices:
                shutil.rmtree(root / spec.key(i), ignore_errors=True)
        folder = DatasetFolder(root, spec)
        # Clip videos are encoded in a scratch folder of this run's own: .glrec/ may hold a
        # finished dataset's shard records, which --resume needs.
        folder.scratch = Path(tempfile.mkdtemp(prefix=".glrec-only-", dir=root))
        writer = FolderWriter(root)
        try:
            with ShardWorker(spec, folder, device) as worker:
                for i in indices:
                    sample, files, _ = worker.render(i)
                    writer.add(sample.key, files)
            writer.commit()
        finally:
            shutil.rmtree(folder.scratch, ignore_errors=True)
    return [root / spec.key(i) for i in indices]
