"""Render shards: one process renders shards in turn (this module) or Ray runs them as tasks (ray_backend)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, cast

from ...errors import GlrecError
from ...gl.context import GLContext, create_context
from ..rendering.colour import BatchColour, LayerColour
from ..rendering.memory import LentMappings
from ..rendering.sample import Sample, SampleRenderer, finish_colour
from ..rendering.scanlines import on_gpu
from ..spec.document import DatasetSpec
from .digests import DEFAULT_DIGEST, file_digests
from .encode import ColourEncoder, colour_encoder
from .feed import OpenShard, ShardFeed
from .folder import DatasetFolder
from .samples import Encoded, encode_threads, manifest_line, sample_files
from .writers import FolderWriter, ShardWriter, TarWriter, WriteBehind, disk_full

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

log = logging.getLogger("glrec")

Progress = Callable[[int], None]
#: Samples a shard worker draws per GL pass (scenes that draw batches): enough to amortise the
#: pass and the fence, few enough that the chunk's host memory stays small beside the encode queue.
SHARD_CHUNK = 32
#: Shards a worker has begun and not completed, at most: the one it draws and the one before, being encoded,
#: written and committed. A worker killed mid-run loses these; more would let the GL thread run further ahead of
#: the commits (``benchmarks/dataset_workers.py --env GLREC_BENCH_IN_FLIGHT=3`` measures it).
IN_FLIGHT = 2


class ShardWorker:
    """Renders whole shards of one dataset in this process, reusing one GL context (images) across them.

    ``device`` is the EGL device index (None: EGL's default); ``gpu`` is what the
    scheduler assigned (recorded in the manifest beside the renderer). The GL
    thread draws each sample and packs its passes on the GPU; ``threads`` encoding
    threads (default :func:`encode_threads`; 1: none, the GL thread encodes) turn
    samples into files while the next ones are drawn, and a write thread per shard
    writes and commits them. Files and their order do not depend on the thread count.
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
        #: What the manifest and the shard records digest with (``generate`` resolves it against a resumed folder).
        self.digest = spec.output.digest or DEFAULT_DIGEST
        self._gl: GLContext | None = None
        self._renderer: SampleRenderer | None = None
        self._colour: ColourEncoder | None = None
        self._batch: BatchColour | None = None  # the colour encoder, when it takes a shard's samples in batches
        self._jpegs: dict[int, bytes] = {}  # its finished images by sample index, until written
        self._renderer_name: str | None = None
        self._pool: ThreadPoolExecutor | None = None
        #: The sample whose draw or encoding raised in the last failed :meth:`run` (None: no failure yet, or
        #: a shard's opening or commit failed), and its shard.
        self.failed_index: int | None = None
        self.failed_shard: int | None = None

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
                # On a GPU the PNG passes come as their scanlines, filtered there: the worker only deflates them.
                self._renderer = SampleRenderer(
                    self.spec, self._gl.mgl, per_sample, keep_rgb=False, packed=True, scanlines=on_gpu(self._gl.mgl)
                )
                # A chunk's samples are encoded into files and their arrays dropped (in run_shards, also on an
                # error) before close() releases these: they may be views of the mapping the GPU read them into.
                self._renderer.lent = LentMappings()
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

    def _drawn(
        self, indices: range, mark: Callable[[int], None], after: range | None = None
    ) -> Iterator[tuple[Sample, bytes | None, Any]]:
        """Samples ``indices`` drawn in order (``mark(i)`` before sample i, or its chunk, is drawn): a chunk of up to
        :data:`SHARD_CHUNK` per GL pass where the scene draws batches (``render_layers``), colour encoded on the
        host or by a GPU encoder that takes it from the chunk's layers (:class:`LayerColour`), else one by one.
        ``after``: the chunk drawn next (the next shard's first), planned while the last one here draws."""
        renderer = None if self.spec.is_clip else self._image_renderer()
        layers = self._batch is None or isinstance(self._batch, LayerColour)  # GPU JPEG from the chunk's layers
        if renderer is not None and renderer.batch_ready and layers:
            assert self._gl is not None
            if self._batch is not None and renderer.layer_colour is None:
                renderer.layer_colour = self._queue_layer
            for first in range(indices.start, indices.stop, SHARD_CHUNK):
                chunk = range(first, min(indices.stop, first + SHARD_CHUNK))
                then = range(chunk.stop, min(indices.stop, chunk.stop + SHARD_CHUNK))  # planned while this draws
                then = then if len(then) or after is None else after
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
        return files, file_digests(files, self.digest)

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
        return {**image, **files}, {**file_digests(image, self.digest), **digests}

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
        [record] = self.run_shards(ShardFeed.of([shard]), progress, started)
        return record

    def run_shards(
        self, feed: ShardFeed, progress: Progress | None = None, started: Progress | None = None,
        opened: Progress | None = None, done: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:  # fmt: skip
        """Render the shards ``feed`` hands out, each completely, its record written; returns the records.

        Pipelined: while one shard's samples are encoded, written and committed (on the encode and write
        threads), the GL thread draws the next shard that has come (:meth:`ShardFeed.take`), whose first chunk
        was planned while the one before drew. A shard is begun once every shard but the one before it is
        complete, so a worker killed mid-run loses at most those two. With none come yet, what is in flight is
        finished first, so a worker whose feed waits on its parent has reported every shard it took.
        ``opened(shard)`` is called as a shard is begun, ``done(record)`` once it is complete. On an error, every
        shard begun and not complete is removed (:attr:`failed_index`, :attr:`failed_shard` say where); complete
        ones stay.
        """
        spec = self.spec
        shards: deque[OpenShard] = deque()  # begun and not yet complete, oldest first
        pending: deque[tuple[OpenShard, Sample, dict[str, Any], Future[Encoded]]] = deque()
        records: list[dict[str, Any]] = []
        # A chunk's samples come at once, their arrays in one host array: up to a chunk of them wait for
        # the encode threads while the GL thread goes on to draw the next.
        bound = max(2 * self.threads, SHARD_CHUNK if self.threads > 1 else 0)
        current: int | None = None  # the sample being drawn or written (None: a shard's opening or commit)
        drawn: Sample | None = None
        at: int | None = None  # its shard

        def finish(block: bool) -> None:  # the records of the oldest shards whose commits are done
            nonlocal current, at
            while shards and shards[0].commit is not None and (block or shards[0].commit.done()):
                current, at = None, shards[0].shard
                records.append(self._complete(shards[0]))  # one that fails stays to be removed
                shards.popleft()
                if done is not None:
                    done(records[-1])

        def write_oldest() -> None:
            nonlocal current, at
            st, sample, info, job = pending[0]
            current, at = sample.index, st.shard
            files, digests = self._with_colour(sample, job.result())
            pending.popleft()  # not before: a sample whose encoding failed stays for the cleanup below
            st.writer.add(sample.key, files)
            st.lines.append(manifest_line(sample, st.shard, st.where or sample.key, info, digests))
            if progress is not None:
                progress(1)
            if len(st.lines) == len(st.indices):  # whole: committed behind the next shard's draws
                st.commit = st.writer.commit_later()

        def settle(keep: int) -> None:  # every shard but the newest ``keep`` written, committed and recorded
            while len(shards) > keep:
                while pending and pending[0][0] is shards[0]:
                    write_oldest()
                finish(block=True)

        def mark(index: int) -> None:
            nonlocal current, at
            current, at = index, index // spec.shard_size
            if started is not None:
                started(index)

        try:
            shard = feed.take(block=True)
            while shard is not None:
                settle(keep=IN_FLIGHT - 1)  # a worker killed while it draws this shard loses it and the one before
                current, at = None, shard
                shards.append(self._open_shard(shard))
                if opened is not None:
                    opened(shard)
                coming = feed.peek()  # its first chunk is planned while this shard's last one draws
                then = None if coming is None else spec.shard_range(coming)[:SHARD_CHUNK]
                for sample, video, info in self._drawn(shards[-1].indices, mark, then):
                    drawn = sample  # until it is pending (without encode threads, _submit encodes it)
                    pending.append((shards[-1], sample, info, self._submit(sample, video)))
                    drawn = None
                    while len(pending) > bound:
                        write_oldest()
                finish(block=False)
                shard = feed.take(block=False)
                if shard is None:  # none has come yet: finish what is in flight, then wait for the next
                    settle(keep=0)
                    shard = feed.take(block=True)
        except BaseException as exc:
            self.failed_index, self.failed_shard = current, at
            for *_, job in pending:
                job.cancel()
            wait([job for *_, job in pending])  # jobs already running finish; what they made is dropped
            for held in [p[1] for p in pending] + ([drawn] if drawn is not None else []):
                held.frames, held.deferred_colour = [], []  # views of lent mappings, maybe: gone before close
            pending.clear()
            with contextlib.suppress(Exception):  # the shard's error is the one to raise
                self._drop_colour()
            for st in shards:
                self._abandon(st)
            full = disk_full(exc, f"Writing shard {self.failed_shard} of {self.folder.root}")
            if full is not None:
                raise full from exc
            raise
        return records

    def _open_shard(self, shard: int) -> OpenShard:
        folder = self.folder
        folder.check_owner()  # this run still holds the folder: what is there of the shard is its own to redo
        folder.clean(shard)
        writer: ShardWriter
        if self.spec.output.layout == "webdataset":
            writer = TarWriter(folder.root / folder.shard_name(shard), self.digest)
            where = folder.shard_name(shard)
        else:
            writer, where = FolderWriter(folder.root), ""
        # Written and committed on a thread of its own while the next samples are drawn, encode threads or none:
        # a shard's fsync on the GL thread held a worker with one thread (16 on 16 cores) for the disk.
        return OpenShard(shard, self.spec.shard_range(shard), WriteBehind(writer), where)

    def _complete(self, st: OpenShard) -> dict[str, Any]:
        """The record of a committed shard, written: the shard is complete."""
        assert st.commit is not None
        result = st.commit.result()  # a failed commit raises here
        record = {"shard": st.shard, "file": result["file"], "samples": st.lines}
        if result["file"] is not None:
            record.update({k: v for k, v in result.items() if k != "file"})  # its size, and digest if any
        try:
            self.folder.write_record(st.shard, record)
        except OSError as exc:
            full = disk_full(exc, f"Recording that shard {st.shard} of {self.folder.root} is complete")
            if full is not None:
                raise full from exc
            raise
        log.info("shard %d: %d samples -> %s", st.shard, len(st.lines), st.where or "folders")
        return record

    def _abandon(self, st: OpenShard) -> None:
        """After an error: a shard whose commit went through is kept (its record written), any other removed."""
        if st.commit is not None:
            with contextlib.suppress(BaseException):
                self._complete(st)
                return
        with contextlib.suppress(Exception):
            st.writer.abort()

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
                    try:
                        renderer.close()
                    finally:
                        if renderer.lent is not None:
                            renderer.lent.release()
            gl.release()

    def __enter__(self) -> ShardWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_local(
    spec: DatasetSpec, folder: DatasetFolder, shards: Iterable[int], device: int | None, progress: Progress | None
) -> list[int]:
    """Render ``shards`` one after another in this process (pipelined: :meth:`ShardWorker.run_shards`); returns
    those rendered."""
    with ShardWorker(spec, folder, device) as worker:
        return [record["shard"] for record in worker.run_shards(ShardFeed.of(shards), progress)]
