"""Dataset metadata does not depend on the CPU: the same meta.json bytes under every BLAS kernel.

OpenBLAS picks its kernel at run time from the CPU (``OPENBLAS_CORETYPE`` forces
one); its AVX-512 kernel wrote ``-0.0`` where the Haswell one wrote ``0.0``, so
shards made on two machines differed. Each run here is a fresh process, since
OpenBLAS reads the variable once, at load.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from crash_helpers import child_env
from pyrr import Matrix44
from where import ROOT

CHILD = """
import json, sys, tarfile
from pathlib import Path
from glrec.dataset import DatasetSpec, generate
spec = {"dataset": {"scene": "table", "samples": 4, "size": "32x24", "seed": 7, "shard_size": 4},
        "output": {"passes": ["rgb"]},
        "params": {"objects": {"int": [2, 7]}, "camera_azimuth": {"uniform": [0, 360]}}}
generate(DatasetSpec.from_dict(spec), Path(sys.argv[1]))
metas = {}
for shard in sorted(Path(sys.argv[1]).rglob("*.tar")):
    with tarfile.open(shard) as tar:
        for m in tar.getmembers():
            if m.name.endswith("meta.json"):
                metas[m.name] = tar.extractfile(m).read().decode()
print(json.dumps(metas))
"""


def metas_under(coretype: str | None, out: Path) -> dict[str, str]:
    env = child_env()
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.gl
@pytest.mark.skipif(os.uname().machine not in ("x86_64", "AMD64"), reason="OPENBLAS_CORETYPE names x86 kernels")
def test_meta_json_is_the_same_under_every_blas_kernel(tmp_path):
    # None: the kernel OpenBLAS picks for this CPU (AVX-512 on CI's Xeons); the others forced.
    made = {core: metas_under(core, tmp_path / (core or "auto")) for core in (None, "Haswell", "Prescott")}
    assert len(made[None]) == 4
    assert made["Haswell"] == made[None]
    assert made["Prescott"] == made[None]
    for text in made[None].values():
        assert "-0.0," not in text and "-0.0]" not in text and "-0.0}" not in text, text


def test_matmul_is_the_product_in_index_order():
    from glrec.scenes.camera import as_list, matmul

    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=(5, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
    assert np.allclose(matmul(a, b, c), a @ b @ c, rtol=1e-13, atol=1e-13)
    # element (0, 0) of a 1x3 by 3x1 product, summed left to right from separately rounded products
    x, y = np.array([[0.1, 0.2, 0.3]]), np.array([[0.7], [0.11], [0.13]])
    assert matmul(x, y)[0, 0] == (0.1 * 0.7 + 0.2 * 0.11) + 0.3 * 0.13
    # a sum of negative zeros is -0.0 in IEEE arithmetic, whatever the kernel; as_list writes 0.0
    z = matmul(np.array([[-1.0, 1.0]]), np.array([[0.0], [-0.0]]))
    assert as_list(z) == [[0.0]] and str(as_list(z)) == "[[0.0]]"


def test_look_at_is_pyrrs_view_matrix():
    from glrec.scenes.camera import look_at

    eye = np.array([1.3, 2.1, -3.7])
    want = np.asarray(Matrix44.look_at(eye, [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]), dtype=np.float64).T
    assert np.allclose(look_at(eye, np.zeros(3), np.array([0.0, 1.0, 0.0])), want, rtol=0, atol=1e-14)
