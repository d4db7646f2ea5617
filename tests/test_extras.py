"""The extras install what the README's examples for them import."""

import pytest
from packaging.requirements import Requirement
from where import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python >= 3.11")

EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def names(extra: str) -> set[str]:
    return {Requirement(r).name.lower() for r in EXTRAS[extra]}


def test_the_gym_extra_installs_what_cartpoles_render_mode_needs():
    # README: gymnasium.make("CartPole-v1", render_mode="rgb_array") renders with pygame
    assert "CartPole-v1" in (ROOT / "README.md").read_text()
    assert {"gymnasium", "pygame"} <= names("gym")
