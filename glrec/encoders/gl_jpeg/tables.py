"""The fixed parts of a baseline JPEG for the GL encoder: tables, quality scaling, the header bytes.

The quantisation and Huffman tables are the example tables of ITU-T T.81
Annex K; quality scales the quantisation tables the way libjpeg does
(``jpeg_quality_scaling``), so a quality means the same tables as in Pillow,
and sizes and PSNR can be compared at equal quality. Everything here is pure
Python and depends only on (size, quality, subsampling, restart interval).
"""

from __future__ import annotations

import struct

import numpy as np

#: Annex K, table K.1 (luminance) and K.2 (chrominance), in row order.
LUMA_QUANT = (
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
)  # fmt: skip
CHROMA_QUANT = (
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
    24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
) + (99,) * 32  # fmt: skip

# Annex K.3: (code counts per length 1..16, symbols in code order).
DC_LUMA = ((0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0), tuple(range(12)))
DC_CHROMA = ((0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0), tuple(range(12)))
AC_LUMA = (
    (0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D),
    bytes.fromhex(
        "01020300041105122131410613516107227114328191a1082342b1c11552d1f0"
        "2433627282090a161718191a25262728292a3435363738393a434445464748494a"
        "535455565758595a636465666768696a737475767778797a838485868788898a"
        "92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6"
        "c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9fa"
    ),
)
AC_CHROMA = (
    (0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77),
    bytes.fromhex(
        "000102031104052131061241510761711322328108144291a1b1c109233352f0"
        "156272d10a162434e125f11718191a262728292a35363738393a434445464748"
        "494a535455565758595a636465666768696a737475767778797a828384858687"
        "88898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3"
        "c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7e8e9eaf2f3f4f5f6f7f8f9fa"
    ),
)
HUFFMAN = (DC_LUMA, AC_LUMA, DC_CHROMA, AC_CHROMA)  # the order of the code table the shader reads

#: Worst case of one block's entropy-coded bits before byte stuffing: a DC code (<= 11 bits
#: in Annex K) + 11 magnitude bits, 63 AC codes (<= 16) each with <= 10 magnitude bits, no EOB
#: then: 22 + 63 * 26 = 1660 bits (ZRLs only replace costlier codes).
BLOCK_BITS_MAX = 22 + 63 * 26
#: The same in bytes, rounded up (1728 bits = 216 bytes); stuffing at most doubles it.
BLOCK_BYTES_MAX = 2 * 216
#: Per segment on top: the 1-bit padding byte and the RSTn marker.
SEGMENT_EXTRA_BYTES = 4


def zigzag() -> np.ndarray:
    """``order[k]`` = the row-major index (v * 8 + u) of the k-th coefficient in zigzag order."""
    cells = sorted((x + y, (y if (x + y) % 2 else x), y * 8 + x) for y in range(8) for x in range(8))
    return np.array([c[2] for c in cells], dtype=np.int32)


def scale_quant(base: tuple[int, ...], quality: int) -> np.ndarray:
    """``base`` scaled for ``quality`` 1..100 as libjpeg does, clamped to 1..255 (baseline), row order."""
    q = max(1, min(100, quality))
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((np.array(base, dtype=np.int64) * scale + 50) // 100, 1, 255).astype(np.int32)


def code_table(spec: tuple[tuple[int, ...], bytes | tuple[int, ...]]) -> np.ndarray:
    """The code of every symbol of a Huffman spec as ``code | length << 16`` (0: no code), 256 entries."""
    counts, symbols = spec
    table = np.zeros(256, dtype=np.uint32)
    code, k = 0, 0
    for length, n in enumerate(counts, start=1):
        for _ in range(n):
            table[symbols[k]] = code | (length << 16)
            code += 1
            k += 1
        code <<= 1
    return table


def _segment(marker: int, payload: bytes) -> bytes:
    return struct.pack(">HH", 0xFF00 | marker, len(payload) + 2) + payload


def header(width: int, height: int, quality: int, subsampling: str, restart: int) -> bytes:
    """SOI .. SOS of a baseline JFIF JPEG; ``subsampling`` ``420`` or ``444``; ``restart`` MCUs per segment."""
    order = zigzag()
    luma, chroma = scale_quant(LUMA_QUANT, quality)[order], scale_quant(CHROMA_QUANT, quality)[order]
    out = b"\xff\xd8"
    # JFIF 1.01: no units, 1:1 aspect; JFIF fixes YCbCr as BT.601 full range, which is what is coded.
    out += _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    out += _segment(0xDB, b"\x00" + bytes(luma.tolist()) + b"\x01" + bytes(chroma.tolist()))
    hv = 0x22 if subsampling == "420" else 0x11
    out += _segment(0xC0, struct.pack(">BHHB", 8, height, width, 3) + bytes([1, hv, 0, 2, 0x11, 1, 3, 0x11, 1]))
    for tc_th, (counts, symbols) in zip((0x00, 0x10, 0x01, 0x11), HUFFMAN, strict=True):
        out += _segment(0xC4, bytes([tc_th, *counts]) + bytes(symbols))
    out += _segment(0xDD, struct.pack(">H", restart))
    out += _segment(0xDA, bytes([3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]))
    return out


EOI = b"\xff\xd9"
