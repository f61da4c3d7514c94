"""`cobell demo`: the README's quick start — a real submission on a local Spark cluster.

Every step is an ordinary cobell command, printed before it runs, so the demo doubles as a
walk-through of what a user would type.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cobell_cli.cli.common import info, settings

DEMO_JOB = "scaling-demo"
CO_RUNNER_JOB = "corunner-demo"
DEFAULT_SEED = Path("history") / "local-demo.csv"
# Mostly waiting (like I/O), so the runtime really shrinks with executors even on 2 cores.
DEMO_JOB_ARGS = ("--tasks", "16", "--task-s", "3", "--cpu-fraction", "0.1")


def _show(argv: list[str]) -> None:
    import shlex

    shown = ["cobell", *argv[3:]] if argv[1:3] == ["-m", "cobell_cli"] else argv
    info("+ " + shlex.join(str(a) for a in shown))


def demo(
    ctx: typer.Context,
    target_runtime: float | None = typer.Option(
        None,
        "--target-runtime",
        "-t",
        metavar="SECONDS",
        help="Target of the demo job. [default: 60; 90 with --yarn]",
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
        "without --target-runtime the target is 90 s, allowing for YARN's start-up.",
    ),
) -> None:
    """Start a local Spark cluster, seed the history, start a co-runner, and submit a real job.

    Example: cobell demo --target-runtime 60

    Example: cobell demo --yarn
    """
    if yarn:
        _yarn_demo(ctx, target_runtime, seed, co_runner)
    import os
    import subprocess
    import time

    import cobell_cli.examples as examples
    from cobell_cli.errors import CobellError
    from cobell_cli.run.local_cluster import LocalCluster, spark_submit_path
    from cobell_cli.store.history import History

    target_runtime = 60.0 if target_runtime is None else target_runtime
    db = settings(ctx).db_path
    cli = [sys.executable, "-m", "cobell_cli", "--db", str(db)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}  # the driver stays on loopback too
    cluster = LocalCluster()
    _show([*cli, "local-cluster", "start", "--workers", str(workers),
           "--cores-per-worker", str(cores_per_worker)])  # fmt: skip
    cluster.start(workers=workers, cores_per_worker=cores_per_worker)
    with History.open(db) as history:
        has_runs = bool(history.training_runs(DEMO_JOB))
    if not has_runs and seed.exists():
        step = [*cli, "history", "import", str(seed), "--new-ids"]
        _show(step)
        subprocess.run(step, check=True)
    elif not has_runs:
        info(f"(no seed history at {seed}: the demo job starts with its bootstrap runs)")

    spark_submit = str(spark_submit_path())
    jobs_dir = Path(examples.__file__).parent
    where = ["--cluster", "standalone", "--standalone-url", cluster.webui_url]
    background = None
    if co_runner:
        step = [
            *cli, "submit", "-j", CO_RUNNER_JOB, "-t", "600", "--min-scale-out", "2",
            "--max-scale-out", "2", *where, "--", spark_submit, "--master", cluster.master_url,
            str(jobs_dir / "corunner_job.py"), "--tasks", "2", "--task-s", "25",
        ]  # fmt: skip
        _show([*step, "&"])
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
    step = [
        *cli, "submit", "-j", DEMO_JOB, "-t", f"{target_runtime:g}", "--min-scale-out", "1",
        "--max-scale-out", str(workers * cores_per_worker - (2 if co_runner else 0)), *where,
        "--", spark_submit, "--master", cluster.master_url, str(jobs_dir / "scaling_job.py"),
        *DEMO_JOB_ARGS,
    ]  # fmt: skip
    _show(step)
    code = subprocess.run(step, env=env).returncode
    if background is not None:
        info("(waiting for the co-running job to finish, so its run is recorded too)")
        background.wait()
    info(
        "next: `cobell history list`, `cobell history show RUN_ID`, "
        f"`cobell predict -j {DEMO_JOB} -t {target_runtime:g} --cluster none`, "
        "`cobell local-cluster stop`"
    )
    raise typer.Exit(code)


def _yarn_demo(ctx: typer.Context, target: float | None, seed: Path, co_runner: bool) -> None:
    from cobell_cli.cli import demo_yarn

    code = demo_yarn.run_yarn_demo(
        settings(ctx).db_path,
        demo_yarn.DEFAULT_TARGET_S if target is None else target,
        demo_yarn.DEFAULT_SEED if seed == DEFAULT_SEED else seed,
        co_runner,
        _show,
    )
    raise typer.Exit(code)
