"""`cobell demo`: the README's quick start — a real submission on a local Spark cluster.

Every step is an ordinary cobell command, printed before it runs, so the demo doubles as a
walk-through of what a user would type. With the co-runner running, a `predict --deadline`
step shows whether the demo job would start now or wait for the co-runner to end
(cli/demo_deadline.py). The demo keeps a history of its own (demo.db beside
the default history, unless --db or COBELL_DB names one), runs its jobs at a quiet Spark log
level (`submit --spark-log-level`), and ends with a short summary of what happened.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cobell_cli.cli.common import info, settings
from cobell_cli.cli.common import target_runtime as target_runtime_of
from cobell_cli.cli.demo_deadline import deadline_step
from cobell_cli.cli.demo_output import (
    DEMO_JOB,
    SPARK_LOG_LEVEL,
    has_succeeded_runs,
    shown_path,
    summary,
)
from cobell_cli.cli.demo_yarn import DEFAULT_TARGET_S as YARN_TARGET_S

CO_RUNNER_JOB = "corunner-demo"
DEFAULT_SEED = Path("history") / "local-demo.csv"
# The smallest round target the seed's own plan finds feasible beside the running co-runner at
# 90 % (upper bound 93 s at 2 executors; at 60 s no scale-out meets it, docs/demo.md).
DEFAULT_TARGET_S = 100.0
# Mostly waiting (like I/O), so the runtime really shrinks with executors even on 2 cores.
DEMO_DB = "demo.db"  # beside the default history: the demo never writes the user's own


def _show(argv: list[str], background: bool = False) -> None:
    import shlex

    shown = ["cobell", *argv[3:]] if argv[1:3] == ["-m", "cobell_cli"] else argv
    info("+ " + shlex.join(str(a) for a in shown) + (" &" if background else ""))


def demo_db(ctx: typer.Context) -> Path:
    """The history the demo writes: the one --db, COBELL_DB or the config names, else its own
    demo.db beside the default history."""
    resolved = settings(ctx)
    named = resolved.sources.get("db") != "default"
    return resolved.db_path if named else resolved.db_path.parent / DEMO_DB


def demo(
    ctx: typer.Context,
    target_runtime: float | None = typer.Option(
        None, "--target-runtime", "-t", metavar="DURATION", parser=target_runtime_of,
        help="Target of the demo job: seconds, or e.g. 90s, 2min. "
        f"[default: {DEFAULT_TARGET_S:g}; {YARN_TARGET_S:g} with --yarn]",
    ),
    workers: int = typer.Option(2, "--workers", min=1, help="Local Spark workers."),
    cores_per_worker: int = typer.Option(4, "--cores-per-worker", min=1, help="Cores each."),
    seed: Path = typer.Option(
        DEFAULT_SEED, "--seed", metavar="FILE", help="History to import when the job has none."
    ),
    co_runner: bool = typer.Option(
        True, "--co-runner/--no-co-runner", help="Start a CPU-heavy co-running job first."
    ),
    yarn: bool = typer.Option(
        False,
        "--yarn",
        help="On a local YARN (`cobell local-cluster start --yarn`) instead of Spark "
        "standalone, with its own jobs and seed history (history/local-yarn-demo.csv); "
        f"without --target-runtime the target is {YARN_TARGET_S:g} s, allowing for YARN's "
        "start-up (an ApplicationMaster container, then the executors' containers).",
    ),
) -> None:
    """Start a local Spark cluster, seed the history, start a co-runner, and submit a real job.

    Example: cobell demo --target-runtime 100

    Example: cobell demo --yarn
    """
    if yarn:
        _yarn_demo(ctx, target_runtime, seed, co_runner)
    import os
    import subprocess
    import time

    from cobell_cli import api
    from cobell_cli.errors import CobellError

    target_runtime = DEFAULT_TARGET_S if target_runtime is None else target_runtime
    db = demo_db(ctx)
    cli = [sys.executable, "-m", "cobell_cli", "--db", str(db)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}  # the driver stays on loopback too
    cluster = api.LocalCluster()
    _show([*cli, "local-cluster", "start", "--workers", str(workers),
           "--cores-per-worker", str(cores_per_worker)])  # fmt: skip
    cluster.start(workers=workers, cores_per_worker=cores_per_worker)
    has_runs = has_succeeded_runs(db, DEMO_JOB)
    if not has_runs and seed.exists():
        step = [*cli, "history", "import", str(seed), "--new-ids"]
        _show(step)
        subprocess.run(step, check=True)
    elif not has_runs:
        info(f"(no seed history at {seed}: the demo job starts with its bootstrap runs)")

    # `spark-submit` by name, from pyspark's bin on PATH, and the jobs relative to where the
    # demo runs (the repository root in the README's main command): the commands it echoes
    # stay readable
    env["PATH"] = os.pathsep.join([str(api.spark_submit_path().parent), env.get("PATH", "")])
    spark_submit = "spark-submit"
    jobs_dir = shown_path(api.example_path("scaling_job").parent)
    where = ["--cluster", "standalone", "--standalone-url", cluster.webui_url]
    background = None
    if co_runner:
        step = [
            *cli, "submit", "-j", CO_RUNNER_JOB, "-t", "600", "--min-scale-out", "2",
            "--max-scale-out", "2", "--spark-log-level", SPARK_LOG_LEVEL, *where, "--",
            spark_submit, "--master", cluster.master_url, str(jobs_dir / "corunner_job.py"),
            "--tasks", "2", "--task-s", "25",
        ]  # fmt: skip
        _show(step, background=True)
        background = subprocess.Popen(
            step, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            doc = cluster.master_json() or {}
            if any(a.get("name") == f"cobell:{CO_RUNNER_JOB}" for a in doc.get("activeapps", [])):
                break
            if background.poll() is not None:
                raise CobellError("the co-running demo job ended before it started running")
            time.sleep(0.5)
        else:
            raise CobellError("the co-running demo job did not start within 90 s")
        time.sleep(3)  # let it take its executors
    scale_outs = ["--min-scale-out", "1",
                  "--max-scale-out", str(workers * cores_per_worker - (2 if co_runner else 0))]
    if co_runner:  # a deadline: start now beside the co-runner, or wait for it to end?
        for line in deadline_step(cli, DEMO_JOB, [*scale_outs, *where], _show, env):
            info(line)
    step = [
        *cli, "submit", "-j", DEMO_JOB, "-t", f"{target_runtime:g}", *scale_outs,
        "--spark-log-level", SPARK_LOG_LEVEL, *where, "--", spark_submit, "--master",
        cluster.master_url, str(jobs_dir / "scaling_job.py"), *api.DEMO_JOB_ARGS,
    ]  # fmt: skip
    _show(step)
    code = subprocess.run(step, env=env).returncode
    if background is not None:
        info("(waiting for the co-running job to finish, so its run is recorded too)")
        background.wait()
    for line in summary(db, target_runtime):
        info(line)
    raise typer.Exit(code)


def _yarn_demo(ctx: typer.Context, target: float | None, seed: Path, co_runner: bool) -> None:
    from cobell_cli.cli import demo_yarn

    code = demo_yarn.run_yarn_demo(
        demo_db(ctx),
        demo_yarn.DEFAULT_TARGET_S if target is None else target,
        demo_yarn.DEFAULT_SEED if seed == DEFAULT_SEED else seed,
        co_runner,
        _show,
    )
    raise typer.Exit(code)
