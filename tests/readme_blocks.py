"""pytest plugin for the README's ```python blocks (pytest-markdown-docs), loaded by tests/test_readme.py.

Every block runs in order in one folder (``GLREC_README_DIR``, with ``examples/``
linked in and a short ``in.mp4``). A block that uses a name it does not define
asks for it in its fence, ```python fixture:NAME, and gets the stand-in below;
a block that cannot run on a CPU-only machine asks for a skip fixture
(``fixture:needs_nvidia``, ``fixture:needs_ray_cluster``), which skips it with
the reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _readme_folder(monkeypatch):
    folder = Path(os.environ["GLREC_README_DIR"])
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")
    if not (folder / "in.mp4").exists():  # the video input of the transcode example
        import glrec

        glrec.record("plasma", folder / "in.mp4", size=(320, 240), fps=30, frames=30)
    monkeypatch.chdir(folder)
    os.environ.setdefault("MUJOCO_GL", "egl")


# -- skips: blocks that need what a CPU-only machine lacks ------------------------------------------


@pytest.fixture
def needs_nvidia():
    pytest.skip("needs an NVIDIA GPU with the CUDA extras (pip install glrec[cuda,nvjpeg,nvenc])")


@pytest.fixture
def needs_ray_cluster():
    pytest.skip("needs a Ray cluster (ray.init(address=...))")


# -- stand-ins for names a block uses but does not define --------------------------------------------


@pytest.fixture
def frames():
    """Pictures as a user has them: H x W x 3 uint8, top row first."""
    return [np.full((48, 64, 3), 8 * i, np.uint8) for i in range(10)]


@pytest.fixture
def gymnasium():
    return pytest.importorskip("gymnasium")


@pytest.fixture
def env(gymnasium):
    e = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    e.reset(seed=0)
    yield e
    e.close()


@pytest.fixture
def fig():
    plt = pytest.importorskip("matplotlib.pyplot")
    figure = plt.figure(figsize=(3.2, 2.4), dpi=50)
    yield figure
    plt.close(figure)


@pytest.fixture
def line(fig):
    return fig.gca().plot(np.arange(16), np.zeros(16))[0]


@pytest.fixture
def ys():
    return np.sin(np.arange(100)[:, None] / 10 + np.arange(16)[None] / 3)


@pytest.fixture
def latents():
    torch = pytest.importorskip("torch")
    return [torch.full((4,), float(i)) for i in range(5)]


@pytest.fixture
def generator():
    """A stand-in generative model: a latent to a 48 x 64 RGB tensor (on the CPU here; CUDA on a GPU)."""
    torch = pytest.importorskip("torch")
    return lambda z: torch.full((48, 64, 3), float(z[0]) / 8).clamp(0, 1)


@pytest.fixture
def detector():
    """A stand-in detector: a heat map over the frame and one box."""
    torch = pytest.importorskip("torch")

    def run(frame):
        h, w = frame.shape[:2]
        return torch.rand((h, w), device=frame.device), torch.tensor([[w / 4, h / 4, w / 2, h / 2]])

    return run


_MUJOCO_XML = """<mujoco><worldbody><light pos="0 0 3"/><geom type="plane" size="1 1 .1"/>
<body pos="0 0 .5"><freejoint/><geom type="box" size=".1 .1 .1" rgba="1 .5 0 1"/></body></worldbody></mujoco>"""


@pytest.fixture
def model():
    mujoco = pytest.importorskip("mujoco")
    return mujoco.MjModel.from_xml_string(_MUJOCO_XML)


@pytest.fixture
def data(model):
    import mujoco

    return mujoco.MjData(model)
