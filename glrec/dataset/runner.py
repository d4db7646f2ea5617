"""Render shards: one process renders shards in turn (this module) or Ray runs them as tasks (ray_backend)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..context import GLContext, create_context
from .encode import colour_encoder, encode_clip_pass, encode_pass
from .folder import DatasetFolder
from .render import Sample, SampleRenderer
from .spec import DatasetSpec
from .writers import FolderWriter, ShardWriter, TarWriter

log = logging.getLogger("glrec")

Progress = Callable[[int], None]


def sample_files(spec: DatasetSpec, sample: Sample, video: bytes | None = None) -> dict[str, bytes]:
    """The files of one sample, in member order: colour, the other passes, ``meta.json``."""
    out = spec.output
    files: dict[str, bytes] = {}
    if spec.is_clip:
        assert video is not None, "clips carry their colour as video"
        files["rgb.mp4"] = video
        for name in out.passes:
            if name != "rgb":
                fname, data = encode_clip_pass(name, [f[name] for f in sample.frames], out)
                files[fname] = data
    else:
        files[f"rgb.{out.rgb}"] = sample.colour[0]
        for name in out.passes:
            if name != "rgb":
                fname, data = encode_pass(name, sample.frames[0][name], out)
                files[fname] = data
    files["meta.json"] = (json.dumps(sample.meta) + "\n").encode()
    return files


def manifest_line(
    spec: DatasetSpec, sample: Sample, files: dict[str, bytes], shard: int, where: str, render: dict[str, Any]
) -> dict[str, Any]:
    """One manifest line: what the sample is (index, key, seed, sampled params) and where its files are."""
    return {
        "index": sample.index,
        "key": sample.key,
        "seed": sample.seed,
        "params": sample.params,
        "shard": shard,
        "location": where,
        "files": {n: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in files.items()},
        **render,
    }


class ShardWorker:
    """Renders whole shards of one dataset in this process, reusing one GL context (images) across them.

    ``device`` is the EGL device index (None: EGL's default); ``gpu`` is what the
    scheduler assigned (recorded in the manifest beside the renderer).
    """

    def __init__(self, spec: DatasetSpec, folder: DatasetFolder, device: int | None = None, gpu: Any = None) -> None:
        self.spec = spec
        self.folder = folder
        self.device = device
        self.gpu = gpu
        self._gl: GLContext | None = None
        self._renderer: SampleRenderer | None = None

    def _render_info(self, ctx: Any) -> dict[str, Any]:
        return {"renderer": str(ctx.info.get("GL_RENDERER", "?")), "device": self.device, "gpu": self.gpu}

    def _image_renderer(self) -> SampleRenderer:
        if self._renderer is None:
            self._gl = create_context(self.device)
            with self._gl.active():  # glrec's context is current only while glrec works
                ctx = self._gl.mgl
                self._renderer = SampleRenderer(self.spec, ctx, colour_encoder(self.spec.output), keep_rgb=False)
        return self._renderer

    def _clip(self, index: int) -> tuple[Sample, bytes, dict[str, Any]]:
        from ..recorder import Recorder  # the video path: GL convert, readback, PyAV encode, MP4

        spec = self.spec
        tmp = self.folder.records / f"clip-{os.getpid()}-{spec.key(index)}.mp4"
        tmp.unlink(missing_ok=True)
        try:
            with Recorder(
                tmp, size=spec.size, fps=spec.fps, codec=spec.output.video_codec, crf=spec.output.video_crf,
                egl_device=self.device,
            ) as rec, rec.ctx:  # fmt: skip
                renderer = SampleRenderer(spec, rec.ctx, None, keep_rgb=False)
                try:

                    def blit(gb: Any) -> None:
                        with rec.frame() as fbo:
                            rec.ctx.copy_framebuffer(fbo, gb.colour_fbo)

                    sample = renderer.render(index, on_frame=blit)
                    info = self._render_info(rec.ctx)
                finally:
                    renderer.close()
            return sample, tmp.read_bytes(), info
        finally:
            tmp.unlink(missing_ok=True)

    def render(self, index: int) -> tuple[Sample, dict[str, bytes], dict[str, Any]]:
        """Render sample ``index``; returns the sample, its files and the render info."""
        if self.spec.is_clip:
            sample, video, info = self._clip(index)
            return sample, sample_files(self.spec, sample, video), info
        renderer = self._image_renderer()
        assert self._gl is not None
        with self._gl.active():
            sample = renderer.render(index)
        return sample, sample_files(self.spec, sample), self._render_info(renderer.ctx)

    def run(self, shard: int, progress: Progress | None = None) -> dict[str, Any]:
        """Render ``shard`` completely and write its record; on any error nothing of it remains."""
        spec, folder = self.spec, self.folder
        folder.clean(shard)
        writer: ShardWriter
        if spec.output.layout == "webdataset":
            writer = TarWriter(folder.root / folder.shard_name(shard))
            where = folder.shard_name(shard)
        else:
            writer = FolderWriter(folder.root)
            where = ""
        lines = []
        try:
            for index in spec.shard_range(shard):
                sample, files, info = self.render(index)
                writer.add(sample.key, files)
                lines.append(manifest_line(spec, sample, files, shard, where or sample.key, info))
                if progress is not None:
                    progress(1)
            result = writer.commit()
        except BaseException:
            writer.abort()
            raise
        record = {"shard": shard, "file": result["file"], "samples": lines}
        if result["file"] is not None:
            record.update(bytes=result["bytes"], sha256=result["sha256"])
        folder.write_record(shard, record)
        log.info("shard %d: %d samples -> %s", shard, len(lines), where or "folders")
        return record

    def close(self) -> None:
        renderer, self._renderer = self._renderer, None
        gl, self._gl = self._gl, None
        if renderer is not None and gl is not None:
            with gl.active():
                renderer.close()
        if gl is not None:
            gl.release()

    def __enter__(self) -> ShardWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_local(
    spec: DatasetSpec, folder: DatasetFolder, shards: list[int], device: int | None, progress: Progress | None
) -> dict[int, dict[str, Any]]:
    """Render ``shards`` one after another in this process."""
    with ShardWorker(spec, folder, device) as worker:
        return {s: worker.run(s, progress) for s in shards}


def write_samples(
    spec: DatasetSpec,
    indices: list[int],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    device: int | None = None,
) -> list[Path]:
    """Render only ``indices`` into per-sample folders ``OUT/KEY/`` (the same files the full run makes).

    >>> write_samples(spec, [17], "sample17/")  # doctest: +SKIP
    [PosixPath('sample17/000017')]
    """
    from ..errors import ConfigError, OutputExistsError

    bad = [i for i in indices if not 0 <= i < spec.samples]
    if bad:
        raise ConfigError(f"Sample index {bad[0]} is outside the spec's samples 0..{spec.samples - 1}.")
    root = Path(out)
    if root.is_dir() and any(root.iterdir()):
        if not overwrite:
            raise OutputExistsError(f"Output folder {str(root)!r} is not empty; pass --overwrite or choose another.")
        for i in indices:
            shutil.rmtree(root / spec.key(i), ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    folder = DatasetFolder(root, spec)
    folder.records.mkdir(exist_ok=True)  # scratch space for clip videos
    writer = FolderWriter(root)
    try:
        with ShardWorker(spec, folder, device) as worker:
            for i in indices:
                sample, files, _ = worker.render(i)
                writer.add(sample.key, files)
        writer.commit()
    finally:
        shutil.rmtree(folder.records, ignore_errors=True)
    return [root / spec.key(i) for i in indices]
