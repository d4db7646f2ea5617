"""Draw with your own GL code into the recorder's target: python examples/own_gl_drawing.py"""

import glrec

with glrec.Recorder("own.mp4", size=(640, 360), fps=30, overwrite=True) as rec:
    for i in range(90):
        with rec.frame():  # the recorder's framebuffer is bound; draw anything
            k = i / 89
            rec.ctx.clear(k, 0.2, 1.0 - k)
print(rec.close().summary())
