"""Rendering samples: one sample or a batch in the GL context (:mod:`.sample`), the passes packed on the GPU
(:mod:`.pack`), batch memory and its CUDA handoff (:mod:`.memory`, :mod:`.cuda`), batch arguments
(:mod:`.batches`), which GPU renders (:mod:`.devices`), and the colour encoder's interface (:mod:`.colour`).

Imports the spec only; files and streaming import it.
"""
