"""Lossless PNG encoders side by side on rendered passes: ms per image, bytes, and the speed-up of 2 threads.

    PYTHONPATH=$PWD python benchmarks/png_encoders.py --machine 2c_llvmpipe \\
        --json benchmarks/results/2026-12-02_2c_llvmpipe_png-encoders.json

Renders ``--samples`` samples of ``examples/dataset.toml`` (640x480, every pass,
depth as 16-bit PNG) once, then encodes their five lossless images (rgb, depth16,
instance, semantic, normal) with each candidate: FFmpeg's PNG encoder through
PyAV (glrec before), Pillow, imagecodecs (libpng), and glrec's own PNG writer
(:mod:`glrec.encoders.png.writer`: NumPy row filter + one zlib stream) over stdlib zlib,
zlib-ng, libdeflate and ISA-L. Each file is decoded by Pillow and compared with
the array. ``threads2`` is the speed-up of encoding the same images on 2 threads:
near 2 when the encoder releases the GIL (so a worker's encode threads use every core).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import write_results

ROOT = Path(__file__).resolve().parent.parent
Encode = Callable[[np.ndarray], bytes]


def rendered(samples: int) -> dict[str, list[np.ndarray]]:
    import dataclasses

    from glrec.dataset import DatasetSpec, write_samples

    spec = DatasetSpec.load(ROOT / "examples" / "dataset.toml")
    spec = spec.with_(output=dataclasses.replace(spec.output, depth="png16"))
    images: dict[str, list[np.ndarray]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for folder in write_samples(spec, list(range(samples)), tmp):
            for name in ("rgb", "depth", "instance", "semantic", "normal"):
                images.setdefault(name, []).append(np.asarray(Image.open(folder / f"{name}.png")))
    images["depth"] = [a.astype(np.uint16) for a in images["depth"]]
    images["instance"] = [a.astype(np.uint16) for a in images["instance"]]
    images["semantic"] = [a.astype(np.uint16) for a in images["semantic"]]
    return images


def pillow(level: int) -> Encode:
    def enc(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        img = Image.fromarray(a.astype(">u2").view(np.uint16) if a.dtype == np.uint16 else a)
        if a.dtype == np.uint16:
            img = Image.frombuffer("I;16B", (a.shape[1], a.shape[0]), a.astype(">u2").tobytes(), "raw", "I;16B", 0, 1)
        img.save(buf, format="PNG", compress_level=level)
        return buf.getvalue()

    return enc


def candidates() -> dict[str, Encode]:
    from glrec.dataset.files.encode import _encode_image
    from glrec.encoders.png.writer import FILTER_NONE, FILTER_SUB, FILTER_UP, encode_png

    def pyav(level: int) -> Encode:
        def enc(a: np.ndarray) -> bytes:
            fmt = "gray16be" if a.dtype == np.uint16 else "gray" if a.ndim == 2 else "rgb24"
            return _encode_image("png", a, fmt, {"compression_level": str(level)})

        return enc

    def own(comp: Callable[[bytes, int], bytes], level: int, filt: int = FILTER_UP) -> Encode:
        return lambda a: encode_png(a, level, filter_type=filt, deflate=comp)

    out: dict[str, Encode] = {"pyav-ffmpeg L3 (before)": pyav(3), "pyav-ffmpeg L1": pyav(1)}
    out |= {"pillow L1": pillow(1), "pillow L3": pillow(3)}
    try:
        import imagecodecs

        out["imagecodecs L1"] = lambda a: bytes(imagecodecs.png_encode(a, level=1))
        out["imagecodecs L3"] = lambda a: bytes(imagecodecs.png_encode(a, level=3))
        out["imagecodecs L1 rle sub"] = lambda a: bytes(imagecodecs.png_encode(a, level=1, strategy=3, filter=16))
    except ImportError:
        pass
    std: Callable[[bytes, int], bytes] = lambda d, lv: zlib.compress(d, lv)  # noqa: E731
    out |= {"own up + zlib L1": own(std, 1), "own up + zlib L3": own(std, 3)}
    try:
        from zlib_ng import zlib_ng

        out |= {f"own up + zlib-ng L{lv}": own(lambda d, lv: zlib_ng.compress(d, lv), lv) for lv in (1, 3)}
    except ImportError:
        pass
    try:
        import deflate

        dfl: Callable[[bytes, int], bytes] = lambda d, lv: bytes(deflate.zlib_compress(d, lv))  # noqa: E731
        out |= {f"own up + libdeflate L{lv}": own(dfl, lv) for lv in (1, 3, 6)}
        out |= {
            "own sub + libdeflate L3": own(dfl, 3, FILTER_SUB),
            "own none + libdeflate L3": own(dfl, 3, FILTER_NONE),
        }
    except ImportError:
        pass
    try:
        from isal import isal_zlib

        out |= {f"own up + isal L{lv}": own(lambda d, lv: isal_zlib.compress(d, lv), lv) for lv in (1, 2, 3)}
    except ImportError:
        pass
    return out


def check(data: bytes, a: np.ndarray) -> None:
    img = Image.open(io.BytesIO(data))
    back = np.asarray(img)
    if a.dtype == np.uint16:
        back = back.astype(np.uint16)
    if not np.array_equal(back, a):
        raise SystemExit("decoded PNG differs from the array")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--machine", default="?")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    images = rendered(args.samples)
    flat = [(name, a) for name, arrays in images.items() for a in arrays]
    rows = {}
    for label, enc in candidates().items():
        per_pass: dict[str, float] = {}
        sizes: dict[str, int] = {}
        for name, arrays in images.items():
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                datas = [enc(a) for a in arrays]
                times.append((time.perf_counter() - t0) / len(arrays))
            for d, a in zip(datas, arrays, strict=True):
                check(d, a)
            per_pass[name] = round(1e3 * min(times), 2)
            sizes[name] = round(sum(map(len, datas)) / len(arrays))
        one = []
        two = []
        with ThreadPoolExecutor(2) as pool:
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                for _, a in flat:
                    enc(a)
                one.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                list(pool.map(enc, [a for _, a in flat]))
                two.append(time.perf_counter() - t0)
        rows[label] = {
            "ms_per_image": per_pass,
            "ms_per_sample": round(sum(per_pass.values()), 2),
            "bytes": sizes,
            "bytes_per_sample": sum(sizes.values()),
            "threads2": round(statistics.median(one) / statistics.median(two), 2),
        }
        r = rows[label]
        print(
            f"{label:28s} {r['ms_per_sample']:7.2f} ms/sample {r['bytes_per_sample']:9d} B"
            f"  x{r['threads2']} on 2 threads"
        )
    base = rows["pyav-ffmpeg L3 (before)"]
    for r in rows.values():
        r["speed_vs_before"] = round(base["ms_per_sample"] / r["ms_per_sample"], 2)
        r["size_vs_before"] = round(r["bytes_per_sample"] / base["bytes_per_sample"], 3)
    doc = {
        "what": "lossless PNG encoders on rendered 640x480 passes (examples/dataset.toml), one thread and two",
        "date": dt.date.today().isoformat(),
        "machine": args.machine,
        "samples": args.samples,
        "python": sys.version.split()[0],
        "results": rows,
    }
    write_results(doc, args.json, "png-encoders.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
