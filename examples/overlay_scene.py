"""A Python overlay for video inputs: a progress bar and a corner marker drawn over each frame.

    glrec record in.mp4 -o out.mp4 --overlay examples/overlay_scene.py

glrec draws the decoded frame first; this scene draws over it. ``on_video_frame``
receives the VideoSource before each frame: ``source.texture`` is the frame (RGBA8,
rows bottom-up), ``source.time`` its timestamp and ``source.duration`` the input's
length (None when unknown).
"""

from __future__ import annotations


class ProgressBar:
    def setup(self, ctx, size):
        self.ctx, self.size = ctx, size
        self.fraction = 0.0

    def on_video_frame(self, source):
        if source.duration:
            self.fraction = min(1.0, source.time / source.duration)

    def render(self, t):
        w, h = self.size
        bar = max(2, h // 40)
        # Scissored clears draw flat rectangles without shaders or buffers.
        self.ctx.scissor = (0, 0, w, bar)
        self.ctx.clear(0.1, 0.1, 0.1)
        self.ctx.scissor = (0, 0, max(1, int(w * self.fraction)), bar)
        self.ctx.clear(1.0, 0.35, 0.2)
        self.ctx.scissor = (w - 3 * bar, h - 3 * bar, 2 * bar, 2 * bar)
        self.ctx.clear(0.9, 0.1, 0.1)
        self.ctx.scissor = None

    def close(self):
        pass
