"""Datasets as files: pass arrays to file bytes (:mod:`.encode`, with :mod:`glrec.encoders.png.writer`, and the GPU
colour encoders), shards and folders (:mod:`.writers`, :mod:`.folder`, :mod:`.lock`), and the runs that fill them
(:mod:`.runner`, :mod:`.local`, :mod:`.ray_backend`), plus previews.

Imports rendering and the spec; the streaming package and the front door import it.
"""
