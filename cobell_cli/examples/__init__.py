"""Small PySpark jobs shipped with cobell for the quick start, the tests and the demos.

`example_path("scaling_job")` gives the file to pass to spark-submit.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent


def example_path(name: str) -> Path:
    """Path of a shipped example job, e.g. "scaling_job" or "corunner_job"."""
    path = EXAMPLES_DIR / f"{name}.py"
    if not path.is_file() or name.startswith("_"):
        known = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))
        raise FileNotFoundError(f"no example job {name!r}; known: {', '.join(known)}")
    return path
