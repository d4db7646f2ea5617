"""Render shards: one process renders shards in turn (this module) or Ray runs them as tasks (ray_backend)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...errors import GlrecError
from ...gl.context import GLContext, create_context
from ..rendering.colour import BatchColour, LayerColour
from ..rendering.devices import check_egl_device
from ..rendering.sample import Sample, SampleRenderer, finish_colour
from ..spec.document import DatasetSpec, check_flag
from .encode import ColourEncoder, check_colour_encoder, colour_encoder
from .folder import DatasetFolder, holds_anything
from .lock import FolderLock
from .samples import Encoded, encode_threads, file_digests, manifest_line, sample_files
from .writers import FolderWriter, ShardWriter, TarWriter, WriteBehind, disk_full

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

log = logging.getLogger("glrec")

Progress = Callable[[int], None]
#: Samples a shard worker draws per GL pass (scenes that draw batches): enough to amortise the
#: pass and the fence, few enough that the chunk's host memory stays small beside the encode queue.
SHARD_CHUNK = 32


class ShardWorker:
    """Renders whole shards of one dataset in this process, reusing one GL context (images) across them.

    ``device`` is the EGL device index (None: EGL's default); ``gpu`` is what the
    scheduler assigned (recorded in the manifest beside the renderer). The GL
    thread draws each sample and packs its passes on the GPU; ``threads`` encoding
    threads (default :func:`encode_threads`; 1: none, everything on this thread)
    turn samples into files while the next ones are drawn. Files and their order
    do not depend on the thread count.
    """

    def __init__(
        self, spec: DatasetSpec, folder: DatasetFolder, device: int | None = None, gpu: Any = None,
        *, threads: int | None = None,
    ) -> None:  # fmt: skip
        self.spec = spec
        self.folder = folder
        self.device = device
        self.gpu = gpu
        self.threads = encode_threads() if threads is None else max(1, threads)
        self._gl: GLContext | None = None
        self._renderer: SampleRenderer | None = None
        self._colour: ColourEncoder | None = None
        self._batch: BatchColour | None = None  # the colour encoder, when it takes a shard's samples in batches
        self._jpegs: dict[int, bytes] = {}  # its finished images by sample index, until written
        self._renderer_name: str | None = None
        self._pool: ThreadPoolExecutor | None = None
        #: The sample whose draw or encoding raised in the last failed :meth:`run` (None: no failure yet).
        self.failed_index: int | None = None

    def _render_info(self, ctx: Any) -> dict[str, Any]:
        if self._renderer_name is None:  # ctx.info queries every GL limit: once per worker
            self._renderer_name = str(ctx.info.get("GL_RENDERER", "?"))
        return {"renderer": self._renderer_name, "device": self.device, "gpu": self.gpu}

    def _image_renderer(self) -> SampleRenderer:
        if self._renderer is None:
            self._gl = create_context(self.device)
            with self._gl.active():  # glrec's context is current only while glrec works
                self._colour = colour_encoder(self.spec.output)
                # A batched GPU encoder is fed here after each draw, not by the renderer per sample.
                self._batch = self._colour if isinstance(self._colour, BatchColour) else None
                per_sample = None if self._batch is not None else self._colour
                self._renderer = SampleRenderer(self.spec, self._gl.mgl, per_sample, keep_rgb=False, packed=True)
        return self._renderer

    def _clip(self, index: int) -> tuple[Sample, bytes, dict[str, Any]]:
        from ...recorder import Recorder  # the video path: GL convert, readback, PyAV encode, MP4

        spec = self.spec
        tmp = self.folder.scratch / f"clip-{os.getpid()}-{spec.key(index)}.mp4"
        tmp.unlink(missing_ok=True)
        try:
            with Recorder(
                tmp, size=spec.size, fps=spec.fps, codec=cast(Any, spec.output.video_codec), crf=spec.output.video_crf,
                egl_device=self.device,
            ) as rec, rec.ctx:  # fmt: skip
                renderer = SampleRenderer(spec, rec.ctx, None, keep_rgb=False, packed=True)
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

    def _draw(self, index: int) -> tuple[Sample, bytes | None, dict[str, Any]]:
        """The GL thread's part of a sample: draw it, pack and read back its passes."""
        if self.spec.is_clip:
            return self._clip(index)
        renderer = self._image_renderer()
        assert self._gl is not None
        with self._gl.active():
            sample = renderer.render(index)
            if self._batch is not None:
                self._jpegs.update(self._batch.queue(renderer.gbuffer.colour_fbo, index))
        return sample, None, self._render_info(renderer.ctx)

    def _drawn(self, indices: range, mark: Callable[[int], None]) -> Iterator[tuple[Sample, bytes | None, Any]]:
        """Samples ``indices`` drawn in order (``mark(i)`` before sample i, or its chunk, is drawn): a chunk of up to
        :data:`SHARD_CHUNK` per GL pass where the scene draws batches (``render_layers``), colour encoded on the
        host or by a GPU encoder that takes it from the chunk's layers (:class:`LayerColour`), else one by one."""
        renderer = None if self.spec.is_clip else self._image_renderer()
        layers = self._batch is None or isinstance(self._batch, LayerColour)  # GPU JPEG from the chunk's layers
        if renderer is not None and renderer.batch_ready and layers:
            assert self._gl is not None
            if self._batch is not None and renderer.layer_colour is None:
                renderer.layer_colour = self._queue_layer
            for first in range(indices.start, indices.stop, SHARD_CHUNK):
                chunk = range(first, min(indices.stop, first + SHARD_CHUNK))
                then = range(chunk.stop, min(indices.stop, chunk.stop + SHARD_CHUNK))  # planned while this draws
                mark(first)  # a worker that dies now names the chunk's first sample
                try:
                    with self._gl.active():  # a new host array per chunk
                        samples = renderer.render_batch(chunk, lambda j, n: None, then=then)
                except GlrecError as exc:  # drawn again one by one, so the error names its sample
                    log.debug("glrec: samples %d..%d failed as a batch (%s); drawing them one by one", first,
                              chunk[-1], exc)  # fmt: skip
                    samples = []
                    for i in chunk:
                        mark(i)
                        samples.append(self._draw(i)[0])
                info = self._render_info(renderer.ctx)
                for sample in samples:
                    yield sample, None, info
            return
        if renderer is not None:
            renderer.prepare(indices)  # the shard's parameters and layouts, drawn at once
        for index in indices:
            mark(index)
            yield self._draw(index)

    def _queue_layer(self, gbuffer: LayeredGBuffer, layer: int, index: int) -> None:
        """Hand sample ``index``'s colour, layer ``layer`` of a chunk just drawn, to the batched GPU encoder."""
        assert isinstance(self._batch, LayerColour)
        self._jpegs.update(self._batch.queue_layer(gbuffer, layer, index))

    def _encode(self, sample: Sample, video: bytes | None) -> Encoded:
        """The rest, on any thread: colour left to a host encoder, the pass files, their digests."""
        finish_colour(sample, self._colour)
        files = sample_files(self.spec, sample, video, colour_later=self._batch is not None and video is None)
        sample.frames = []  # the arrays are in the files now
        return files, file_digests(files)

    def _with_colour(self, sample: Sample, encoded: Encoded) -> Encoded:
        """``encoded`` with the batched encoder's colour image of ``sample`` first (GL thread)."""
        if self._batch is None or self.spec.is_clip:
            return encoded
        if sample.index not in self._jpegs:
            assert self._gl is not None
            with self._gl.active():
                self._jpegs.update(self._batch.flush())
        image = {f"rgb.{self._batch.ext}": self._jpegs.pop(sample.index)}
        files, digests = encoded
        return {**image, **files}, {**file_digests(image), **digests}

    def _drop_colour(self) -> None:
        """Forget a failed shard's queued colour: what is in flight is finished and dropped."""
        if self._batch is not None and self._gl is not None:
            with self._gl.active():
                self._batch.flush()
        self._jpegs.clear()

    def render(self, index: int) -> tuple[Sample, dict[str, bytes], dict[str, Any]]:
        """Render sample ``index``; returns the sample, its files and the render info."""
        sample, video, info = self._draw(index)
        files, _ = self._with_colour(sample, self._encode(sample, video))
        return sample, files, info

    def _submit(self, sample: Sample, video: bytes | None) -> Future[Encoded]:
        if self.threads <= 1:
            done: Future[Encoded] = Future()
            done.set_result(self._encode(sample, video))
            return done
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="glrec-dataset-encode")
        return self._pool.submit(self._encode, sample, video)

    def run(self, shard: int, progress: Progress | None = None, started: Progress | None = None) -> dict[str, Any]:
        """Render ``shard`` completely and write its record; on any error nothing of it remains.

        ``progress(1)`` is called as each sample is written, ``started(index)`` before each is drawn;
        after an error :attr:`failed_index` names the sample that raised.
        """
        spec, folder = self.spec, self.folder
        folder.check_owner()  # this run still holds the folder: what is there of the shard is its own to redo
        folder.clean(shard)
        writer: ShardWriter
        if spec.output.layout == "webdataset":
            writer = TarWriter(folder.root / folder.shard_name(shard))
            where = folder.shard_name(shard)
        else:
            writer = FolderWriter(folder.root)
            where = ""
        if self.threads > 1:  # written on a thread of its own while the next samples are drawn
            writer = WriteBehind(writer)
        lines: list[dict[str, Any]] = []
        # Samples being encoded, oldest first; bounded so memory stays flat whatever the shard size.
        pending: deque[tuple[Sample, dict[str, Any], Future[Encoded]]] = deque()
        current: int | None = None

        def write_oldest() -> None:
            nonlocal current
            sample, info, job = pending.popleft()
            current = sample.index
            files, digests = self._with_colour(sample, job.result())
            writer.add(sample.key, files)
            lines.append(manifest_line(spec, sample, files, shard, where or sample.key, info, digests))
            if progress is not None:
                progress(1)

        def mark(index: int) -> None:
            nonlocal current
            current = index
            if started is not None:
                started(index)

        try:
            for sample, video, info in self._drawn(spec.shard_range(shard), mark):
                pending.append((sample, info, self._submit(sample, video)))
                # A chunk's samples come at once, their arrays in one host array: up to a chunk of them wait for
                # the encode threads while the GL thread goes on to draw the next.
                while len(pending) > max(2 * self.threads, SHARD_CHUNK if self.threads > 1 else 0):
                    write_oldest()
            while pending:
                write_oldest()
            result = writer.commit()
        except BaseException as exc:
            self.failed_index = current
            for *_, job in pending:
                job.cancel()
            wait([job for *_, job in pending])  # jobs already running finish; what they made is dropped
            with contextlib.suppress(Exception):  # the shard's error is the one to raise
                self._drop_colour()
            writer.abort()
            full = disk_full(exc, f"Writing shard {shard} of {folder.root}")
            if full is not None:
                raise full from exc
            raise
        record = {"shard": shard, "file": result["file"], "samples": lines}
        if result["file"] is not None:
            record.update(bytes=result["bytes"], sha256=result["sha256"])
        try:
            folder.write_record(shard, record)
        except OSError as exc:
            full = disk_full(exc, f"Recording that shard {shard} of {folder.root} is complete")
            if full is not None:
                raise full from exc
            raise
        log.info("shard %d: %d samples -> %s", shard, len(lines), where or "folders")
        return record

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        colour, self._colour, self._batch = self._colour, None, None
        self._jpegs.clear()
        close_colour = getattr(colour, "close", None)  # a GPU encoder's GL objects go before the context
        renderer, self._renderer = self._renderer, None
        gl, self._gl = self._gl, None
        if gl is not None:
            with gl.active():
                if close_colour is not None:
                    close_colour()
                if renderer is not None:
                    renderer.close()
            gl.release()

    def __enter__(self) -> ShardWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ShardQueue:
    """The shards still to render, lowest first, made as they are taken: a spec may have 2**63 - 1 shards.

    >>> list(ShardQueue(5, {0, 2})), len(ShardQueue(5, {0, 2}))
    ([1, 3, 4], 3)
    """

    def __init__(self, total: int, done: set[int]) -> None:
        self.total = total
        self.done = done

    def __len__(self) -> int:
        return self.total - len(self.done)

    def __iter__(self) -> Iterator[int]:
        return (s for s in range(self.total) if s not in self.done)


def run_local(
    spec: DatasetSpec, folder: DatasetFolder, shards: Iterable[int], device: int | None, progress: Progress | None
) -> list[int]:
    """Render ``shards`` one after another in this process; returns those rendered."""
    with ShardWorker(spec, folder, device) as worker:
        done = []
        for shard in shards:
            worker.run(shard, progress)
            done.append(shard)
        return done


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
