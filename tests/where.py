"""Where things are in the checkout, for the tests in every folder under tests/ (their shared helpers live here)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
EXAMPLES = ROOT / "examples"
BENCHMARKS = ROOT / "benchmarks"
