"""Cut a container file back to its last complete fragment after a failed write.

A write that fails part-way (full disk, file-size limit) leaves the tail of a
fragment on disk: an MP4 ``moof`` without all of its ``mdat``, a Matroska
``Cluster`` or an MPEG-TS frame cut short. Decoders treat that tail differently (some stop, some
error out on the whole file), so the sink truncates the file to the end of
the last complete fragment. Truncating only shrinks a file, so it works on a
full disk too.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from . import mpegts

log = logging.getLogger("glrec")

# MP4 top-level boxes that may stand on their own; a moof counts only with the mdat after it.
_MP4_STANDALONE = {b"ftyp", b"moov", b"free", b"skip", b"mfra", b"styp", b"sidx", b"uuid"}

_EBML_HEADER = 0x1A45DFA3
_SEGMENT = 0x18538067


def complete_mp4_prefix(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that ends after a complete box and no half fragment."""
    good = at = 0
    in_fragment = False
    n = len(data)
    while at + 8 <= n:
        size, kind = struct.unpack_from(">I4s", data, at)
        header = 8
        if size == 1:  # 64-bit size follows the type
            if at + 16 > n:
                break
            size = struct.unpack_from(">Q", data, at + 8)[0]
            header = 16
        elif size == 0:  # "to the end of the file": only a finished writer knows that is true
            break
        if size < header or at + size > n:
            break
        at += size
        if kind == b"moof":
            in_fragment = True
        elif kind == b"mdat":
            good = at
            in_fragment = False
        elif kind in _MP4_STANDALONE and not in_fragment:
            good = at
    return good


def read_vint(data: bytes, at: int, *, keep_marker: bool) -> tuple[int, int] | None:
    """Read an EBML variable-length integer at ``at``: (value, length), or None if cut off.

    Element IDs keep their length marker bit (``keep_marker``); sizes do not.
    """
    if at >= len(data):
        return None
    first = data[at]
    length = 1
    while length <= 8 and not first & (0x80 >> (length - 1)):
        length += 1
    if length > 8 or at + length > len(data):
        return None
    value = first if keep_marker else first & (0xFF >> length)
    for b in data[at + 1 : at + length]:
        value = (value << 8) | b
    return value, length


UNKNOWN_SIZE = -1


def ebml_elements(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The elements between ``start`` and ``end``: (id, body start, body end), until one is cut off.

    An element of unknown size (all size bits set) comes out with body end
    :data:`UNKNOWN_SIZE`, and the walk stops after it.
    """
    at = start
    while (el := read_vint(data, at, keep_marker=True)) is not None:
        size = read_vint(data, at + el[1], keep_marker=False)
        if size is None:
            return
        body = at + el[1] + size[1]
        if size[0] == (1 << (7 * size[1])) - 1:
            yield el[0], body, UNKNOWN_SIZE
            return
        if body + size[0] > end:
            return
        yield el[0], body, body + size[0]
        at = body + size[0]


def mkv_segment_start(data: bytes) -> int | None:
    """Where the Segment's children (SeekHead, Info, Tracks, Clusters, ...) begin, or None."""
    header = next(ebml_elements(data, 0, len(data)), None)
    if header is None or header[0] != _EBML_HEADER:
        return None
    seg = read_vint(data, header[2], keep_marker=True)
    if seg is None or seg[0] != _SEGMENT:
        return None
    seg_size = read_vint(data, header[2] + seg[1], keep_marker=False)
    if seg_size is None:
        return None
    return header[2] + seg[1] + seg_size[1]


def complete_mkv_prefix(data: bytes) -> int:
    """Length of the longest prefix of a Matroska file that ends after a complete top-level element.

    The Segment's own size is unknown while recording, so its children
    (SeekHead, Info, Tracks, Cluster, ...) are walked one by one. A child of
    unknown size (a live-mode cluster) cannot be checked: the file is kept whole.
    """
    good = mkv_segment_start(data)
    if good is None:
        return 0
    for _, _, end in ebml_elements(data, good, len(data)):
        if end == UNKNOWN_SIZE:
            return len(data)
        good = end
    return good


def complete_avi_prefix(data: bytes) -> int:
    """Length of the longest prefix of an AVI file that ends after a complete chunk.

    While recording, an AVI is a ``RIFF AVI`` list whose ``movi`` list grows by
    one chunk per frame (OpenDML files continue in ``RIFF AVIX`` lists). A chunk
    counts when all of its data is there, so the file never ends in part of a
    JPEG. Chunk sizes are little-endian and chunks are padded to even lengths.
    """
    good = at = 0
    n = len(data)
    while at + 12 <= n and data[at : at + 4] == b"RIFF" and data[at + 8 : at + 12] in (b"AVI ", b"AVIX"):
        riff_end = at + 8 + struct.unpack_from("<I", data, at + 4)[0]
        at += 12
        while at + 8 <= n:
            kind, size = data[at : at + 4], struct.unpack_from("<I", data, at + 4)[0]
            if kind == b"LIST" and at + 12 <= n and data[at + 8 : at + 12] == b"movi":
                at += 12  # walk into the frames
                good = max(good, at)
                continue
            end = at + 8 + size + (size & 1)
            if end > n:
                return good
            at = end
            good = at
            if at >= riff_end:
                break
    return good


def trim_to_complete_fragments(path: Path, frames: int | None = None) -> int:
    """Truncate an MP4/MOV/MKV/AVI/TS file after its last complete fragment (AVI: chunk, TS: frame).

    ``frames``: how many frames were written whole, where the file alone cannot tell (TS).
    Returns the bytes removed.
    """
    kind = path.suffix.lower()
    if kind in (".mp4", ".mov"):
        prefix = complete_mp4_prefix
    elif kind == ".mkv":
        prefix = complete_mkv_prefix
    elif kind == ".avi":
        prefix = complete_avi_prefix
    elif kind == ".ts":
        prefix = lambda data: mpegts.complete_prefix(data, frames)  # noqa: E731
    else:
        return 0
    if not path.is_file():  # a device (/dev/full) or a pipe: nothing to cut, and reading may never end
        return 0
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    keep = prefix(data)
    if keep < len(data):
        try:
            os.truncate(path, keep)
        except OSError as exc:
            log.warning("Could not cut %s back to its last complete fragment: %s", path, exc)
            return 0
        log.info("cut %s back to its last complete fragment (%d bytes dropped)", path, len(data) - keep)
    return len(data) - keep
