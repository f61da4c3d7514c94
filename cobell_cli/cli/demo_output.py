"""What both demos show: their Spark log level, paths as a newcomer reads them, and the summary
of the demo job's run (cli/demo.py and cli/demo_yarn.py; a module of its own so that neither
demo imports the other)."""

from __future__ import annotations

from pathlib import Path

from cobell_cli.cli.run_words import against_target, ending

DEMO_JOB = "scaling-demo"
SPARK_LOG_LEVEL = "ERROR"  # Spark's INFO and WARN lines would bury cobell's


def shown_path(path: Path) -> Path:
    """`path` relative to the current directory when it is below it, else as it is."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def has_succeeded_runs(db: Path, job: str) -> bool:
    """Whether the demo's history already has a run of `job` to plan with (else it is seeded)."""
    from cobell_cli import api

    with api.open_history(db) as history:
        return bool(api.list_runs(history, job=job, status=["succeeded"], limit=1))


def summary(db: Path, target_s: float, job: str = DEMO_JOB) -> list[str]:
    """What a newcomer should take away, at a glance: the demo job's run against its plan,
    the co-runner it met, where it is all recorded, and what to type next."""
    from cobell_cli import api

    with api.open_history(db, read_only=True) as history:
        runs = api.list_runs(history, job=job, limit=1)
    if not runs:
        return [f"demo: no run of {job} was recorded in {db}"]
    run = runs[0]
    how = ending(run["status"], run.get("runtime_s"), run.get("exit_code"),
                 run.get("failure_reason"))
    against = against_target(run["status"], run.get("runtime_s"), run.get("predicted_s"),
                             target_s)
    met = [f"{c.get('co_runner_job') or 'unknown'} {c['overlap_ratio']:.0%} of the run"
           for c in run.get("colocations") or []]
    return [
        f"demo: run {run['id']} of {job} {how} at scale-out {run['scale_out']} ({against})",
        "      co-runners: " + (", ".join(met) if met else "none overlapped"),
        f"      recorded in the demo's own history {db}",
        f"next: cobell --db {db} history show {run['id']}",
        f"      (and history list, model show -j {job}; cobell local-cluster stop)",
    ]
