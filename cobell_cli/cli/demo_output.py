"""What both demos show: their Spark log level, paths as a newcomer reads them, and the summary
of the demo job's run (cli/demo.py and cli/demo_yarn.py; a module of its own so that neither
demo imports the other)."""

from __future__ import annotations

from pathlib import Path

DEMO_JOB = "scaling-demo"
SPARK_LOG_LEVEL = "ERROR"  # Spark's INFO and WARN lines would bury cobell's


def shown_path(path: Path) -> Path:
    """`path` relative to the current directory when it is below it, else as it is."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def summary(db: Path, target_s: float, job: str = DEMO_JOB) -> list[str]:
    """What a newcomer should take away, at a glance: the demo job's run against its plan,
    the co-runner it met, where it is all recorded, and what to type next."""
    from cobell_cli import api

    with api.open_history(db, read_only=True) as history:
        runs = api.list_runs(history, job=job, limit=1)
    if not runs:
        return [f"demo: no run of {job} was recorded in {db}"]
    run = runs[0]
    runtime = f"{run['runtime_s']:.1f} s" if run.get("runtime_s") is not None else "?"
    verdict = ("met" if run.get("status") == "succeeded" and run.get("runtime_s") is not None
               and run["runtime_s"] <= target_s else "missed")
    planned = (f"prediction {run['predicted_s']:.0f} s, " if run.get("predicted_s") else "")
    met = [f"{c.get('co_runner_job') or 'unknown'} {c['overlap_ratio']:.0%} of the run"
           for c in run.get("colocations") or []]
    return [
        f"demo: run {run['id']} of {job} {run['status']} in {runtime} at scale-out "
        f"{run['scale_out']} ({planned}target {target_s:g} s: {verdict})",
        "      co-runners: " + (", ".join(met) if met else "none overlapped"),
        f"      recorded in the demo's own history {db}",
        f"next: cobell --db {db} history show {run['id']}",
        f"      (and history list, model show -j {job}; cobell local-cluster stop)",
    ]
