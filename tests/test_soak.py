"""Long runs, CI-sized: nothing grows with the number of frames or of recorders.

benchmarks/soak.py is the full version (100,000 frames, RSS over time).
"""

from __future__ import annotations

import glrec
from glrec.gl.leaks import glrec_threads, live_gl_objects, rss_bytes, snapshot

WARMUP, FRAMES = 500, 4000


def test_thousands_of_frames_grow_no_gl_objects_fences_threads_or_memory(gl, tmp_path):
    with glrec.Recorder(tmp_path / "long.mkv", size=(16, 16), fps=30, encoder="cpu") as rec:
        ctx = rec.ctx
        for _ in range(WARMUP):
            rec.render("plasma")
        warm = snapshot(ctx)
        fences = []
        for i in range(FRAMES - WARMUP):
            rec.render("plasma")
            if i % 1000 == 0:
                fences.append(snapshot(ctx).fences)
        end = snapshot(ctx)
    assert end.grew_from(warm) == {}, (warm, end)  # GL objects by type, fences, threads
    assert sum(warm.gl_objects.values()) > 0 and warm.threads == 1  # the snapshot does see them
    assert max(fences) <= 3  # one fence per frame in the readback ring of 3, deleted when read
    assert end.rss - warm.rss < 2 * 2**20, f"RSS grew {(end.rss - warm.rss) / 2**20:.1f} MiB over {FRAMES} frames"
    assert rec.close().frames == FRAMES


def test_many_recorders_leave_nothing_behind(gl, tmp_path):
    """Each recorder releases every GL object and joins its thread.

    The process still grows 40-200 KiB per recorder: moderngl 5.13's own context
    object is never freed after ``release()`` (a raw glcontext context is), and
    the allocator is noisy. The bound allows for that; a leaked encoder alone
    would add about 2.6 MiB per recorder at this size (measured).
    """
    before = len(live_gl_objects())
    rss = []
    for i in range(20):
        glrec.record("plasma", tmp_path / f"r{i}.mkv", size=(16, 16), fps=30, frames=8, encoder="cpu")
        assert glrec_threads() == []
        rss.append(rss_bytes())
    assert len(live_gl_objects()) == before
    per_recorder = (rss[-1] - rss[6]) / (len(rss) - 7)
    assert per_recorder < 512 * 1024, f"{per_recorder / 1024:.0f} KiB per recorder"
