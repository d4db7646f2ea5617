"""Where a benchmark script writes its JSON results: ``--json PATH``, else ``$OUT/NAME`` on the GPU machine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_results(doc: dict[str, Any], given: Path | None, name: str) -> Path | None:
    """Write ``doc`` to ``given`` or ``$OUT/name`` (neither: nothing written); print and return the path."""
    path = given or (Path(os.environ["OUT"]) / name if os.environ.get("OUT") else None)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"results: {path}")
    return path
