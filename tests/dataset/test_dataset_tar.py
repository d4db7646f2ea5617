"""The shard writer: the bytes tarfile writes, written one member at a time."""

import io

import numpy as np
from blake3 import blake3


def test_the_shard_writer_writes_what_tarfile_writes(tmp_path):
    """TarWriter writes members itself (one write each); the archive must be tarfile's, byte for byte."""
    import tarfile

    from glrec.dataset.files.writers import TarWriter

    rng = np.random.default_rng(2)
    samples = [
        (f"{k:06d}", {n: rng.bytes(int(rng.integers(0, 3000))) for n in ("rgb.png", "depth.npy", "meta.json")})
        for k in range(7)
    ]
    samples.append(("000007", {"rgb.png": b"", "meta.json": b"x" * 512}))  # empty and whole-block members
    writer = TarWriter(tmp_path / "shard.tar")
    for key, files in samples:
        writer.add(key, files)
    record = writer.commit()
    want = io.BytesIO()
    with tarfile.open(fileobj=want, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for key, files in samples:
            for name, data in files.items():
                info = tarfile.TarInfo(f"{key}.{name}")
                info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = (
                    len(data), 0, 0o644, 0, 0, "", "")  # fmt: skip
                tar.addfile(info, io.BytesIO(data))
    got = (tmp_path / "shard.tar").read_bytes()
    assert got == want.getvalue()
    assert record["bytes"] == len(got) and record["blake3"] == blake3(got).hexdigest()
