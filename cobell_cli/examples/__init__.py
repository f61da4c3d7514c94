"""Small PySpark jobs shipped with cobell for the quick start, the tests and the demos.

`example_path("scaling_job")` gives the file to pass to spark-submit.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent
# the demos' job: 16 tasks of 3 s that mostly wait, so a 2-core machine can run it at any count
DEMO_JOB_ARGS = ("--tasks", "16", "--task-s", "3", "--cpu-fraction", "0.1")


def example_path(name: str) -> Path:
    """Path of a shipped example job, e.g. "scaling_job" or "corunner_job"."""
    path = EXAMPLES_DIR / f"{name}.py"
    if not path.is_file() or name.startswith("_"):
        known = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_"))
        raise FileNotFoundError(f"no example job {name!r}; known: {', '.join(known)}")
    return path
