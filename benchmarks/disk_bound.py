"""How fast this filesystem takes shards: files written the way glrec's tar writer writes them, then synced.

    python benchmarks/disk_bound.py --dir /tmp --writers 16 --file-mb 32 --total-gb 4

``writers`` threads each write whole files of ``file_mb`` in 1 MiB writes, ``fsync`` them and rename them into
place (a shard's commit: ``TarWriter.commit``), until ``total_gb`` are written; reported: MB/s over the whole run,
and the filesystem. A dataset worker's shards can be made no faster than this divided by the bytes of a sample:
``dataset_workers.py --disk-bound`` measures it in the same run as the workers, with their shards' sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` is on (the longest mount point above it in /proc/mounts)."""
    best, kind = "", "?"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    where = str(path.resolve())
    for line in mounts:
        parts = line.split()
        under = len(parts) > 2 and (where == parts[1] or where.startswith(parts[1].rstrip("/") + "/"))
        if under and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return kind


def write_bound(root: Path, writers: int, file_bytes: int, total_bytes: int) -> dict[str, Any]:
    """Write ``total_bytes`` in files of ``file_bytes`` on ``writers`` threads under ``root``, each synced and
    renamed; the files are removed after. Returns MB/s and what was written."""
    block = os.urandom(1 << 20)  # incompressible, so a compressing filesystem is measured fairly
    files = max(1, total_bytes // file_bytes)
    work = Path(tempfile.mkdtemp(prefix="glrec-disk-bound-", dir=root))

    def one(i: int) -> None:
        tmp, path = work / f"f{i}.partial", work / f"f{i}"
        with open(tmp, "wb") as f:
            left = file_bytes
            while left > 0:
                left -= f.write(block[: min(left, len(block))])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(work, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(one, range(files)))
        seconds = time.perf_counter() - t0
    finally:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()
    written = files * file_bytes
    return {"dir": str(root), "filesystem": filesystem(root), "writers": writers, "file_bytes": file_bytes,
            "bytes": written, "seconds": seconds, "mb_per_s": written / seconds / 1e6}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--file-mb", type=float, default=32.0)
    ap.add_argument("--total-gb", type=float, default=2.0)
    args = ap.parse_args()
    res = write_bound(args.dir, args.writers, int(args.file_mb * 1e6), int(args.total_gb * 1e9))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
