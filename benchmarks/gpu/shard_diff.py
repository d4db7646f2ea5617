"""Which shard members differ between two worker counts (a diagnosis for the H200; prints, writes nothing else)."""

import io
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from glrec.dataset import DatasetSpec, generate

spec = DatasetSpec.load(sys.argv[1] if len(sys.argv) > 1 else "examples/dataset.toml")
spec = spec.with_(samples=int(sys.argv[2]) if len(sys.argv) > 2 else 400, shard_size=25)
tmp = Path(tempfile.mkdtemp())
W = int(sys.argv[3]) if len(sys.argv) > 3 else 16
for w in (1, W):
    generate(spec, tmp / f"w{w}", workers=w)
diffs = 0
for a in sorted((tmp / "w1").glob("shard-*.tar")):
    b = tmp / f"w{W}" / a.name
    with tarfile.open(a) as ta, tarfile.open(b) as tb:
        ma = {m.name: ta.extractfile(m).read() for m in ta.getmembers() if m.isfile()}
        mb = {m.name: tb.extractfile(m).read() for m in tb.getmembers() if m.isfile()}
    if list(ma) != list(mb):
        print(a.name, "member names/order differ", list(ma)[:6], list(mb)[:6])
    for name in ma:
        if ma[name] != mb.get(name):
            diffs += 1
            if diffs <= 12:
                if name.endswith(".png"):
                    pa, pb = np.asarray(Image.open(io.BytesIO(ma[name]))), np.asarray(Image.open(io.BytesIO(mb[name])))
                    print(
                        a.name,
                        name,
                        "png bytes differ; pixels differ:",
                        int((pa != pb).sum()),
                        len(ma[name]),
                        len(mb[name]),
                    )
                else:
                    print(a.name, name, "differs", ma[name][:120], mb.get(name, b"")[:120])
print("differing members:", diffs)
